"""Models as ``.npz``: a JSON ``meta`` string, ``mean`` and the learner's named state arrays.

Written atomically (temporary file in the target's folder, then rename), so a failed or
interrupted run never leaves a half-written or clobbered model. Loaded with
``allow_pickle=False``, and checked whole before anything uses it (``load_model``): every key of
the meta with its type and range, and every array with its name, dtype, full shape and values. So
every way a file can fail to be a model is a one-line error naming the file, never a traceback
deep in training or prediction.
"""
import json
import math
import os
import reprlib
import zipfile
import zlib

import numpy as np

from streamherd import __version__
from streamherd.errors import StreamherdError
from streamherd.outputs import replaced_on_success
from streamherd.tasks import KINDS, MULTICLASS_MODES

# Version 2 added multiclass and regression models (meta "task", "classes", "multiclass"); a
# version 1 file is a binary model, read as before.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_MARKER = "streamherd-model"

# state arrays that are matrices over the slots (the full-covariance learners), the others are
# vectors of one entry per slot
_MATRICES = ("covariance", "inverse")
# arrays whose entries (matrices: whose diagonal) must be > 0: variances, the diagonal of
# a I + S (sop), and the diagonals of Sigma and of A^-1 (full learners)
_POSITIVE = ("variance", "diagonal", "covariance", "inverse")
# the scalars of a learner's own meta (``Learner.meta()``), by algorithm; the others have none
_LEARNER_SCALARS = {"avg-perceptron": ("examples_seen",)}
# what breaks a token in the data files: a class name read from data never holds one
_BLANKS = " \t\r\n"
_INT64_MAX = 2 ** 63 - 1

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxdict = 4
_short.maxlevel = 2


def save_model(path, meta, arrays):
    """Write the model to a temporary file beside ``path`` that replaces it only once written
    whole (outputs.replaced_on_success)."""
    meta = {"format": _MARKER, "format_version": FORMAT_VERSION, "streamherd_version": __version__,
            **meta}
    path = os.fspath(path)
    try:
        with replaced_on_success(path, "wb", what="model") as f:
            np.savez(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    except OSError as e:
        raise StreamherdError(f"cannot write model {path}: {e.strerror}") from None


def require_arrays(path, arrays, names):
    """A one-line error when the model at ``path`` lacks one of the arrays ``names``.

    ``load_model`` already requires exactly the learner's arrays; this stays for callers that
    check a name of their own."""
    for name in names:
        if name not in arrays:
            raise StreamherdError(f"{os.fspath(path)} is damaged: it has no '{name}' array")


# errors of reading a member of a damaged or hostile archive (MemoryError: a header that claims
# an enormous array or meta)
_READ_ERRORS = (KeyError, ValueError, zipfile.BadZipFile, EOFError, OSError, zlib.error,
                MemoryError, RecursionError, UnicodeError)


def load_model(path, expected_arrays=None):
    """Returns (meta, arrays), exactly as saved. Every way a file can fail to be a model is a
    one-line error: not an .npz, not streamherd's, a newer format, or damaged (a meta key missing
    or of the wrong type or range, an array missing, unknown, of the wrong dtype or shape, or
    holding values the learner cannot use)."""
    path = os.fspath(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise StreamherdError(f"model {path} does not exist; train one with "
                              f"'streamherd train ... -f {path}'") from None
    except OSError as e:
        raise StreamherdError(f"cannot read model {path}: {e.strerror or e}") from None
    except (ValueError, zipfile.BadZipFile, EOFError, zlib.error, MemoryError):
        raise StreamherdError(f"{path} is not a streamherd model (not an .npz archive)") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise StreamherdError(f"{path} is not a streamherd model (a .npy array, not an .npz "
                              f"archive)")
    with archive:
        meta = _read_meta(path, archive)
        shapes, what = _check_meta(path, meta)
        arrays = _read_arrays(path, archive, shapes, what)
    _check_values(path, meta, arrays)
    require_arrays(path, arrays, expected_arrays or [])
    return meta, arrays


# ---------------------------------------------------------------- the meta

def _read_meta(path, archive):
    """The meta as a dict, with a streamherd marker and a readable format version."""
    not_ours = f"{path} is not a streamherd model"
    if "meta" not in archive.files:
        raise StreamherdError(f"{not_ours} (no readable 'meta' entry)")
    try:
        entry = archive["meta"]
    except _READ_ERRORS:
        raise StreamherdError(f"{not_ours} (no readable 'meta' entry)") from None
    if not isinstance(entry, np.ndarray) or entry.shape != () or entry.dtype.kind != "U":
        raise StreamherdError(f"{not_ours} (its 'meta' is not a JSON text)")
    try:
        text = entry.item()
        text.encode("utf-8")
    except _READ_ERRORS:
        raise StreamherdError(f"{not_ours} (its 'meta' is not UTF-8 text)") from None
    try:
        meta = json.loads(text)
    except RecursionError:
        raise StreamherdError(f"{not_ours} (its 'meta' is JSON nested too deeply)") from None
    except (ValueError, MemoryError):
        raise StreamherdError(f"{not_ours} (its 'meta' is not JSON)") from None
    if not isinstance(meta, dict) or meta.get("format") != _MARKER:
        raise StreamherdError(f"{not_ours} (its 'meta' is not streamherd's)")
    version = meta.get("format_version")
    if not _is_int(version) or version not in READABLE_VERSIONS:
        raise StreamherdError(
            f"{path} has model format version {_show(version)}, this streamherd "
            f"({__version__}) reads versions {READABLE_VERSIONS[0]} to {FORMAT_VERSION}; "
            f"retrain it or use the matching version")
    return meta


def _show(value):
    """A value for a message: short, one line, safe for any nesting."""
    return _short.repr(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value):
    """A JSON number (not a bool) that a float can hold (NaN and infinity included)."""
    if isinstance(value, float):
        return True
    if not _is_int(value):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _is_finite(value):
    return _is_real(value) and math.isfinite(value)


class _Meta:
    """Checks of one model's meta; each failure is a one-line 'PATH is damaged: ...'."""

    def __init__(self, path, meta):
        self.path, self.meta = path, meta

    def damaged(self, what):
        return StreamherdError(f"{self.path} is damaged: {what}")

    def get(self, key, check, expected, required=True, default=None):
        """meta[key] after ``check(value)``; absent: an error, or ``default``."""
        if key not in self.meta:
            if required:
                raise self.damaged(f"its meta has no '{key}'")
            return default
        value = self.meta[key]
        if not check(value):
            raise self.damaged(f"'{key}' in its meta is {_show(value)}, expected {expected}")
        return value


def _check_meta(path, meta):
    """Checks every key of the meta; returns the arrays the model must hold (name -> shape) and
    what model it is (for messages)."""
    from streamherd import learners
    from streamherd.features.space import MAX_BITS

    m = _Meta(path, meta)
    m.get("streamherd_version", lambda v: isinstance(v, str), "a version string",
          required=False)
    # training writes the canonical name (never an alias: ``train -i`` compares it with one)
    name = m.get("algo", lambda v: isinstance(v, str), "the name of an algorithm")
    if name not in learners.REGISTRY:
        raise m.damaged(f"'algo' in its meta is {_show(name)}, which is no streamherd algorithm "
                        f"(they are {', '.join(learners.REGISTRY)})")
    cls = learners.learner_class(name)
    variant = learners.spec(name)
    task = m.get("task", lambda v: v in KINDS, f"one of {', '.join(KINDS)}", required=False,
                 default="binary")
    if task != "binary" and meta["format_version"] == 1:
        raise m.damaged(f"it is a format-1 model, which is binary, but its meta says task "
                        f"{task!r}")
    if task == "regression" and variant.regression is None:
        raise m.damaged(f"it is a regression model of {name}, which has no squared-loss form")
    bits = m.get("bits", lambda v: _is_int(v) and 1 <= v <= MAX_BITS,
                 f"an integer from 1 to {MAX_BITS}")
    m.get("bias", lambda v: isinstance(v, bool), "true or false")
    # "l2": features to unit norm, bias kept; true: the rule before it, bias scaled too
    # (features/normalize.py)
    m.get("normalize", lambda v: isinstance(v, bool) or v == "l2", 'true, false or "l2"',
          required=False)
    for key in ("quadratic", "cubic", "interactions"):   # FeatureSpace's namespace flags
        m.get(key, lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
              "a list of interactions", required=False)
    for key in ("ignore", "keep", "ignore_linear"):
        m.get(key, lambda v: isinstance(v, str), "a string of namespace letters",
              required=False)
    _check_hyperparameters(m, variant, task)
    m.get("examples", lambda v: _is_int(v) and v >= 0, "a count of examples", required=False)
    m.get("progressive_loss", lambda v: v is None or _is_real(v), "a number or null",
          required=False)

    classes, mode = 1, None
    if task == "multiclass":
        mode = m.get("multiclass", lambda v: v in MULTICLASS_MODES,
                     f"one of {', '.join(MULTICLASS_MODES)}")
        classes = len(_check_classes(m))
        m.get("fixed_classes", lambda v: isinstance(v, bool), "true or false", required=False)
    else:
        m.get("multiclass", lambda v: v is None, f"absent in a {task} model", required=False)
    if task == "binary":
        _check_binary_labels(m)
    _check_learner_meta(m, name, mode, classes)

    dim = 1 << bits
    rows = classes * dim
    # a full matrix spans every slot of every class block, but one-versus-all stacks the K
    # per-class 2^b x 2^b matrices: (K 2^b) x 2^b
    columns = dim if mode == "ova" else rows
    shapes = {array: ((rows, columns) if array in _MATRICES else (rows,))
              for array in cls.saved_arrays(variant.covariance)}
    model = f"{name}, bits={bits}"
    if task == "multiclass":
        model += f", {classes} classes, {'one-versus-all' if mode == 'ova' else 'joint'}"
    return shapes, (name, model)


def _check_hyperparameters(m, variant, task):
    """Each hyperparameter one the learner takes for ``task``, a finite number in its declared
    range (learners/spec.py); a missing one takes its default."""
    options = m.get("hyperparameters", lambda v: isinstance(v, dict),
                    "a table of hyperparameters")
    accepted = {h.name for h in variant.accepted(task)}
    for key, value in options.items():
        if key not in accepted:
            raise m.damaged(f"its meta has the hyperparameter {_show(key)}, which {variant.name} "
                            f"{'(regression) ' if task == 'regression' else ''}does not take "
                            f"(it takes {', '.join(sorted(accepted)) or 'none'})")
        if not _is_finite(value):
            raise m.damaged(f"hyperparameter {key} in its meta is {_show(value)}, expected a "
                            f"finite number")
    try:
        variant.options(options, task)
    except StreamherdError as e:
        raise m.damaged(f"its hyperparameters are out of range ({e})") from None


def _check_classes(m):
    from streamherd.labels import ClassLabels

    classes = m.get("classes", lambda v: isinstance(v, list) and len(v) > 0,
                    "a list of class names")
    for text in classes:
        if not (isinstance(text, str) and text and not any(c in _BLANKS for c in text)
                and _encodes(text)):
            raise m.damaged(f"its class list holds {_show(text)}, expected a class name (a "
                            f"non-empty text without blanks)")
    try:
        ClassLabels(classes)
    except StreamherdError:   # two names of one class (e.g. "1" and "1.0")
        raise m.damaged(f"its class list names a class twice: {_show(classes)}") from None
    return classes


def _encodes(text):
    try:
        text.encode("utf-8")
    except UnicodeError:
        return False
    return True


def _check_binary_labels(m):
    labels = m.get("labels", lambda v: v is None or isinstance(v, dict),
                   "the two label values", required=False)
    if not labels:
        return
    unknown = sorted(set(labels) - {"negative", "positive"}, key=str)
    if unknown:
        raise m.damaged(f"its binary labels hold {_show(unknown[0])}, expected only 'negative' "
                        f"and 'positive'")
    for side, ok in (("negative", lambda v: v <= 0), ("positive", lambda v: v > 0)):
        value = labels.get(side)
        if value is not None and not (_is_finite(value) and ok(value)):
            raise m.damaged(f"its {side} label is {_show(value)}, expected a finite number "
                            f"{'<= 0' if side == 'negative' else '> 0'} or null")


def _check_learner_meta(m, name, mode, classes):
    """The learner's own scalars (``Learner.meta()``); one-versus-all: one set per class."""
    learner = m.get("learner", lambda v: isinstance(v, dict), "a table", required=False,
                    default={})
    if mode == "ova":
        if set(learner) != {"ova"} or not isinstance(learner["ova"], list) \
                or len(learner["ova"]) != classes:
            raise m.damaged(f"'learner' in its meta is {_show(learner)}, expected "
                            f"{{\"ova\": [...]}} with one entry per class ({classes})")
        for entry in learner["ova"]:
            _check_learner_scalars(m, name, entry)
    else:
        _check_learner_scalars(m, name, learner)


def _check_learner_scalars(m, name, scalars):
    expected = _LEARNER_SCALARS.get(name, ())
    if not isinstance(scalars, dict) or set(scalars) != set(expected):
        want = ", ".join(expected) or "an empty table"
        raise m.damaged(f"the {name} learner's meta is {_show(scalars)}, expected {want}")
    for key in expected:   # every learner scalar so far is a count (the averaged perceptron's)
        value = scalars[key]
        if not (_is_int(value) and 0 <= value <= _INT64_MAX):
            raise m.damaged(f"{key} in its learner meta is {_show(value)}, expected a count")


# ---------------------------------------------------------------- the arrays

def _read_arrays(path, archive, shapes, what):
    """The arrays ``shapes`` names, each float64 of its shape; headers are checked before any
    data is read, so a damaged header cannot ask for an enormous allocation. ``what``: (algorithm,
    description of the model) for messages."""
    algo, model = what
    names = [name for name in archive.files if name != "meta"]
    for name in names:
        if name not in shapes:
            raise StreamherdError(
                f"{path} is damaged: it holds an unknown array {_show(name)} ({algo} models "
                f"hold {', '.join(shapes)})")
    for name in shapes:
        require_arrays(path, names, [name])
    arrays = {}
    for name, shape in shapes.items():
        header = _array_header(archive, name)
        if header is None:
            raise StreamherdError(f"{path} is damaged: array '{name}' cannot be read")
        found, dtype = header
        if found != shape or dtype != np.float64:
            raise StreamherdError(
                f"{path} is damaged: array '{name}' has shape {found} and dtype {dtype}, "
                f"expected {shape} float64 ({model})")
        try:
            arrays[name] = archive[name]
        except MemoryError:
            raise StreamherdError(f"cannot read model {path}: its array '{name}' of shape "
                                  f"{shape} does not fit in memory") from None
        except _READ_ERRORS:
            raise StreamherdError(f"{path} is damaged: array '{name}' cannot be read") from None
        if not isinstance(arrays[name], np.ndarray) or arrays[name].shape != shape \
                or arrays[name].dtype != np.float64:
            raise StreamherdError(f"{path} is damaged: array '{name}' cannot be read")
    return arrays


def _array_header(archive, name):
    """(shape, dtype) from the .npy header of member ``name``, or None when it has none."""
    member = name + ".npy"
    try:
        if member not in archive.zip.namelist():
            return None
        with archive.zip.open(member) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                return None
    except _READ_ERRORS:
        return None
    return shape, dtype


def _check_values(path, meta, arrays):
    """Finite everywhere; variances and the diagonals of the covariance (and of sop's A and
    A^-1) > 0; the averaged perceptron's running sum finite."""
    for name, array in arrays.items():
        if not np.all(np.isfinite(array)):
            raise StreamherdError(f"{path} is damaged: array '{name}' holds NaN or infinity")
        if name in _POSITIVE:
            values = array if array.ndim == 1 else _diagonals(array)
            if not np.all(values > 0):
                what = "entries" if array.ndim == 1 else "diagonal entries"
                raise StreamherdError(f"{path} is damaged: array '{name}' has {what} <= 0; "
                                      f"they must be positive")
    if "average" in arrays:
        # load_state rebuilds u = T (w - average) (learners/perceptron.py): it must be finite
        learner = meta.get("learner", {})
        counts = [entry["examples_seen"] for entry in learner["ova"]] if "ova" in learner \
            else [learner["examples_seen"]]
        with np.errstate(over="ignore", invalid="ignore"):
            blocks = np.split(arrays["mean"] - arrays["average"], len(counts))
            if not all(np.all(np.isfinite(float(n) * block)) for n, block in zip(counts, blocks)):
                raise StreamherdError(f"{path} is damaged: its 'average' and 'mean' differ so "
                                      f"much that the averaging overflows")


def _diagonals(matrix):
    """The diagonal of a square matrix, or of each square block of a stacked (K d) x d one."""
    rows, columns = matrix.shape
    return np.concatenate([np.diagonal(block) for block in np.split(matrix, rows // columns)])
