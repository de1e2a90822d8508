"""``streamherd inspect MODEL``: what a model has learned, slot by slot.

Every slot whose weight is not zero, with that weight (what predictions read: the mean, or the
average of avg-perceptron) and, for the Gaussian learners, its variance (the diagonal of Sigma
for a ``-full`` one); for a multiclass model one row per class and slot. Sorted by |weight|,
largest first (ties by class, then slot). The bias, VW's constant feature, is named ``Constant``
as VW's ``--invert_hash`` names it; ``--names DATA...`` names the other slots too, by the features
of those files that hash there (VW's audit spelling: ``ns^name``, crosses ``a^x*b^y``), without
retraining. Output: an aligned table (default), ``--tsv`` or ``--json``
(one object per row), to stdout.

    >>> rows = weight_rows({"bits": 2, "bias": False}, {"mean": np.array([0.0, -2.0, 0.5, 0.0])})
    >>> [(int(r["slot"]), float(r["weight"])) for r in rows]
    [(1, -2.0), (2, 0.5)]
"""
import json
import math

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.learners.base import prediction_weights
from streamherd.outputs import standard_output

ROW = np.dtype([("slot", np.int64), ("block", np.int64), ("weight", np.float64),
                ("variance", np.float64)])
FORMATS = ("table", "tsv", "json")


def _variances(arrays, size):
    """The variance of each weight (Gaussian learners), else None: the diagonal of Sigma, of
    each class's block of it for a one-versus-all stack of (K d) x d matrices."""
    if "variance" in arrays:
        return arrays["variance"]
    if "covariance" not in arrays:
        return None
    covariance = arrays["covariance"]
    rows, columns = covariance.shape
    blocks = covariance.reshape(rows // columns, columns, columns)
    variances = np.diagonal(blocks, axis1=1, axis2=2).reshape(-1)
    assert len(variances) == size
    return variances


def weight_rows(meta, arrays):
    """The rows of the model's non-zero weights (dtype ROW: slot, class block, weight, variance
    (NaN when the learner keeps none)), sorted by |weight| descending, then block and slot."""
    dim = 1 << meta["bits"]
    weights = prediction_weights(arrays)
    variances = _variances(arrays, len(weights))
    where = np.flatnonzero(weights)
    rows = np.empty(len(where), ROW)
    rows["slot"] = where % dim
    rows["block"] = where // dim
    rows["weight"] = weights[where]
    rows["variance"] = variances[where] if variances is not None else np.nan
    order = np.lexsort((rows["slot"], rows["block"], -np.abs(rows["weight"])))
    return rows[order]


def sparse_weight_rows(meta, vectors):
    """weight_rows of a model read as stored (container.sparse_vectors: a state too large to
    build), the same rows; None when its weights' fresh value is not 0 (every slot would be a
    row)."""
    name = "average" if "average" in vectors else "mean"
    slots, values, fill = vectors[name]
    if fill != 0:
        return None
    dim = 1 << meta["bits"]
    where = slots[values != 0]
    rows = np.empty(len(where), ROW)
    rows["slot"] = where % dim
    rows["block"] = where // dim
    rows["weight"] = values[values != 0]
    rows["variance"] = np.nan
    if "variance" in vectors:
        stored, variances, variance_fill = vectors["variance"]
        rows["variance"] = variance_fill   # a slot not stored holds the fresh value
        if len(stored):
            at = np.minimum(np.searchsorted(stored, where), len(stored) - 1)
            rows["variance"] = np.where(stored[at] == where, variances[at], variance_fill)
    order = np.lexsort((rows["slot"], rows["block"], -np.abs(rows["weight"])))
    return rows[order]


def _feature_names(meta, slots, data=None):
    """What is known of each slot's feature: ``Constant`` for the bias slot, else empty; with
    ``data`` (paths), the names of the features of those files that hash to it, as VW's audit
    spells them (audit.py), blank-separated when several collide there."""
    from streamherd.audit import feature_names
    from streamherd.features.space import FeatureSpace

    space = FeatureSpace.from_meta(meta)
    if not data:
        return np.where(space.bias & (slots == space.bias_slot), "Constant", "")
    wanted = np.zeros(space.dim, bool)
    wanted[slots] = True
    found = feature_names(data, space, wanted=wanted)
    return np.array([" ".join(found.get(slot, ())) for slot in slots.tolist()], dtype=object)


def inspect_model(path, fmt="table", top=None, out=None, data=None):
    """Write the model's weight rows to ``out`` (stdout) in ``fmt``; at most ``top`` rows; the
    features named from the files ``data`` when given."""
    from streamherd.model import load_model
    from streamherd.model.container import StateTooLarge, sparse_vectors

    if fmt not in FORMATS:
        raise StreamherdError(f"unknown inspect format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if top is not None and top < 1:
        raise StreamherdError(f"--top must be at least 1, got {top}")
    try:
        meta, arrays = load_model(path)
        rows = weight_rows(meta, arrays)[:top]
        kept = arrays
    except StateTooLarge as too_large:   # its rows, from what the file stores
        sparse = sparse_vectors(path)
        rows = sparse_weight_rows(*sparse) if sparse is not None else None
        if rows is None:
            raise too_large from None
        meta, kept = sparse
        rows = rows[:top]
    classes = meta.get("classes") if meta.get("task") == "multiclass" else None
    columns = {"slot": rows["slot"], "feature": _feature_names(meta, rows["slot"], data)}
    if classes is not None:
        columns["class"] = np.array([str(c) for c in classes], dtype=object)[rows["block"]]
    columns["weight"] = rows["weight"]
    if "variance" in kept or "covariance" in kept:
        columns["variance"] = rows["variance"]
    if out is not None:
        _WRITERS[fmt](columns, len(rows), out)
        return
    with standard_output("weights") as out:
        _WRITERS[fmt](columns, len(rows), out)


def _text(value):
    if isinstance(value, (float, np.floating)):
        return repr(float(value))   # the shortest text that reads back as the same number
    return str(value)


def _write_tsv(columns, n, out):
    out.write("\t".join(columns) + "\n")
    texts = [[_text(v) for v in values] for values in columns.values()]
    out.writelines("\t".join(row) + "\n" for row in zip(*texts))


def _write_table(columns, n, out):
    texts = [[name, *(_text(v) for v in values)] for name, values in columns.items()]
    widths = [max(map(len, column)) for column in texts]
    for row in zip(*texts):
        out.write("  ".join(cell.rjust(width) if k != 1 else cell.ljust(width)
                            for k, (cell, width) in enumerate(zip(row, widths))).rstrip() + "\n")


def _json_value(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return str(value)


def _write_json(columns, n, out):
    names = list(columns)
    for k in range(n):
        out.write(json.dumps({name: _json_value(columns[name][k]) for name in names}) + "\n")


_WRITERS = {"table": _write_table, "tsv": _write_tsv, "json": _write_json}
