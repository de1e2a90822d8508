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
from streamherd.learners.kernels.covariance import diag_update, full_sigma_x, full_update
from streamherd.learners.kernels.loops import diag_margin, entry_point, mean_margin, run_rules
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
def nherd_variance(s, x, coefficients):
    """The rules of Eq. 14 on the old sigma_r = s, coefficients = (C, v, shrink, variant)."""
    c, v, shrink, variant = coefficients
    x2 = x * x
    if variant == EXACT:                                        # Eq. 14
        q = 1.0 + c * x2 * s
        return s / (q * q)
    if variant == PROJECT:
        # 1/(1/s + k x^2) written as s/(1 + s k x^2): one division
        return s / (1.0 + s * (2.0 * c + c * c * v) * x2)
    return s - s * s * x2 * shrink


@njit(cache=True, inline="always")
def diag_apply(mu, sigma, indices, values, start, end, scale, c, v, variant):
    """mu += scale Sigma x and the diagonal rule of Eq. 14 (old sigma_r in both); returns ok:
    False when the confidence v or the step (scale, shrink) is not finite, or an entry written is
    not (covariance.entry_ok)."""
    shrink = nherd_shrink(c, v)
    if not finite(v, scale, shrink):
        return False
    return diag_update(mu, sigma, indices, values, start, end, scale, nherd_variance,
                       (c, v, shrink, variant))


@njit(cache=True, inline="always")
def diag_step(state, params, indices, values, start, end, m, v, y, s):
    """The classification update (params = (C, variant); s scales C); returns (updated, ok)."""
    if m > 1.0:
        return False, True
    c = params[0] * s
    return True, diag_apply(state[0], state[1], indices, values, start, end,
                            nherd_alpha(max(0.0, 1.0 - m), v, c) * y, c, v, params[1])


@njit(cache=True, inline="always")
def diag_regression_step(state, params, indices, values, start, end, m, v, y, s):
    c = params[0] * s
    return True, diag_apply(state[0], state[1], indices, values, start, end,
                            nherd_alpha(y - m, v, c), c, v, params[1])


@entry_point()
def run_diag(binary=None, regression=None, joint=None, args=None):
    return run_rules(diag_margin, diag_step, diag_regression_step, binary, regression, joint, args)


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
    rules = tuple(VARIANCE_RULES)

    def kernel_params(self):
        return (self.options["C"], VARIANCE_RULES[self.spec.rule])
