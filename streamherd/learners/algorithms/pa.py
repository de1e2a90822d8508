"""Passive-Aggressive learners (Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, JMLR 2006).

With the hinge loss l = max(0, 1 - y w.x), update w += tau y x when l > 0, where
  PA:    tau = l / |x|^2                     (Eq. 6 of the paper)
  PA-I:  tau = min(C, l / |x|^2)             (Eq. 7)
  PA-II: tau = l / (|x|^2 + 1 / (2C))        (Eq. 8)
An importance weight s scales C (PA has no C: s repeats of one PA update change nothing after
the first, since the loss is then 0).

Joint multiclass (Sec. 7 of the paper): the same update on Delta = Phi(x, y) - Phi(x, y') with
y' the highest-scoring wrong class, y = +1 and |Delta|^2 = 2 |x|^2 (learners/kernels/multiclass.py).
Regression (``--loss squared``, Sec. 4): the epsilon-insensitive loss
l = max(0, |y - w.x| - epsilon) (``--epsilon``, default 0), the same tau with that l, and
w += sign(y - w.x) tau x. The progressive loss reported is still the squared error.
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_rules
from streamherd.learners.kernels.sparse import axpy, finite, squared_norm


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
    weight written is not (learners/kernels/sparse.py)."""
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


@njit(cache=True, inline="always")
def step(state, params, indices, values, start, end, m, v, y, s):
    """params = (variant, C, epsilon); s scales C."""
    return pa_step(state[0], indices, values, start, end, 1.0 - m, y, params[0], params[1] * s)


@njit(cache=True, inline="always")
def regression_step(state, params, indices, values, start, end, m, v, y, s):
    residual = y - m
    return pa_step(state[0], indices, values, start, end, abs(residual) - params[2],
                   np.sign(residual), params[0], params[1] * s)


@entry_point("numpy")
def run(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_rules(mean_margin, step, regression_step, binary, regression, joint, args,
                     bank=bank)


class PassiveAggressive(Learner):
    """pa, pa1 and pa2 (the registry's rule: "", "I" or "II"; pa has no C)."""

    entry_points = {"none": run}
    bank_entry_points = {"none": run}
    rules = ("", "I", "II")
    side_by_side = True

    def kernel_params(self):
        return (self.rules.index(self.spec.rule), self.options.get("C", np.inf),
                self.options.get("epsilon", 0.0))
