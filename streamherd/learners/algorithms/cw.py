"""Confidence-Weighted learning, exact form (Crammer, Dredze & Pereira, NIPS 2008).

With m = y mu.x, v = x' Sigma x (old Sigma), phi = Phi^-1(eta) (``--eta``, default 0.9),
psi = 1 + phi^2/2, xi = 1 + phi^2:
  alpha = max(0, (-m psi + sqrt(m^2 phi^4 / 4 + v phi^2 xi)) / (v xi))
  sqrt(u) = 2v / (alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v))
      (= (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v)) / 2 without the cancellation)
  beta = alpha phi / (sqrt(u) + v alpha phi)
Update when alpha > 0: mu += alpha y Sigma x;
  cw-full:  Sigma -= beta Sigma x x' Sigma
  cw:       sigma_r <- 1 / (1/sigma_r + alpha phi x_r^2 / sqrt(u))
An example with v = 0 (no features) is not learned (alpha would be 0/0).
Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1
(learners/kernels/multiclass.py).
CW has no regression form in the papers: ``--loss squared`` refuses it.

Importance weights: CW has no trade-off parameter to scale, and its update enforces a
probability constraint that repeating an example does not change, so the weight is ignored
(an example with weight <= 0 is predicted but not learned).

Variance floor: under label noise CW grows over-confident (AROW paper, Sec. 3) and its variances
shrink towards 0. ``cw`` and the SCW learners (scw.py) keep every variance at least
VARIANCE_FLOOR * a = 1e-12 a. The diagonal forms clip sigma_r from below. The full forms keep
the variance of the margin along x at least floor |x|^2: an example with v <= floor |x|^2 is not
learned, and beta is capped so that x' Sigma x after the update is >= floor |x|^2 (see
``floored_beta``); a diagonal entry of Sigma below the floor is raised to it. Without this, CW's
precision along a repeated direction roughly squares at each mistake (k ~ alpha^2 phi^2 ~ m^2/v^2),
the variances reach 1e-12 within a few thousand a9a examples, rounding in Sigma -= beta g g'
makes Sigma indefinite and the mean diverges. So v stays > 0 for a non-empty example and alpha
stays finite. The floor changes nothing until a variance is 12 orders of magnitude below its
start.
"""
from statistics import NormalDist

import numpy as np
from numba import njit

from streamherd.learners.gaussian import GaussianLearner
from streamherd.learners.kernels.covariance import full_reset, full_sigma_x, full_update, one_rule
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_planned_rules, run_rules
from streamherd.learners.kernels.sparse import finite, squared_norm

VARIANCE_FLOOR = 1e-12


@njit(cache=True, inline="always")
def cw_alpha(m, v, phi, psi, xi):
    return max(0.0, (-m * psi + np.sqrt(m * m * phi ** 4 / 4.0 + v * phi * phi * xi)) / (v * xi))


@njit(cache=True, inline="always")
def cw_sqrt_u_beta(alpha, v, phi):
    """(sqrt(u), beta) of the CW/SCW update, sqrt(u) in the cancellation-free form."""
    avp = alpha * v * phi
    sqrt_u = 2.0 * v / (avp + np.sqrt(avp * avp + 4.0 * v))
    beta = alpha * phi / (sqrt_u + avp)
    return sqrt_u, beta


@njit(cache=True, inline="always")
def floored_beta(beta, v, v_min):
    """The floor of the full forms: Sigma -= beta g g' leaves x' Sigma x = v (1 - beta v); keep
    that >= v_min = floor |x|^2, i.e. beta <= (1 - v_min / v) / v."""
    return min(beta, (1.0 - v_min / v) / v)


def cw_full_rule(alpha_of):
    """The full-covariance step rule (kernels/loops.py) of CW or SCW, from its alpha_of(params,
    m, v, s), closed over so that numba inlines it (as covariance.planned_rule); params = (phi,
    ..., floor). g = Sigma x, v = x' Sigma x, alpha when v > v_min = floor |x|^2 (else 0),
    then mu += alpha y g, Sigma -= beta g g' with beta capped by the floor; returns (updated,
    ok). alpha <= 0 only resets g; the margin m, the confidence v or alpha not finite is a
    failure (ok False)."""
    @njit(inline="always")
    def full_step(state, params, indices, values, start, end, m, unused, y, s):
        phi, floor = params[0], params[-1]
        mu, Sigma, g, active = state
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        v_min = floor * squared_norm(values, start, end)
        alpha = alpha_of(params, m, v, s) if v > v_min else 0.0
        ok = finite(m, v, alpha)
        if not (ok and alpha > 0.0):
            full_reset(g, active, n)   # leave the workspace zero
            return False, ok
        sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
        return True, full_update(mu, Sigma, g, active, n, v, alpha * y,
                                 floored_beta(beta, v, v_min), floor)
    return full_step


@njit(cache=True, inline="always")
def cw_variance(sj, x, numbers, rule):
    """cw's diagonal rule on the old sigma_r, floored: numbers = (alpha phi / sqrt(u), floor)
    (diag_plan; cw has one rule)."""
    k, floor = numbers[0], numbers[1]
    return max(floor, sj / (1.0 + sj * k * x * x))  # = 1 / (1/s + k x^2)


# the numbers of no step: cw's and scw's diagonal rules then keep sigma_r (> 0) (the bank's
# members that do not learn from a row, kernels/bank.py)
KEEP = (0.0, 0.0)


@njit(cache=True, inline="always")
def diag_plan(params, m, v, y, s):
    """The cw step on row x with signed margin m (covariance.planned_step): not ok when m, the
    confidence v or alpha is not finite (v = inf makes alpha 0/0); v = 0 (an empty example) is
    no update. params = (phi, floor); the importance weight s is ignored (see the module
    docstring)."""
    phi, floor = params[0], params[1]
    psi = 1.0 + phi * phi / 2.0
    xi = 1.0 + phi * phi
    alpha = cw_alpha(m, v, phi, psi, xi) if v > 0.0 else 0.0
    if not finite(m, v, alpha):
        return False, False, 0.0, KEEP
    if not alpha > 0.0:
        return False, True, 0.0, KEEP
    sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
    return True, True, alpha * y, (alpha * phi / sqrt_u, floor)


@entry_point()
def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_planned_rules(diag_plan, None, cw_variance, KEEP, one_rule, binary, regression,
                             joint, args, bank)


@njit(cache=True, inline="always")
def full_alpha(params, m, v, s):
    """cw-full's alpha (cw_full_rule)."""
    phi = params[0]
    return cw_alpha(m, v, phi, 1.0 + phi * phi / 2.0, 1.0 + phi * phi)


full_step = cw_full_rule(full_alpha)


@entry_point()
def run_full(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, full_step, None, binary, regression, joint, args)


class ConfidenceWeighted(GaussianLearner):
    """cw and cw-full."""

    entry_points = {"diagonal": run_diag, "full": run_full}
    bank_entry_points = {"diagonal": run_diag}

    def __init__(self, dim, options=None, **kwargs):
        super().__init__(dim, options=options, **kwargs)   # eta in (0.5, 1): its declaration
        # The standard library's inverse normal CDF (Wichura's AS 241, exact to double
        # precision) spares every run importing scipy.special (0.2 s, 26 MB).
        self.phi = NormalDist().inv_cdf(self.options["eta"])

    def kernel_params(self):
        return (self.phi, VARIANCE_FLOOR * self.options["a"])

