"""What every learner's joint multiclass kernel shares (numba, inlined into the family kernels).

The construction (Crammer & Lee 2010 Sec. 5, after Collins 2002 and Crammer, Dredze & Kulesza
2009): one weight block of D slots per class, f(x, z) puts x in block z, the score of class z is
mu . f(x, z) and the prediction is the class of largest score. Where block z's slot j lies is the
learner's ``layout`` = (class stride, feature stride), slot z * layout[0] + j * layout[1]
(slot_of): class blocks one after the other, (D, 1), as the model file holds them; or VW's way,
the classes of a feature side by side, (1, C) for room for C classes, which the diagonal and
first-order learners train on (Learner.layout).

For an update on an example of class y, the strongest wrong class y' = argmax_{z != y} mu . f(x, z)
gives the difference row Delta = f(x, y) - f(x, y') (2 nnz entries: +x in block y, -x in block
y'), and the joint update is the family's binary update on Delta with label +1: its margin is
mu . Delta = score_y - score_y', its confidence Delta' Sigma Delta. So each family module writes
its arithmetic once, as an inline per-row step, and calls it from its binary, multiclass and
regression loops; this module holds the class scores, the rival and the Delta row.

Classes are discovered in the stream: ``known`` is the number of classes seen before the current
example (ids are in order of first appearance), a prediction is the best of those, and a new label
joins before its own update (so its first example is a mistake: its class could not be predicted).
With a fixed class set (``--classes``) every class is known from the start.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from streamherd.io.positions import unsigned
from streamherd.learners.kernels.prefetch import prefetch

# Half the smallest L2 cache of a core in common x86 servers (512 KiB): slots read within it
# stay cached between rows, and prefetching them is wasted work (chunk_spread).
CACHED_BYTES = 256 * 1024
# classes side by side: one prefetch every PREFETCH_CLASSES of them reaches each line of a
# feature's slots (8 to a 64-byte line in an array apart, 4 in one interleaving two)
PREFETCH_CLASSES = 4
SPREAD_SAMPLE = 1 << 12   # entries of a chunk that chunk_spread reads at most,
DISTINCT_FLAGS = 1 << 15  # and the flags it counts their slots on


@njit(cache=True, inline="always")
def visible_classes(known, label):
    """The classes an update on ``label`` may involve: those known plus ``label`` itself."""
    return max(known, label + 1)


@njit(cache=True, inline="always")
def slot_of(layout, z, j):
    """Class z's slot of feature j (the module docstring)."""
    return z * layout[0] + j * layout[1]


@njit(cache=True, inline="always")
def class_sums(term, first, second, layout, K, indices, values, start, end, scores):
    """scores[z] = the sum over x's features of term(first[s], second[s], x_j), s the slot of
    feature j in block z (slot_of), for the first K classes (a state of two per-slot arrays).

    Classes side by side: one pass over the row, each feature's K slots read together (a few
    cache lines). Blocks: eight classes to a pass over the row (then four, two, one), each
    class's sum in a register of its own: in blocks 2^b slots apart, the K slots of one feature
    fall in one cache set, and more blocks at a time than a set has ways (8) evict each other's
    lines. Either way each sum adds the row's terms in the row's order (the same floats as one
    class at a time)."""
    step = layout[0]
    if step == 1:
        for z in range(K):
            scores[z] = 0.0
        for k in range(start, end):
            s, x = slot_of(layout, 0, indices[unsigned(k)]), values[unsigned(k)]
            # the feature's classes as slices: LLVM vectorises the loop over them then, not
            # over first[s + z]
            first_row, second_row = first[s:s + K], second[s:s + K]
            for z in range(K):
                scores[unsigned(z)] += term(first_row[unsigned(z)], second_row[unsigned(z)], x)
        return
    z = 0
    while z + 8 <= K:
        eight_sums(term, first, second, layout, z, step, indices, values, start, end, scores)
        z += 8
    if z + 4 <= K:
        four_sums(term, first, second, layout, z, step, indices, values, start, end, scores)
        z += 4
    if z + 2 <= K:
        two_sums(term, first, second, layout, z, step, indices, values, start, end, scores)
        z += 2
    if z < K:
        total = 0.0
        for k in range(start, end):
            s = unsigned(slot_of(layout, z, indices[unsigned(k)]))
            total += term(first[s], second[s], values[unsigned(k)])
        scores[z] = total


@njit(cache=True, inline="always")
def eight_sums(term, first, second, layout, z, step, indices, values, start, end, scores):
    """class_sums of classes z..z+7 (class z + 1's slot ``step`` after class z's)."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for k in range(start, end):
        s, x = slot_of(layout, z, indices[unsigned(k)]), values[unsigned(k)]
        a0 += term(first[unsigned(s)], second[unsigned(s)], x)
        a1 += term(first[unsigned(s + step)], second[unsigned(s + step)], x)
        a2 += term(first[unsigned(s + 2 * step)], second[unsigned(s + 2 * step)], x)
        a3 += term(first[unsigned(s + 3 * step)], second[unsigned(s + 3 * step)], x)
        a4 += term(first[unsigned(s + 4 * step)], second[unsigned(s + 4 * step)], x)
        a5 += term(first[unsigned(s + 5 * step)], second[unsigned(s + 5 * step)], x)
        a6 += term(first[unsigned(s + 6 * step)], second[unsigned(s + 6 * step)], x)
        a7 += term(first[unsigned(s + 7 * step)], second[unsigned(s + 7 * step)], x)
    scores[z], scores[z + 1], scores[z + 2], scores[z + 3] = a0, a1, a2, a3
    scores[z + 4], scores[z + 5], scores[z + 6], scores[z + 7] = a4, a5, a6, a7


@njit(cache=True, inline="always")
def four_sums(term, first, second, layout, z, step, indices, values, start, end, scores):
    """class_sums of classes z..z+3."""
    a0 = a1 = a2 = a3 = 0.0
    for k in range(start, end):
        s, x = slot_of(layout, z, indices[unsigned(k)]), values[unsigned(k)]
        a0 += term(first[unsigned(s)], second[unsigned(s)], x)
        a1 += term(first[unsigned(s + step)], second[unsigned(s + step)], x)
        a2 += term(first[unsigned(s + 2 * step)], second[unsigned(s + 2 * step)], x)
        a3 += term(first[unsigned(s + 3 * step)], second[unsigned(s + 3 * step)], x)
    scores[z], scores[z + 1], scores[z + 2], scores[z + 3] = a0, a1, a2, a3


@njit(cache=True, inline="always")
def two_sums(term, first, second, layout, z, step, indices, values, start, end, scores):
    """class_sums of classes z and z+1."""
    a0 = a1 = 0.0
    for k in range(start, end):
        s, x = slot_of(layout, z, indices[unsigned(k)]), values[unsigned(k)]
        a0 += term(first[unsigned(s)], second[unsigned(s)], x)
        a1 += term(first[unsigned(s + step)], second[unsigned(s + step)], x)
    scores[z], scores[z + 1] = a0, a1


@njit(cache=True, inline="always")
def weighted(w_s, unused, x):
    return w_s * x


@njit(cache=True, inline="always")
def class_scores(w, layout, K, indices, values, start, end, scores):
    """scores[z] = w . f(x, z) for the first K classes."""
    class_sums(weighted, w, w, layout, K, indices, values, start, end, scores)


@njit(cache=True, inline="always")
def prefetch_next_row_blocks(w, layout, K, indptr, indices, i, spread):
    """Ask the cache for the next row's slots in every class block (see prefetch.py), when the
    chunk's slots are ``spread`` (chunk_spread): else they stay cached from row to row, and
    the requests would be pure cost. Blocks 2^b slots apart: K lines a feature; classes side by
    side: one request every PREFETCH_CLASSES of them, and the last."""
    if spread and i + 2 < len(indptr):
        step = 1 if layout[0] > 1 else PREFETCH_CLASSES
        for k in range(indptr[i + 1], indptr[i + 2]):
            j = indices[k]
            for z in range(0, K, step):
                prefetch(w, slot_of(layout, z, j))
            if step > 1 and K > 0:
                prefetch(w, slot_of(layout, K - 1, j))


def prefetch_state_blocks(state, layout, K, indptr, indices, i, spread):
    """prefetch_next_row_blocks of the state's arrays (a joint loop's ``state`` tuple): its
    first, and its second too when the classes lie side by side and the state is two 1-d
    arrays (mean and variance: apart then, where in blocks they share the lines). numba
    compiles it (the overload below)."""
    raise TypeError("prefetch_state_blocks runs inside a numba kernel")


@overload(prefetch_state_blocks, inline="always")
def _prefetch_state_blocks(state, layout, K, indptr, indices, i, spread):
    if isinstance(state, types.UniTuple) and state.count == 2 and state.dtype.ndim == 1:
        def both(state, layout, K, indptr, indices, i, spread):
            prefetch_next_row_blocks(state[0], layout, K, indptr, indices, i, spread)
            if layout[0] == 1:
                prefetch_next_row_blocks(state[1], layout, K, indptr, indices, i, spread)
        return both

    def first(state, layout, K, indptr, indices, i, spread):
        prefetch_next_row_blocks(state[0], layout, K, indptr, indices, i, spread)
    return first


@njit(cache=True, inline="always")
def best_class(scores, K, skip):
    """argmax over z < K, z != skip (ties: the earliest class); -1 when there is none."""
    best = -1
    best_score = 0.0
    for z in range(K):
        if z != skip and (best < 0 or scores[z] > best_score):
            best = z
            best_score = scores[z]
    return best


@njit(cache=True, inline="always")
def scores_finite(scores, K):
    """Whether the first K class scores are finite (a prediction from others is garbage)."""
    for z in range(K):
        if not np.isfinite(scores[z]):
            return False
    return True


@njit(cache=True, inline="always")
def write_delta(indices, values, start, end, layout, y, rival, delta_indices, delta_values):
    """Delta = f(x, y) - f(x, y') into the scratch row; returns its length 2 nnz.

    The two halves lie in different blocks, so Delta has no repeated slot (the diagonal rules
    update each slot once, as for a merged binary row)."""
    n = end - start
    for t in range(n):
        j = indices[unsigned(start + t)]
        x = values[unsigned(start + t)]
        delta_indices[unsigned(t)] = slot_of(layout, y, j)
        delta_values[unsigned(t)] = x
        delta_indices[unsigned(n + t)] = slot_of(layout, rival, j)
        delta_values[unsigned(n + t)] = -x
    return 2 * n


@njit(cache=True, inline="always")
def joint_prepare(predict_scores, known, cls, importance, indices, values, start, end, layout,
                  i, work):
    """Example i of a joint kernel, before the family's step.

    work = (scores, delta_indices, delta_values, spread), the scratch of joint_workspace. The
    caller has filled ``predict_scores`` (the progressive prediction's, over the ``known``
    classes) and work[0] (the update's, over visible_classes(known, cls[i])); they are the same
    array except for the averaged perceptron. Returns (predicted class or -1, known after this
    example, length of the Delta row written to work[1], work[2]; 0 when there is no update to
    make: unlabeled (class -1), importance <= 0, or no second class yet; -1 when a score of the
    prediction is not finite: the kernel then returns the example as bad, kernels/sparse.py).
    The family's step checks the margin on Delta.
    """
    predicted = best_class(predict_scores, known, -1)
    if not scores_finite(predict_scores, known):
        return predicted, known, -1
    label = cls[i]
    if label < 0:
        return predicted, known, 0
    known = visible_classes(known, label)
    if not importance[i] > 0.0:
        return predicted, known, 0
    rival = best_class(work[0], known, label)
    if rival < 0:
        return predicted, known, 0
    return predicted, known, write_delta(indices, values, start, end, layout, label, rival,
                                         work[1], work[2])


@njit(cache=True, nogil=True)
def all_class_scores(w, layout, K, indptr, indices, values, out):
    """out[i, z] = w . f(x_i, z): prediction with a fixed joint model."""
    for i in range(len(indptr) - 1):
        class_scores(w, layout, K, indices, values, indptr[i], indptr[i + 1], out[i])


def chunk_spread(learner, indptr, indices):
    """Whether the slots that the learner has read so far, in all its class blocks, may
    overflow a core's own cache (CACHED_BYTES): then the kernel asks for the class blocks of
    the row ahead. The slots are counted, on a strided sample of each chunk's entries
    (SPREAD_SAMPLE at most), by linear counting on the flags the learner keeps
    (``seen_slots``): a few hundred numbered features (pixels, digits) stay below it for good,
    and hashed words pass it in their first chunk. All slots ever read are an upper bound of
    those the cache must hold, so the count errs on the side of prefetching."""
    seen = getattr(learner, "seen_slots", None)
    if seen is None:
        seen = learner.seen_slots = np.zeros(DISTINCT_FLAGS, np.bool_)
        learner.seen_flags = 0   # (the flags set: counted as flag_slots sets them)
    start, end = indptr[0], indptr[-1]
    learner.seen_flags += flag_slots(indices, start, end, max(1, (end - start) // SPREAD_SAMPLE),
                                     seen)
    working_set = flagged_slots(learner.seen_flags, len(seen)) * max(learner.blocks, 1) \
        * learner.state_bytes_per_slot()
    return working_set > CACHED_BYTES


def flagged_slots(flagged, flags):
    """The number of distinct slots that set ``flagged`` of ``flags`` flags (flag_slots), by
    linear counting: -m ln(1 - set/m) for m flags; infinite once every flag is set."""
    if flagged >= flags:
        return np.inf
    return -flags * np.log(1.0 - flagged / flags)


@njit(cache=True, nogil=True)
def flag_slots(indices, start, end, step, flags):
    """Set the flag of every ``step``-th slot of indices[start:end] (``flags`` a power of two
    long; a slot's low bits pick its flag: slots are hashes or numbers); returns how many
    flags it set that were clear."""
    mask = len(flags) - 1
    newly = 0
    for k in range(start, end, step):
        flag = indices[k] & mask
        newly += not flags[flag]
        flags[flag] = True
    return newly


class Reads(NamedTuple):
    """Rows of a chunk whose class scores a kernel reads on its way through it: rows[r] before
    it learns row at[r] (``at`` ascending; int64 both), every class's score into scores[r]
    (the calibration's sample: model/online.py learn_calibrating)."""

    rows: np.ndarray
    at: np.ndarray
    scores: np.ndarray

    @classmethod
    def none(cls, classes):
        """The reads of a kernel call that reads no row (``classes`` wide)."""
        return cls(NO_READS, NO_READS, np.empty((0, classes)))


NO_READS = np.empty(0, np.int64)   # the rows (and at) of a kernel call that reads none


def joint_workspace(learner, indptr, indices, reads=None):
    """Scratch of a joint kernel call on a chunk, ``work`` = (class scores, Delta's slots,
    Delta's values, chunk_spread, then the Reads' rows, at and scores: none when None); int64
    slots: K D may pass 2^31."""
    nnz_max = int(np.max(np.diff(indptr))) if len(indptr) > 1 else 0
    scores = np.zeros(max(learner.blocks, 1))
    size = 2 * max(nnz_max, 1)
    if reads is None:
        reads = Reads.none(len(scores))
    return (scores, np.empty(size, np.int64), np.empty(size),
            chunk_spread(learner, indptr, indices), *reads)
