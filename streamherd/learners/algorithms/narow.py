"""NAROW (Orabona & Crammer, "New adaptive algorithms for online classification", NIPS 2010;
the paper is not in /work/shared/papers: the update below is the issue's transcription, without
the paper's equation numbers).

AROW with an adaptive regulariser r_t instead of a fixed r. With m = y mu.x, the hinge loss
l = max(0, 1 - m) and v = x' Sigma x (old Sigma), update when l > 0 and v > 1/b:
  r_t = v / (b v - 1)                         (r_t = +inf when v <= 1/b: no update)
  beta = 1 / (v + r_t),  alpha = l beta,  mu += alpha y Sigma x
  narow-full:  Sigma -= beta Sigma x x' Sigma
Diagonal forms, as AROW's (arow.py):
  narow-p (project; equal to the exact diagonal update):  sigma_r <- 1 / (1/sigma_r + x_r^2 / r_t)
  narow-d (drop):                                          sigma_r <- sigma_r - beta (sigma_r x_r)^2
As v grows r_t falls to 1/b, so for uncertain examples NAROW is AROW with r = 1/b; a confident
one (v <= 1/b) is not learned. ``b`` (``--narow-b``; ``-b`` is the hash bits) defaults to 1, the
counterpart of AROW's default r = 1.

An importance weight s divides r_t, as it divides AROW's r (the example's loss weighs s times as
much); s does not move the threshold v > 1/b, a property of the current Sigma.
Joint multiclass: the same step on Delta = f(x, y) - f(x, y') with y = +1
(learners/kernels/multiclass.py). No regression form: the paper gives none.
"""
from numba import njit

from streamherd.learners.algorithms.arow import KEEP, Arow, arow_variance, planned
from streamherd.learners.kernels.covariance import (full_reset, full_sigma_x, full_update,
                                                    rule_in_params)
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_planned_rules, run_rules
from streamherd.learners.kernels.sparse import finite


@njit(cache=True, inline="always")
def regularizer(v, b, s):
    """(r_t, beta) for v > 1/b: r_t = v / (b v - 1), divided by the importance weight s, and
    beta = 1 / (v + r_t)."""
    rs = v / (b * v - 1.0) / s
    return rs, 1.0 / (v + rs)


@njit(cache=True, inline="always")
def diag_plan(params, m, v, y, s):
    """params = (b, drop): AROW's step (arow.planned) with r_t when m < 1 and v > 1/b; a v that
    is not finite is not ok."""
    if m >= 1.0:
        return False, True, 0.0, KEEP
    if not v > 1.0 / params[0]:           # r_t = +inf: no update
        return False, finite(v), 0.0, KEEP
    rs, beta = regularizer(v, params[0], s)
    return planned(v, (1.0 - m) * beta * y, beta, rs)


@entry_point("numpy")
def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
    return run_planned_rules(diag_plan, None, arow_variance, KEEP, rule_in_params, binary,
                             regression, joint, args, bank)


@njit(cache=True, inline="always")
def full_step(state, params, indices, values, start, end, m, v, y, s):
    if m >= 1.0:
        return False, True
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    if not v > 1.0 / params[0]:           # r_t = +inf: no update
        full_reset(state[2], state[3], n)
        return False, finite(v)
    rs, beta = regularizer(v, params[0], s)
    return True, full_update(state[0], state[1], state[2], state[3], n, v, (1.0 - m) * beta * y,
                             beta, 0.0)


@entry_point("numpy")
def run_full(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, full_step, None, binary, regression, joint, args)


class Narow(Arow):
    """narow-p, narow-d (the registry's rule: "project" or "drop") and narow-full."""

    entry_points = {"diagonal": run_diag, "full": run_full}
    bank_entry_points = {"diagonal": run_diag}

    def kernel_params(self):
        return (self.options["b"], self.spec.rule == "drop")
