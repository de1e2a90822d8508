"""Class probabilities of Gaussian multiclass models (``predict --proba``): P(class z has the
largest score) when the weights are drawn from the model's N(mu, Sigma).

Diagonal joint models and every one-versus-all model: the class scores s_z = w . f(x, z) are
independent Gaussians N(m_z, v_z) (disjoint weight blocks, no covariance between blocks), so
  P(z) = integral phi_z(t) prod_{z' != z} Phi((t - m_z') / sqrt(v_z')) dt,
a one-dimensional integral computed by Gauss-Hermite quadrature around m_z (t = m_z + sqrt(2 v_z)
u):
a closed form up to the quadrature, deterministic. The K values are renormalised to sum to 1
(quadrature error is small; renormalising also splits exact ties evenly when every v_z = 0).

Full joint models: the scores are correlated, Cov(s_a, s_b) = f(x, a)' Sigma f(x, b) = x' Sigma_ab
x,
and P(argmax = z) is a (K-1)-dimensional Gaussian orthant probability with no closed form beyond
K = 3. It is estimated by Monte Carlo: MC_DRAWS draws s = m + L e from the K x K score covariance
(L its Cholesky factor, PSD-safe), with one fixed set of standard normal draws e (seed MC_SEED)
shared by every example, so predictions are reproducible; the standard error of a probability p is
sqrt(p (1 - p) / MC_DRAWS) <= 0.008.
"""
import math

import numpy as np
from numba import njit

QUADRATURE_NODES = 80
MC_DRAWS = 4000
MC_SEED = 20100606


@njit(cache=True, inline="always")
def _normal_cdf(difference, sd):
    if sd > 0.0:
        return 0.5 * math.erfc(-difference / (sd * math.sqrt(2.0)))
    return 1.0 if difference > 0.0 else (0.5 if difference == 0.0 else 0.0)


@njit(cache=True, nogil=True)
def _independent_argmax(means, sds, nodes, weights, out):
    n, K = means.shape
    for i in range(n):
        total = 0.0
        for z in range(K):
            p = 0.0
            for k in range(len(nodes)):
                t = means[i, z] + math.sqrt(2.0) * sds[i, z] * nodes[k]
                term = weights[k]
                for other in range(K):
                    if other != z:
                        term *= _normal_cdf(t - means[i, other], sds[i, other])
                p += term
            out[i, z] = p / math.sqrt(math.pi)
            total += out[i, z]
        for z in range(K):
            out[i, z] = out[i, z] / total if total > 0.0 else 1.0 / K


def independent_argmax_probabilities(means, variances):
    """P(argmax = z) for independent N(means, variances) scores, row by row."""
    nodes, weights = np.polynomial.hermite.hermgauss(QUADRATURE_NODES)
    out = np.empty_like(means)
    _independent_argmax(np.ascontiguousarray(means), np.sqrt(np.maximum(variances, 0.0)),
                        nodes, weights, out)
    return out


@njit(cache=True, nogil=True)
def _score_covariances(Sigma, D, K, indptr, indices, values, out):
    """out[i, a, b] = x_i' Sigma_ab x_i, the covariance of the scores of classes a and b."""
    for i in range(len(indptr) - 1):
        start, end = indptr[i], indptr[i + 1]
        for a in range(K):
            for b in range(a, K):
                total = 0.0
                for k in range(start, end):
                    row = Sigma[a * D + indices[k]]
                    inner = 0.0
                    for q in range(start, end):
                        inner += row[b * D + indices[q]] * values[q]
                    total += values[k] * inner
                out[i, a, b] = total
                out[i, b, a] = total


@njit(cache=True, nogil=True)
def _correlated_argmax(means, covariances, draws, out):
    n, K = means.shape
    L = np.zeros((K, K))
    for i in range(n):
        C = covariances[i]
        L[:, :] = 0.0
        for j in range(K):          # Cholesky, a non-positive pivot (PSD, rounding) gives 0
            d = C[j, j]
            for k in range(j):
                d -= L[j, k] * L[j, k]
            if d <= 0.0:
                continue
            L[j, j] = math.sqrt(d)
            for r in range(j + 1, K):
                s = C[r, j]
                for k in range(j):
                    s -= L[r, k] * L[j, k]
                L[r, j] = s / L[j, j]
        for z in range(K):
            out[i, z] = 0.0
        for s in range(draws.shape[0]):
            best = 0
            best_score = -np.inf
            for z in range(K):
                score = means[i, z]
                for k in range(z + 1):
                    score += L[z, k] * draws[s, k]
                if score > best_score:
                    best = z
                    best_score = score
            out[i, best] += 1.0
        for z in range(K):
            out[i, z] /= draws.shape[0]


def correlated_argmax_probabilities(means, Sigma, D, indptr, indices, values):
    """P(argmax = z) for the joint Gaussian scores of a full-covariance joint model."""
    n, K = means.shape
    covariances = np.empty((n, K, K))
    _score_covariances(Sigma, D, K, indptr, indices, values, covariances)
    draws = np.random.default_rng(MC_SEED).standard_normal((MC_DRAWS, K))
    out = np.empty((n, K))
    _correlated_argmax(np.ascontiguousarray(means), covariances, draws, out)
    return out
