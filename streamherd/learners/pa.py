"""Passive-Aggressive learners (Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, JMLR 2006).

With the hinge loss l = max(0, 1 - y w.x), update w += tau y x when l > 0, where
  PA:    tau = l / |x|^2                     (Eq. 6 of the paper)
  PA-I:  tau = min(C, l / |x|^2)             (Eq. 7)
  PA-II: tau = l / (|x|^2 + 1 / (2C))        (Eq. 8)
An importance weight s scales C (PA has no C: s repeats of one PA update change nothing after
the first, since the loss is then 0).

Joint multiclass (Sec. 7 of the paper): the same update on Delta = Phi(x, y) - Phi(x, y') with
y' the highest-scoring wrong class, y = +1 and |Delta|^2 = 2 |x|^2 (learners/multiclass.py).
Regression (``--loss squared``, Sec. 4): the epsilon-insensitive loss
l = max(0, |y - w.x| - epsilon) (``--epsilon``, default 0), the same tau with that l, and
w += sign(y - w.x) tau x. The progressive loss reported is still the squared error.
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner
from streamherd.learners.multiclass import joint_row
from streamherd.learners.prefetch import row_ahead
from streamherd.learners.sparse import axpy, dot, dot_ahead, finite, squared_norm


@njit(cache=True, inline="always")
def pa_tau(loss, norm2, variant, c):
    if variant == 0:
        return loss / norm2                     # Eq. 6
    if variant == 1:
        return min(c, loss / norm2)             # Eq. 7
    return loss / (norm2 + 1.0 / (2.0 * c))     # Eq. 8


@njit(cache=True, inline="always")
def pa_step(w, indices, values, start, end, loss, direction, variant, c):
    """w += direction tau x when loss > 0; returns (updated, ok): ok is False when the loss,
    |x|^2 or tau is not finite (|x|^2 = inf makes tau 0: an update that learns nothing), or a
    weight written is not (learners/sparse.py)."""
    if not finite(loss):
        return False, False
    if loss <= 0.0:
        return False, True
    norm2 = squared_norm(values, start, end)
    if norm2 == 0.0:  # an empty example: no direction to move in
        return False, True
    tau = pa_tau(loss, norm2, variant, c)
    if not finite(norm2, tau):
        return False, False
    return True, axpy(w, direction * tau, indices, values, start, end)


@njit(cache=True, nogil=True)
def _pa_chunk(y, importance, indptr, indices, values, w, variant, C, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m = dot_ahead(w, indices, values, start, end, row_ahead(indptr, i))
        margins_out[i] = m
        if not finite(m):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = pa_step(w, indices, values, start, end, 1.0 - y[i] * m, y[i], variant,
                              C * importance[i])
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _pa_joint(cls, importance, indptr, indices, values, w, D, known, variant, C, predicted_out,
              work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(w, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        updated, ok = pa_step(w, work[1], work[2], 0, n, 1.0 - dot(w, work[1], work[2], 0, n),
                              1.0, variant, C * importance[i])
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _pa_regression(y, importance, indptr, indices, values, w, variant, C, epsilon, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m = dot(w, indices, values, start, end)
        margins_out[i] = m
        if not finite(m):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        residual = y[i] - m
        updated, ok = pa_step(w, indices, values, start, end, abs(residual) - epsilon,
                              np.sign(residual), variant, C * importance[i])
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


class PassiveAggressive(Learner):
    """PA: no hyperparameter."""

    variant = 0

    def learn(self, y, importance, indptr, indices, values, margins_out):
        return self.checked(*_pa_chunk(y, importance, indptr, indices, values, self.mean,
                                       self.variant, self.options.get("C", np.inf), margins_out))

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        return _pa_joint(cls, importance, indptr, indices, values, self.mean, self.dim, known,
                         self.variant, self.options.get("C", np.inf), predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        return _pa_regression(y, importance, indptr, indices, values, self.mean, self.variant,
                              self.options.get("C", np.inf), self.options.get("epsilon", 0.0),
                              margins_out)


class PassiveAggressiveI(PassiveAggressive):
    variant = 1


class PassiveAggressiveII(PassiveAggressive):
    variant = 2
