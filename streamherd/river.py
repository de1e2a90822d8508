"""river models over streamherd's learners: ``OnlineClassifier`` (a river MiniBatchClassifier)
and ``OnlineRegressor`` (a MiniBatchRegressor), the learner chosen by ``algo`` with the
hyperparameters of streamherd.sklearn's estimators.

A river example is a dict {name: value}. Its names are VW feature names in the default
namespace: ``learn_one({"a": 1.0, "7": 2.0}, y)`` learns what ``streamherd train`` learns from
the VW line ``y | a:1 7:2`` (features/hashing.hashstring, seed 0; the bias appended; names whose
slots collide summed), so ``river.evaluate.progressive_val_score`` gives the command line's
progressive loss on the same stream. Each name is hashed once per process: its slot is kept in
a name table that every model of the same bits shares (_NameSlots).

Per example, ``learn_one`` and ``predict_one`` make no numpy array: the row's values and slots
are packed by one struct.pack_into into a buffer kept from call to call, and given to the
learner's kernel as a one-row chunk; a binary or regression ``learn_one`` calls the compiled
machine code of the learner's entry point for those arguments' types directly (_direct_entry),
not numba's dispatcher, which types every call in Python when its arguments hold tuples.
``learn_many``/``predict_many`` (pandas DataFrames) take the block path of streamherd.sklearn
(io/matrix.MatrixRows: the columns' slots, one numba kernel per chunk).

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
"""
import struct
import sys

import numba
import numpy as np
import pandas as pd
from numba import types
from river import base

from streamherd import learners, tasks
from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.hashing import hashstring
from streamherd.features.rows import merge_row, new_merge_table
from streamherd.features.space import FeatureSpace
from streamherd.io.csr import Chunk
from streamherd.io.matrix import MatrixRows
from streamherd.labels import ClassLabels
from streamherd.learners.base import Learner, UnstableUpdate
from streamherd.sklearn import InvalidParameter, _class_text, _invalid, _is_gaussian

__all__ = ["OnlineClassifier", "OnlineRegressor"]

# The one-row buffers' first size (entries); a longer example grows them.
_ROW_CAPACITY = 1024


class _RowBuffers:
    """One example's row as a one-row Chunk over buffers reused from call to call: its values
    and its slots are two views of one byte array (capacity values, then capacity slots), so
    that one struct.pack_into writes both (numpy's allocation: aligned, as the kernels' types
    say)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.memory = np.zeros(capacity * 12, np.uint8)
        self.values = self.memory[:capacity * 8].view(np.float64)
        self.indices = self.memory[capacity * 8:].view(np.int32)
        self.indptr = np.zeros(2, np.int64)
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
        self._slots = _name_table(self._space)
        self._late = self._slots.late
        # the space's numbers, read per example
        self._bias, self._bias_slot = self._space.bias, self._space.bias_slot
        self._normalized = self._space.normalize != normalization.NONE
        self._packers = {}        # row length -> the struct of its values and slots
        self._learner = None
        self._rows = None
        self._buffers = _RowBuffers(_ROW_CAPACITY)
        self._fast = None         # (compiled entry, its arguments): _prepare_fast
        self._merge_table, self._merge_stamp = new_merge_table(), 0   # rows.merge_row's scratch

    @property
    def _raw_memory_usage(self):
        """The bytes the model holds: the learner's arrays, the row buffers, the merge's
        scratch and the name tables. river's own walk (base.Base._raw_memory_usage) follows every reference, into
        numba's compiled kernels and their weak proxies, which may be dead by then."""
        arrays = [*(self._learner.state().values() if self._learner is not None else ()),
                  *(a for name, a in vars(self._buffers).items()   # values, indices: views
                    if isinstance(a, np.ndarray) and name not in ("values", "indices")),
                  *self._merge_table]
        tables = (self._slots, self._slots.owners, self._late, self._packers)
        return (sum(a.nbytes for a in arrays) + sum(map(sys.getsizeof, tables))
                + sum(map(sys.getsizeof, self._slots)))

    # ------------------------------------------------------------ parameters

    def _algo(self):
        try:
            return learners.canonical_name(self.algo)
        except StreamherdError as e:
            raise _invalid(e) from None

    def _new_learner(self, task):
        algo = self._algo()
        variant = learners.spec(algo)
        given = {h.name: getattr(self, h.name, None) for h in variant.accepted(task.kind)}
        try:
            return task.new_learner(algo, self._space.dim, variant.options(given, task.kind))
        except StreamherdError as e:
            raise _invalid(e) from None

    # ------------------------------------------------------------ one row

    def _packer(self, n):
        """The struct of n values and the bias's 1, then (at the buffer's slots) their n slots
        and the bias slot; a row longer than the buffers (twice the row: merge_row's scratch)
        makes new buffers, and new packers for their layout."""
        if 2 * (n + 1) > self._buffers.capacity:
            self._buffers = _RowBuffers(2 * (n + 1))
            self._packers.clear()
            self._fast = None
        gap = (self._buffers.capacity - n - 1) * 8
        packer = self._packers[n] = struct.Struct(f"={n + 1}d{gap}x{n + 1}i")
        return packer

    def _row(self, x):
        """Write example ``x`` (a dict) into the row buffers; returns the one-row Chunk."""
        n = len(x)
        packer = self._packers.get(n) or self._packer(n)
        rows = self._buffers
        try:   # (a name no model has met yet: hashed by _NameSlots.__missing__)
            packer.pack_into(rows.memory, 0, *x.values(), 1.0, *map(self._slots.__getitem__, x),
                             self._bias_slot)
        except struct.error:
            raise ValueError(f"feature values must be numbers; got {x!r}") from None
        end = n + self._bias   # the bias written last, kept when the model has one
        late = self._late
        if late and not late.isdisjoint(x) and self._repeats(x):
            end = self._merge(end, rows)
        rows.indptr[1] = end
        if self._normalized:
            self._space.transform(rows.chunk)
        return rows.chunk

    def _repeats(self, x):
        """Whether the slots of example ``x``'s names repeat (the bias's among them)."""
        row_slots = list(map(self._slots.__getitem__, x))
        return len(set(row_slots)) < len(row_slots) or (self._bias and
                                                         self._bias_slot in row_slots)

    def _merge(self, end, rows):
        """Sum the values of repeated slots among the row's first ``end`` entries, in
        first-seen order, by the parser's own merge (features/rows.merge_row; the buffers hold
        twice the row, its scratch for a row too long for the table); the new end."""
        keys, stamps, positions, _ = self._merge_table
        self._merge_stamp += 1
        end = merge_row(rows.indices, rows.values, 0, end, keys, stamps, positions,
                        self._merge_stamp)
        if end < 0:
            raise ValueError("feature values of one slot sum to infinity; scale the features")
        return end

    def _fast_learn(self, kind, y):
        """Learn from the row in the buffers (target ``y``) through the learner's compiled
        entry point, its arguments built once (a binary or regression learner's arrays stay
        where they are: it never grows)."""
        rows = self._buffers
        rows.target[0] = y
        fast = self._fast or self._prepare_fast(kind)
        entry, call = fast
        if entry is None:
            learner = self._learner
            method = learner.learn if kind == "binary" else learner.learn_regression
            self._checked(method, rows.target, rows.chunk.importance, rows.indptr, rows.indices,
                          rows.values, rows.out)
            return
        updates, bad, _ = entry(*call)
        if bad >= 0:
            self._checked(self._learner.checked, updates, bad)

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
        self._fast = (_direct_entry(learner.entry_point, call, kind), call)
        return self._fast

    def _checked(self, step, *args):
        try:
            return step(*args)
        except UnstableUpdate as e:
            raise ValueError(f"streamherd: {e.what}; scale the features (normalize=True) or use "
                             f"a gentler setting (lower C, raise r)") from None

    def _margin(self, x):
        rows = self._buffers
        chunk = self._row(x)
        self._learner.predict_margins(chunk.indptr, chunk.indices, chunk.values, rows.out)
        return rows.out[0]

    # ------------------------------------------------------------ many rows

    def _matrix(self, X):
        """DataFrame X as a CSR matrix whose column (slot - 1) mod 2^bits holds the feature
        whose slot is ``slot`` (MatrixRows reads column j as slot j + 1): the block path."""
        from scipy.sparse import csr_matrix

        columns = list(map(self._slots.__getitem__, X.columns))
        columns = (np.asarray(columns, np.int64) - 1) & self._space.mask
        dense = csr_matrix(np.asarray(X.to_numpy(dtype=np.float64, na_value=0.0)))
        matrix = csr_matrix((dense.data, columns[dense.indices], dense.indptr),
                            shape=(X.shape[0], self._space.dim))
        matrix.sort_indices()
        return matrix

    def _chunks(self, X, targets=None):
        if self._rows is None:
            self._rows = MatrixRows(self._space)
        return self._rows.chunks(self._matrix(X), targets=targets)

    # ------------------------------------------------------------ pickling

    def __getstate__(self):
        state = dict(vars(self))
        for transient in ("_rows", "_buffers", "_fast", "_packers", "_merge_table", "_slots",
                          "_late"):
            state.pop(transient, None)
        learner = state.pop("_learner", None)
        if learner is not None:
            state["_saved"] = ({k: np.array(v) for k, v in learner.state().items()},
                               learner.meta(), learner.options)
        return state

    def __setstate__(self, state):
        saved = state.pop("_saved", None)
        vars(self).update(state)
        self._rows, self._buffers, self._fast = None, _RowBuffers(_ROW_CAPACITY), None
        self._packers, self._learner = {}, None
        self._merge_table = new_merge_table()
        self._slots = _name_table(self._space)
        self._late = self._slots.late
        if saved is not None:
            arrays, meta, options = saved
            self._learner = self._task.new_learner(self._algo(), self._space.dim, options,
                                                   arrays, meta)


# features/hashing.hashstring's machine code for a name's bytes (_compiled_hash)
_HASH_TEXT = None


def _compiled_hash():
    """hashstring compiled for (a name's bytes object, start, end, seed), called directly:
    numba's dispatcher would type each call in Python, and a numpy view of the bytes would
    cost as much again (1.0 us a name, against 0.34)."""
    global _HASH_TEXT
    _HASH_TEXT = hashstring.compile((numba.typeof(b""), types.int64, types.int64, types.int64))
    return _HASH_TEXT


class _NameSlots(dict):
    """Feature name -> slot in one space (bits, bias), read and filled by every model of the
    process in that space (a name's slot never changes, so a model meeting a name another
    model met does not hash it again). A name not in it yet is hashed by ``__missing__``, which
    dict's own lookup calls (no exception, no Python per name already there): VW's hash of its
    text in the default namespace. ``owners``: slot -> the first name that has it; ``late``:
    the names whose slot an earlier name or the bias has. A row whose slots repeat holds a late
    name whatever order the names came in (of two names of one slot, one at most is its
    owner), so ``late`` serves every model."""

    def __init__(self, space):
        super().__init__()
        self.mask = space.mask
        self.bias_slot = space.bias_slot if space.bias else None
        self.owners, self.late = {}, set()

    def __missing__(self, name):
        text = str(name).encode()
        slot = int((_HASH_TEXT or _compiled_hash())(text, 0, len(text), 0)) & self.mask
        if slot in self.owners or slot == self.bias_slot:
            self.late.add(name)
        else:
            self.owners[slot] = name
        self[name] = slot
        return slot


_NAME_TABLES = {}           # (bits, bias) -> _NameSlots
_NAMES_KEPT = 1 << 20       # a new model starts a fresh table past this many names


def _name_table(space):
    key = (space.bits, space.bias)
    table = _NAME_TABLES.get(key)
    if table is None or len(table) >= _NAMES_KEPT:
        table = _NAME_TABLES[key] = _NameSlots(space)
    return table


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
    C, r, eta, a, b, max_support
        The learner's hyperparameters (None: its default); a learner ignores those it does
        not take.
    multiclass
        How a multiclass model learns: "joint", "ova" (one-versus-all) or "mira".
    bits
        2^bits weight slots per class (``streamherd train -b``).
    normalize
        Scale each example to unit L2 norm (the bias kept), as ``--normalize l2``.
    fit_intercept
        Append the bias feature ("Constant"), as the command line does.

    """

    def __init__(self, algo="arow-p", C=None, r=None, eta=None, a=None, b=None,
                 max_support=None, multiclass="joint", bits=18, normalize=False,
                 fit_intercept=True):
        self.algo, self.C, self.r, self.eta, self.a, self.b = algo, C, r, eta, a, b
        self.max_support, self.multiclass, self.bits = max_support, multiclass, bits
        self.normalize, self.fit_intercept = normalize, fit_intercept
        self._setup()
        self._task = None
        self._binary = False
        self._classes = []        # the classes, in the order they appeared (class ids)
        self._class_ids = {}

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
            self._task = tasks.BinaryTask()
        else:
            if self.multiclass not in ("joint", "ova", "mira"):
                raise InvalidParameter(f"multiclass must be joint, ova or mira, got "
                                       f"{self.multiclass!r}")
            self._task = tasks.MulticlassTask(ClassLabels(), self.multiclass)
        self._learner = self._new_learner(self._task)


    def _class_id(self, y):
        """Label y's class id, a new class for a label not seen before."""
        cid = self._class_ids.get(y)
        if cid is None:
            if isinstance(y, (bool, np.bool_)):
                raise ValueError(f"a multiclass model takes no bool label ({y!r}); a binary "
                                 f"model is one whose first label was a bool")
            cid = self._class_ids[y] = len(self._classes)
            self._classes.append(y)
            self._task.labels = ClassLabels([_class_text(c) for c in self._classes])
        return cid

    def _binary_target(self, y):
        if not isinstance(y, (bool, np.bool_)):
            raise ValueError(f"a binary model takes bool labels (its first label was one); "
                             f"got {y!r}")
        return 1.0 if y else -1.0

    # ------------------------------------------------------------ learning

    def learn_one(self, x, y):
        if self._task is None:
            self._start(y)
        if self._binary:
            target = (1.0 if y else -1.0) if y.__class__ is bool else self._binary_target(y)
            self._row(x)
            self._fast_learn("binary", target)
        else:
            target = self._class_id(y)
            chunk = self._row(x)
            chunk.labels[0] = target
            self._checked(self._task.learn, self._learner, np.array([target]), chunk)

    def learn_many(self, X, y):
        y = list(y)
        if not y:
            return
        if self._task is None:
            self._start(y[0])
        if self._binary:
            targets = np.array([self._binary_target(v) for v in y])
        else:
            targets = np.array([self._class_id(v) for v in y], np.float64)
        for chunk in self._chunks(X, targets):
            self._checked(self._task.learn, self._learner, chunk.labels, chunk)

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
        return _is_gaussian(self.algo) and not (self.multiclass == "mira" and not self._binary)

    def _probabilities(self, chunk):
        """Each row's {class: probability}."""
        learner = self._learner
        if self._binary:
            p = learner.probabilities(chunk.indptr, chunk.indices, chunk.values)
            return [{False: 1.0 - q, True: q} for q in p.tolist()]
        by_class = learner.class_probabilities(chunk.indptr, chunk.indices, chunk.values)
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
        The learner: pa, pa1, pa2, nherd-*, arow-*.
    C, r, a, epsilon
        The learner's hyperparameters (None: its default).
    bits
        2^bits weight slots (``streamherd train -b``).
    normalize
        Scale each example to unit L2 norm (the bias kept), as ``--normalize l2``.
    fit_intercept
        Append the bias feature ("Constant"), as the command line does.

    """

    def __init__(self, algo="arow-p", C=None, r=None, a=None, epsilon=None, bits=18,
                 normalize=False, fit_intercept=True):
        self.algo, self.C, self.r, self.a, self.epsilon = algo, C, r, a, epsilon
        self.bits, self.normalize, self.fit_intercept = bits, normalize, fit_intercept
        self._setup()
        self._task = tasks.RegressionTask()
        if learners.spec(self._algo()).regression is None:
            takers = ", ".join(n for n, s in learners.REGISTRY.items() if s.regression is not None)
            raise InvalidParameter(f"{self._algo()} has no squared-loss form; OnlineRegressor "
                                   f"takes {takers}")

    @classmethod
    def _unit_test_params(cls):
        yield {"algo": "arow-p"}
        yield {"algo": "pa2", "C": 0.5, "bits": 12}

    def _ready(self):
        if self._learner is None:
            self._learner = self._new_learner(self._task)

    def learn_one(self, x, y):
        self._ready()
        self._row(x)
        self._fast_learn("regression", float(y))

    def learn_many(self, X, y):
        self._ready()
        targets = np.asarray(y, np.float64)
        for chunk in self._chunks(X, targets):
            self._checked(self._task.learn, self._learner, chunk.labels, chunk)

    def predict_one(self, x):
        if self._learner is None:
            return 0.0
        return float(self._margin(x))

    def predict_many(self, X):
        if self._learner is None:
            return pd.Series(np.zeros(len(X)), index=X.index)
        values = [self._task.scores(self._learner, chunk) for chunk in self._chunks(X)]
        return pd.Series(np.concatenate(values) if values else np.zeros(0), index=X.index)
