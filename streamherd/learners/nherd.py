"""Normal Herding, NHERD (Crammer & Lee, "Learning via Gaussian Herding", NIPS 2010, Fig. 3).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m <= 1:
  mu += alpha y Sigma x,  alpha = max(0, 1 - m) / (v + 1/C)                        (Eq. 9)
  nherd-full:  Sigma -= Sigma x x' Sigma (C^2 v + 2C) / (1 + C v)^2                (Eq. 13)
Diagonal forms (Eq. 14):
  nherd-e (exact):    sigma_r <- sigma_r / (1 + C x_r^2 sigma_r)^2
  nherd-p (project):  sigma_r <- 1 / (1/sigma_r + (2C + C^2 v) x_r^2)
  nherd-d (drop):     sigma_r <- sigma_r - (sigma_r x_r)^2 (C^2 v + 2C) / (1 + C v)^2
``nherd`` is an alias of ``nherd-p``. An importance weight s scales C (C s), as in PA-I/PA-II.
"""
import numpy as np
from numba import njit

from streamherd.learners.gaussian import (GaussianLearner, diag_margin_confidence, entry_ok,
                                          full_sigma_x, full_update)
from streamherd.learners.sparse import dot
from streamherd.learners.prefetch import prefetch_next_row

EXACT, PROJECT, DROP = 0, 1, 2


@njit(cache=True, nogil=True)
def _nherd_diag(y, importance, indptr, indices, values, mu, sigma, C, variant, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row(mu, indptr, indices, i)
        prefetch_next_row(sigma, indptr, indices, i)
        margin, v = diag_margin_confidence(mu, sigma, indices, values, start, end)
        margins_out[i] = margin
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        m = y[i] * margin
        if m > 1.0:
            continue
        c = C * importance[i]
        alpha = max(0.0, 1.0 - m) / (v + 1.0 / c)                      # Eq. 9
        scale = alpha * y[i]
        shrink = (c * c * v + 2.0 * c) / ((1.0 + c * v) * (1.0 + c * v))  # Eq. 13 coefficient
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
        updates += 1
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _nherd_full(y, importance, indptr, indices, values, mu, Sigma, C, g, active, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        m = y[i] * margin
        if m > 1.0:
            continue
        c = C * importance[i]
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        alpha = max(0.0, 1.0 - m) / (v + 1.0 / c)                                   # Eq. 9
        shrink = (c * c * v + 2.0 * c) / ((1.0 + c * v) * (1.0 + c * v))            # Eq. 13
        updates += 1
        if not full_update(mu, Sigma, g, active, n, alpha * y[i], shrink, 0.0):
            return updates, i
    return updates, -1


class NherdDiagonal(GaussianLearner):
    hyperparameters = {"C": 1.0, "a": 1.0}
    variant = PROJECT

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _nherd_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                           self.options["C"], self.variant, margins_out)


class NherdExact(NherdDiagonal):
    variant = EXACT


class NherdProject(NherdDiagonal):
    variant = PROJECT


class NherdDrop(NherdDiagonal):
    variant = DROP


class NherdFull(GaussianLearner):
    hyperparameters = {"C": 1.0, "a": 1.0}
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "nherd-p"

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _nherd_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                           self.options["C"], g, active, margins_out)
