"""AROW, Adaptive Regularization of Weight vectors (Crammer, Kulesza & Dredze, NIPS 2009, Fig. 1).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m < 1:
  beta = 1 / (v + r),  alpha = (1 - m) beta,  mu += alpha y Sigma x
  arow-full:  Sigma -= beta Sigma x x' Sigma                                    (Eq. 9)
Diagonal forms:
  arow-p (project; equal to the exact diagonal update):  sigma_r <- 1 / (1/sigma_r + x_r^2 / r)
  arow-d (drop):                                          sigma_r <- sigma_r - beta (sigma_r x_r)^2
``arow`` is an alias of ``arow-p``. An importance weight s scales 1/r (r becomes r/s: the
regulariser weighs the example's loss s times as much, as s scales C in PA/NHERD).

Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1
(learners/kernels/multiclass.py).
Regression (``--loss squared``) is recursive least squares (AROW paper, footnote 1 and Sec. 6):
on every example mu += (y - mu.x) Sigma x / (r + v) and the same covariance updates with
beta = 1 / (r + v).
"""
import numpy as np
from numba import njit

from streamherd.learners.gaussian import GaussianLearner
from streamherd.learners.kernels.covariance import full_sigma_x, full_update, rule_in_params
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_planned_rules, run_rules
from streamherd.learners.kernels.sparse import finite


@njit(cache=True, inline="always")
def arow_variance(sj, x, numbers, drop):
    """arow-d's and arow-p's diagonal rules (module docstring) on the old sigma_r,
    numbers = (beta, r) (diag_plan)."""
    beta, rs = numbers[0], numbers[1]
    if drop:
        return sj - beta * sj * sj * x * x
    return sj / (1.0 + sj * x * x / rs)  # = 1 / (1/s + x^2/r), one division


# the numbers of no step (beta 0, r infinite): both rules then keep sigma_r (the bank's members
# that do not learn from a row, kernels/bank.py)
KEEP = (0.0, np.inf)


@njit(cache=True, inline="always")
def planned(v, scale, beta, rs):
    """(True, ok, scale, (beta, r)): ok False when the confidence v or the step (scale, beta) is
    not finite (v = inf makes beta 0: an update that learns nothing)."""
    return True, finite(v, scale, beta), scale, (beta, rs)


@njit(cache=True, inline="always")
def diag_plan(params, m, v, y, s):
    """The classification step (Fig. 1; params = (r, drop), s divides r): an update when m < 1,
    mu += alpha y Sigma x and the diagonal rule (covariance.planned_step)."""
    if m >= 1.0:
        return False, True, 0.0, KEEP
    rs = params[0] / s
    beta = 1.0 / (v + rs)
    return planned(v, (1.0 - m) * beta * y, beta, rs)


@njit(cache=True, inline="always")
def diag_regression_plan(params, m, v, y, s):
    rs = params[0] / s
    beta = 1.0 / (v + rs)                                   # recursive least squares
    return planned(v, (y - m) * beta, beta, rs)


@entry_point("numpy")
def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_planned_rules(diag_plan, diag_regression_plan, arow_variance, KEEP, rule_in_params,
                             binary, regression, joint, args, bank)


@njit(cache=True, inline="always")
def full_step(state, params, indices, values, start, end, m, v, y, s):
    if m >= 1.0:
        return False, True
    rs = params[0] / s
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    beta = 1.0 / (v + rs)
    alpha = (1.0 - m) * beta
    return True, full_update(state[0], state[1], state[2], state[3], n, v, alpha * y, beta,
                             0.0)                                                  # Eq. 9


@njit(cache=True, inline="always")
def full_regression_step(state, params, indices, values, start, end, m, v, y, s):
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    beta = 1.0 / (v + params[0] / s)                        # recursive least squares
    return True, full_update(state[0], state[1], state[2], state[3], n, v, (y - m) * beta, beta,
                             0.0)


@entry_point("numpy")
def run_full(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, full_step, full_regression_step, binary, regression, joint, args)


class Arow(GaussianLearner):
    """arow-p, arow-d (the registry's rule: "project" or "drop") and arow-full."""

    entry_points = {"diagonal": run_diag, "full": run_full}
    bank_entry_points = {"diagonal": run_diag}
    rules = ("project", "drop", "")

    def kernel_params(self):
        return (self.options["r"], self.spec.rule == "drop")
