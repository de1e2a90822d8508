"""Models as ``.npz``: a JSON ``meta`` text, ``mean`` and the learner's named state arrays.

Format 3 stores each state array sparsely against the value a fresh learner holds there (its
``fill``, in the meta): a vector as ``NAME.indices`` (int64, strictly increasing) and
``NAME.values`` (float64) of the slots whose bits differ from the fill; a matrix (the full
learners' covariance or inverse: square blocks, one, or one per class for one-versus-all, whose
fresh value is fill on the diagonal and 0 elsewhere) as ``NAME.slots``, the rows of each block
whose row or column differs from the fresh one, and ``NAME.values``, each block's submatrix on
those rows and columns, row by row. Compressed (deflate, COMPRESS_LEVEL). Loading rebuilds the
dense arrays bit for bit, reading the members in pieces straight into them. Formats 1 and 2 held
the dense arrays under their own names; they still load. The meta is UTF-8 bytes (a NumPy
string of four bytes a character in the files written before: they load as well).

Written atomically (temporary file in the target's folder, then rename), so a failed or
interrupted run never leaves a half-written or clobbered model. Loaded with
``allow_pickle=False``, and checked whole before anything uses it (``load_model``): every key of
the meta with its type and range (each part its own: ``check_meta``), and every array with its
name, dtype, full shape and values. So every way a file can fail to be a model is a one-line
error naming the file, never a traceback deep in training or prediction.
"""
import json
import math
import os
import zipfile
import zlib

import numpy as np

from streamherd import __version__, calibration, herding, learners, tasks
from streamherd.errors import SavedMeta, StreamherdError, is_finite, is_int, is_real, shown
from streamherd.features.space import FeatureSpace
from streamherd.learners.base import check_memory, memory_text
from streamherd.outputs import model_missing, replaced_on_success, write_error

# a version 1 file is a binary model (version 2 has a meta "task"); version 3: sparse arrays
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
SPARSE_SINCE = 3
MODEL_MARKER = "streamherd-model"

# deflate's fastest level: a model's arrays are mostly float64 bits, which the slower levels
# hardly shrink more, at several times the time (benchmarks/README.md, "Writing a model")
COMPRESS_LEVEL = 1

# the entries of a member read at a time (8 MB): loading needs no full-size temporary
_PIECE = 1 << 20
_INT64_MAX = 2 ** 63 - 1


def save_model(path, meta, arrays):
    """Write the model (format 3: each array sparse against its fresh value) to a temporary file
    beside ``path`` that replaces it only once written whole (outputs.replaced_on_success)."""
    fills = initial_values(meta)
    members = {}
    try:
        for name, array in arrays.items():
            members.update(_sparse_members(name, np.asarray(array, dtype=np.float64),
                                           fills[name]))
    except MemoryError:
        raise StreamherdError(f"cannot write model {os.fspath(path)}: not enough memory to "
                              f"compress its state ({memory_text(_state_bytes(arrays))}); "
                              f"free memory or use a smaller -b") from None
    write_archive(path, {**meta, "fill": {name: fills[name] for name in arrays}}, members)


def write_archive(path, meta, members):
    """A model file of ``meta`` (marked streamherd's, of this format version) and the arrays
    ``members``, written atomically (outputs.replaced_on_success)."""
    meta = {"format": MODEL_MARKER, "format_version": FORMAT_VERSION,
            "streamherd_version": __version__, **meta}
    path = os.fspath(path)
    text = np.array(json.dumps(meta, sort_keys=True).encode("utf-8"))
    kept = os.path.lexists(path)
    try:
        with replaced_on_success(path, "wb", what="model") as f, \
                zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as zf:
            for name, array in {"meta": text, **members}.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    except OSError as e:   # (the zip's last flush, outside the file's reported writes)
        raise write_error("model", path, e, kept) from None
    except MemoryError:
        raise StreamherdError(f"cannot write model {path}: not enough memory to compress it; "
                              f"free memory or use a smaller -b") from None


def initial_values(meta):
    """name -> the value every slot of that state array holds in a fresh learner of the model's
    algorithm and hyperparameters (for a matrix: its diagonal; the rest is 0)."""
    return {name: float(array.flat[0]) if array.size else 0.0   # an empty list: 0
            for name, array in _fresh_learner(meta).state().items()}


def _fresh_learner(meta):
    """A fresh one-slot learner of the model's algorithm and hyperparameters."""
    task = "regression" if meta.get("task") == "regression" else "binary"
    return learners.create(meta["algo"], 1, meta.get("hyperparameters"), task=task)


def _interleaved(meta, shapes, task):
    """The saved vectors the learner keeps as the columns of one array (Learner.interleaved), in
    its order: loaded so, the learner takes them as they are, with no copy. None when the learner
    keeps no saved vector so, or splits them by class (one-versus-all)."""
    names = tuple(_fresh_learner(meta).interleaved)
    if task.one_learner_per_class or len(names) < 2 or not set(names) <= set(shapes):
        return None
    return names


def _bits(values):
    """The float64 values as int64 bit patterns: 'differs' then tells -0.0 from 0.0."""
    return np.ascontiguousarray(values).view(np.int64)


def _sparse_members(name, array, fill):
    """The format-3 members of one state array (see the module's docstring)."""
    fill_bits = _bits(np.float64(fill).reshape(1))[0]
    if array.ndim == 1:
        indices = np.flatnonzero(_bits(array) != fill_bits)
        return {f"{name}.indices": indices.astype(np.int64), f"{name}.values": array[indices]}
    rows, columns = array.shape
    slots, values = [], []
    for start in range(0, rows, columns):
        block = array[start:start + columns]
        differs = _bits(block) != 0
        np.fill_diagonal(differs, np.diagonal(_bits(block)) != fill_bits)
        kept = np.flatnonzero(differs.any(axis=0) | differs.any(axis=1))
        slots.append(kept + start)
        values.append(block[np.ix_(kept, kept)].ravel())
    return {f"{name}.slots": np.concatenate(slots).astype(np.int64),
            f"{name}.values": np.concatenate(values)}


def require_arrays(path, arrays, names):
    """A one-line error when the model at ``path`` lacks one of the arrays ``names``."""
    for name in names:
        if name not in arrays:
            raise StreamherdError(f"{os.fspath(path)} is damaged: it has no '{name}' array")


# errors of reading a member of a damaged or hostile archive (MemoryError: a header that claims
# an enormous array or meta)
_READ_ERRORS = (KeyError, ValueError, zipfile.BadZipFile, EOFError, OSError, zlib.error,
                MemoryError, RecursionError, UnicodeError)


def load_model(path, expected_arrays=None):
    """Returns (meta, arrays), exactly as saved, checked whole (see the module's docstring): any
    damage is a one-line error."""
    path = os.fspath(path)
    with open_model(path) as archive:
        meta = _read_meta(path, archive)
        shapes, what, fills, task = _check_meta(path, meta)
        _check_state_fits(path, shapes, fills, what[1])
        if fills is None:
            arrays = _read_arrays(path, archive, shapes, what)
        else:
            arrays = _read_sparse_arrays(path, archive, shapes, fills, what[0],
                                         _interleaved(meta, shapes, task))
    _check_values(path, meta, arrays, task)
    require_arrays(path, arrays, expected_arrays or [])
    return meta, arrays


def open_model(path):
    """The model's .npz archive, open; a one-line error when it is none."""
    path = os.fspath(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise model_missing(path) from None
    except OSError as e:
        raise StreamherdError(f"cannot read model {path}: {e.strerror or e}") from None
    except (ValueError, zipfile.BadZipFile, EOFError, zlib.error, MemoryError):
        raise StreamherdError(f"{path} is not a streamherd model (not an .npz archive)") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise StreamherdError(f"{path} is not a streamherd model (a .npy array, not an .npz "
                              f"archive)")
    return archive


def model_meta(path):
    """The meta of the model at ``path`` (its marker and format version checked), nothing
    more: predict reads it first to tell a herding model from a linear one."""
    with open_model(path) as archive:
        return _read_meta(os.fspath(path), archive)


def _state_bytes(arrays):
    return sum(8 * np.asarray(array).size for array in arrays.values())


def _check_state_fits(path, shapes, fills, model):
    """Refuse, in one line and before any array is allocated, a model whose meta promises a
    state (the arrays ``shapes`` names) larger than the memory available to this process (a
    hostile or mistaken meta, or a model trained on a larger machine). A format-3 vector whose
    fresh value is +0 is built on zero pages that only take physical memory where written."""
    need = untouched = 0
    for name, shape in shapes.items():
        size = 8 * math.prod(shape)
        need += size
        if fills is not None and len(shape) == 1 and _is_positive_zero(fills[name]):
            untouched += size
    try:
        check_memory(need, f"model {path} ({model}) holds a state of", "use it where more "
                     "memory is available, or retrain it with a smaller -b (or fewer classes)",
                     untouched=untouched)
    except StreamherdError as e:
        raise StateTooLarge(str(e)) from None


class StateTooLarge(StreamherdError):
    """A model whose whole state does not fit in the memory available (_check_state_fits):
    what it stores may still be read as it is stored (sparse_vectors)."""


def sparse_vectors(path):
    """(meta, vectors) of a format-3 model whose arrays are all vectors, read as stored: name ->
    (its slots other than the fill, strictly increasing; their values; the fill), each checked
    (in range, finite, positive where the array must be) without building the dense arrays,
    whose size only the meta sets. None for another model (a full matrix, format 1 or 2)."""
    path = os.fspath(path)
    with open_model(path) as archive:
        meta = _read_meta(path, archive)
        shapes, what, fills, _ = _check_meta(path, meta)
        if fills is None or any(len(shape) != 1 for shape in shapes.values()):
            return None
        _check_member_names(path, archive, [f"{name}.{part}" for name in shapes
                                            for part in ("indices", "values")], what[0])
        positive = learners.learner_class(meta["algo"]).positive_arrays
        vectors = {}
        for name, (size,) in shapes.items():
            with _Member(path, archive, f"{name}.indices", np.int64, size) as indices, \
                    _Member(path, archive, f"{name}.values", np.float64, size) as values:
                if values.count != indices.count:
                    raise StreamherdError(f"{path} is damaged: array '{name}.values' has "
                                          f"{values.count} entries for {indices.count} indices")
                check_memory(16 * indices.count, f"model {path}: the stored entries of its "
                             f"array '{name}' take", "use it where more memory is available")
                slots = indices.take(indices.count)
                stored = values.take(values.count)
            _check_slots(path, f"{name}.indices", slots, -1, size)
            if not np.all(np.isfinite(stored)):
                raise StreamherdError(f"{path} is damaged: array '{name}' holds NaN or infinity")
            if name in positive and not np.all(stored > 0):
                raise StreamherdError(f"{path} is damaged: array '{name}' has entries <= 0; "
                                      f"they must be positive")
            vectors[name] = (slots, stored, fills[name])
    return meta, vectors


def _is_positive_zero(value):
    return value == 0 and math.copysign(1, value) > 0


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
    if not isinstance(entry, np.ndarray) or entry.shape != () or entry.dtype.kind not in "US":
        raise StreamherdError(f"{not_ours} (its 'meta' is not a JSON text)")
    try:
        text = entry.item()
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        text.encode("utf-8")
    except _READ_ERRORS:
        raise StreamherdError(f"{not_ours} (its 'meta' is not UTF-8 text)") from None
    try:
        meta = json.loads(text)
    except RecursionError:
        raise StreamherdError(f"{not_ours} (its 'meta' is JSON nested too deeply)") from None
    except (ValueError, MemoryError):
        raise StreamherdError(f"{not_ours} (its 'meta' is not JSON)") from None
    if not isinstance(meta, dict) or meta.get("format") != MODEL_MARKER:
        raise StreamherdError(f"{not_ours} (its 'meta' is not streamherd's)")
    version = meta.get("format_version")
    if not is_int(version) or version not in READABLE_VERSIONS:
        raise StreamherdError(
            f"{path} has model format version {shown(version)}, this streamherd "
            f"({__version__}) reads versions {READABLE_VERSIONS[0]} to {FORMAT_VERSION}; "
            f"retrain it or use the matching version")
    return meta


def _check_meta(path, meta):
    """Checks every key of the meta, asking each part of the model for its own; returns the
    arrays the model must hold (name -> shape), what model it is (for messages), the arrays'
    fresh values (format 3; else None) and its task."""
    m = SavedMeta(path, meta)
    if meta.get("kind") == herding.KIND:
        raise StreamherdError(f"{path} is a conditional herding model ('streamherd herd'): "
                              f"only 'streamherd predict' reads it")
    m.get("streamherd_version", lambda v: isinstance(v, str), "a version string",
          required=False)
    # training writes the canonical name (never an alias: ``train -i`` compares it with one)
    name = m.get("algo", lambda v: isinstance(v, str), "the name of an algorithm")
    if name not in learners.REGISTRY:
        raise m.damaged(f"'algo' in its meta is {shown(name)}, which is no streamherd algorithm "
                        f"(they are {', '.join(learners.REGISTRY)})")
    cls = learners.learner_class(name)
    variant = learners.spec(name)
    task = tasks.check_meta(m, name)
    bits = FeatureSpace.check_meta(m)
    _check_hyperparameters(m, variant, task.kind)
    m.get("examples", lambda v: is_int(v) and v >= 0, "a count of examples", required=False)
    m.get("progressive_loss", lambda v: v is None or is_real(v), "a number or null",
          required=False)
    m.get("calibration", calibration.meta_ok, "the statistics and map of --calibration",
          required=False)
    _check_learner_meta(m, cls, task)

    dim = 1 << bits
    rows = task.blocks * dim
    # a full matrix spans every slot of every class block, but one-versus-all stacks the K
    # per-class 2^b x 2^b matrices: (K 2^b) x 2^b
    columns = dim if task.one_learner_per_class else rows
    shapes = {array: ((rows, columns) if array in cls.matrix_arrays else (rows,))
              for array in cls.saved_arrays(variant.covariance)}
    # an update list's arrays (the voted perceptron's) have lengths of their own
    shapes.update({name: (length,)
                   for name, length in cls.list_lengths(_learner_metas(meta)).items()})
    fills = _check_fills(m, shapes, cls) if meta["format_version"] >= SPARSE_SINCE else None
    return shapes, (name, f"{name}, bits={bits}{task.model_words}"), fills, task


def _check_fills(m, shapes, cls):
    """Format 3: the fresh value of each array (``fill``), finite, and > 0 where the array's
    entries (a matrix's diagonal) must be."""
    fills = m.get("fill", lambda v: isinstance(v, dict), "a table of the arrays' fresh values")
    if set(fills) != set(shapes):
        raise m.damaged(f"'fill' in its meta names {shown(sorted(fills, key=str))}, expected "
                        f"the arrays {', '.join(shapes)}")
    for name, value in fills.items():
        positive = name in cls.positive_arrays
        if not (is_finite(value) and (value > 0 or not positive)):
            raise m.damaged(f"the fill of '{name}' in its meta is {shown(value)}, expected a "
                            f"finite number{' > 0' if positive else ''}")
    return {name: float(value) for name, value in fills.items()}


def _check_hyperparameters(m, variant, task):
    """Each hyperparameter one the learner takes for ``task``, a finite number in its declared
    range (learners/spec.py); a missing one takes its default."""
    options = m.get("hyperparameters", lambda v: isinstance(v, dict),
                    "a table of hyperparameters")
    accepted = {h.name for h in variant.accepted(task)}
    for key, value in options.items():
        if key not in accepted:
            raise m.damaged(f"its meta has the hyperparameter {shown(key)}, which {variant.name} "
                            f"{'(regression) ' if task == 'regression' else ''}does not take "
                            f"(it takes {', '.join(sorted(accepted)) or 'none'})")
        if not is_finite(value):
            raise m.damaged(f"hyperparameter {key} in its meta is {shown(value)}, expected a "
                            f"finite number")
    try:
        variant.options(options, task)
    except StreamherdError as e:
        raise m.damaged(f"its hyperparameters are out of range ({e})") from None


def _check_learner_meta(m, cls, task):
    """The learner's own scalars (``Learner.meta()``); one-versus-all: one set per class."""
    learner = m.get("learner", lambda v: isinstance(v, dict), "a table", required=False,
                    default={})
    if task.one_learner_per_class and (set(learner) != {"ova"} or not isinstance(
            learner["ova"], list) or len(learner["ova"]) != task.blocks):
        raise m.damaged(f"'learner' in its meta is {shown(learner)}, expected "
                        f"{{\"ova\": [...]}} with one entry per class ({task.blocks})")
    name, expected = m.meta["algo"], cls.meta_scalars
    for scalars in learner["ova"] if task.one_learner_per_class else [learner]:
        if not isinstance(scalars, dict) or set(scalars) != set(expected):
            want = ", ".join(expected) or "an empty table"
            raise m.damaged(f"the {name} learner's meta is {shown(scalars)}, expected {want}")
        for key in expected:   # every learner scalar so far is a count (the averaged perceptron's)
            value = scalars[key]
            if not (is_int(value) and 0 <= value <= _INT64_MAX):
                raise m.damaged(f"{key} in its learner meta is {shown(value)}, expected a count")


# ---------------------------------------------------------------- the arrays

def _read_arrays(path, archive, shapes, what):
    """The arrays ``shapes`` names, each float64 of its shape; headers are checked before any
    data is read, so a damaged header cannot ask for an enormous allocation. ``what``: (algorithm,
    description of the model) for messages."""
    algo, model = what
    _check_member_names(path, archive, shapes, algo)
    arrays = {}
    for name, shape in shapes.items():
        opened = _open_array(archive, name)   # its header only
        if opened is None:
            raise StreamherdError(f"{path} is damaged: array '{name}' cannot be read")
        opened[0].close()
        _, found, dtype = opened
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


def _check_member_names(path, archive, expected, algo):
    """The archive holds the arrays ``expected`` (names), and no other."""
    names = [name for name in archive.files if name != "meta"]
    for name in names:
        if name not in expected:
            raise StreamherdError(
                f"{path} is damaged: it holds an unknown array {shown(name)} ({algo} models "
                f"hold {', '.join(expected)})")
    require_arrays(path, names, expected)


def _open_array(archive, name):
    """(the member's file, positioned after its .npy header, shape, dtype), or None when
    ``name`` has no readable .npy header."""
    member = name + ".npy"
    f = None
    try:
        if member not in archive.zip.namelist():
            return None
        f = archive.zip.open(member)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            f.close()
            return None
    except _READ_ERRORS:
        if f is not None:
            f.close()
        return None
    return f, shape, dtype


# ---------------------------------------------------------------- format 3: sparse arrays

def _read_sparse_arrays(path, archive, shapes, fills, algo, interleaved):
    """The dense arrays ``shapes`` names, rebuilt from their format-3 members (see the module's
    docstring) over their ``fills``; those ``interleaved`` names, the columns of one array."""
    members = []
    for name, shape in shapes.items():
        members += [f"{name}.{'indices' if len(shape) == 1 else 'slots'}", f"{name}.values"]
    _check_member_names(path, archive, members, algo)
    arrays = {}
    columns = None
    for name, shape in shapes.items():
        try:
            if interleaved and name in interleaved:
                if columns is None:   # zero pages: only the slots written take memory
                    columns = np.zeros((shape[0], len(interleaved)))
                into = columns[:, interleaved.index(name)]
                arrays[name] = _dense_vector(path, archive, name, shape[0], fills[name], into)
            elif len(shape) == 1:
                arrays[name] = _dense_vector(path, archive, name, shape[0], fills[name])
            else:
                arrays[name] = _dense_matrix(path, archive, name, shape, fills[name])
        except MemoryError:
            raise StreamherdError(f"cannot read model {path}: its array '{name}' of shape "
                                  f"{shape} does not fit in memory") from None
    return arrays


class _Member:
    """One .npy member of a format-3 model, read in pieces (``take``). Its header must say a
    vector of ``dtype`` of at most ``most`` entries (``count``): checked before any data is
    read, so a damaged header cannot ask for an enormous allocation."""

    def __init__(self, path, archive, name, dtype, most):
        self.path, self.name, self.dtype = path, name, np.dtype(dtype)
        opened = _open_array(archive, name)
        if opened is None:
            raise self.unreadable()
        self.file, shape, found = opened
        if len(shape) != 1 or found != self.dtype or shape[0] > most:
            self.file.close()
            raise StreamherdError(f"{path} is damaged: array '{name}' has shape {shape} and "
                                  f"dtype {found}, expected at most {most} {self.dtype} entries")
        self.count = shape[0]

    def unreadable(self):
        return StreamherdError(f"{self.path} is damaged: array '{self.name}' cannot be read")

    def take(self, n):
        """The next ``n`` entries."""
        size = n * self.dtype.itemsize
        try:
            data = self.file.read(size)
        except _READ_ERRORS:
            raise self.unreadable() from None
        if len(data) != size:
            raise self.unreadable()
        return np.frombuffer(data, self.dtype)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def _dense_vector(path, archive, name, size, fill, into=None):
    """float64[size] (written ``into`` that array when given), ``fill`` but at ``NAME.indices``,
    which hold ``NAME.values``."""
    with _Member(path, archive, f"{name}.indices", np.int64, size) as indices, \
            _Member(path, archive, f"{name}.values", np.float64, size) as values:
        if values.count != indices.count:
            raise StreamherdError(f"{path} is damaged: array '{name}.values' has "
                                  f"{values.count} entries for {indices.count} indices")
        if into is not None:   # a column of zeros (_read_sparse_arrays)
            dense = into
            if not _is_positive_zero(fill):
                dense[:] = fill
        else:   # zeros: the pages of the untouched slots are never written
            dense = np.zeros(size) if _is_positive_zero(fill) else np.full(size, fill)
        last = -1
        for start in range(0, indices.count, _PIECE):
            count = min(_PIECE, indices.count - start)
            where = indices.take(count)
            _check_slots(path, f"{name}.indices", where, last, size)
            dense[where] = values.take(count)
            last = where[-1]
    return dense


def _dense_matrix(path, archive, name, shape, fill):
    """float64[rows, columns] of rows // columns square blocks, each ``fill`` on the diagonal and
    0 elsewhere but on the rows and columns ``NAME.slots`` names (block z's from z * columns on),
    which ``NAME.values`` holds, block by block, row by row."""
    rows, columns = shape
    with _Member(path, archive, f"{name}.slots", np.int64, rows) as member:
        slots = member.take(member.count)
    _check_slots(path, f"{name}.slots", slots, -1, rows)
    bounds = np.searchsorted(slots, np.arange(0, rows + 1, columns))
    counts = np.diff(bounds)
    with _Member(path, archive, f"{name}.values", np.float64, rows * columns) as values:
        expected = int(np.sum(counts * counts))
        if values.count != expected:
            raise StreamherdError(f"{path} is damaged: array '{name}.values' has "
                                  f"{values.count} entries, its {len(slots)} slots need "
                                  f"{expected}")
        dense = np.zeros(shape)
        dense[np.arange(rows), np.arange(rows) % columns] = fill
        for start, stop in zip(bounds[:-1], bounds[1:]):
            kept = slots[start:stop]
            local = kept % columns
            for row in kept:
                dense[row, local] = values.take(len(local))
    return dense


def _check_slots(path, member, where, last, end):
    """Indices in [0, end), strictly increasing, and after ``last`` (the previous piece's)."""
    if not len(where):
        return
    if where.min() < 0 or where.max() >= end:
        raise StreamherdError(f"{path} is damaged: array '{member}' holds an index out of range "
                              f"(0 to {end - 1})")
    if where[0] <= last or np.any(where[1:] <= where[:-1]):
        raise StreamherdError(f"{path} is damaged: array '{member}' is not strictly increasing")


def _learner_metas(meta):
    """The learner metas of a model (checked): one per one-versus-all class, else one."""
    learner = meta.get("learner", {})
    return learner.get("ova", [learner])


def _check_values(path, meta, arrays, task):
    """Finite everywhere; variances and the diagonals of the covariance (and of sop's A and
    A^-1) > 0; the averaged perceptron's running sum finite; an update list whole
    (Learner.check_saved)."""
    positive = learners.learner_class(meta["algo"]).positive_arrays
    for name, array in arrays.items():
        if not np.all(np.isfinite(array)):
            raise StreamherdError(f"{path} is damaged: array '{name}' holds NaN or infinity")
        if name in positive:
            # a matrix: the diagonal of each square block of a stacked (K d) x d one
            values = array if array.ndim == 1 else \
                array.reshape(-1, array.shape[1], array.shape[1]).diagonal(axis1=1, axis2=2)
            if not np.all(values > 0):
                what = "entries" if array.ndim == 1 else "diagonal entries"
                raise StreamherdError(f"{path} is damaged: array '{name}' has {what} <= 0; "
                                      f"they must be positive")
    if "average" in arrays:
        # load_state rebuilds u = T (w - average) (learners/perceptron.py): it must be finite
        counts = [entry["examples_seen"] for entry in _learner_metas(meta)]
        with np.errstate(over="ignore", invalid="ignore"):
            blocks = np.split(arrays["mean"] - arrays["average"], len(counts))
            if not all(np.all(np.isfinite(float(n) * block)) for n, block in zip(counts, blocks)):
                raise StreamherdError(f"{path} is damaged: its 'average' and 'mean' differ so "
                                      f"much that the averaging overflows")
    # the learner's own check of its update list: classes are blocks of one learner unless
    # each has its own
    wrong = learners.learner_class(meta["algo"]).check_saved(
        arrays, _learner_metas(meta), 1 << meta["bits"],
        1 if task.one_learner_per_class else task.blocks)
    if wrong:
        raise StreamherdError(f"{path} is damaged: {wrong}")
