"""AROW, Adaptive Regularization of Weight vectors (Crammer, Kulesza & Dredze, NIPS 2009, Fig. 1).

With m = y mu.x and v = x' Sigma x (old Sigma), update when m < 1:
  beta = 1 / (v + r),  alpha = (1 - m) beta,  mu += alpha y Sigma x
  arow-full:  Sigma -= beta Sigma x x' Sigma                                    (Eq. 9)
Diagonal forms:
  arow-p (project; equal to the exact diagonal update):  sigma_r <- 1 / (1/sigma_r + x_r^2 / r)
  arow-d (drop):                                          sigma_r <- sigma_r - beta (sigma_r x_r)^2
``arow`` is an alias of ``arow-p``. An importance weight s scales 1/r (r becomes r/s: the
regulariser weighs the example's loss s times as much, as s scales C in PA/NHERD).

Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1 (learners/multiclass.py).
Regression (``--loss squared``) is recursive least squares (AROW paper, footnote 1 and Sec. 6):
on every example mu += (y - mu.x) Sigma x / (r + v) and the same covariance updates with
beta = 1 / (r + v).
"""
import numpy as np
from numba import njit

from streamherd.learners.gaussian import (GaussianLearner, diag_margin_confidence,
                                          diag_margin_confidence_ahead, entry_ok, full_sigma_x,
                                          full_update)
from streamherd.learners.multiclass import joint_row
from streamherd.learners.sparse import dot, finite
from streamherd.learners.prefetch import row_ahead


@njit(cache=True, inline="always")
def arow_diag_apply(mu, sigma, indices, values, start, end, v, scale, beta, rs, drop):
    """mu += scale Sigma x and the diagonal rule (old sigma_r in both); returns ok: False when
    the confidence v or the step (scale, beta) is not finite (v = inf makes beta 0: an update
    that learns nothing), or an entry written is not (gaussian.entry_ok)."""
    if not finite(v, scale, beta):
        return False
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
    return ok


@njit(cache=True, inline="always")
def arow_diag_step(mu, sigma, indices, values, start, end, m, v, y, rs, drop):
    """The classification update (Fig. 1) with signed margin m; returns (updated, ok)."""
    if not finite(m):
        return False, False
    if m >= 1.0:
        return False, True
    beta = 1.0 / (v + rs)
    alpha = (1.0 - m) * beta
    return True, arow_diag_apply(mu, sigma, indices, values, start, end, v, alpha * y, beta, rs,
                                 drop)


@njit(cache=True, inline="always")
def arow_full_step(mu, Sigma, indices, values, start, end, m, y, rs, g, active):
    if not finite(m):
        return False, False
    if m >= 1.0:
        return False, True
    v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
    beta = 1.0 / (v + rs)
    alpha = (1.0 - m) * beta
    return True, full_update(mu, Sigma, g, active, n, v, alpha * y, beta, 0.0)   # Eq. 9


@njit(cache=True, nogil=True)
def _arow_diag(y, importance, indptr, indices, values, mu, sigma, r, drop, margins_out):
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
        updated, ok = arow_diag_step(mu, sigma, indices, values, start, end, y[i] * margin, v,
                                     y[i], r / importance[i], drop)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _arow_diag_joint(cls, importance, indptr, indices, values, mu, sigma, D, known, r, drop,
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
        updated, ok = arow_diag_step(mu, sigma, work[1], work[2], 0, n, margin, v, 1.0,
                                     r / importance[i], drop)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _arow_diag_regression(y, importance, indptr, indices, values, mu, sigma, r, drop, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin, v = diag_margin_confidence(mu, sigma, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        rs = r / importance[i]
        beta = 1.0 / (v + rs)                                   # recursive least squares
        updates += 1
        if not arow_diag_apply(mu, sigma, indices, values, start, end, v, (y[i] - margin) * beta,
                               beta, rs, drop):
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _arow_full(y, importance, indptr, indices, values, mu, Sigma, r, g, active, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margin = dot(mu, indices, values, start, end)
        margins_out[i] = margin
        if not finite(margin):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = arow_full_step(mu, Sigma, indices, values, start, end, y[i] * margin, y[i],
                                     r / importance[i], g, active)
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit(cache=True, nogil=True)
def _arow_full_joint(cls, importance, indptr, indices, values, mu, Sigma, D, known, r, g, active,
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
        updated, ok = arow_full_step(mu, Sigma, work[1], work[2], 0, n, margin, 1.0,
                                     r / importance[i], g, active)
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


@njit(cache=True, nogil=True)
def _arow_full_regression(y, importance, indptr, indices, values, mu, Sigma, r, g, active,
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
        v, n = full_sigma_x(Sigma, indices, values, start, end, g, active)
        beta = 1.0 / (v + r / importance[i])                    # recursive least squares
        updates += 1
        if not full_update(mu, Sigma, g, active, n, v, (y[i] - margin) * beta, beta, 0.0):
            return updates, i
    return updates, -1


class ArowDiagonal(GaussianLearner):
    drop = False

    def _run(self, y, importance, indptr, indices, values, margins_out):
        return _arow_diag(y, importance, indptr, indices, values, self.mean, self.variance,
                          self.options["r"], self.drop, margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        return _arow_diag_joint(cls, importance, indptr, indices, values, self.mean,
                                self.variance, self.dim, known, self.options["r"], self.drop,
                                predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        return _arow_diag_regression(y, importance, indptr, indices, values, self.mean,
                                     self.variance, self.options["r"], self.drop, margins_out)


class ArowProject(ArowDiagonal):
    drop = False


class ArowDrop(ArowDiagonal):
    drop = True


class ArowFull(GaussianLearner):
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "arow-p"

    def _run(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _arow_full(y, importance, indptr, indices, values, self.mean, self.covariance,
                          self.options["r"], g, active, margins_out)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        g, active = self._workspace()
        return _arow_full_joint(cls, importance, indptr, indices, values, self.mean,
                                self.covariance, self.dim, known, self.options["r"], g, active,
                                predicted_out, work)

    def _run_regression(self, y, importance, indptr, indices, values, margins_out):
        g, active = self._workspace()
        return _arow_full_regression(y, importance, indptr, indices, values, self.mean,
                                     self.covariance, self.options["r"], g, active, margins_out)
