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
from streamherd.learners.sparse import axpy, dot, dot_ahead, squared_norm


@njit(cache=True, inline="always")
def pa_tau(loss, norm2, variant, c):
    if variant == 0:
        return loss / norm2                     # Eq. 6
    if variant == 1:
        return min(c, loss / norm2)             # Eq. 7
    return loss / (norm2 + 1.0 / (2.0 * c))     # Eq. 8


@njit(cache=True, inline="always")
def pa_step(w, indices, values, start, end, loss, direction, variant, c):
    """w += direction tau x when loss > 0; returns whether it updated."""
    if loss <= 0.0:
        return False
    norm2 = squared_norm(values, start, end)
    if norm2 == 0.0:  # an empty example: no direction to move in
        return False
    axpy(w, direction * pa_tau(loss, norm2, variant, c), indices, values, start, end)
    return True


@njit(cache=True, nogil=True)
def _pa_chunk(y, importance, indptr, indices, values, w, variant, C, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m = dot_ahead(w, indices, values, start, end, row_ahead(indptr, i))
        margins_out[i] = m
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updates += pa_step(w, indices, values, start, end, 1.0 - y[i] * m, y[i], variant,
                           C * importance[i])
    return updates


@njit(cache=True, nogil=True)
def _pa_joint(cls, importance, indptr, indices, values, w, D, known, variant, C, predicted_out,
              work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(w, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n > 0:
            m = dot(w, work[1], work[2], 0, n)
            updates += pa_step(w, work[1], work[2], 0, n, 1.0 - m, 1.0, variant,
                               C * importance[i])
    return updates, -1, known


@njit(cache=True, nogil=True)
def _pa_regression(y, importance, indptr, indices, values, w, variant, C, epsilon, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m = dot(w, indices, values, start, end)
        margins_out[i] = m
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        residual = y[i] - m
        updates += pa_step(w, indices, values, start, end, abs(residual) - epsilon,
                           np.sign(residual), variant, C * importance[i])
    return updates, -1


class PassiveAggressive(Learner):
    """PA: no hyperparameter."""

    variant = 0
    regression_hyperparameters = {"epsilon": 0.0}

    def learn(self, y, importance, indptr, indices, values, margins_out):
        return _pa_chunk(y, importance, indptr, indices, values, self.mean, self.variant,
                         self.options.get("C", np.inf), margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        return _pa_joint(cls, importance, indptr, indices, values, self.mean, self.dim, known,
                         self.variant, self.options.get("C", np.inf), predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        return _pa_regression(y, importance, indptr, indices, values, self.mean, self.variant,
                              self.options.get("C", np.inf), self.options.get("epsilon", 0.0),
                              margins_out)


class PassiveAggressiveI(PassiveAggressive):
    hyperparameters = {"C": 1.0}
    variant = 1


class PassiveAggressiveII(PassiveAggressive):
    hyperparameters = {"C": 1.0}
    variant = 2
