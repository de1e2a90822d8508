"""``train`` and ``predict``: readers, learner, progressive validation and models, put together."""
import contextlib
import errno
import os
import sys

import numpy as np

from streamherd import compilation, learners
from streamherd.errors import Interrupted, StreamherdError, say
from streamherd.features import normalize as normalization
from streamherd.features.space import DEFAULT_BITS, FeatureSpace
from streamherd.io.reader import (DEFAULT_BLOCK_SIZE, TRAINING_WORKERS, ChunkReader,
                                  numeric_labels_only)
from streamherd.labels import BinaryLabels, ClassLabels, class_name_rows
from streamherd.learners.base import UnstableUpdate
from streamherd.model import load_model, save_model
from streamherd.outputs import (check_inputs, check_stdout_output, replaced_on_success,
                                resolve_output)
from streamherd.progress import ProgressiveValidation, zero_one_loss

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

    def step(self, chunk):
        self.chunk = chunk = numeric_labels_only(chunk, self.skip_bad)
        y = self.labels.observe(chunk)
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

    def step(self, chunk):
        self.chunk = chunk = numeric_labels_only(
            chunk, self.skip_bad, expected="a real number (--loss squared is regression)")
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

    def step(self, chunk):
        chunk, cls = self.labels.observe(chunk, self.skip_bad)
        self.chunk = chunk
        self.learner.grow(len(self.labels))
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


def _auto_task(chunk):
    """Without --multiclass, --classes or --loss, the first chunk decides. Its numeric labels
    are a binary labelling when they have at most one value > 0 and one <= 0, or a negative
    one (a -1 marks a +1/-1 file). The stream is binary when they are, and class names (labels
    that are not numbers; a damaged number such as nan or 1e400 is no class name, see
    labels.looks_like_number) are fewer than numeric labels: a handful of typos in a binary
    file are bad lines (reported, or skipped with --skip-bad), as the same typo later is.
    Otherwise it is multiclass (0..9, 1..3, 1 and 7, sports/politics). A third label later in
    a binary stream is an error that suggests --multiclass."""
    names = int(class_name_rows(chunk).sum())
    labels = np.unique(chunk.labels[~np.isnan(chunk.labels)])
    binary_labelling = (((labels > 0).sum() <= 1 and (labels <= 0).sum() <= 1)
                        or (labels.size > 0 and labels.min() < 0))
    if names == 0:
        return "binary" if binary_labelling else "multiclass"
    numeric_rows = int((~np.isnan(chunk.labels)).sum())
    return "binary" if binary_labelling and names < numeric_rows else "multiclass"


def _create_learner(task, mode, algo, dim, options, state, learner_meta, blocks):
    if task == "multiclass" and mode == "ova":
        from streamherd.learners.reductions.ova import OneVersusAll

        return OneVersusAll(algo, dim, options, state, learner_meta, blocks=blocks)
    return learners.create(algo, dim, options, state, learner_meta,
                           blocks=blocks if task == "multiclass" else 1, task=task)


def train(paths, algo=None, options=None, bits=None, bias=None, fmt="auto", final_model=None,
          initial_model=None, quiet=False, skip_bad=False, block_size=DEFAULT_BLOCK_SIZE,
          normalize=None, multiclass=None, classes=None, loss=None, allow_empty=False):
    """Stream every example once through the learner; returns the run summary (a dict).

    ``normalize``: scale each example's features to unit L2 norm, the bias kept at 1, before
    predict and update (features/normalize.py); saved in the model, so ``predict`` does the
    same. ``multiclass``: None (binary, or joint
    multiclass when the data has more than two classes, see _auto_task), "joint" or "ova";
    ``classes``: a fixed class list ("1,2,3"); ``loss``: "hinge" (classification) or "squared"
    (regression). A run that learns from no labeled example fails (exit 2) and writes no model,
    unless ``allow_empty``: then the model (the initial one, or an untrained one) is written.
    Inputs and the model's path are checked before any work; the model is written to a
    temporary file that replaces ``final_model`` only at the end of a successful run.
    """
    paths = list(paths or ["-"])
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
    check_inputs(paths)
    # -i and -f may name the same model (continue training in place, as VW's -i m -f m): it is
    # read whole before training and replaced only at the end, so an input file is safe.
    model_path = resolve_output(final_model, paths, "model") if final_model is not None else None
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
        saved_rule = normalization.rule_of_meta(meta.get("normalize"))
        saved_normalize = saved_rule != normalization.NONE
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
        normalize = saved_rule
        algo, bits, bias = meta["algo"], meta["bits"], meta["bias"]
        options = {**meta["hyperparameters"], **options}
        learner_meta = meta.get("learner", {})
        examples_before = meta.get("examples", 0)
        model_meta = meta
    algo = learners.canonical_name(algo or learners.DEFAULT_ALGO)
    bits = DEFAULT_BITS if bits is None else bits
    bias = True if bias is None else bias
    if not isinstance(normalize, str):   # a new model: the flag
        normalize = normalization.L2 if normalize else normalization.NONE
    space = FeatureSpace(bits, bias, normalize)
    variant = learners.spec(algo)
    if task == "regression" and variant.regression is None:
        with_regression = ", ".join(name for name, other in learners.REGISTRY.items()
                                    if other.regression is not None)
        raise StreamherdError(f"{algo} has no squared-loss form; --loss squared works with "
                              f"{with_regression}")
    # every hyperparameter checked (and a flag the learner does not take refused) before any input
    options = variant.options(options, task or "binary")
    labels = None
    if task == "multiclass":
        multiclass = multiclass or "joint"
        labels = (ClassLabels.from_meta(model_meta) if initial_model is not None
                  else ClassLabels.parse(classes) if classes is not None else ClassLabels())
    dim = 1 << bits
    chosen_task = task
    # created before any input, so that a bad hyperparameter fails at once; while the task is
    # undecided (_auto_task), with no class block: nothing is allocated until the first chunk
    learner = _create_learner(task or "multiclass", multiclass, algo, dim, options, state,
                              learner_meta, len(labels) if labels is not None else 0)
    reader = ChunkReader(paths, fmt=fmt, features=space, skip_bad=skip_bad,
                         block_size=block_size, workers=TRAINING_WORKERS,
                         text_labels=task in (None, "multiclass"))
    progress = ProgressiveValidation(quiet=quiet, total_bytes=reader.total_bytes,
                                     compile_watch=compilation.watch(quiet))
    runner = None
    announced = False
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
            chunk, loss, describe, updates = runner.step(chunk)
        except UnstableUpdate as e:   # e.index: a row of the chunk the runner learned from
            raise StreamherdError(
                f"{chunk.source}:{int(runner.chunk.line_numbers[e.index])}: {e.what}; scale "
                f"the features (--normalize){_gentler(learner.options)}; no model was written"
            ) from None
        if not announced and chunk.n_examples:
            announced = True
            progress.preamble(_preamble(final_model, algo, learner.options,
                                        bits, task, multiclass, labels, runner,
                                        chosen_task is None, paths))
        progress.add_chunk(chunk.importance, loss, chunk.indptr, describe,
                           updates=updates, bad_lines=chunk.bad_lines,
                           bytes_done=reader.bytes_done)
    if task is None:   # no input at all
        task = "binary"
        learner = _create_learner(task, None, algo, dim, options, None, {}, 1)
    _check_skipped(progress.bad_lines, progress.examples, skip_bad, reader.formats_seen,
                   "no model was written")
    if progress.labeled == 0 and not allow_empty:
        kept = f" ({final_model} was left as it was)" if model_path and \
            os.path.exists(model_path) else ""
        raise StreamherdError(
            f"no labeled example was read from {_names(paths)}, so nothing was learned"
            f"{'; no model was written' + kept if final_model is not None else ''}; check the "
            f"input, or pass --allow-empty to write the model anyway")
    summary = progress.finish()
    if progress.labeled and not progress.updates and not quiet:
        progress.note(f"no update was made: every labeled example was predicted with margin to "
                      f"spare or had importance 0, so the model is the {'initial' if initial_model is not None else 'untrained'} one")
    if final_model is not None:
        if task == "multiclass" and not len(labels):
            raise StreamherdError("no labeled example was read, so the multiclass model has no "
                                  "class; train it on labeled data (no model was written)")
        meta = {
            "algo": algo, "hyperparameters": learner.options, **space.to_meta(), "task": task,
            "examples": examples_before + progress.labeled,
            "progressive_loss": summary[f"average progressive {progress.loss_name}"],
            "learner": learner.meta(),
        }
        if task == "binary":
            binary = runner.labels if runner is not None else BinaryLabels.from_meta(model_meta)
            meta["labels"] = binary.to_meta()
        elif task == "multiclass":
            meta.update({"multiclass": multiclass, **labels.to_meta()})
        save_model(model_path, meta, learner.state())
    return summary


def _gentler(hyperparameters):
    """The hyperparameter change that makes the learner's steps smaller, if it has one."""
    hints = [hint for name, hint in (("C", "lower -C"), ("r", "raise -r"))
             if name in hyperparameters]
    return f" or {' / '.join(hints)}" if hints else ""


def _names(paths):
    names = ["standard input" if p == "-" else str(p) for p in paths]
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def _check_skipped(skipped, examples, skip_bad, formats, consequence):
    """--skip-bad skips a few damaged lines; when most lines are skipped, the data is not what
    the run thinks it is (another format, a damaged file) and success would be a lie."""
    if skip_bad and skipped > examples:
        raise StreamherdError(
            f"{skipped} of {skipped + examples} example lines were malformed and skipped (more "
            f"than half); {consequence}. Check that the input is "
            f"{'/'.join(sorted(formats)) or 'svmlight or VW'} text (--format), and run without "
            f"--skip-bad to see the first bad line")


def _task_text(task, multiclass, labels, runner, automatic):
    if task == "binary":
        known = runner.labels if runner is not None else BinaryLabels()
        text = f"binary (labels {known.text(False)}/{known.text(True)})"
    elif task == "multiclass":
        text = (f"multiclass {multiclass} ({len(labels)} fixed classes)" if labels.fixed
                else f"multiclass {multiclass} (classes as they appear)")
    else:
        text = "regression (squared loss)"
    if automatic:
        text += ", chosen from the labels: pass --multiclass or --loss squared to choose"
    return text


def _preamble(final_model, algo, hyperparameters, bits, task, multiclass, labels, runner,
              automatic, paths):
    """What VW prints before its table: where the model goes, the learner, and the task."""
    lines = []
    if final_model:
        lines.append(("final_regressor", final_model))
    settings = ", ".join(f"{k} = {v:g}" for k, v in hyperparameters.items())
    lines += [("algorithm", f"{algo}{' (' + settings + ')' if settings else ''}"),
              ("Num weight bits", bits),
              ("task", _task_text(task, multiclass, labels, runner, automatic)),
              ("Reading datafile", _names(paths)),
              ("num sources", len(paths))]
    return lines


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
    ``raw`` for a multiclass model): every class's score. With ``skip_bad``, each malformed line
    skipped gets an empty output line, so that output line k is still input example k.
    ``output``: written to a temporary file that replaces it at the end of a successful run.
    """
    paths = list(paths or ["-"])
    check_inputs(paths)   # the model: load_model's own messages
    if output is not None:
        output_path = resolve_output(output, [*paths, os.fspath(model_path)], "predictions")
    else:
        check_stdout_output(paths)
    meta, arrays = load_model(model_path)
    algo = learners.canonical_name(meta["algo"])
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
    if task == "multiclass":
        writer = _MulticlassOutput(learner, ClassLabels.from_meta(meta), proba, raw or scores)
    elif task == "regression":
        writer = _RegressionOutput(learner, skip_bad)
    else:
        writer = _BinaryOutput(learner, BinaryLabels.from_meta(meta), proba, raw)

    def on_parser_thread(chunk):
        """Runs on a parser thread (the kernels release the GIL), so both parsers share the
        per-chunk work that does not depend on earlier chunks: binary margins."""
        if task == "binary":
            margins = np.empty(chunk.n_examples)
            learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, margins)
            return margins
        return None

    compilation.watch(quiet)
    reader = ChunkReader(paths, fmt=fmt, features=FeatureSpace.from_meta(meta), skip_bad=skip_bad,
                         block_size=block_size, text_labels=task != "binary",
                         process=on_parser_thread)  # regression: _RegressionOutput checks labels
    destination = "standard output" if output is None else str(output)
    written = skipped = 0
    try:
        with (replaced_on_success(output_path) if output is not None
              else contextlib.nullcontext(sys.stdout)) as sink:
            for chunk in reader:
                chunk, values = writer.chunk(chunk)
                if np.any(chunk.tag_start >= 0):
                    values = [v if t is None else f"{v} {t}" for v, t in zip(values, chunk.tags())]
                if skip_bad:
                    skipped += chunk.bad_lines
                    values = _with_skipped_lines(chunk, values)
                if values:
                    sink.write("\n".join(values) + "\n")
                    written += len(values)
            _check_skipped(skipped, writer.examples, skip_bad, reader.formats_seen,
                           f"no predictions were written{' to ' + str(output) if output else ''}")
            if writer.examples == 0:
                raise StreamherdError(
                    f"no example was read from {_names(paths)}, so there is nothing to predict"
                    f"{'; ' + str(output) + ' was left as it was' if output is not None else ''}; "
                    f"check the input")
            sink.flush()
    except KeyboardInterrupt as e:
        raise Interrupted(getattr(e, "exit_code", 130), f"interrupted after {written} "
                          f"predictions{'; ' + str(output) + ' was left as it was' if output else ''}"
                          ) from None
    except BrokenPipeError:
        raise   # the reader of stdout went away ('| head'): the CLI ends quietly
    except OSError as e:
        raise StreamherdError(f"cannot write the predictions to {destination}: "
                              f"{e.strerror or e}; {'free some space' if e.errno == errno.ENOSPC else 'check where they go'}"
                              f"{' (' + str(output) + ' was left as it was)' if output else ''}") from None
    if not quiet and skipped:
        say(f"{skipped} malformed lines skipped (an empty output line for each)")
    if not quiet and writer.labeled:
        say(writer.report())
    return writer.loss, writer.labeled


def _with_skipped_lines(chunk, values):
    """The output values with an empty line at the place of each skipped malformed line (rows
    and skipped lines in file line order)."""
    skipped = chunk.bad_line_numbers
    if not len(skipped):
        return values
    order = np.argsort(np.concatenate([chunk.line_numbers, skipped]), kind="stable")
    return np.array([*values, *([""] * len(skipped))], dtype=object)[order].tolist()


class _BinaryOutput:
    def __init__(self, learner, labels, proba, raw):
        self.learner, self.proba, self.raw = learner, proba, raw
        self.texts = np.array([labels.text(False), labels.text(True)], dtype=object)
        self.loss = self.labeled = self.examples = 0

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
        self.examples += chunk.n_examples
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
        self.labeled = self.examples = 0

    def chunk(self, chunk):
        chunk = numeric_labels_only(chunk, self.skip_bad,
                                    expected="a real number (a regression model)")
        predictions = np.empty(chunk.n_examples)
        self.learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, predictions)
        has_label = ~np.isnan(chunk.labels)
        self.examples += chunk.n_examples
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
        self.loss = self.labeled = self.examples = 0

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
        self.examples += n
        self.labeled += int(has_label.sum())
        self.loss += int(np.count_nonzero(predicted[has_label] != cls[has_label]))
        return chunk, values

    def report(self):
        return (f"error rate = {self.loss / self.labeled:.6f} ({self.loss} mistakes in "
                f"{self.labeled} labeled examples)")
