"""Normal Herding, NHERD (Crammer & Lee, "Learning via Gaussian Herding", NIPS 2010, Fig. 3).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m <= 1:
  mu += alpha y Sigma x,  alpha = max(0, 1 - m) / (v + 1/C)                        (Eq. 9)
  nherd-full:  Sigma -= Sigma x x' Sigma (C^2 v + 2C) / (1 + C v)^2                (Eq. 13)
Diagonal forms (Eq. 14):
  nherd-e (exact):    sigma_r <- sigma_r / (1 + C x_r^2 sigma_r)^2
  nherd-p (project):  sigma_r <- 1 / (1/sigma_r + (2C + C^2 v) x_r^2)
  nherd-d (drop):     sigma_r <- sigma_r - (sigma_r x_r)^2 (C^2 v + 2C) / (1 + C v)^2
``nherd`` is an alias of ``nherd-p``. An importance weight s scales C (C s), as in PA-I/PA-II.

Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1
(learners/kernels/multiclass.py).
Regression (``--loss squared``, Sec. 3.1: the squared loss is uniformly 1-bounded): on every
example mu += (y - mu.x) Sigma x / (v + 1/C), with the same covariance updates.
"""
from numba import njit

from streamherd.learners.gaussian import GaussianLearner
from streamherd.learners.kernels.covariance import full_sigma_x, full_update, rule_in_params
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_planned_rules, run_rules
from streamherd.learners.kernels.sparse import finite

EXACT, PROJECT, DROP = 0, 1, 2
# the registry's rule of a diagonal variant; nherd-full has none (its step never reads it)
VARIANCE_RULES = {"exact": EXACT, "project": PROJECT, "drop": DROP, "": PROJECT}


@njit(cache=True, inline="always")
def nherd_alpha(loss, v, c):
    """The step of Eq. 9, loss / (v + 1/C): loss the hinge loss max(0, 1 - m), or the residual
    y - mu.x of the squared loss (Sec. 3.1)."""
    return loss / (v + 1.0 / c)


@njit(cache=True, inline="always")
def nherd_shrink(c, v):
    """The coefficient (C^2 v + 2C) / (1 + C v)^2 of Eq. 13."""
    return (c * c * v + 2.0 * c) / ((1.0 + c * v) * (1.0 + c * v))


@njit(cache=True, inline="always")
def nherd_variance(s, x, numbers, variant):
    """The rules of Eq. 14 on the old sigma_r = s, numbers = (C, v, shrink) (diag_plan)."""
    c, v, shrink = numbers[0], numbers[1], numbers[2]
    x2 = x * x
    if variant == EXACT:                                        # Eq. 14
        q = 1.0 + c * x2 * s
        return s / (q * q)
    if variant == PROJECT:
        # 1/(1/s + k x^2) written as s/(1 + s k x^2): one division
        return s / (1.0 + s * (2.0 * c + c * c * v) * x2)
    return s - s * s * x2 * shrink


# the numbers of no step: every rule of Eq. 14 then keeps sigma_r (the bank's members that do
# not learn from a row, kernels/bank.py)
KEEP = (0.0, 0.0, 0.0)


@njit(cache=True, inline="always")
def planned(scale, c, v):
    """(True, ok, scale, (C, v, shrink)): ok False when the confidence v or the step (scale,
    shrink) is not finite."""
    shrink = nherd_shrink(c, v)
    return True, finite(v, scale, shrink), scale, (c, v, shrink)


@njit(cache=True, inline="always")
def diag_plan(params, m, v, y, s):
    """The classification step (params = (C, variant); s scales C): an update when m <= 1,
    mu += alpha y Sigma x (Eq. 9) and Eq. 14 (covariance.planned_step)."""
    if m > 1.0:
        return False, True, 0.0, KEEP
    c = params[0] * s
    return planned(nherd_alpha(max(0.0, 1.0 - m), v, c) * y, c, v)


@njit(cache=True, inline="always")
def diag_regression_plan(params, m, v, y, s):
    c = params[0] * s
    return planned(nherd_alpha(y - m, v, c), c, v)


@entry_point()
def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_planned_rules(diag_plan, diag_regression_plan, nherd_variance, KEEP, rule_in_params,
                             binary, regression, joint, args, bank)


@njit(cache=True, inline="always")
def full_step(state, params, indices, values, start, end, m, v, y, s):
    if m > 1.0:
        return False, True
    c = params[0] * s
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    return True, full_update(state[0], state[1], state[2], state[3], n, v,
                             nherd_alpha(max(0.0, 1.0 - m), v, c) * y, nherd_shrink(c, v),
                             0.0)                                                # Eq. 13


@njit(cache=True, inline="always")
def full_regression_step(state, params, indices, values, start, end, m, v, y, s):
    c = params[0] * s
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    return True, full_update(state[0], state[1], state[2], state[3], n, v, nherd_alpha(y - m, v, c),
                             nherd_shrink(c, v), 0.0)


@entry_point()
def run_full(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, full_step, full_regression_step, binary, regression, joint, args)


class Nherd(GaussianLearner):
    """nherd-e, nherd-p, nherd-d (the registry's rule: "exact", "project" or "drop", Eq. 14) and
    nherd-full (Eq. 13)."""

    entry_points = {"diagonal": run_diag, "full": run_full}
    bank_entry_points = {"diagonal": run_diag}
    rules = tuple(VARIANCE_RULES)

    def kernel_params(self):
        return (self.options["C"], VARIANCE_RULES[self.spec.rule])
