"""AROW, Adaptive Regularization of Weight vectors (Crammer, Kulesza & Dredze, NIPS 2009, Fig. 1).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m < 1:
  beta = 1 / (v + r),  alpha = (1 - m) beta,  mu += alpha y Sigma x
  arow-full:  Sigma -= beta Sigma x x' Sigma                                    (Eq. 9)
Diagonal forms:
  arow-p (project; equal to the exact diagonal update):  sigma_r <- 1 / (1/sigma_r + x_r^2 / r)
  arow-d (drop):                                          sigma_r <- sigma_r - beta (sigma_r x_r)^2
``arow`` is an alias of ``arow-p``. An importance weight s scales 1/r (r becomes r/s: the
regulariser weighs the example's loss s times as much, as s scales C in PA/NHERD).
"""
import numpy as np
from numba import njit

from streamherd.learners.gaussian import (GaussianLearner, diag_margin_confidence, entry_ok,
                                          full_sigma_x, full_update)
from streamherd.learners.sparse import dot
from streamherd.learners.prefetch import prefetch_next_row


@njit(cache=True, nogil=True)
def _arow_diag(y, importance, indptr, indices, values, mu, sigma, r, drop, margins_out):
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
        if m >= 1.0:
            continue
        rs = r / importance[i]
        beta = 1.0 / (v + rs)
        alpha = (1.0 - m) * beta
        scale = alpha * y[i]
        ok = True
        for k in range(start, end):
            j = indices[k]
            x = values[k]
            s = sigma[j]
            mu[j] += scale * s * x                      # mu += alpha y Sigma x
            if drop:
                sigma[j] = s - beta * s * s * x * x
            else:
                sigma[j] = s / (1.0 + s * x * x / rs)   # = 1 / (1/s + x^2/r), one division
            ok = ok and entry_ok(mu[j], sigma[j])
        updates += 1
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _arow_full(y, importance, indptr, indices, values, mu, Sigma, r, g, active, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        m = y[i] * margin
        if m >= 1.0:
            continue
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        beta = 1.0 / (v + r / importance[i])
        alpha = (1.0 - m) * beta
        updates += 1
        if not full_update(mu, Sigma, g, active, n, alpha * y[i], beta, 0.0):   # Eq. 9
            return updates, i
    return updates, -1


class ArowDiagonal(GaussianLearner):
    hyperparameters = {"r": 1.0, "a": 1.0}
    drop = False

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _arow_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                          self.options["r"], self.drop, margins_out)


class ArowProject(ArowDiagonal):
    drop = False


class ArowDrop(ArowDiagonal):
    drop = True


class ArowFull(GaussianLearner):
    hyperparameters = {"r": 1.0, "a": 1.0}
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "arow-p"

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _arow_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                          self.options["r"], g, active, margins_out)
