"""What the Gaussian (confidence-weighted) learners share: the model N(mu, Sigma) over weight
vectors, with Sigma kept either as its diagonal (state array ``variance``, float64[d]) or in full
(state array ``covariance``, float64[d, d]), Sigma_0 = a I (``-a/--init-variance``).

The kernels of nherd.py, arow.py, cw.py and scw.py all follow one pattern per example x with
label y: margin mu.x (written to ``margins_out``), m = y mu.x, v = x' Sigma x (old Sigma), a rule
of the family gives the step alpha and the covariance coefficient, then
  mu += alpha y Sigma x   and   Sigma -= c (Sigma x)(Sigma x)'   (full)
or a per-coordinate rule on the diagonal. The helpers below are that shared arithmetic.

Full covariance: Sigma x is computed from the sparse x into a dense workspace g (rows of Sigma are
contiguous, Sigma symmetric), and the rank-one update runs in place over the rows j with
g[j] != 0 (rows with g[j] = 0 do not change), contiguous over columns: O(d * active) per update,
no d x d temporary.

Diagonal kernels read mu and sigma in one pass (``diag_margin_confidence``) and update both in
a second one (the mean step uses the old sigma_r, read before sigma_r is overwritten).

Numerical safety (learners/sparse.py): the kernels check the margin of every example, the
margin, confidence v and step of every update, and after it the touched entries (the mean, and
the variances, which must stay finite and > 0). On failure they return the index of the example,
and ``Learner.checked`` raises ``UnstableUpdate``, which training turns into a one-line error
naming the file and line.
"""
import numpy as np
from numba import njit

from streamherd.errors import StreamherdError
from streamherd.learners import base
from streamherd.learners.base import Learner, memory_text
from streamherd.learners.prefetch import NO_ROW, prefetch, prefetch_rest
from streamherd.learners.sparse import finite


# ---------------------------------------------------------------- diagonal helpers

@njit(cache=True, inline="always")
def diag_confidence(sigma, indices, values, start, end):
    """v = x' diag(sigma) x."""
    total = 0.0
    for k in range(start, end):
        x = values[k]
        total += sigma[indices[k]] * x * x
    return total


@njit(cache=True, inline="always")
def diag_margin_confidence_ahead(mu, sigma, indices, values, start, end, ahead):
    """(mu.x, x' diag(sigma) x) in one pass over the row (one pass of random reads, not two),
    asking the cache for the slots of the row ``ahead`` (prefetch.row_ahead) in the same loop;
    sigma is interleaved with mu (Learner.interleaved), so the same lines hold it."""
    margin = 0.0
    v = 0.0
    for k in range(start, end):
        if ahead[0] + k - start < ahead[1]:   # the slot of the same rank in the row ahead
            prefetch(mu, indices[ahead[0] + k - start])
        j = indices[k]
        x = values[k]
        margin += mu[j] * x
        v += sigma[j] * x * x
    prefetch_rest(mu, indices, ahead, end - start)
    return margin, v


@njit(cache=True, inline="always")
def diag_margin_confidence(mu, sigma, indices, values, start, end):
    return diag_margin_confidence_ahead(mu, sigma, indices, values, start, end, NO_ROW)


@njit(cache=True, inline="always")
def entry_ok(mu_j, sigma_j):
    return np.isfinite(mu_j) and np.isfinite(sigma_j) and sigma_j > 0.0


@njit(cache=True, nogil=True)
def diag_confidences(sigma, indptr, indices, values, out):
    """out[i] = x_i' diag(sigma) x_i for every row."""
    for i in range(len(indptr) - 1):
        out[i] = diag_confidence(sigma, indices, values, indptr[i], indptr[i + 1])


# ---------------------------------------------------------------- full-covariance helpers

@njit(cache=True, inline="always")
def full_sigma_x(Sigma, indices, values, start, end, g, active):
    """g = Sigma x (dense; g must be all zero on entry), active[:n] = the j with g[j] != 0.

    Returns (v, n) with v = x' Sigma x. Sigma is symmetric, so Sigma x sums rows of Sigma.
    """
    d = g.shape[0]
    for k in range(start, end):
        x = values[k]
        if x == 0.0:
            continue
        row = Sigma[indices[k]]
        for j in range(d):
            g[j] += x * row[j]
    n = 0
    for j in range(d):
        if g[j] != 0.0:
            active[n] = j
            n += 1
    v = 0.0
    for k in range(start, end):
        v += values[k] * g[indices[k]]
    return v, n


@njit(cache=True, inline="always")
def full_update(mu, Sigma, g, active, n, v, mean_scale, c, floor):
    """mu += mean_scale * g; Sigma -= c g g' (in place); then g is reset to zero.

    A diagonal entry that falls below ``floor`` is raised to it (CW/SCW's variance floor; adding
    to the diagonal keeps Sigma positive semi-definite; 0 disables it). Returns False, without
    updating, when the confidence v = x' Sigma x the step came from or the step is not finite;
    and when a touched mean entry or diagonal entry of Sigma is not finite, or a diagonal entry
    is <= 0.
    """
    if not finite(v, mean_scale, c):
        full_reset(g, active, n)
        return False
    d = g.shape[0]
    ok = True
    for t in range(n):
        j = active[t]
        mu[j] += mean_scale * g[j]
        if c != 0.0:
            cj = c * g[j]
            row = Sigma[j]
            for col in range(d):
                row[col] -= cj * g[col]
    for t in range(n):
        j = active[t]
        if Sigma[j, j] < floor:
            Sigma[j, j] = floor
        if not (np.isfinite(mu[j]) and np.isfinite(Sigma[j, j]) and Sigma[j, j] > 0.0):
            ok = False
    full_reset(g, active, n)
    return ok


@njit(cache=True, inline="always")
def full_reset(g, active, n):
    for t in range(n):
        g[active[t]] = 0.0


@njit(cache=True, nogil=True)
def full_confidences(Sigma, indptr, indices, values, out):
    """out[i] = x_i' Sigma x_i for every row (O(nnz^2) per row)."""
    for i in range(len(indptr) - 1):
        total = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            row = Sigma[indices[k]]
            inner = 0.0
            for q in range(indptr[i], indptr[i + 1]):
                inner += row[indices[q]] * values[q]
            total += values[k] * inner
        out[i] = total


# ---------------------------------------------------------------- memory

def check_full_fits(name, dim, diagonal_name, what="covariance", blocks=1):
    """Refuse a dim x dim float64 matrix (dim = blocks x 2^bits slots) that would not fit in the
    available memory."""
    need = 8 * dim * dim
    available = base.available_memory()
    if available is not None and need > available:
        bits = (dim // blocks).bit_length() - 1
        classes = f" and {blocks} classes" if blocks > 1 else ""
        raise StreamherdError(
            f"{name} with -b {bits}{classes} needs a {dim}x{dim} {what} matrix of "
            f"{memory_text(need)}, more than the {memory_text(available)} of available memory; "
            f"use a smaller -b{' or fewer classes' if blocks > 1 else ''} or the diagonal "
            f"variant --algo {diagonal_name}")


# ---------------------------------------------------------------- the learner classes

class GaussianLearner(Learner):
    """N(mu, Sigma) over weight vectors; subclasses set ``full`` and implement ``_run``.

    ``_run(y, importance, indptr, indices, values, margins_out)`` returns (updates, bad) with bad
    the index of an example whose update made the state non-finite (or a variance <= 0), or -1.
    """

    full = False
    diagonal_name = ""       # the diagonal variant suggested when a full matrix does not fit
    state_arrays = ("variance",)   # full subclasses: ("covariance",)

    @property
    def live_arrays(self):
        return ("mean", "covariance") if self.full else ("mean", "variance")

    @property
    def interleaved(self):
        return () if self.full else ("mean", "variance")

    # what Learner.checked says failed
    failure = ("its margin, its confidence or its step, or the mean or a variance it wrote is "
               "not finite, or a variance is not positive")

    def check_size(self, size, blocks):
        if self.full:
            check_full_fits(self.name, size, self.diagonal_name, blocks=blocks)
        else:
            super().check_size(size, blocks)

    def init_state(self):
        a = self.options["a"]
        if self.full:
            self.covariance = np.zeros((self.size, self.size))
            np.fill_diagonal(self.covariance, a)
        else:
            self.new_interleaved(variance=a)

    def load_state(self, state, learner_meta):
        if self.full:
            self.covariance = np.ascontiguousarray(state["covariance"])
            if self.covariance.shape != (self.size, self.size):
                raise StreamherdError(f"{self.name}: the model's covariance has shape "
                                      f"{self.covariance.shape}, expected ({self.size}, {self.size})")
        else:
            self.variance = state["variance"]

    def state(self):
        if self.full:
            return {"mean": self.mean, "covariance": self.covariance}
        return {"mean": self.mean, "variance": self.variance}

    def _workspace(self):
        if getattr(self, "_g", None) is None:
            self._g = np.zeros(self.size)
            self._active = np.zeros(self.size, np.int64)
        return self._g, self._active

    def learn(self, y, importance, indptr, indices, values, margins_out):
        return self.checked(*self._run(y, importance, indptr, indices, values, margins_out))

    def confidences(self, indptr, indices, values, out):
        """out[i] = x_i' Sigma x_i, the variance of the margin of example i."""
        if self.full:
            full_confidences(self.covariance, indptr, indices, values, out)
        else:
            diag_confidences(self.variance, indptr, indices, values, out)

    def probabilities(self, indptr, indices, values):
        """P(y = +1 | x) = Phi(mu.x / sqrt(x' Sigma x)); 1, 0.5 or 0 by the sign of mu.x when
        x' Sigma x = 0."""
        from scipy.special import ndtr  # here, not at module level: 0.2 s and 26 MB per run

        n = len(indptr) - 1
        margins = np.empty(n)
        self.predict_margins(indptr, indices, values, margins)
        variances = np.empty(n)
        self.confidences(indptr, indices, values, variances)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = ndtr(margins / np.sqrt(variances))
        degenerate = ~(variances > 0)
        p[degenerate] = np.where(margins[degenerate] > 0, 1.0,
                                 np.where(margins[degenerate] < 0, 0.0, 0.5))
        return p


    def class_probabilities(self, indptr, indices, values):
        """Joint multiclass: P(class z has the largest score | x) under N(mu, Sigma), row by row
        (learners/proba.py: quadrature for a diagonal Sigma, Monte Carlo for a full one)."""
        from streamherd.learners import proba
        from streamherd.learners.multiclass import all_class_scores

        means = np.empty((len(indptr) - 1, self.blocks))
        self.class_scores(indptr, indices, values, means)
        if self.full:
            return proba.correlated_argmax_probabilities(means, self.covariance, self.dim, indptr,
                                                         indices, values)
        variances = np.empty_like(means)
        all_class_scores(self.variance, self.dim, self.blocks, indptr, indices, values * values,
                         variances)
        return proba.independent_argmax_probabilities(means, variances)
