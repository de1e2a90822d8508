"""The per-example loops, written once: binary (and regression), joint multiclass.

A learner is its update rule (algorithms/): a ``margin`` rule, which reads the state on a row and
returns (margin, confidence) (the confidence v = x' Sigma x of the diagonal Gaussian rules, else
0; the row ``ahead`` is prefetched in the same pass, see prefetch.py), and a ``step`` rule,
  step(state, params, indices, values, start, end, m, v, y, s) -> (updated, ok)
the update on the row with signed margin m = y margin (the margin itself for regression), label
y (+1 on a joint Delta row) and importance weight s > 0. ``state`` is a tuple of the learner's
arrays (its first is the weight vector the joint scores read and the prefetch asks for),
``params`` a tuple of its numbers.

Entry points: one thin cached entry point per (family, covariance) in the algorithm's module
(``run`` for a family without a covariance, else ``run_diag`` and ``run_full``) serves every
task:
  def run_diag(binary=None, regression=None, joint=None, args=None):
      return (run_task(margin, step, regression_step, binary, regression, args)
              if joint is None else run_joint(scores, margin, step, joint, args))
with the family's rules (njit dispatchers, resolved at compile time: the loops are inlined,
``inline="always"``, and compiled for them). A call passes ``args``, what every loop takes, and
the other arguments of its task's loop as ``binary``, ``regression`` or ``joint``, omitting the
two others (Learner.learn, learn_regression, learn_joint). An omitted argument is a constant to
numba, which prunes the branches it decides (``joint is None`` before inlining the loops, the
others after): each task compiles into a specialisation of its own, holding its loop alone, as
a function per task would. In one function with the three loops LLVM spilled more registers in
each, and the binary kernels of pa2, arow-p and cw were slower; the task's arguments come first
for the same reason (the order of the arguments changes the register allocation of the loops).
A generic loop that received its rules from Python, or a factory closing over them, would
never hit numba's on-disk cache across processes.

Reference counts: the entry points compile without numba's reference counting (``_nrt=False``,
see ``entry_point``): they allocate nothing, and every array they touch is an argument, which
the caller keeps alive for the call. With it, an inlined step that takes arrays gets
NRT_incref/decref calls around it, per labeled example, unless numba's pruning removes them,
which depends on the shape of the compiled code: a raise path out of the step defeats it (so
arow, narow, pa, perceptron and sop compiled with ``error_model="numpy"``), and so did the
arguments passed in tuples (nherd-p's and arow-p's binary loops kept two pairs). ``inspect_llvm()``
of an entry point shows no ``NRT_incref``. The error model stays each family's (numpy's: a
division by zero gives inf or nan, which the steps' checks report, instead of raising).

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


def entry_point(error_model="python"):
    """The decorator of a family's entry points: cached, releasing the GIL, compiled without
    reference counting (see the module docstring)."""
    return njit(cache=True, nogil=True, error_model=error_model, _nrt=False)


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


@njit(cache=True, inline="always")
def run_task(margin, step, regression_step, binary, regression, args):
    """The binary or regression loop of an entry point over one chunk (see the module
    docstring), with the family's rules; ``regression_step`` None: the family has no
    squared-loss form (its loop is not compiled; Learner refuses the task). args = (importance,
    indptr, indices, values, state, params); binary or regression = (y, margins_out), the other
    omitted. Returns (updates, index of a bad example or -1, 0), the shape of run_joint's."""
    importance, indptr, indices, values, state, params = args
    if regression is not None:
        if regression_step is None:
            return 0, 0, 0
        y, margins_out = regression
        updates, bad = binary_loop(margin, regression_step, False, y, importance, indptr,
                                   indices, values, state, params, margins_out)
        return updates, bad, 0
    if binary is not None:
        y, margins_out = binary
        updates, bad = binary_loop(margin, step, True, y, importance, indptr, indices, values,
                                   state, params, margins_out)
        return updates, bad, 0
    return 0, 0, 0   # in a joint call's specialisation, where the entry point never calls it


@njit(cache=True, inline="always")
def run_joint(scores, margin, step, joint, args):
    """The joint loop of an entry point over one chunk; joint = (cls, D, known, predicted_out,
    work). Returns (updates, index of a bad example or -1, known)."""
    importance, indptr, indices, values, state, params = args
    cls, D, known, predicted_out, work = joint
    return joint_loop(scores, margin, step, cls, importance, indptr, indices, values, state,
                      params, D, known, predicted_out, work)
