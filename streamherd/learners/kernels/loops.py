"""The per-example loops, written once: binary (and regression), joint multiclass.

A learner is its update rule (algorithms/): a ``margin`` rule, which reads the state on a row and
returns (margin, confidence) (the confidence v = x' Sigma x of the diagonal Gaussian rules, else
0; the row ``ahead`` is prefetched in the same pass, see prefetch.py), and a ``step`` rule,
  step(state, params, indices, values, start, end, m, v, y, s) -> (updated, ok)
the update on the row with signed margin m = y margin (the margin itself for regression), label
y (+1 on a joint Delta row) and importance weight s > 0. ``state`` is a tuple of the learner's
arrays (its first is the weight vector the joint scores read and the prefetch asks for),
``params`` a tuple of its numbers.

The loops are inlined (``inline="always"``) into one thin cached entry point per (family, task,
covariance) in the algorithm's module, which passes its rules (njit dispatchers, resolved at
compile time: the loop is compiled for them) and the chunk's arguments. A generic loop that
received its rules from Python, or a factory closing over them, would never hit numba's on-disk
cache across processes.

Reference counts: an inlined step that takes arrays gets NRT_incref/decref calls around it, per
labeled example, unless numba's pruning removes them, which depends on the shape of the
compiled code (a raise path, such as a division's ZeroDivisionError, out of the step defeats
it: arow-p's kernel was 8% slower). So the entry points of arow, narow, pa, perceptron and sop
compile with ``error_model="numpy"`` (a division by zero gives inf or nan, which the steps'
checks report, instead of raising), which leaves no such calls; nherd's, cw's and scw's have
none with the default error model (and gain some with numpy's). Check with ``inspect_llvm()``
of an entry point (count ``NRT_incref``) after changing a step.

Numerical safety (sparse.py): every example's margin is checked; the step checks the numbers its
update is made of and the entries it wrote, and returns ok False on a failure; the loop then
returns the example's index (``Learner.checked`` raises UnstableUpdate), else -1.
"""
import numpy as np
from numba import njit

from streamherd.learners.kernels.covariance import diag_margin_confidence_ahead
from streamherd.learners.kernels.multiclass import (class_scores, joint_prepare,
                                                    prefetch_next_row_blocks, visible_classes)
from streamherd.learners.kernels.prefetch import NO_ROW, row_ahead
from streamherd.learners.kernels.sparse import dot_ahead, finite


@njit(cache=True, inline="always")
def mean_margin(state, indices, values, start, end, ahead):
    """(mu.x, 0): the margin of the mean state[0]."""
    return dot_ahead(state[0], indices, values, start, end, ahead), 0.0


@njit(cache=True, inline="always")
def diag_margin(state, indices, values, start, end, ahead):
    """(mu.x, x' diag(sigma) x) for state = (mu, sigma, ...), in one pass."""
    return diag_margin_confidence_ahead(state[0], state[1], indices, values, start, end, ahead)


@njit(cache=True, inline="always")
def mean_scores(state, D, K, indices, values, start, end, out):
    """The joint class scores of the mean state[0]."""
    class_scores(state[0], D, K, indices, values, start, end, out)


@njit(cache=True, inline="always")
def binary_loop(margin, step, signed, y, importance, indptr, indices, values, state, params,
                margins_out):
    """Predict-then-update over one chunk, y = +1/-1 (NaN: unlabeled); returns (updates, index
    of a bad example or -1). ``signed`` (a constant of the entry point): the step receives the
    signed margin y mu.x (classification), else mu.x itself (``--loss squared``, y real)."""
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m, v = margin(state, indices, values, start, end, row_ahead(indptr, i))
        margins_out[i] = m
        if not finite(m):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = step(state, params, indices, values, start, end, y[i] * m if signed else m,
                           v, y[i], importance[i])
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, inline="always")
def joint_loop(scores, margin, step, cls, importance, indptr, indices, values, state, params, D,
               known, predicted_out, work):
    """Joint multiclass (multiclass.py): ``scores`` fills the class scores, then the binary step
    on Delta with y = +1; returns (updates, index of a bad example or -1, known)."""
    updates = 0
    for i in range(len(cls)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row_blocks(state[0], D, known, indptr, indices, i)
        scores(state, D, visible_classes(known, cls[i]), indices, values, start, end, work[0])
        predicted_out[i], known, n = joint_prepare(work[0], known, cls, importance, indices,
                                                   values, start, end, D, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        m, v = margin(state, work[1], work[2], 0, n, NO_ROW)
        updated, ok = step(state, params, work[1], work[2], 0, n, m, v, 1.0, importance[i])
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known
