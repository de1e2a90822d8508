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
Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1 (learners/multiclass.py).
SCW has no regression form in the paper: ``--loss squared`` refuses it.
"""
import numpy as np
from numba import njit

from streamherd.learners.cw import (VARIANCE_FLOOR, ConfidenceWeighted, cw_alpha, cw_full_apply,
                                    cw_sqrt_u_beta)
from streamherd.learners.gaussian import (diag_margin_confidence, diag_margin_confidence_ahead,
                                          entry_ok, full_sigma_x)
from streamherd.learners.multiclass import joint_row
from streamherd.learners.sparse import dot, finite, squared_norm
from streamherd.learners.prefetch import row_ahead


@njit(cache=True, inline="always")
def scw_alpha(m, v, phi, psi, xi, C, variant):
    if variant == 1:                                          # SCW-I
        return min(C, cw_alpha(m, v, phi, psi, xi))
    n = v + 1.0 / (2.0 * C)                                   # SCW-II
    gamma = phi * np.sqrt(phi * phi * m * m * v * v + 4.0 * n * v * (n + v * phi * phi))
    return max(0.0, (-(2.0 * m * n + phi * phi * m * v) + gamma)
               / (2.0 * (n * n + n * v * phi * phi)))


@njit(cache=True, inline="always")
def scw_diag_step(mu, sigma, indices, values, start, end, m, v, y, phi, c, variant, floor):
    """The scw update on row x with signed margin m when the loss max(0, phi sqrt(v) - m) is
    > 0 (counted as an update even when alpha is 0); returns (updated, ok): ok is False when m,
    the confidence v or alpha is not finite, or an entry written is not (gaussian.entry_ok)."""
    if not finite(m, v):
        return False, False
    if not scw_loss(m, v, phi):
        return False, True
    alpha = scw_alpha(m, v, phi, 1.0 + phi * phi / 2.0, 1.0 + phi * phi, c, variant)
    if not finite(alpha):
        return True, False
    sqrt_u, beta = cw_sqrt_u_beta(alpha, v, phi)
    scale = alpha * y
    ok = True
    for k in range(start, end):
        j = indices[k]
        x = values[k]
        s = sigma[j]
        mu[j] += scale * s * x                      # mu += alpha y Sigma x
        sigma[j] = max(floor, s - beta * s * s * x * x)
        ok = ok and entry_ok(mu[j], sigma[j])
    return True, ok


@njit(cache=True, inline="always")
def scw_loss(m, v, phi):
    """Whether the SCW loss max(0, phi sqrt(v) - m) is positive (and v > 0)."""
    return v > 0.0 and phi * np.sqrt(v) - m > 0.0


@njit(cache=True, inline="always")
def scw_full_step(mu, Sigma, indices, values, start, end, m, y, phi, c, variant, floor, g, active):
    v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
    v_min = floor * squared_norm(values, start, end)
    alpha = 0.0
    if v > v_min and scw_loss(m, v, phi):
        alpha = scw_alpha(m, v, phi, 1.0 + phi * phi / 2.0, 1.0 + phi * phi, c, variant)
    return cw_full_apply(mu, Sigma, g, active, n, m, alpha, y, v, v_min, phi, floor)


@njit(cache=True, nogil=True)
def _scw_diag(y, importance, indptr, indices, values, mu, sigma, phi, C, variant, floor,
              margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin, v = diag_margin_confidence_ahead(mu, sigma, indices, values, start, end,
                                                 row_ahead(indptr, i))
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = scw_diag_step(mu, sigma, indices, values, start, end, y[i] * margin, v,
                                    y[i], phi, C * importance[i], variant, floor)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _scw_diag_joint(cls, importance, indptr, indices, values, mu, sigma, D, known, phi, C,
                    variant, floor, predicted_out, work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(mu, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        margin, v = diag_margin_confidence(mu, sigma, work[1], work[2], 0, n)
        updated, ok = scw_diag_step(mu, sigma, work[1], work[2], 0, n, margin, v, 1.0, phi,
                                    C * importance[i], variant, floor)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _scw_full(y, importance, indptr, indices, values, mu, Sigma, phi, C, variant, floor, g,
              active, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = scw_full_step(mu, Sigma, indices, values, start, end, y[i] * margin, y[i],
                                    phi, C * importance[i], variant, floor, g, active)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _scw_full_joint(cls, importance, indptr, indices, values, mu, Sigma, D, known, phi, C,
                    variant, floor, g, active, predicted_out, work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(mu, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        margin = dot(mu, work[1], work[2], 0, n)
        updated, ok = scw_full_step(mu, Sigma, work[1], work[2], 0, n, margin, 1.0, phi,
                                    C * importance[i], variant, floor, g, active)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


class SoftConfidenceWeighted(ConfidenceWeighted):
    variant = 1

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _scw_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                         self.phi, self.options["C"], self.variant,
                         VARIANCE_FLOOR * self.options["a"], margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        return _scw_diag_joint(cls, importance, indptr, indices, values, self.mean, self.variance,
                               self.dim, known, self.phi, self.options["C"], self.variant,
                               VARIANCE_FLOOR * self.options["a"], predicted_out, work)


class SoftConfidenceWeightedI(SoftConfidenceWeighted):
    variant = 1


class SoftConfidenceWeightedII(SoftConfidenceWeighted):
    variant = 2


class SoftConfidenceWeightedFull(SoftConfidenceWeighted):
    full = True
    state_arrays = ("covariance",)

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _scw_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                         self.phi, self.options["C"], self.variant,
                         VARIANCE_FLOOR * self.options["a"], g, active, margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        g, active = self._workspace()
        return _scw_full_joint(cls, importance, indptr, indices, values, self.mean,
                               self.covariance, self.dim, known, self.phi, self.options["C"],
                               self.variant, VARIANCE_FLOOR * self.options["a"], g, active,
                               predicted_out, work)


class SoftConfidenceWeightedIFull(SoftConfidenceWeightedFull):
    variant = 1
    diagonal_name = "scw1"


class SoftConfidenceWeightedIIFull(SoftConfidenceWeightedFull):
    variant = 2
    diagonal_name = "scw2"
