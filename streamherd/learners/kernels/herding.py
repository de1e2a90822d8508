"""Conditional herding's kernels (Gelfand et al. 2010, Eq. 7-12): one mini-batch's positive and
negative phases and the Eq. 8 update, and the negative phase alone for prediction.

A herder holds W (features x M), B (K x M), theta (M) and alpha (K); the energy is
x'Wz + y'Bz + theta'z + alpha'y with z in {-1,+1}^M and y the +-1 code of one class,
y_k = 2 e_k - 1. With ``base`` = W'x + theta, class k's hidden input is
a_k = base + B'y_k = base + 2 B[k] - sum_k' B[k'], so every class costs M operations once
``base`` is known. The best z for a_k is sign(a_k) (sign(0) = +1), worth ||a_k||_1: the negative
phase (x clamped, exact over the 1-of-K set) is the class of largest ||a_k||_1 + alpha'y_k,
the lowest on ties.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _hidden_base(indptr, indices, values, row, W, theta, base):
    """base = W'x + theta for CSR row ``row``."""
    base[:] = theta
    for p in range(indptr[row], indptr[row + 1]):
        j = indices[p]
        v = values[p]
        for m in range(base.shape[0]):
            base[m] += v * W[j, m]


@njit(cache=True, nogil=True)
def _best_class(base, B, b_sum, alpha, alpha_sum):
    """argmax_k ||base + 2 B[k] - b_sum||_1 + 2 alpha[k] - alpha_sum (lowest k on ties)."""
    best, best_score = 0, -np.inf
    for k in range(B.shape[0]):
        score = 2.0 * alpha[k] - alpha_sum
        for m in range(base.shape[0]):
            score += abs(base[m] + 2.0 * B[k, m] - b_sum[m])
        if score > best_score:
            best, best_score = k, score
    return best


@njit(cache=True, nogil=True)
def _hidden_states(base, B, b_sum, k, z):
    """z = sign(a_k), sign(0) = +1."""
    for m in range(base.shape[0]):
        z[m] = 1.0 if base[m] + 2.0 * B[k, m] - b_sum[m] >= 0.0 else -1.0


@njit(cache=True, nogil=True)
def herd_step(indptr, indices, values, rows, classes, W, B, theta, alpha, steps, anneal,
              predicted):
    """One iteration over the mini-batch ``rows`` (row numbers into the CSR arrays; ``classes``
    per row number): both phases with the parameters as they are, then Eq. 8 in place with the
    per-example steps ``steps`` = (W, B, theta, alpha) (eta / |block| / |batch|). theta takes
    the annealed rule theta += step [(1 - anneal) sum z - sum z*] (anneal = 0: Eq. 8).
    ``predicted``: each batch row's class y*. Returns the number of wrong y*."""
    n, hidden, n_classes = rows.shape[0], W.shape[1], B.shape[0]
    z = np.empty((n, hidden))
    z_star = np.empty((n, hidden))
    base = np.empty(hidden)
    b_sum = B.sum(axis=0)
    alpha_sum = alpha.sum()
    errors = 0
    for i in range(n):
        _hidden_base(indptr, indices, values, rows[i], W, theta, base)
        k = _best_class(base, B, b_sum, alpha, alpha_sum)
        _hidden_states(base, B, b_sum, classes[rows[i]], z[i])
        _hidden_states(base, B, b_sum, k, z_star[i])
        predicted[i] = k
        errors += k != classes[rows[i]]
    for i in range(n):
        c, k = classes[rows[i]], predicted[i]
        if c == k:   # then z = z*: W, B and alpha do not move
            continue
        for p in range(indptr[rows[i]], indptr[rows[i] + 1]):
            j, v = indices[p], steps[0] * values[p]
            for m in range(hidden):
                W[j, m] += v * (z[i, m] - z_star[i, m])
        for q in range(n_classes):
            y = 1.0 if q == c else -1.0
            y_star = 1.0 if q == k else -1.0
            for m in range(hidden):
                B[q, m] += steps[1] * (y * z[i, m] - y_star * z_star[i, m])
        alpha[c] += steps[3] * 2.0
        alpha[k] -= steps[3] * 2.0
    for m in range(hidden):
        positive, negative = 0.0, 0.0
        for i in range(n):
            positive += z[i, m]
            negative += z_star[i, m]
        theta[m] += steps[2] * ((1.0 - anneal) * positive - negative)
    return errors


@njit(cache=True, nogil=True)
def herd_predict(indptr, indices, values, W, B, theta, alpha, predicted):
    """The negative phase of every CSR row: its class y* under these parameters."""
    base = np.empty(W.shape[1])
    b_sum = B.sum(axis=0)
    alpha_sum = alpha.sum()
    for r in range(indptr.shape[0] - 1):
        _hidden_base(indptr, indices, values, r, W, theta, base)
        predicted[r] = _best_class(base, B, b_sum, alpha, alpha_sum)


@njit(cache=True, nogil=True)
def add_votes(predicted, votes):
    """votes[r, predicted[r]] += 1 for every row."""
    for r in range(predicted.shape[0]):
        votes[r, predicted[r]] += 1.0
