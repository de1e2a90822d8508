"""``train`` and ``predict``: readers, learner, progressive validation and models, put together."""
import os
import sys

import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.io.reader import DEFAULT_BLOCK_SIZE, ChunkReader
from streamherd.labels import BinaryLabels
from streamherd.learners.base import UnstableUpdate
from streamherd.learners.sparse import normalize_rows
from streamherd.model import load_model, save_model
from streamherd.progress import ProgressiveValidation

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


def train(paths, algo=None, options=None, bits=None, bias=None, fmt="auto", final_model=None,
          initial_model=None, quiet=False, skip_bad=False, block_size=DEFAULT_BLOCK_SIZE,
          normalize=None):
    """Stream every example once through the learner; returns the run summary (a dict).

    ``normalize``: scale each example to unit L2 norm (bias included) before predict and update;
    saved in the model, so ``predict`` does the same.
    """
    options = {k: v for k, v in (options or {}).items() if v is not None}
    state = None
    learner_meta = {}
    examples_before = 0
    labels = BinaryLabels()
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
        normalize = saved_normalize
        algo, bits, bias = meta["algo"], meta["bits"], meta["bias"]
        options = {**meta["hyperparameters"], **options}
        learner_meta = meta.get("learner", {})
        examples_before = meta.get("examples", 0)
        labels = BinaryLabels.from_meta(meta)
    algo = learners.canonical_name(algo or learners.DEFAULT_ALGO)
    bits = DEFAULT_BITS if bits is None else bits
    bias = True if bias is None else bias
    normalize = bool(normalize)
    _check_bits(bits)
    cls, _ = learners.learner_class(algo)
    unused = sorted(set(options) - set(cls.hyperparameters))
    if unused:
        flags = ", ".join(f"-{k}" if len(k) == 1 else f"--{k}" for k in unused)
        raise StreamherdError(f"{algo} does not take {flags}; its hyperparameters are: "
                              f"{', '.join(cls.hyperparameters) or 'none'}")
    if final_model is not None:
        _check_writable(final_model)
    learner = learners.create(algo, 1 << bits, options, state, learner_meta)
    reader = ChunkReader(paths, fmt=fmt, bits=bits, bias=bias, skip_bad=skip_bad,
                         block_size=block_size)
    progress = ProgressiveValidation(quiet=quiet, total_bytes=reader.total_bytes)
    for chunk in reader:
        y = labels.observe(chunk)
        margins = np.empty(chunk.n_examples)
        if normalize:
            normalize_rows(chunk.indptr, chunk.values)
        try:
            updates = learner.learn(y, chunk.importance, chunk.indptr, chunk.indices,
                                    chunk.values, margins)
        except UnstableUpdate as e:
            raise StreamherdError(
                f"{chunk.source}:{int(chunk.line_numbers[e.index])}: {e.what}; scale the features "
                f"(--normalize) or lower -C / raise -r") from None
        predicted_positive = margins > 0
        loss = np.where(np.isnan(y), np.nan, (predicted_positive != (y > 0)).astype(np.float64))

        def describe(i, chunk=chunk, predicted_positive=predicted_positive):
            return _label_token(chunk, i), labels.text(bool(predicted_positive[i]))

        progress.add_chunk(chunk.importance, loss, np.diff(chunk.indptr), describe,
                           updates=updates, bad_lines=chunk.bad_lines, bytes_done=reader.bytes_done)
    summary = progress.finish()
    if final_model is not None:
        meta = {
            "algo": algo, "hyperparameters": learner.options, "bits": bits, "bias": bias,
            "normalize": normalize,
            "labels": labels.to_meta(), "examples": examples_before + progress.labeled,
            "progressive_loss": summary[f"average progressive {progress.loss_name}"],
            "learner": learner.meta(),
        }
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


def predict(model_path, paths, output=None, raw=False, fmt="auto", quiet=False, skip_bad=False,
            block_size=DEFAULT_BLOCK_SIZE, proba=False):
    """Write one prediction per example; returns (mistakes, labeled examples).

    ``proba``: write P(y = +1 | x) of a Gaussian model instead of the label.
    """
    meta, arrays = load_model(model_path)
    algo = learners.canonical_name(meta["algo"])
    cls, _ = learners.learner_class(algo)
    load_model(model_path, expected_arrays=cls.state_arrays)
    learner = learners.create(algo, 1 << meta["bits"], meta["hyperparameters"], arrays,
                              meta.get("learner", {}))
    if proba and raw:
        raise StreamherdError("--proba and --raw both choose the output; pass one of them")
    if proba and not hasattr(learner, "probabilities"):
        raise StreamherdError(f"--proba needs a Gaussian model (nherd, arow, cw, scw); {model_path} "
                              f"is a {algo} model, which has no distribution: use --raw for margins")
    normalize = bool(meta.get("normalize", False))
    labels = BinaryLabels.from_meta(meta)

    def margins_of(chunk):
        """Runs on a parser thread (the kernels release the GIL): both parsers predict."""
        if normalize:
            normalize_rows(chunk.indptr, chunk.values)
        margins = np.empty(chunk.n_examples)
        learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, margins)
        return margins

    reader = ChunkReader(paths, fmt=fmt, bits=meta["bits"], bias=meta["bias"], skip_bad=skip_bad,
                         block_size=block_size, process=margins_of)
    sink = open(output, "w", encoding="utf-8") if output is not None else sys.stdout
    mistakes = labeled = 0
    texts = np.array([labels.text(False), labels.text(True)], dtype=object)
    try:
        for chunk in reader:
            margins = chunk.derived
            positive = margins > 0
            if proba:
                values = _format_margins(
                    learner.probabilities(chunk.indptr, chunk.indices, chunk.values))
            else:
                values = (_format_margins(margins) if raw
                          else texts[positive.astype(np.intp)].tolist())
            if np.any(chunk.tag_start >= 0):
                values = [v if t is None else f"{v} {t}" for v, t in zip(values, chunk.tags())]
            if values:
                sink.write("\n".join(values) + "\n")
            has_label = ~np.isnan(chunk.labels)
            labeled += int(has_label.sum())
            mistakes += int(np.count_nonzero(positive[has_label] != (chunk.labels[has_label] > 0)))
        sink.flush()
    finally:
        if output is not None:
            sink.close()
    if not quiet and labeled:
        print(f"error rate = {mistakes / labeled:.6f} ({mistakes} mistakes in {labeled} labeled "
              f"examples)", file=sys.stderr)
    return mistakes, labeled
