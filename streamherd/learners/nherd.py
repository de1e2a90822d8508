"""Normal Herding, NHERD (Crammer & Lee, "Learning via Gaussian Herding", NIPS 2010, Fig. 3).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m <= 1:
  mu += alpha y Sigma x,  alpha = max(0, 1 - m) / (v + 1/C)                        (Eq. 9)
  nherd-full:  Sigma -= Sigma x x' Sigma (C^2 v + 2C) / (1 + C v)^2                (Eq. 13)
Diagonal forms (Eq. 14):
  nherd-e (exact):    sigma_r <- sigma_r / (1 + C x_r^2 sigma_r)^2
  nherd-p (project):  sigma_r <- 1 / (1/sigma_r + (2C + C^2 v) x_r^2)
  nherd-d (drop):     sigma_r <- sigma_r - (sigma_r x_r)^2 (C^2 v + 2C) / (1 + C v)^2
``nherd`` is an alias of ``nherd-p``. An importance weight s scales C (C s), as in PA-I/PA-II.

Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1 (learners/multiclass.py).
Regression (``--loss squared``, Sec. 3.1: the squared loss is uniformly 1-bounded): on every
example mu += (y - mu.x) Sigma x / (v + 1/C), with the same covariance updates.
"""
import numpy as np
from numba import njit

from streamherd.learners.gaussian import (GaussianLearner, diag_margin_confidence,
                                          diag_margin_confidence_ahead, entry_ok, full_sigma_x,
                                          full_update)
from streamherd.learners.multiclass import joint_row
from streamherd.learners.sparse import dot, finite
from streamherd.learners.prefetch import row_ahead

EXACT, PROJECT, DROP = 0, 1, 2


@njit(cache=True, inline="always")
def nherd_shrink(c, v):
    """The coefficient (C^2 v + 2C) / (1 + C v)^2 of Eq. 13."""
    return (c * c * v + 2.0 * c) / ((1.0 + c * v) * (1.0 + c * v))


@njit(cache=True, inline="always")
def nherd_diag_apply(mu, sigma, indices, values, start, end, scale, c, v, variant):
    """mu += scale Sigma x and the diagonal rule of Eq. 14 (old sigma_r in both); returns ok:
    False when the confidence v or the step (scale, shrink) is not finite, or an entry written is
    not (gaussian.entry_ok)."""
    shrink = nherd_shrink(c, v)
    if not finite(v, scale, shrink):
        return False
    ok = True
    for k in range(start, end):
        j = indices[k]
        x = values[k]
        x2 = x * x
        s = sigma[j]
        mu[j] += scale * s * x                                      # mu += alpha y Sigma x
        if variant == EXACT:                                        # Eq. 14
            q = 1.0 + c * x2 * s
            sigma[j] = s / (q * q)
        elif variant == PROJECT:
            # 1/(1/s + k x^2) written as s/(1 + s k x^2): one division
            sigma[j] = s / (1.0 + s * (2.0 * c + c * c * v) * x2)
        else:
            sigma[j] = s - s * s * x2 * shrink
        ok = ok and entry_ok(mu[j], sigma[j])
    return ok


@njit(cache=True, inline="always")
def nherd_diag_step(mu, sigma, indices, values, start, end, m, v, y, c, variant):
    """The classification update on row x with signed margin m = y mu.x; returns (updated, ok)."""
    if not finite(m):
        return False, False
    if m > 1.0:
        return False, True
    alpha = max(0.0, 1.0 - m) / (v + 1.0 / c)                          # Eq. 9
    return True, nherd_diag_apply(mu, sigma, indices, values, start, end, alpha * y, c, v, variant)


@njit(cache=True, inline="always")
def nherd_full_step(mu, Sigma, indices, values, start, end, m, y, c, g, active):
    if not finite(m):
        return False, False
    if m > 1.0:
        return False, True
    v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
    alpha = max(0.0, 1.0 - m) / (v + 1.0 / c)                                   # Eq. 9
    return True, full_update(mu, Sigma, g, active, n, v, alpha * y, nherd_shrink(c, v),
                             0.0)                                               # Eq. 13


@njit(cache=True, nogil=True)
def _nherd_diag(y, importance, indptr, indices, values, mu, sigma, C, variant, margins_out):
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
        updated, ok = nherd_diag_step(mu, sigma, indices, values, start, end, y[i] * margin, v,
                                      y[i], C * importance[i], variant)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _nherd_diag_joint(cls, importance, indptr, indices, values, mu, sigma, D, known, C, variant,
                      predicted_out, work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(mu, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        margin, v = diag_margin_confidence(mu, sigma, work[1], work[2], 0, n)
        updated, ok = nherd_diag_step(mu, sigma, work[1], work[2], 0, n, margin, v,
                                      1.0, C * importance[i], variant)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _nherd_diag_regression(y, importance, indptr, indices, values, mu, sigma, C, variant,
                           margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin, v = diag_margin_confidence(mu, sigma, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        c = C * importance[i]
        scale = (y[i] - margin) / (v + 1.0 / c)                 # Sec. 3.1, squared loss
        updates += 1
        if not nherd_diag_apply(mu, sigma, indices, values, start, end, scale, c, v, variant):
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _nherd_full(y, importance, indptr, indices, values, mu, Sigma, C, g, active, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = nherd_full_step(mu, Sigma, indices, values, start, end, y[i] * margin, y[i],
                                      C * importance[i], g, active)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _nherd_full_joint(cls, importance, indptr, indices, values, mu, Sigma, D, known, C, g, active,
                      predicted_out, work):
    updates = 0
    for i in range(len(cls)):
        predicted_out[i], known, n = joint_row(mu, D, known, cls, importance, indptr, indices,
                                               values, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        margin = dot(mu, work[1], work[2], 0, n)
        updated, ok = nherd_full_step(mu, Sigma, work[1], work[2], 0, n, margin, 1.0,
                                      C * importance[i], g, active)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _nherd_full_regression(y, importance, indptr, indices, values, mu, Sigma, C, g, active,
                           margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        c = C * importance[i]
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        updates += 1
        if not full_update(mu, Sigma, g, active, n, v, (y[i] - margin) / (v + 1.0 / c),
                           nherd_shrink(c, v), 0.0):
            return updates, i
    return updates, -1


class NherdDiagonal(GaussianLearner):
    variant = PROJECT

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _nherd_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                           self.options["C"], self.variant, margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        return _nherd_diag_joint(cls, importance, indptr, indices, values, self.mean,
                                 self.variance, self.dim, known, self.options["C"], self.variant,
                                 predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        return _nherd_diag_regression(y, importance, indptr, indices, values, self.mean,
                                      self.variance, self.options["C"], self.variant, margins_out)


class NherdExact(NherdDiagonal):
    variant = EXACT


class NherdProject(NherdDiagonal):
    variant = PROJECT


class NherdDrop(NherdDiagonal):
    variant = DROP


class NherdFull(GaussianLearner):
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "nherd-p"

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _nherd_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                           self.options["C"], g, active, margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        g, active = self._workspace()
        return _nherd_full_joint(cls, importance, indptr, indices, values, self.mean,
                                 self.covariance, self.dim, known, self.options["C"], g, active,
                                 predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _nherd_full_regression(y, importance, indptr, indices, values, self.mean,
                                      self.covariance, self.options["C"], g, active, margins_out)
