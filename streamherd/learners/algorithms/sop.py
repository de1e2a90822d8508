"""The second-order perceptron (Cesa-Bianchi, Conconi & Gentile, SIAM J. Comput. 2005).

Mistake-driven. With S = sum over past mistakes of x x', v = sum over past mistakes of y x and
A = a I + S (``-a``), example x is predicted with the margin
  v' (A + x x')^-1 x = w.x / (1 + x' A^-1 x),   w = A^-1 v          (Sherman-Morrison)
which has the sign of w.x. On a mistake (y * margin <= 0), x joins S and y x joins v.

sop-full keeps w (``mean``) and A^-1 (``inverse``, d x d). A mistake updates both in place with
g = A^-1 x, q = x' g (an importance weight s adds s x x' to S and s y x to v):
  A^-1 -= s g g' / (1 + s q),   w += s g (y - w.x) / (1 + s q).
sop (diagonal) keeps only the diagonal of A: D = a + sum over mistakes of s x_r^2 (``diagonal``),
and v (``label_sum``); it predicts with sum_r v_r x_r / (D_r + x_r^2), the margin above with A
replaced by its diagonal, and ``mean`` holds v / D (the same sign as that margin for a
1-feature example; computed when the model is saved, for inspection: predictions use D and v).

Joint multiclass: the same mistake-driven update on Delta = f(x, y) - f(x, y') with y = +1.
sop-full scores class z by w . f(x, z) (its margin on Delta, w.Delta / (1 + Delta' A^-1 Delta),
has the sign of score_y - score_y'); sop scores class z by its diagonal margin of f(x, z), whose
difference for y and y' is its margin on Delta. No regression form: ``--loss squared`` refuses it.
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner, check_full_fits
from streamherd.learners.kernels.covariance import (full_confidences, full_reset,
                                                    full_sigma_x, full_update, pair_sums_ahead)
from streamherd.learners.kernels.loops import (entry_point, mean_margin, mean_scores, run_joint,
                                               run_rules)
from streamherd.learners.kernels.multiclass import class_sums
from streamherd.learners.kernels.prefetch import NO_ROW
from streamherd.learners.kernels.sparse import dot, finite


@njit(cache=True, inline="always")
def sop_term(label_sum_j, diagonal_j, x):
    """Feature j's term of the diagonal margin, v_j x_j / (D_j + x_j^2)."""
    return label_sum_j * x / (diagonal_j + x * x)


@njit(cache=True, inline="always")
def sop_terms(label_sum_j, diagonal_j, x):
    return sop_term(label_sum_j, diagonal_j, x), 0.0


@njit(cache=True, inline="always")
def _sop_diag_step(label_sum, diagonal, indices, values, start, end, m, y, s):
    """On a mistake (m <= 0) x joins S and y x joins v (weight s); returns (updated, ok).
    ``mean`` (v / D) is not kept up to date here: predictions never read it, and writing it
    made a third random access per feature (about 1.4x slower); ``state()`` computes it."""
    if m > 0.0:
        return False, True
    ok = True
    for k in range(start, end):
        j = indices[k]
        x = values[k]
        label_sum[j] += s * y * x
        diagonal[j] += s * x * x
        if not (np.isfinite(label_sum[j]) and np.isfinite(diagonal[j])):
            ok = False
    return True, ok


@njit(cache=True, inline="always")
def _sop_full_step(w, inverse, g, active, n, wx, q, y, s):
    """g = A^-1 x and q = x' g computed; on a mistake the Sherman-Morrison update of the module
    docstring; returns (updated, ok): ok is False when w.x or q is not finite (q = inf makes the
    step 0: an update that learns nothing), or the update's (full_update)."""
    ok = finite(wx, q)
    if not ok or y * (wx / (1.0 + q)) > 0.0:
        full_reset(g, active, n)
        return False, ok
    return True, full_update(w, inverse, g, active, n, q, s * (y - wx) / (1.0 + s * q),
                             s / (1.0 + s * q), 0.0)


@njit(cache=True, inline="always")
def diag_margin(state, indices, values, start, end, ahead):
    """(the diagonal margin, 0), asking the cache for the slots of the row ``ahead``
    (diagonal is interleaved with label_sum: the same lines)."""
    return pair_sums_ahead(sop_terms, state[0], state[1], indices, values, start, end, ahead)


@njit(cache=True, inline="always")
def diag_scores(state, layout, K, indices, values, start, end, out):
    """out[z] = the diagonal margin of f(x, z): sum_r v_zr x_r / (D_zr + x_r^2)."""
    class_sums(sop_term, state[0], state[1], layout, K, indices, values, start, end, out)


@njit(cache=True, inline="always")
def diag_step(state, params, indices, values, start, end, m, v, y, s):
    return _sop_diag_step(state[0], state[1], indices, values, start, end, m, y, s)


@njit(cache=True, inline="always")
def full_joint_step(state, params, indices, values, start, end, m, v, y, s):
    """On Delta: m = w.Delta; the margin w.Delta / (1 + Delta' A^-1 Delta) has its sign."""
    q, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    return _sop_full_step(state[0], state[1], state[2], state[3], n, m, q, y, s)


@entry_point("numpy")
def run_diag(binary=None, regression=None, joint=None, args=None):
    return run_rules(diag_margin, diag_step, None, binary, regression, joint, args, diag_scores)


@njit(cache=True, nogil=True, error_model="numpy")
def _sop_diag_scores(label_sum, diagonal, layout, K, indptr, indices, values, out):
    for i in range(len(indptr) - 1):
        class_sums(sop_term, label_sum, diagonal, layout, K, indices, values, indptr[i],
                   indptr[i + 1], out[i])


@njit(cache=True, nogil=True, error_model="numpy")
def _sop_diag_margins(label_sum, diagonal, indptr, indices, values, out):
    for i in range(len(indptr) - 1):
        out[i] = pair_sums_ahead(sop_terms, label_sum, diagonal, indices, values, indptr[i],
                                 indptr[i + 1], NO_ROW)[0]


@njit(cache=True, inline="always")
def full_binary_loop(binary, args):
    """sop-full's binary loop, its own: the margin w.x / (1 + x' A^-1 x) needs g = A^-1 x before
    the step. binary, args: kernels/loops.run_rules's; returns (updates, index of a bad example
    or -1)."""
    importance, indptr, indices, values, state, _ = args
    y, margins_out = binary
    w, inverse, g, active = state
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        wx = dot(w, indices, values, start, end)
        q, n = full_sigma_x(inverse, indices, values, start, end, g, active)  # g = A^-1 x
        margins_out[i] = wx / (1.0 + q)
        if not finite(margins_out[i]):
            full_reset(g, active, n)
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            full_reset(g, active, n)
            continue
        updated, ok = _sop_full_step(w, inverse, g, active, n, wx, q, y[i], importance[i])
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@entry_point("numpy")
def run_full(binary=None, regression=None, joint=None, args=None):
    """Joint: the shared loop; binary: full_binary_loop (no regression form: Learner refuses
    that task). As in loops.py, numba prunes the branches of the omitted arguments."""
    if joint is None:
        if binary is None:
            return 0, 0, 0
        updates, bad = full_binary_loop(binary, args)
        return updates, bad, 0
    return run_joint(mean_scores, mean_margin, full_joint_step, joint, args)


class SecondOrderPerceptron(Learner):
    """Diagonal second-order perceptron."""

    state_arrays = ("label_sum", "diagonal")
    positive_arrays = ("diagonal",)   # a I + S
    live_arrays = ("mean", "label_sum", "diagonal")
    interleaved = ("label_sum", "diagonal")

    def init_state(self):
        self.new_interleaved(diagonal=self.options["a"])

    def load_state(self, state, learner_meta):
        self.label_sum = state["label_sum"]
        self.diagonal = state["diagonal"]

    @property
    def mean(self):
        """v / D, brought up to date when read (the kernels leave it: see _sop_diag_step)."""
        if self._mean_stale:
            np.divide(self.label_sum, self.diagonal, out=self._mean)
            self._mean_stale = False
        return self._mean

    @mean.setter
    def mean(self, value):
        self._mean = value
        self._mean_stale = hasattr(self, "label_sum")

    def state(self):
        return {"mean": self.mean, "label_sum": self.label_sum, "diagonal": self.diagonal}

    entry_points = {"diagonal": run_diag}

    def kernel_state(self):
        self._mean_stale = True   # the kernels update label_sum and diagonal
        return (self.label_sum, self.diagonal)

    def predict_margins(self, indptr, indices, values, out):
        _sop_diag_margins(self.label_sum, self.diagonal, indptr, indices, values, out)

    def class_scores(self, indptr, indices, values, out):
        _sop_diag_scores(self.label_sum, self.diagonal, self.layout, self.blocks, indptr, indices,
                         values, out)


class SecondOrderPerceptronFull(Learner):
    """Second-order perceptron with the full d x d inverse of a I + S."""

    state_arrays = ("inverse",)
    matrix_arrays = positive_arrays = ("inverse",)   # A^-1
    live_arrays = ("mean", "inverse")

    def check_size(self, size, blocks):
        check_full_fits(self.name, size, what="inverse", blocks=blocks)

    def init_state(self):
        self.inverse = np.zeros((self.size, self.size))
        np.fill_diagonal(self.inverse, 1.0 / self.options["a"])

    def load_state(self, state, learner_meta):
        self.inverse = np.ascontiguousarray(state["inverse"])

    def state(self):
        return {"mean": self.mean, "inverse": self.inverse}

    entry_points = {"full": run_full}

    def kernel_state(self):
        return (self.mean, self.inverse, *self._workspace())

    def predict_margins(self, indptr, indices, values, out):
        """w.x / (1 + x' A^-1 x), the margin training reports."""
        Learner.predict_margins(self, indptr, indices, values, out)
        q = np.empty_like(out)
        full_confidences(self.inverse, indptr, indices, values, q)
        out /= 1.0 + q
