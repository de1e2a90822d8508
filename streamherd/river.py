"""river models over streamherd's learners: ``OnlineClassifier`` (a river MiniBatchClassifier)
and ``OnlineRegressor`` (a MiniBatchRegressor), the learner chosen by ``algo`` with the
hyperparameters of streamherd.sklearn's estimators.

A river example is a dict {name: value}. Its names are VW feature names in the default
namespace: ``learn_one({"a": 1.0, "7": 2.0}, y)`` learns what ``streamherd train`` learns from
the VW line ``y | a:1 7:2`` (features/hashing.hashstring, seed 0; the bias appended; names whose
slots collide summed), so ``river.evaluate.progressive_val_score`` gives the command line's
progressive loss on the same stream. A name's text is the name (str(name) for a name that is
not a str).

Per example, ``learn_one`` and ``predict_one`` make no numpy array: the row's values are packed
by one struct.pack_into into a buffer kept from call to call, its names joined by NULs into one
bytes object, and one compiled call (_fill_row) hashes every name into the slots beside them,
appends the bias and sums repeated slots, as the parser does; every name is hashed at every
row, in machine code: no name table, so a model's first pass costs what its later ones do (a
table of Python dict lookups, with a Python hash call per new name, cost more than hashing).
The one-row chunk goes to the learner's kernel; a binary or regression ``learn_one`` calls the
compiled machine code of the learner's entry point for those arguments' types directly
(_direct_entry), not numba's dispatcher, which types every call in Python when its arguments
hold tuples.
``learn_many``/``predict_many`` (pandas DataFrames) take the block path of streamherd.sklearn
(features/matrix.MatrixRows: the columns' slots, one numba kernel per chunk).

Classes: bool labels make a binary model (True the positive class, as river's binary
classifiers); any other labels a multiclass one (``multiclass``: "joint", "ova" or "mira"),
each new label a new class where it first appears in the stream, as river expects.

``predict_proba_one``: the Gaussian learners (nherd, arow, narow, cw, scw) give their own
probabilities, as ``streamherd predict --proba`` does for a model trained with
``--calibration none``: binary, P(w.x > 0) = Phi(mu.x / sqrt(x' Sigma x)) under the learner's
Gaussian over weights; multiclass, each class's probability of the top score. The command
line's calibration maps are fitted on a whole pass's progressive predictions, which a stream
that never ends does not have, so they are not used here. The other learners (perceptron, pa,
sop, ...) raise NotImplementedError, river's pattern for a classifier without probabilities
(their predict_one still answers). With ``multiclass="mira"``, likewise.

Values that are not finite: a feature value that is nan or +-inf, or a regression label that
is, is refused by ``learn_one`` with a ValueError that names the feature (or the label), and the
model is left as it was (a new class, or the first label's choice of task, is not kept).
No per-example check costs the usual example anything: such a value makes the learner's margin
or step non-finite, which the compiled loop reports before it writes, and only then is the row
looked at. ``learn_many`` checks its whole block first and learns nothing from a block holding
+-inf (a DataFrame's NaN is a missing value, 0, as before) or, for the regressor, a label that
is not finite. Predicting propagates them, as river's own linear models do: the regressor's
``predict_one`` is nan or +-inf, ``predict_proba_one``/``predict_proba_many`` give nan for every
class of such a row, and a classifier's ``predict_one`` answers from non-finite scores (a binary
model: False, as river's linear classifiers).
"""
import math
import struct
import sys

import numba
import numpy as np
import pandas as pd
from numba import njit, types
from river import base

from streamherd import learners, tasks
from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.hashing import hashstring
from streamherd.features.matrix import MatrixRows
from streamherd.features.rows import FIBONACCI, MERGE_TABLE_SIZE, merge_row
from streamherd.features.space import FeatureSpace
from streamherd.io.csr import Chunk
from streamherd.labels import ClassLabels
from streamherd.learners.base import Learner, UnstableUpdate
from streamherd.model import OnlineModel, UpdateFailed
from streamherd.parameters import EstimatorInit
from streamherd.sklearn import InvalidParameter, class_text, has_probabilities

__all__ = ["OnlineClassifier", "OnlineRegressor"]

# the parameters of both models after algo and the hyperparameters (parameters.py)
SETTINGS = dict(bits=18, normalize=False, fit_intercept=True)
# The one-row buffers' first size (entries); a longer example grows them.
_ROW_CAPACITY = 1024


class _RowBuffers:
    """One example's row as a one-row Chunk over buffers reused from call to call, and the
    scratch of _fill_row in one int64 array (each array argument of a compiled call costs its
    unboxing): rows.merge_row's table (keys, stamps, positions), then the chunk's indptr and
    the table's last stamp."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.values = np.zeros(capacity)
        self.indices = np.zeros(capacity, np.int32)
        self.scratch = np.zeros((4, MERGE_TABLE_SIZE), np.int64)
        self.indptr = self.scratch[3, :2]
        self.target = np.zeros(1)
        self.out = np.zeros(1)
        ones, absent = np.ones(1), np.full(1, -1, np.int64)
        self.chunk = Chunk("x", np.zeros(0, np.uint8), self.target, ones, np.zeros(1, np.int64),
                           self.indptr, self.indices, self.values, absent, absent, absent, absent,
                           1, 0, 0)


class _RiverModel:
    """What the classifier and the regressor share: the parameters, the name -> slot cache,
    the one-row path, the block path and pickling."""

    def _setup(self):
        self._space = FeatureSpace(int(self.bits), bool(self.fit_intercept),
                                   normalization.L2 if self.normalize else normalization.NONE)
        self._read_space()
        self._packers = {}        # row length -> the struct of its values and the bias's
        self._model = None        # the OnlineModel, once the first label chose its task
        self._rows = None
        self._buffers = _RowBuffers(_ROW_CAPACITY)
        self._fast = None         # (compiled entry, its arguments): _prepare_fast

    def _read_space(self):
        """The space's numbers, read per example (no bias: bias slot -1)."""
        self._mask = self._space.mask
        self._bias_slot = self._space.bias_slot if self._space.bias else -1
        self._normalized = self._space.normalize != normalization.NONE

    @property
    def _raw_memory_usage(self):
        """The bytes the model holds: the learner's arrays and the row buffers (the merge's
        scratch among them). river's own walk (base.Base._raw_memory_usage) follows every
        reference, into numba's compiled kernels and their weak proxies, which may be dead by
        then."""
        arrays = [*(self._learner.state().values() if self._learner is not None else ()),
                  *(a for name, a in vars(self._buffers).items()   # indptr: scratch's
                    if isinstance(a, np.ndarray) and name != "indptr")]
        return sum(a.nbytes for a in arrays) + sys.getsizeof(self._packers)

    # ------------------------------------------------------------ parameters

    def _algo(self):
        try:
            return learners.canonical_name(self.algo)
        except StreamherdError as e:
            raise InvalidParameter.of(e) from None

    def _new_model(self, task):
        """The OnlineModel of ``task`` over the space, with the parameters' hyperparameters."""
        algo = self._algo()
        variant = learners.spec(algo)
        given = {h.name: getattr(self, h.name, None) for h in variant.accepted(task.kind)}
        try:
            return OnlineModel(algo, variant.options(given, task.kind), self._space, task)
        except StreamherdError as e:
            raise InvalidParameter.of(e) from None

    @property
    def _learner(self):
        """The model's learner (None before the first label), read on the one-row path."""
        return None if self._model is None else self._model.learner

    @property
    def _task(self):
        return None if self._model is None else self._model.task

    # ------------------------------------------------------------ one row

    def _packer(self, n):
        """The struct of n values and the bias's 1; a row longer than the buffers (twice the
        row: merge_row's scratch) makes new buffers."""
        if 2 * (n + 1) > self._buffers.capacity:
            self._buffers = _RowBuffers(2 * (n + 1))
            self._fast = None
        packer = self._packers[n] = struct.Struct(f"={n + 1}d")
        return packer

    def _row(self, x):
        """Write example ``x`` (a dict) into the row buffers; returns the one-row Chunk."""
        n = len(x)
        packer = self._packers.get(n) or self._packer(n)
        rows = self._buffers
        try:
            packer.pack_into(rows.values, 0, *x.values(), 1.0)
        except struct.error:
            raise ValueError(f"feature values must be numbers; got {x!r}") from None
        try:
            text = "\0".join(x).encode()
        except TypeError:   # a name that is not a str
            text = "\0".join(map(str, x)).encode()
        end = (_FILL_ROW or _fill_entry())(text, n, self._mask, self._bias_slot, rows.indices,
                                            rows.values, rows.scratch)
        if end < 0:
            self._row_apart(x, n, end, rows)
        if self._normalized:
            self._space.transform(rows.chunk)
        return rows.chunk

    def _row_apart(self, x, n, end, rows):
        """_row's names hashed one by one, for a name holding a NUL (the joined text's
        separator); or the error of a row whose summed values overflow."""
        if end == _NAME_NUL:
            for i, name in enumerate(x):
                text = str(name).encode()
                _hash_entry()(text, -1, self._mask, rows.indices, i)
            end = _finish_entry()(n, self._bias_slot, rows.indices, rows.values, rows.scratch)
        if end < 0:
            if _non_finite_feature(x) is None:
                raise ValueError("feature values of one slot sum to infinity; scale the "
                                 "features")
            self._row_unmerged(x, n, rows)

    def _row_unmerged(self, x, n, rows):
        """The row of an example holding +-inf in a slot that another of its features shares
        (the merge's sum is infinite, which it refuses): written again with its slots repeated,
        unmerged. Its margin is then not finite, as the merged row's would be: predicting
        propagates it, learning refuses the row before any update (_learn_failure)."""
        self._packers[n].pack_into(rows.values, 0, *x.values(), 1.0)
        rows.indices[:n] = self._slots_of(x)
        end = n
        if self._bias_slot >= 0:
            rows.indices[n] = self._bias_slot
            end += 1
        rows.indptr[1] = end

    def _slots_of(self, names):
        """The slots of ``names`` (VW's hash of each name's text, masked)."""
        names = list(names)
        slots = np.empty(len(names), np.int32)
        try:
            text = "\0".join(map(str, names)).encode()
            joined = _hash_entry()(text, len(names), self._mask, slots, 0) == len(names)
        except UnicodeEncodeError:   # (raised again below, by the name's own encoding)
            joined = False
        if not joined:   # a name holding a NUL: one by one
            for i, name in enumerate(names):
                _hash_entry()(str(name).encode(), -1, self._mask, slots, i)
        return slots.tolist()

    def _fast_learn(self, kind, y, x):
        """Learn from the row in the buffers (target ``y``, example ``x``) through the
        learner's compiled entry point, its arguments built once (a binary or regression
        learner's arrays stay where they are: it never grows); returns the number of updates.
        A failed update (its example's margin or step not finite: the learner wrote nothing)
        is a ValueError saying why (_learn_failure)."""
        rows = self._buffers
        rows.target[0] = y
        fast = self._fast or self._prepare_fast(kind)
        entry, call = fast
        if entry is None:
            learner = self._learner
            method = learner.learn if kind == "binary" else learner.learn_regression
            try:
                updates = method(rows.target, rows.chunk.importance, rows.indptr, rows.indices,
                                 rows.values, rows.out)
            except UnstableUpdate as e:
                raise self._learn_failure(e, x, y) from None
        else:
            updates, bad, _ = entry(*call)
            if bad >= 0:
                try:
                    self._learner.checked(updates, bad)
                except UnstableUpdate as e:
                    raise self._learn_failure(e, x, y) from None
        return updates

    def _prepare_fast(self, kind):
        """(the learner's compiled entry point, its arguments) for the row buffers, or (None,
        None) for a learner with its own learn (the averaged and voted perceptrons keep state
        besides the entry point's: through their learn)."""
        rows, learner = self._buffers, self._learner
        if not _plain_learn(learner, kind):
            self._fast = (None, None)
            return self._fast
        args = (rows.chunk.importance, rows.indptr, rows.indices, rows.values,
                learner.kernel_state(), learner.kernel_params())
        task = (rows.target, rows.out)
        # as Learner._run calls it (entry_point(binary=..., args=...)): the others omitted
        call = (task, None, None, args) if kind == "binary" else (None, task, None, args)
        # omitted too: the parameters after args (bank=, of an entry point that serves a bank)
        call += (None,) * (learner.entry_point.py_func.__code__.co_argcount - len(call))
        self._fast = (_direct_entry(learner.entry_point, call, kind), call)
        return self._fast

    def _learn_failure(self, e, x, y=None):
        """The ValueError of learn_one's failed update (UnstableUpdate ``e``) on example ``x``
        (regression: label ``y``): a label or a feature value that is not finite, looked for
        here, on the failure path only; else the update itself, numbers grown too large."""
        if y is not None and not math.isfinite(y):
            return ValueError(_label_text(y))
        bad = _non_finite_feature(x)
        if bad is not None:
            return ValueError(_feature_text(*bad))
        return ValueError(self._unstable_text(e, "learn_one: "))

    def _unstable_text(self, e, where):
        """An update that failed on finite numbers: they grew too large for the learner (the
        gentler setting only a hyperparameter it takes)."""
        options = self._learner.options
        gentler = [hint for name, hint in (("C", "lower C"), ("r", "raise r")) if name in options]
        return (f"{where}{e.what}; scale the features (normalize=True)"
                + (f" or use a gentler setting ({', '.join(gentler)})" if gentler else ""))

    def _margin(self, x):
        rows = self._buffers
        chunk = self._row(x)
        self._learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, rows.out)
        return rows.out[0]

    # ------------------------------------------------------------ many rows

    def _matrix(self, X, learning=False):
        """DataFrame X as a CSR matrix whose column (slot - 1) mod 2^bits holds the feature
        whose slot is ``slot`` (MatrixRows reads column j as slot j + 1): the block path.
        ``learning``: a value that is not finite (NaN is a missing value, 0) is refused before
        anything is learned."""
        from scipy.sparse import csr_matrix

        columns = self._slots_of(X.columns)
        columns = (np.asarray(columns, np.int64) - 1) & self._space.mask
        values = np.asarray(X.to_numpy(dtype=np.float64, na_value=0.0))
        if learning and not np.isfinite(values).all():
            i, j = np.argwhere(~np.isfinite(values))[0]
            raise ValueError(f"learn_many: row {_row_name(X, i)} of X, column {X.columns[j]!r}, "
                             f"is {values[i, j]}, not a finite number; drop the row or impute "
                             f"a finite value (nothing was learned)")
        dense = csr_matrix(values)
        matrix = csr_matrix((dense.data, columns[dense.indices], dense.indptr),
                            shape=(X.shape[0], self._space.dim))
        matrix.sort_indices()
        return matrix

    def _chunks(self, X, targets=None, matrix=None):
        """The chunks of DataFrame X (``matrix``: its _matrix, when made already)."""
        if self._rows is None:
            self._rows = MatrixRows(self._space)
        return self._rows.chunks(self._matrix(X) if matrix is None else matrix, targets=targets)

    def _learn_chunks(self, X, targets, matrix):
        for chunk in self._chunks(X, targets, matrix):
            try:
                self._model.learn_targets(chunk.labels, chunk)
            except UpdateFailed as e:
                raise ValueError(self._unstable_text(
                    e, f"learn_many: row {_row_name(X, e.line)} of X: ")
                    + "; the rows before it were learned") from None

    # ------------------------------------------------------------ pickling

    def __getstate__(self):
        state = dict(vars(self))   # the model pickles its learner's arrays
        for transient in ("_rows", "_buffers", "_fast", "_packers"):
            state.pop(transient, None)
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._read_space()
        self._rows, self._buffers, self._fast = None, _RowBuffers(_ROW_CAPACITY), None
        self._packers = {}


_NAME_NUL = -2   # _fill_row: a name holds a NUL (the joined names' separator)


def _non_finite_feature(x):
    """(name, value) of example ``x``'s first value that is not a finite number, or None."""
    for name, value in x.items():
        try:
            if not math.isfinite(value):
                return name, value
        except TypeError:   # (not a number: _row refuses it first)
            pass
    return None


def _refuse_non_finite(x):
    bad = _non_finite_feature(x)
    if bad is not None:
        raise ValueError(_feature_text(*bad))


def _row_name(X, i):
    """Row ``i`` of DataFrame X, and its index label when that is not i."""
    label = X.index[i]
    label = label.item() if isinstance(label, np.generic) else label
    return f"{i}" if isinstance(label, (int, np.integer)) and label == i else f"{i} ({label!r})"


def _feature_text(name, value):
    return (f"learn_one: feature {name!r} is {float(value)}, not a finite number; drop the "
            f"feature from the example or impute a finite value")


def _label_text(y):
    return (f"learn_one: the label y = {float(y)} is not a finite number; drop the example or "
            f"give it a finite label")


@njit(cache=True, nogil=True)
def _hash_names(text, n, mask, slots, at):
    """The ``n`` NUL-separated names of ``text`` (n = -1: one name, all of text) hashed as VW
    hashes a name of the default namespace (hashstring, seed 0), masked, into slots[at:].
    Returns the names hashed, or _NAME_NUL when text does not hold n names (one holds a NUL)."""
    if n < 0:
        slots[at] = np.int32(hashstring(text, 0, len(text), 0) & np.uint64(mask))
        return 1
    start = 0
    for i in range(n):
        end = start
        while end < len(text) and text[end] != 0:
            end += 1
        if end == len(text) and i < n - 1:
            return _NAME_NUL
        slots[at + i] = np.int32(hashstring(text, start, end, 0) & np.uint64(mask))
        start = end + 1
    if n > 0 and start != len(text) + 1:
        return _NAME_NUL
    return n


@njit(cache=True, nogil=True)
def _finish_row(n, bias_slot, indices, values, scratch):
    """A row of n slots (its values beside them, the bias's 1 after them): the bias slot
    appended (bias_slot >= 0), and repeated slots summed by the parser's merge
    (features/rows.merge_row) when there are any (only then: a long row's merge sorts it);
    the row's end, which it returns (-1: a sum overflowed), into indptr[1]. ``scratch``
    (_RowBuffers'): the merge table's keys, stamps and positions, then indptr and the table's
    last stamp."""
    keys, stamps, positions = scratch[0], scratch[1], scratch[2]
    end = n
    if bias_slot >= 0:
        indices[n] = bias_slot
        end = n + 1
    repeats = False
    if end <= MERGE_TABLE_SIZE // 2:   # the merge table's own probe, marking this row's slots
        stamp = scratch[3, 2] + 1
        scratch[3, 2] = stamp
        for k in range(end):
            slot = indices[k]
            h = ((slot * FIBONACCI) >> 12) & (MERGE_TABLE_SIZE - 1)
            while stamps[h] == stamp and keys[h] != slot:
                h = (h + 1) & (MERGE_TABLE_SIZE - 1)
            if stamps[h] == stamp:
                repeats = True
                break
            stamps[h] = stamp
            keys[h] = slot
    else:
        ordered = np.sort(indices[:end])
        for k in range(1, end):
            if ordered[k] == ordered[k - 1]:
                repeats = True
                break
    if repeats:
        stamp = scratch[3, 2] + 1
        scratch[3, 2] = stamp
        end = merge_row(indices, values, 0, end, keys, stamps, positions, stamp)
    scratch[3, 1] = end   # indptr[1]
    return end


@njit(cache=True, nogil=True)
def _fill_row(text, n, mask, bias_slot, indices, values, scratch):
    """The slots of a row whose n values are in ``values``: its names (``text``, NUL-separated)
    hashed, then _finish_row. Returns the row's end, -1 for an overflowed sum, or _NAME_NUL
    (nothing done) when a name holds a NUL."""
    if _hash_names(text, n, mask, indices, 0) != n:
        return _NAME_NUL
    return _finish_row(n, bias_slot, indices, values, scratch)


# The machine code of _fill_row, _hash_names and _finish_row for their one set of argument
# types, called directly: numba's dispatcher types a bytes argument in Python at every call.
_FILL_ROW = _HASH_NAMES = _FINISH_ROW = None


def _signature(*names):
    array, int64 = types.Array, types.int64
    kinds = {"text": numba.typeof(b""), "int": int64, "slots": array(types.int32, 1, "C"),
             "values": array(types.float64, 1, "C"), "scratch": array(int64, 2, "C")}
    return tuple(kinds[name] for name in names)


_ROW_ARGUMENTS = ("int", "int", "slots", "values", "scratch")


def _fill_entry():
    global _FILL_ROW
    _FILL_ROW = _fill_row.compile(_signature("text", "int", *_ROW_ARGUMENTS))
    return _FILL_ROW


def _hash_entry():
    global _HASH_NAMES
    if _HASH_NAMES is None:
        _HASH_NAMES = _hash_names.compile(_signature("text", "int", "int", "slots", "int"))
    return _HASH_NAMES


def _finish_entry():
    global _FINISH_ROW
    if _FINISH_ROW is None:
        _FINISH_ROW = _finish_row.compile(_signature(*_ROW_ARGUMENTS))
    return _FINISH_ROW


def _direct_entry(dispatcher, call, kind):
    """The machine code numba compiled (or loads from its cache) for the entry point called
    with ``call``'s types, the two tasks not given omitted, as Learner._run calls it. Its
    wrapper unboxes the arguments in C: numba's dispatcher computes a call's types in Python
    when the arguments hold tuples (1.3 us of a learn_one). Called only with ``call`` itself
    (the same arrays, so the same types)."""
    given = 0 if kind == "binary" else 1
    signature = tuple(numba.typeof(a) if i in (given, 3) else types.Omitted(None)
                      for i, a in enumerate(call))
    return dispatcher.compile(signature)


def _plain_learn(learner, kind):
    method = "learn" if kind == "binary" else "learn_regression"
    return getattr(type(learner), method) is getattr(Learner, method)


class OnlineClassifier(_RiverModel, base.MiniBatchClassifier):
    """A linear classifier learned online by any streamherd learner.

    Parameters
    ----------
    algo
        The learner (``streamherd algos``): perceptron, pa, pa1, pa2, nherd-p, arow-p, cw,
        scw1, ... (aliases taken).
    C, r, eta, a, b, max_support, ...
        The learner's hyperparameters (None: its default), every one the registry declares;
        a learner ignores those it does not take.
    multiclass
        How a multiclass model learns: "joint", "ova" (one-versus-all) or "mira".
    bits
        2^bits weight slots per class (``streamherd train -b``).
    normalize
        Scale each example to unit L2 norm (the bias kept), as ``--normalize l2``.
    fit_intercept
        Append the bias feature ("Constant"), as the command line does.

    """

    def _initialize(self):
        self._setup()
        self._binary = False
        self._classes = []        # the classes, in the order they appeared (class ids)
        self._class_ids = {}

    __init__ = EstimatorInit("arow-p", dict(multiclass="joint", **SETTINGS), then=_initialize)

    @property
    def _multiclass(self):
        return True

    @property
    def _supervised(self):
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"algo": "arow-p"}
        yield {"algo": "pa1", "C": 0.5, "bits": 12}

    def _start(self, y):
        """The task of the first label: binary for a bool, else multiclass."""
        self._binary = isinstance(y, (bool, np.bool_))
        if self._binary:
            task = tasks.BinaryTask()
        else:
            if self.multiclass not in tasks.MULTICLASS_MODES:
                raise InvalidParameter(f"multiclass must be joint, ova or mira, got "
                                       f"{self.multiclass!r}")
            task = tasks.MulticlassTask(ClassLabels(), self.multiclass)
        self._model = self._new_model(task)

    def _class_id(self, y, x=None):
        """Label y's class id, a new class for a label not seen before (not for a label whose
        example ``x`` holds a value that is not finite: learn_one refuses it)."""
        cid = self._class_ids.get(y)
        if cid is None:
            if isinstance(y, (bool, np.bool_)):
                raise ValueError(f"a multiclass model takes no bool label ({y!r}); a binary "
                                 f"model is one whose first label was a bool")
            if x is not None:
                _refuse_non_finite(x)
            cid = self._class_ids[y] = len(self._classes)
            self._classes.append(y)
            self._task.labels = ClassLabels([class_text(c) for c in self._classes])
        return cid

    def _binary_target(self, y):
        if not isinstance(y, (bool, np.bool_)):
            raise ValueError(f"a binary model takes bool labels (its first label was one); "
                             f"got {y!r}")
        return 1.0 if y else -1.0

    # ------------------------------------------------------------ learning

    def learn_one(self, x, y):
        if y is None:   # (it would start a multiclass model whose first class is None)
            raise ValueError("learn_one needs the row's label; got None")
        if self._task is None:
            _refuse_non_finite(x)   # (the first label chooses the task: not from such a row)
            self._start(y)
        if self._binary:
            target = (1.0 if y else -1.0) if y.__class__ is bool else self._binary_target(y)
            self._row(x)
            self._fast_learn("binary", target, x)
        else:
            target = self._class_id(y, x)
            chunk = self._row(x)
            chunk.labels[0] = target
            try:
                self._task.learn(self._learner, np.array([target]), chunk)
            except UnstableUpdate as e:
                raise self._learn_failure(e, x) from None

    def learn_many(self, X, y):
        y = list(y)
        if not y:
            return
        if any(v is None for v in y):
            raise ValueError("learn_many needs every row's label; got None")
        matrix = self._matrix(X, learning=True)
        if self._task is None:
            self._start(y[0])
        if self._binary:
            targets = np.array([self._binary_target(v) for v in y])
        else:
            targets = np.array([self._class_id(v) for v in y], np.float64)
        self._learn_chunks(X, targets, matrix)

    # ------------------------------------------------------------ predicting

    def predict_one(self, x):
        if self._task is None:
            # the command line's first prediction, from a zero margin: the negative class
            # (and for a multiclass stream a mistake, as the command line's "no class yet")
            return False
        if self._binary:
            return bool(self._margin(x) > 0)
        if not self._classes:
            return None
        chunk = self._row(x)
        return self._classes[int(self._task.predict(self._learner, chunk)[0])]

    def predict_proba_one(self, x):
        if not self._has_probabilities():
            raise NotImplementedError(f"{self.algo} has no class probabilities (the Gaussian "
                                      f"learners nherd, arow, narow, cw and scw have)")
        if self._task is None:
            return {}
        chunk = self._row(x)
        return self._probabilities(chunk)[0]

    def _has_probabilities(self):
        return has_probabilities(self.algo) and not (self.multiclass == "mira" and not self._binary)

    def _probabilities(self, chunk):
        """Each row's {class: probability}; nan for every class of a row holding a value
        that is not finite (the learners' formulas would give 0.5, or an even split, or one
        class for sure, from its nan scores)."""
        learner = self._learner
        n = chunk.n_examples
        finite = np.isfinite(chunk.values[:chunk.indptr[n]])
        bad = None if finite.all() else \
            np.repeat(np.arange(n), np.diff(chunk.indptr[:n + 1]))[~finite]   # their rows
        if self._binary:
            p = learner.probabilities(chunk.indptr, chunk.indices, chunk.values)
            if bad is not None:
                p[bad] = np.nan
            return [{False: 1.0 - q, True: q} for q in p.tolist()]
        by_class = learner.class_probabilities(chunk.indptr, chunk.indices, chunk.values)
        if bad is not None:
            by_class[bad] = np.nan
        return [dict(zip(self._classes, row)) for row in by_class.tolist()]

    def predict_proba_many(self, X):
        if not self._has_probabilities():
            raise NotImplementedError(f"{self.algo} has no class probabilities")
        if self._task is None:
            return pd.DataFrame(index=X.index)
        rows = [p for chunk in self._chunks(X) for p in self._probabilities(chunk)]
        return pd.DataFrame(rows, index=X.index)

    def predict_many(self, X):
        if self._task is None:
            return pd.Series([False] * len(X), index=X.index, dtype=object)
        labels = []
        for chunk in self._chunks(X):
            predicted = self._task.predict(self._learner, chunk)
            labels.extend((predicted > 0).tolist() if self._binary
                          else [self._classes[int(c)] for c in predicted])
        return pd.Series(labels, index=X.index)


class OnlineRegressor(_RiverModel, base.MiniBatchRegressor):
    """A linear regressor learned online by a streamherd learner with a squared-loss form
    (``streamherd train --loss squared``: pa, pa1, pa2, nherd, arow).

    Parameters
    ----------
    algo
        The learner: ``pa``, ``pa1``, ``pa2``, ``nherd-*``, ``arow-*``.
    C, r, a, epsilon, ...
        The hyperparameters of the learners with a squared-loss form (None: its default).
    bits, normalize, fit_intercept
        As OnlineClassifier's.

    """

    def _initialize(self):
        self._setup()
        if learners.spec(self._algo()).regression is None:
            takers = ", ".join(n for n, s in learners.REGISTRY.items() if s.regression is not None)
            raise InvalidParameter(f"{self._algo()} has no squared-loss form; OnlineRegressor "
                                   f"takes {takers}")

    __init__ = EstimatorInit("arow-p", SETTINGS, task="regression", then=_initialize)

    @classmethod
    def _unit_test_params(cls):
        yield {"algo": "arow-p"}
        yield {"algo": "pa2", "C": 0.5, "bits": 12}

    def _ready(self):
        if self._model is None:
            self._model = self._new_model(tasks.RegressionTask())

    def learn_one(self, x, y):
        self._ready()
        self._row(x)
        y = float(y)
        # a NaN label is no label to the learner, which makes no update: refused then
        if not self._fast_learn("regression", y, x) and y != y:
            raise ValueError(_label_text(y))

    def learn_many(self, X, y):
        targets = np.asarray(y, np.float64)
        matrix = self._matrix(X, learning=True)
        if not np.isfinite(targets).all():
            i = int(np.flatnonzero(~np.isfinite(targets))[0])
            where = _row_name(y if isinstance(y, pd.Series) else X, i)
            raise ValueError(f"learn_many: row {where} of y is {targets[i]}, not a finite "
                             f"number; drop the row or give it a finite label (nothing was "
                             f"learned)")
        self._ready()
        self._learn_chunks(X, targets, matrix)

    def predict_one(self, x):
        if self._learner is None:
            return 0.0
        return float(self._margin(x))

    def predict_many(self, X):
        if self._learner is None:
            return pd.Series(np.zeros(len(X)), index=X.index)
        values = [self._task.scores(self._learner, chunk) for chunk in self._chunks(X)]
        return pd.Series(np.concatenate(values) if values else np.zeros(0), index=X.index)
