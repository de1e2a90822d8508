"""Soft Confidence-Weighted learning, SCW-I and SCW-II (Wang, Zhao & Hoi, ICML 2012).

With m = y mu.x, v = x' Sigma x (old Sigma), phi = Phi^-1(eta), psi = 1 + phi^2/2, xi = 1 + phi^2,
update when the loss max(0, phi sqrt(v) - m) is > 0:
  SCW-I:  alpha = min(C, max(0, (-m psi + sqrt(m^2 phi^4 / 4 + v phi^2 xi)) / (v xi)))
  SCW-II: n = v + 1/(2C), gamma = phi sqrt(phi^2 m^2 v^2 + 4 n v (n + v phi^2)),
          alpha = max(0, (-(2 m n + phi^2 m v) + gamma) / (2 (n^2 + n v phi^2)))
then, as in CW: sqrt(u) = 2v / (alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v)),
beta = alpha phi / (sqrt(u) + v alpha phi), mu += alpha y Sigma x and
  scw1-full, scw2-full:  Sigma -= beta Sigma x x' Sigma
  scw1, scw2 (the diagonal of that update):  sigma_r <- sigma_r - beta (sigma_r x_r)^2
An importance weight s scales C (C s). All four keep the variance floor of cw.py
(VARIANCE_FLOOR times the initial variance). Examples with v <= 0 (no features) are not learned.
Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1
(learners/kernels/multiclass.py).
SCW has no regression form in the paper: ``--loss squared`` refuses it.
"""
import numpy as np
from numba import njit

from streamherd.learners.algorithms.cw import (KEEP, VARIANCE_FLOOR, ConfidenceWeighted, cw_alpha,
                                               cw_full_rule, cw_sqrt_u_beta)
from streamherd.learners.kernels.covariance import one_rule
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_planned_rules, run_rules
from streamherd.learners.kernels.sparse import finite


@njit(cache=True, inline="always")
def scw_alpha(m, v, phi, psi, xi, C, variant):
    if variant == 1:                                          # SCW-I
        return min(C, cw_alpha(m, v, phi, psi, xi))
    n = v + 1.0 / (2.0 * C)                                   # SCW-II
    gamma = phi * np.sqrt(phi * phi * m * m * v * v + 4.0 * n * v * (n + v * phi * phi))
    return max(0.0, (-(2.0 * m * n + phi * phi * m * v) + gamma)
               / (2.0 * (n * n + n * v * phi * phi)))


@njit(cache=True, inline="always")
def scw_variance(sj, x, numbers, rule):
    """The diagonal of Sigma -= beta Sigma x x' Sigma on the old sigma_r, floored: numbers
    = (beta, floor) (diag_plan; cw.KEEP keeps sigma_r)."""
    beta, floor = numbers[0], numbers[1]
    return max(floor, sj - beta * sj * sj * x * x)


@njit(cache=True, inline="always")
def diag_plan(params, m, v, y, s):
    """The scw step on row x with signed margin m when the loss max(0, phi sqrt(v) - m) is > 0
    (counted as an update even when alpha is 0; covariance.planned_step): not ok when m, the
    confidence v or alpha is not finite. params = (phi, C, variant, floor); s scales C."""
    phi, c, variant, floor = params[0], params[1] * s, params[2], params[3]
    if not finite(m, v):
        return False, False, 0.0, KEEP
    if not scw_loss(m, v, phi):
        return False, True, 0.0, KEEP
    alpha = scw_alpha(m, v, phi, 1.0 + phi * phi / 2.0, 1.0 + phi * phi, c, variant)
    if not finite(alpha):
        return True, False, 0.0, KEEP
    sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
    return True, True, alpha * y, (beta, floor)


@entry_point()
def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_planned_rules(diag_plan, None, scw_variance, KEEP, one_rule, binary, regression,
                             joint, args, bank)


@njit(cache=True, inline="always")
def scw_loss(m, v, phi):
    """Whether the SCW loss max(0, phi sqrt(v) - m) is positive (and v > 0)."""
    return v > 0.0 and phi * np.sqrt(v) - m > 0.0


@njit(cache=True, inline="always")
def full_alpha(params, m, v, s):
    """scw1-full's and scw2-full's alpha, 0 without a loss (cw.cw_full_rule)."""
    phi, c, variant = params[0], params[1] * s, params[2]
    if not scw_loss(m, v, phi):
        return 0.0
    return scw_alpha(m, v, phi, 1.0 + phi * phi / 2.0, 1.0 + phi * phi, c, variant)


full_step = cw_full_rule(full_alpha)


@entry_point()
def run_full(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, full_step, None, binary, regression, joint, args)


class SoftConfidenceWeighted(ConfidenceWeighted):
    """scw1, scw2 (the registry's rule: "I" or "II") and their -full forms."""

    entry_points = {"diagonal": run_diag, "full": run_full}
    bank_entry_points = {"diagonal": run_diag}
    rules = ("I", "II")

    def kernel_params(self):
        return (self.phi, self.options["C"], self.rules.index(self.spec.rule) + 1,
                VARIANCE_FLOOR * self.options["a"])
