"""What every learner's joint multiclass kernel shares (numba, inlined into the family kernels).

The construction (Crammer & Lee 2010 Sec. 5, after Collins 2002 and Crammer, Dredze & Kulesza
2009): one weight block of D slots per class, f(x, z) puts x in block z (class z's slot j is
z * D + j), the score of class z is mu . f(x, z) and the prediction is the class of largest score.
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
import numpy as np
from numba import njit

from streamherd.learners.kernels.prefetch import prefetch


@njit(cache=True, inline="always")
def visible_classes(known, label):
    """The classes an update on ``label`` may involve: those known plus ``label`` itself."""
    return max(known, label + 1)


@njit(cache=True, inline="always")
def class_sums(term, first, second, D, K, indices, values, start, end, scores):
    """scores[z] = the sum over x's features of term(first[s], second[s], x_j), s = z D + j the
    slot of feature j in block z, for the first K classes (a state of two per-slot arrays)."""
    for z in range(K):
        scores[z] = 0.0
    for k in range(start, end):
        j = indices[k]
        x = values[k]
        for z in range(K):
            scores[z] += term(first[z * D + j], second[z * D + j], x)


@njit(cache=True, inline="always")
def weighted(w_s, unused, x):
    return w_s * x


@njit(cache=True, inline="always")
def class_scores(w, D, K, indices, values, start, end, scores):
    """scores[z] = w . f(x, z) for the first K classes."""
    class_sums(weighted, w, w, D, K, indices, values, start, end, scores)


@njit(cache=True, inline="always")
def prefetch_next_row_blocks(w, D, K, indptr, indices, i):
    """Ask the cache for the next row's slots in every class block (see prefetch.py: the K
    blocks lie 2^b slots apart, so each feature costs K cache misses)."""
    if i + 2 < len(indptr):
        for k in range(indptr[i + 1], indptr[i + 2]):
            j = indices[k]
            for z in range(K):
                prefetch(w, z * D + j)


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
def write_delta(indices, values, start, end, D, y, rival, delta_indices, delta_values):
    """Delta = f(x, y) - f(x, y') into the scratch row; returns its length 2 nnz.

    The two halves lie in different blocks, so Delta has no repeated slot (the diagonal rules
    update each slot once, as for a merged binary row)."""
    n = end - start
    for t in range(n):
        j = indices[start + t]
        x = values[start + t]
        delta_indices[t] = y * D + j
        delta_values[t] = x
        delta_indices[n + t] = rival * D + j
        delta_values[n + t] = -x
    return 2 * n


@njit(cache=True, inline="always")
def joint_prepare(predict_scores, known, cls, importance, indices, values, start, end, D, i,
                  work):
    """Example i of a joint kernel, before the family's step.

    work = (scores, delta_indices, delta_values), the scratch of joint_workspace. The caller has
    filled ``predict_scores`` (the progressive prediction's, over the ``known`` classes) and
    work[0] (the update's, over visible_classes(known, cls[i])); they are the same array except
    for the averaged perceptron. Returns (predicted class or -1, known after this example, length
    of the Delta row written to work[1], work[2]; 0 when there is no update to make: unlabeled
    (class -1), importance <= 0, or no second class yet; -1 when a score of the prediction is not
    finite: the kernel then returns the example as bad, kernels/sparse.py). The family's step
    checks the margin on Delta.
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
    return predicted, known, write_delta(indices, values, start, end, D, label, rival, work[1],
                                         work[2])


@njit(cache=True, inline="always")
def joint_row(w, D, known, cls, importance, indptr, indices, values, i, work):
    """joint_prepare with the scores w . f(x, z) of the mean (every learner but the averaged
    perceptron and the diagonal second-order perceptron, which score otherwise)."""
    start, end = indptr[i], indptr[i + 1]
    prefetch_next_row_blocks(w, D, known, indptr, indices, i)
    class_scores(w, D, visible_classes(known, cls[i]), indices, values, start, end, work[0])
    return joint_prepare(work[0], known, cls, importance, indices, values, start, end, D, i,
                         work)


@njit(cache=True, nogil=True)
def all_class_scores(w, D, K, indptr, indices, values, out):
    """out[i, z] = w . f(x_i, z): prediction with a fixed joint model."""
    for i in range(len(indptr) - 1):
        class_scores(w, D, K, indices, values, indptr[i], indptr[i + 1], out[i])


def joint_workspace(learner, nnz_max):
    """Scratch of a joint kernel call, ``work`` = (class scores, Delta's slots, Delta's values);
    int64 slots: K D may pass 2^31."""
    scores = np.zeros(max(learner.blocks, 1))
    size = 2 * max(nnz_max, 1)
    return scores, np.empty(size, np.int64), np.empty(size)
