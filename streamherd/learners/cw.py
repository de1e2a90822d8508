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

Importance weights: CW has no trade-off parameter to scale, and its update enforces a
probability constraint that repeating an example does not change, so the weight is ignored
(an example with weight <= 0 is predicted but not learned).

Variance floor: under label noise CW grows over-confident (AROW paper, Sec. 3) and its variances
shrink towards 0. The diagonal ``cw`` (and the diagonal SCW, scw.py) keep every variance at least
VARIANCE_FLOOR * a, so v stays > 0 for a non-empty example and alpha stays finite. The floor
is 1e-12 of the initial variance, far below any variance the update reaches on the shared
data sets, so it only guards against underflow.
"""
import numpy as np
from numba import njit
from scipy.special import ndtri

from streamherd.learners.gaussian import (GaussianLearner, check_eta, diag_confidence,
                                          diag_mean_step, diag_ok, full_sigma_x, full_update)
from streamherd.learners.sparse import dot

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


@njit(cache=True, nogil=True)
def _cw_diag(y, importance, indptr, indices, values, mu, sigma, phi, floor, margins_out):
    psi = 1.0 + phi * phi / 2.0
    xi = 1.0 + phi * phi
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        v = diag_confidence(sigma, indices, values, start, end)
        if not v > 0.0:
            continue
        m = y[i] * margin
        alpha = cw_alpha(m, v, phi, psi, xi)
        if not alpha > 0.0:
            continue
        sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
        diag_mean_step(mu, sigma, alpha * y[i], indices, values, start, end)
        k_proj = alpha * phi / sqrt_u
        for k in range(start, end):
            j = indices[k]
            sigma[j] = max(floor, 1.0 / (1.0 / sigma[j] + k_proj * values[k] * values[k]))
        updates += 1
        if not diag_ok(mu, sigma, indices, start, end):
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _cw_full(y, importance, indptr, indices, values, mu, Sigma, phi, g, active, margins_out):
    psi = 1.0 + phi * phi / 2.0
    xi = 1.0 + phi * phi
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        alpha = 0.0
        if v > 0.0:
            alpha = cw_alpha(y[i] * margin, v, phi, psi, xi)
        if not alpha > 0.0:
            for t in range(n):  # leave the workspace zero
                g[active[t]] = 0.0
            continue
        sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
        updates += 1
        if not full_update(mu, Sigma, g, active, n, alpha * y[i], beta):
            return updates, i
    return updates, -1


class ConfidenceWeighted(GaussianLearner):
    hyperparameters = {"eta": 0.9, "a": 1.0}

    def __init__(self, dim, options=None, **kwargs):
        check_eta(kwargs.get("name") or "cw", {**self.hyperparameters, **(options or {})}["eta"])
        super().__init__(dim, options=options, **kwargs)
        self.phi = float(ndtri(self.options["eta"]))

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _cw_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                        self.phi, VARIANCE_FLOOR * self.options["a"], margins_out)


class ConfidenceWeightedFull(ConfidenceWeighted):
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "cw"

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _cw_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                        self.phi, g, active, margins_out)
