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

from streamherd.learners.algorithms.arow import ArowProject, diag_apply
from streamherd.learners.kernels.covariance import full_reset, full_sigma_x, full_update
from streamherd.learners.kernels.loops import (binary_loop, diag_margin, joint_loop,
                                               mean_margin, mean_scores)
from streamherd.learners.kernels.sparse import finite


@njit(cache=True, inline="always")
def diag_step(state, params, indices, values, start, end, m, v, y, s):
    """params = (b, drop); returns (updated, ok): ok False when m or v is not finite, or the
    update's (arow.diag_apply)."""
    if not finite(m):
        return False, False
    if m >= 1.0:
        return False, True
    if not v > 1.0 / params[0]:           # r_t = +inf: no update
        return False, finite(v)
    rs = v / (params[0] * v - 1.0) / s
    beta = 1.0 / (v + rs)
    return True, diag_apply(state[0], state[1], indices, values, start, end, v,
                            (1.0 - m) * beta * y, beta, rs, params[1])


@njit(cache=True, inline="always")
def full_step(state, params, indices, values, start, end, m, v, y, s):
    if not finite(m):
        return False, False
    if m >= 1.0:
        return False, True
    v, n = full_sigma_x(state[1], indices, values, start, end, state[2], state[3])
    if not v > 1.0 / params[0]:           # r_t = +inf: no update
        full_reset(state[2], state[3], n)
        return False, finite(v)
    rs = v / (params[0] * v - 1.0) / s
    beta = 1.0 / (v + rs)
    return True, full_update(state[0], state[1], state[2], state[3], n, v, (1.0 - m) * beta * y,
                             beta, 0.0)


@njit(cache=True, nogil=True, error_model="numpy")
def train_diag(y, importance, indptr, indices, values, state, params, margins_out):
    return binary_loop(diag_margin, diag_step, True, y, importance, indptr, indices, values, state,
                       params, margins_out)


@njit(cache=True, nogil=True, error_model="numpy")
def joint_diag(cls, importance, indptr, indices, values, state, params, D, known, out, work):
    return joint_loop(mean_scores, diag_margin, diag_step, cls, importance, indptr, indices, values,
                      state, params, D, known, out, work)


@njit(cache=True, nogil=True, error_model="numpy")
def train_full(y, importance, indptr, indices, values, state, params, margins_out):
    return binary_loop(mean_margin, full_step, True, y, importance, indptr, indices, values, state,
                       params, margins_out)


@njit(cache=True, nogil=True, error_model="numpy")
def joint_full(cls, importance, indptr, indices, values, state, params, D, known, out, work):
    return joint_loop(mean_scores, mean_margin, full_step, cls, importance, indptr, indices, values,
                      state, params, D, known, out, work)


class NarowProject(ArowProject):
    train, joint, regress = staticmethod(train_diag), staticmethod(joint_diag), None

    def kernel_params(self):
        return (self.options["b"], self.drop)


class NarowDrop(NarowProject):
    drop = True


class NarowFull(NarowProject):
    train, joint = map(staticmethod, (train_full, joint_full))
    full = True
    state_arrays = ("covariance",)
    diagonal_name = "narow-p"
