"""The covariance arithmetic of the Gaussian (confidence-weighted) learners, inlined by numba
into their step rules (algorithms/): Sigma kept as its diagonal (``variance``) or in full
(``covariance``); see learners/gaussian.py for the model.

Full covariance: Sigma x is computed from the sparse x into a dense workspace g (rows of Sigma are
contiguous, Sigma symmetric), and the rank-one update runs in place over the rows j with
g[j] != 0 (rows with g[j] = 0 do not change), contiguous over columns: O(d * active) per update,
no d x d temporary.

Diagonal step rules read mu and sigma in one pass (``diag_margin_confidence_ahead``) and
update both in a second one (``diag_update``: the mean step uses the old sigma_r, read before
sigma_r is overwritten, and the family's per-coordinate rule gives the new sigma_r); a family's
diagonal step is its ``plan`` (the step's numbers) and ``variance`` rule (``planned_step``).
"""
import numpy as np
from numba import njit

from streamherd.io.positions import unsigned
from streamherd.learners.kernels.prefetch import prefetch, prefetch_rest
from streamherd.learners.kernels.sparse import finite


# ---------------------------------------------------------------- diagonal helpers

@njit(cache=True, inline="always")
def diag_confidence(sigma, indices, values, start, end):
    """v = x' diag(sigma) x."""
    total = 0.0
    for k in range(start, end):
        x = values[unsigned(k)]
        total += sigma[unsigned(indices[unsigned(k)])] * x * x
    return total


@njit(cache=True, inline="always")
def pair_sums_ahead(terms, first, second, indices, values, start, end, ahead):
    """The two sums over the row of terms(first[j], second[j], x_j) (a pair of floats), for two
    per-slot arrays interleaved (Learner.interleaved: the same cache lines hold both), in one
    pass (one pass of random reads, not two), asking the cache for the slots of the row
    ``ahead`` (prefetch.row_ahead) in the same loop."""
    a = 0.0
    b = 0.0
    for k in range(start, end):
        if ahead[0] + k - start < ahead[1]:   # the slot of the same rank in the row ahead
            prefetch(first, indices[unsigned(ahead[0] + k - start)])
        j = unsigned(indices[unsigned(k)])
        x = values[unsigned(k)]
        term_a, term_b = terms(first[j], second[j], x)
        a += term_a
        b += term_b
    prefetch_rest(first, indices, ahead, end - start)
    return a, b


@njit(cache=True, inline="always")
def margin_confidence_terms(mu_j, sigma_j, x):
    return mu_j * x, sigma_j * x * x


@njit(cache=True, inline="always")
def diag_margin_confidence_ahead(mu, sigma, indices, values, start, end, ahead):
    """(mu.x, x' diag(sigma) x) in one pass over the row (pair_sums_ahead)."""
    return pair_sums_ahead(margin_confidence_terms, mu, sigma, indices, values, start, end,
                           ahead)


@njit(cache=True, inline="always")
def entry_ok(mu_j, sigma_j):
    return np.isfinite(mu_j) and np.isfinite(sigma_j) and sigma_j > 0.0


@njit(cache=True, inline="always")
def diag_update(mu, sigma, indices, values, start, end, scale, variance, numbers, rule):
    """mu += scale Sigma x and sigma_r <- variance(sigma_r, x_r, numbers, rule) over the row, the
    old sigma_r in both; returns whether every entry written is ok (entry_ok). ``variance`` is
    the family's diagonal rule (algorithms/), an inline function of numbers: ``numbers`` the
    step's (a tuple of floats, from its ``plan``), ``rule`` the variant's constant (its
    ``rule_of(params)``)."""
    ok = True
    for k in range(start, end):
        j = unsigned(indices[unsigned(k)])
        x = values[unsigned(k)]
        sj = sigma[j]
        mu[j] += scale * sj * x                     # mu += alpha y Sigma x
        sigma[j] = variance(sj, x, numbers, rule)
        ok = ok and entry_ok(mu[j], sigma[j])
    return ok


@njit(cache=True, inline="always")
def planned_step(plan, rule_of, variance, state, params, indices, values, start, end, m, v, y,
                 s):
    """A diagonal family's step (kernels/loops.py) from its rules, written so that the bank
    (kernels/bank.py) runs the same rules for K members at once:
      plan(params, m, v, y, s) -> (updated, ok, scale, numbers): whether the example is an
        update (counted), whether the numbers it is made of are finite, the mean's step and
        the floats ``variance`` takes; the state is written when updated and ok;
      rule_of(params): the variant's constant that ``variance`` takes (the same for every
        member of a bank: never the hyperparameter auto chooses);
      variance(sigma_r, x_r, numbers, rule): the new sigma_r (diag_update).
    Returns (updated, ok)."""
    updated, ok, scale, numbers = plan(params, m, v, y, s)
    if updated and ok:
        ok = diag_update(state[0], state[1], indices, values, start, end, scale, variance,
                         numbers, rule_of(params))
    return updated, ok


def planned_rule(plan, rule_of, variance):
    """The step rule (kernels/loops.py) made of a diagonal family's rules, planned_step's: an
    inline function closed over them, so that numba inlines them into the entry point
    (loops.run_planned_rules makes it when it types one)."""
    @njit(inline="always")
    def step(state, params, indices, values, start, end, m, v, y, s):
        return planned_step(plan, rule_of, variance, state, params, indices, values, start, end,
                            m, v, y, s)
    return step


@njit(cache=True, inline="always")
def one_rule(params):
    """rule_of of a family with one diagonal rule (cw, scw: their floor is a number of the
    step, which ``-a auto`` changes with the member)."""
    return 0


@njit(cache=True, inline="always")
def rule_in_params(params):
    """rule_of of a family whose params are (its hyperparameter, its variant's rule): AROW's
    and NAROW's drop, NHERD's rule of Eq. 14."""
    return params[1]


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
