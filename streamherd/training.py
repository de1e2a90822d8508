"""``train`` and ``predict``: readers, learner, progressive validation and models, put together."""
import os
import sys

import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.io.reader import (DEFAULT_BLOCK_SIZE, TRAINING_WORKERS, ChunkReader,
                                  numeric_labels_only)
from streamherd.labels import BinaryLabels, ClassLabels
from streamherd.learners.base import UnstableUpdate
from streamherd.learners.sparse import normalize_rows
from streamherd.model import load_model, require_arrays, save_model
from streamherd.progress import ProgressiveValidation, zero_one_loss

DEFAULT_BITS = 18
MAX_BITS = 30


def _check_bits(bits):
    if not 1 <= bits <= MAX_BITS:
        raise StreamherdError(f"--bits {bits} is out of range; use 1 to {MAX_BITS} (2^bits weight slots)")


def _label_token(chunk, i):
    start = chunk.label_start[i]
    if start < 0:
        return "unknown"
    return chunk.block[start:chunk.label_end[i]].tobytes().decode("utf-8", "replace")


MULTICLASS_MODES = ("joint", "ova")
LOSSES = ("hinge", "squared")


class _Binary:
    """Two labels (+1/-1, 1/0, ...): the learners' binary kernels, as before multiclass existed."""

    loss_name = "0/1 loss"

    def __init__(self, learner, meta, skip_bad):
        self.learner = learner
        self.labels = BinaryLabels.from_meta(meta) if meta else BinaryLabels()
        self.skip_bad = skip_bad

    def step(self, chunk, normalize):
        self.chunk = chunk = numeric_labels_only(chunk, self.skip_bad)
        y = self.labels.observe(chunk)
        _normalize(chunk, normalize)
        margins = np.empty(chunk.n_examples)
        updates = self.learner.learn(y, chunk.importance, chunk.indptr, chunk.indices,
                                     chunk.values, margins)
        loss = zero_one_loss(y, margins)

        def describe(i):
            return _label_token(chunk, i), self.labels.text(bool(margins[i] > 0))

        return chunk, loss, describe, updates

    def meta(self):
        return {"labels": self.labels.to_meta()}


class _Regression:
    """``--loss squared``: real labels, the squared-loss updates, progressive squared error."""

    loss_name = "squared loss"

    def __init__(self, learner, meta, skip_bad):
        self.learner = learner
        self.skip_bad = skip_bad

    def step(self, chunk, normalize):
        self.chunk = chunk = numeric_labels_only(
            chunk, self.skip_bad, expected="a real number (--loss squared is regression)")
        _normalize(chunk, normalize)
        predictions = np.empty(chunk.n_examples)
        updates = self.learner.learn_regression(chunk.labels, chunk.importance, chunk.indptr,
                                                chunk.indices, chunk.values, predictions)
        loss = (chunk.labels - predictions) ** 2    # NaN for unlabeled lines

        def describe(i):
            return _label_token(chunk, i), f"{predictions[i]:.6g}"

        return chunk, loss, describe, updates

    def meta(self):
        return {}


class _Multiclass:
    """Joint or one-versus-all: class ids from ClassLabels, progressive multiclass 0/1 loss."""

    loss_name = "0/1 loss"

    def __init__(self, learner, labels, skip_bad):
        self.learner = learner
        self.labels = labels
        self.skip_bad = skip_bad
        # classes a prediction may choose: the fixed set, or those seen so far
        self.known = len(labels)

    def step(self, chunk, normalize):
        chunk, cls = self.labels.observe(chunk, self.skip_bad)
        self.chunk = chunk
        self.learner.grow(len(self.labels))
        _normalize(chunk, normalize)
        predicted = np.empty(chunk.n_examples, np.int64)
        updates, self.known = self.learner.learn_joint(cls, chunk.importance, chunk.indptr,
                                                       chunk.indices, chunk.values, self.known,
                                                       predicted)
        loss = np.where(cls < 0, np.nan, (predicted != cls).astype(np.float64))

        def describe(i):
            return _label_token(chunk, i), self.labels.text(int(predicted[i]))

        return chunk, loss, describe, updates

    def meta(self):
        return self.labels.to_meta()


def _normalize(chunk, normalize):
    if normalize:
        normalize_rows(chunk.indptr, chunk.values)


def _auto_task(chunk):
    """Without --multiclass, --classes or --loss, the first chunk decides: the stream is multiclass
    when a label is not a number, or when its labels cannot be a binary labelling (more than one
    value > 0 or more than one <= 0: e.g. 0..9, 1..3, or 1 and 7) and none is negative. Otherwise
    it is binary, exactly as before multiclass existed: a -1 marks a binary +1/-1 file, and a
    third label later is an error that suggests --multiclass."""
    if chunk.text_label_rows().any():
        return "multiclass"
    labels = np.unique(chunk.labels[~np.isnan(chunk.labels)])
    binary_possible = (labels > 0).sum() <= 1 and (labels <= 0).sum() <= 1
    return "binary" if binary_possible or labels.min() < 0 else "multiclass"


def _create_learner(task, mode, algo, dim, options, state, learner_meta, blocks):
    if task == "multiclass" and mode == "ova":
        from streamherd.learners.ova import OneVersusAll

        return OneVersusAll(algo, dim, options, state, learner_meta, blocks=blocks)
    return learners.create(algo, dim, options, state, learner_meta,
                           blocks=blocks if task == "multiclass" else 1)


def train(paths, algo=None, options=None, bits=None, bias=None, fmt="auto", final_model=None,
          initial_model=None, quiet=False, skip_bad=False, block_size=DEFAULT_BLOCK_SIZE,
          normalize=None, multiclass=None, classes=None, loss=None):
    """Stream every example once through the learner; returns the run summary (a dict).

    ``normalize``: scale each example to unit L2 norm (bias included) before predict and update;
    saved in the model, so ``predict`` does the same. ``multiclass``: None (binary, or joint
    multiclass when the data has more than two classes, see _auto_task), "joint" or "ova";
    ``classes``: a fixed class list ("1,2,3"); ``loss``: "hinge" (classification) or "squared"
    (regression).
    """
    options = {k: v for k, v in (options or {}).items() if v is not None}
    state = None
    learner_meta = {}
    model_meta = {}
    examples_before = 0
    task = None
    if loss is not None and loss not in LOSSES:
        raise StreamherdError(f"unknown --loss '{loss}'; use hinge (classification) or squared "
                              f"(regression)")
    if multiclass is not None and multiclass not in MULTICLASS_MODES:
        raise StreamherdError(f"unknown --multiclass '{multiclass}'; use joint or ova")
    if loss == "squared":
        if multiclass is not None or classes is not None:
            raise StreamherdError("--loss squared is regression (real labels); drop --multiclass "
                                  "and --classes")
        task = "regression"
    elif multiclass is not None or classes is not None:
        task = "multiclass"
    if initial_model is not None:
        meta, state = load_model(initial_model)
        if algo is not None and learners.canonical_name(algo) != meta["algo"]:
            raise StreamherdError(
                f"{initial_model} was trained with --algo {meta['algo']}, not {algo}; "
                f"drop --algo to continue training it")
        if bits is not None and bits != meta["bits"]:
            raise StreamherdError(f"{initial_model} has --bits {meta['bits']}, not {bits}; "
                                  f"drop --bits to continue training it")
        if bias is not None and bias != meta["bias"]:
            raise StreamherdError(f"{initial_model} was trained with the bias "
                                  f"{'on' if meta['bias'] else 'off'}; drop --no-bias to continue")
        saved_normalize = bool(meta.get("normalize", False))
        if normalize is not None and normalize != saved_normalize:
            raise StreamherdError(f"{initial_model} was trained "
                                  f"{'with' if saved_normalize else 'without'} --normalize; "
                                  f"continue it {'with' if saved_normalize else 'without'} the flag")
        saved_task = meta.get("task", "binary")
        saved_mode = meta.get("multiclass")
        if (task is not None and task != saved_task) or classes is not None or \
                (multiclass is not None and multiclass != saved_mode):
            raise StreamherdError(
                f"{initial_model} is a {saved_task}{' ' + saved_mode if saved_mode else ''} model; "
                f"drop --multiclass, --classes and --loss to continue training it")
        task, multiclass = saved_task, saved_mode
        normalize = saved_normalize
        algo, bits, bias = meta["algo"], meta["bits"], meta["bias"]
        options = {**meta["hyperparameters"], **options}
        learner_meta = meta.get("learner", {})
        examples_before = meta.get("examples", 0)
        model_meta = meta
    algo = learners.canonical_name(algo or learners.DEFAULT_ALGO)
    bits = DEFAULT_BITS if bits is None else bits
    bias = True if bias is None else bias
    normalize = bool(normalize)
    _check_bits(bits)
    cls, _ = learners.learner_class(algo)
    accepted = dict(cls.hyperparameters)
    if task == "regression":
        if cls.regression_hyperparameters is None:
            raise StreamherdError(
                f"{algo} has no squared-loss form; --loss squared works with arow (recursive least "
                f"squares), nherd and pa/pa1/pa2 (epsilon-insensitive) and their variants")
        accepted.update(cls.regression_hyperparameters)
        options = {**cls.regression_hyperparameters, **options}
    unused = sorted(set(options) - set(accepted))
    if unused:
        flags = ", ".join(f"-{k}" if len(k) == 1 else f"--{k}" for k in unused)
        raise StreamherdError(f"{algo} does not take {flags}; its hyperparameters are: "
                              f"{', '.join(accepted) or 'none'}")
    if final_model is not None:
        _check_writable(final_model)
    labels = None
    if task == "multiclass":
        multiclass = multiclass or "joint"
        labels = (ClassLabels.from_meta(model_meta) if initial_model is not None
                  else ClassLabels.parse(classes) if classes is not None else ClassLabels())
    dim = 1 << bits
    # created before any input, so that a bad hyperparameter fails at once; while the task is
    # undecided (_auto_task), with no class block: nothing is allocated until the first chunk
    learner = _create_learner(task or "multiclass", multiclass, algo, dim, options, state,
                              learner_meta, len(labels) if labels is not None else 0)
    reader = ChunkReader(paths, fmt=fmt, bits=bits, bias=bias, skip_bad=skip_bad,
                         block_size=block_size, workers=TRAINING_WORKERS,
                         text_labels=task in (None, "multiclass"))
    progress = ProgressiveValidation(quiet=quiet, total_bytes=reader.total_bytes)
    runner = None
    for chunk in reader:
        if runner is None:
            if task is None:
                task = _auto_task(chunk)
                if task == "multiclass":
                    multiclass, labels = "joint", ClassLabels()
                else:
                    learner = _create_learner(task, None, algo, dim, options, None, {}, 1)
            if task == "multiclass":
                runner = _Multiclass(learner, labels, skip_bad)
            else:
                runner = (_Regression if task == "regression" else _Binary)(learner, model_meta,
                                                                            skip_bad)
            progress.loss_name = runner.loss_name
        try:
            chunk, loss, describe, updates = runner.step(chunk, normalize)
        except UnstableUpdate as e:   # e.index: a row of the chunk the runner learned from
            raise StreamherdError(
                f"{chunk.source}:{int(runner.chunk.line_numbers[e.index])}: {e.what}; scale the "
                f"features (--normalize) or lower -C / raise -r") from None
        progress.add_chunk(chunk.importance, loss, chunk.indptr, describe,
                           updates=updates, bad_lines=chunk.bad_lines, bytes_done=reader.bytes_done)
    if task is None:   # no input at all
        task = "binary"
        learner = _create_learner(task, None, algo, dim, options, None, {}, 1)
    summary = progress.finish()
    if final_model is not None:
        if task == "multiclass" and not len(labels):
            raise StreamherdError("no labeled example was read, so the multiclass model has no "
                                  "class; train it on labeled data (no model was written)")
        meta = {
            "algo": algo, "hyperparameters": learner.options, "bits": bits, "bias": bias,
            "normalize": normalize, "task": task,
            "examples": examples_before + progress.labeled,
            "progressive_loss": summary[f"average progressive {progress.loss_name}"],
            "learner": learner.meta(),
        }
        if task == "binary":
            binary = runner.labels if runner is not None else BinaryLabels.from_meta(model_meta)
            meta["labels"] = binary.to_meta()
        elif task == "multiclass":
            meta.update({"multiclass": multiclass, **labels.to_meta()})
        save_model(final_model, meta, learner.state())
    return summary


def _check_writable(path):
    """Fail before training, not after it, when the model cannot be written."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(folder):
        raise StreamherdError(f"cannot write model {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise StreamherdError(f"cannot write model {path}: folder {folder} is not writable")
    if os.path.isdir(path):
        raise StreamherdError(f"cannot write model {path}: it is a folder")


def _format_margins(margins):
    return np.char.mod("%.9g", margins).tolist()


def _format_pairs(names, matrix):
    """'name:value' for every class, one string per row (output formatting only)."""
    if matrix.shape[1] == 0:
        return [""] * matrix.shape[0]
    cells = np.char.add(np.char.add(np.asarray(names, dtype=str), ":"),
                        np.char.mod("%.9g", matrix))
    return [" ".join(row) for row in cells.tolist()]


def predict(model_path, paths, output=None, raw=False, fmt="auto", quiet=False, skip_bad=False,
            block_size=DEFAULT_BLOCK_SIZE, proba=False, scores=False):
    """Write one prediction per example; returns (mistakes, labeled examples) (for regression:
    (sum of squared errors, labeled examples)).

    ``proba``: P(y = +1 | x) of a Gaussian binary model, or every class's probability of being
    the model's argmax for a Gaussian multiclass model, instead of the label. ``scores`` (and
    ``raw`` for a multiclass model): every class's score.
    """
    meta, arrays = load_model(model_path)
    algo = learners.canonical_name(meta["algo"])
    cls, _ = learners.learner_class(algo)
    require_arrays(model_path, arrays, cls.state_arrays)   # the learner's own arrays, too
    task = meta.get("task", "binary")
    mode = meta.get("multiclass")
    learner = _create_learner(task, mode, algo, 1 << meta["bits"], meta["hyperparameters"],
                              arrays, meta.get("learner", {}), len(meta.get("classes", [])))
    if sum([proba, raw, scores]) > 1:
        raise StreamherdError("--proba, --raw and --scores each choose the output; pass one of them")
    if scores and task != "multiclass":
        raise StreamherdError(f"--scores prints every class's score of a multiclass model; "
                              f"{model_path} is a {task} model: use --raw for its margin")
    if proba:
        gaussian = learner.gaussian if task == "multiclass" and mode == "ova" else \
            hasattr(learner, "probabilities")
        if task == "regression" or not gaussian:
            raise StreamherdError(
                f"--proba needs a Gaussian classification model (nherd, arow, cw, scw); "
                f"{model_path} is a {algo} {task} model, which has no class probabilities: use "
                f"--raw{' or --scores' if task == 'multiclass' else ''}")
    normalize = bool(meta.get("normalize", False))
    if task == "multiclass":
        writer = _MulticlassOutput(learner, ClassLabels.from_meta(meta), proba, raw or scores)
    elif task == "regression":
        writer = _RegressionOutput(learner, skip_bad)
    else:
        writer = _BinaryOutput(learner, BinaryLabels.from_meta(meta), proba, raw)

    def on_parser_thread(chunk):
        """Runs on a parser thread (the kernels release the GIL), so both parsers share the
        per-chunk work that does not depend on earlier chunks: scaling, and binary margins."""
        if normalize:
            normalize_rows(chunk.indptr, chunk.values)
        if task == "binary":
            margins = np.empty(chunk.n_examples)
            learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, margins)
            return margins
        return None

    reader = ChunkReader(paths, fmt=fmt, bits=meta["bits"], bias=meta["bias"], skip_bad=skip_bad,
                         block_size=block_size, text_labels=task != "binary",
                         process=on_parser_thread)  # regression: _RegressionOutput checks labels
    sink = open(output, "w", encoding="utf-8") if output is not None else sys.stdout
    try:
        for chunk in reader:
            chunk, values = writer.chunk(chunk)
            if np.any(chunk.tag_start >= 0):
                values = [v if t is None else f"{v} {t}" for v, t in zip(values, chunk.tags())]
            if values:
                sink.write("\n".join(values) + "\n")
        sink.flush()
    finally:
        if output is not None:
            sink.close()
    if not quiet and writer.labeled:
        print(writer.report(), file=sys.stderr)
    return writer.loss, writer.labeled


class _BinaryOutput:
    def __init__(self, learner, labels, proba, raw):
        self.learner, self.proba, self.raw = learner, proba, raw
        self.texts = np.array([labels.text(False), labels.text(True)], dtype=object)
        self.loss = self.labeled = 0

    def chunk(self, chunk):
        margins = chunk.derived  # computed on the parser thread (see predict)
        positive = margins > 0
        if self.proba:
            values = _format_margins(
                self.learner.probabilities(chunk.indptr, chunk.indices, chunk.values))
        else:
            values = (_format_margins(margins) if self.raw
                      else self.texts[positive.astype(np.intp)].tolist())
        has_label = ~np.isnan(chunk.labels)
        self.labeled += int(has_label.sum())
        self.loss += int(np.count_nonzero(positive[has_label] != (chunk.labels[has_label] > 0)))
        return chunk, values

    def report(self):
        return (f"error rate = {self.loss / self.labeled:.6f} ({self.loss} mistakes in "
                f"{self.labeled} labeled examples)")


class _RegressionOutput:
    def __init__(self, learner, skip_bad):
        self.learner, self.skip_bad = learner, skip_bad
        self.loss = 0.0
        self.labeled = 0

    def chunk(self, chunk):
        chunk = numeric_labels_only(chunk, self.skip_bad,
                                    expected="a real number (a regression model)")
        predictions = np.empty(chunk.n_examples)
        self.learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, predictions)
        has_label = ~np.isnan(chunk.labels)
        self.labeled += int(has_label.sum())
        self.loss += float(np.sum((chunk.labels[has_label] - predictions[has_label]) ** 2))
        return chunk, _format_margins(predictions)

    def report(self):
        return (f"average squared loss = {self.loss / self.labeled:.6f} ({self.labeled} labeled "
                f"examples)")


class _MulticlassOutput:
    def __init__(self, learner, labels, proba, scores):
        self.learner, self.labels, self.proba, self.scores = learner, labels, proba, scores
        self.texts = labels.text_array()
        self.loss = self.labeled = 0

    def chunk(self, chunk):
        # labels outside the model's classes get id -2: a mistake, never predicted
        chunk, cls = self.labels.observe(chunk, learning=False)
        n, K = chunk.n_examples, len(self.labels)
        class_scores = np.empty((n, K))
        self.learner.class_scores(chunk.indptr, chunk.indices, chunk.values, class_scores)
        predicted = np.argmax(class_scores, axis=1) if K else np.full(n, -1)
        if self.proba:
            values = _format_pairs(self.labels.texts, self.learner.class_probabilities(
                chunk.indptr, chunk.indices, chunk.values))
        elif self.scores:
            values = _format_pairs(self.labels.texts, class_scores)
        else:
            values = self.texts[predicted + 1].tolist()
        has_label = cls != -1
        self.labeled += int(has_label.sum())
        self.loss += int(np.count_nonzero(predicted[has_label] != cls[has_label]))
        return chunk, values

    def report(self):
        return (f"error rate = {self.loss / self.labeled:.6f} ({self.loss} mistakes in "
                f"{self.labeled} labeled examples)")
