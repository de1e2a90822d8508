"""Multiclass MIRA's per-example kernel (Crammer & Singer, "Ultraconservative Online Algorithms
for Multiclass Problems", JMLR 3, 2003), for the Passive-Aggressive family.

The joint kernels (multiclass.py) update on the single best-scoring wrong class. MIRA projects
onto every constraint at once: with class scores s_z = w_z . x, the losses l_r = 1 - (s_y - s_r)
(r != y) and a = |x|^2, the new weights are

  pa:    min_W 1/2 |W - W_t|^2               s.t. (w_y - w_r) . x >= 1 for every r != y
  pa1:   min_W 1/2 |W - W_t|^2 + C xi        s.t. (w_y - w_r) . x >= 1 - xi, xi >= 0
  pa2:   min_W 1/2 |W - W_t|^2 + C xi^2      s.t. (w_y - w_r) . x >= 1 - xi

with one slack xi shared by the K - 1 constraints (the multiclass hinge loss max_r l_r of Crammer
& Singer 2001, as PA-I and PA-II (Crammer et al. 2006, Eq. 7 and 8) bound the binary hinge). The
solution is w_z += tau_z x with tau_y = Lambda = sum_r lambda_r and tau_r = -lambda_r, where
lambda >= 0 maximises the dual

  sum_r lambda_r l_r - a/2 (Lambda^2 + sum_r lambda_r^2) - Lambda^2 / (4C)  [the last term: pa2]
  subject, for pa1, to Lambda <= C

(pa has C = inf). For pa1 this is, in tau, the box and sum constraints tau_r <= C delta_{r,y},
sum_r tau_r = 0 of Crammer & Singer's MIRA dual (2003; their bound is 1 and their objective
|M_r + tau_r x|^2, here the PA objective |W - W_t|^2 with the margin 1: the per-example
sub-problem of Crammer & Singer's 2001 multiclass SVM dual). Its stationarity condition gives, with
u_r = l_r / a and kappa = 1 + 1/(2aC) for pa2 (else 1),

  lambda_r = max(0, u_r - kappa Lambda),   Lambda = sum_r max(0, u_r - kappa Lambda),

a monotone equation in Lambda solved exactly on the active set {r : u_r > kappa Lambda}
(Lambda = S / (1 + k kappa) over the k active classes of sum S; classes with u_r <= kappa Lambda
leave and Lambda grows, so it ends in at most K rounds: Crammer & Singer's fixed point over the
sorted losses, done as Michelot's projection, without a sort). The result is exact: no
tolerance. A class with l_r <= 0 never enters: its constraint holds and no update can break it
(w_y only gains). For pa1, when Lambda > C the cap binds: Lambda = C and
lambda_r = max(0, u_r - theta) with sum_r lambda_r = C (theta by the same rounds). One violated
constraint gives Lambda = l / (2a) (capped at C; pa2: l / (2a + 1/(2C))): the joint PA update on
Delta = f(x, y) - f(x, r), |Delta|^2 = 2a. An importance weight s scales C, as for the binary PA.
"""
import numpy as np
from numba import njit

from streamherd.learners.kernels.multiclass import (best_class, class_scores, slot_of,
                                                    prefetch_next_row_blocks, scores_finite,
                                                    visible_classes)
from streamherd.learners.kernels.sparse import finite, squared_norm

PA, PA1, PA2 = 0, 1, 2   # the variants, PassiveAggressive.rules' order


@njit(cache=True, inline="always")
def _active_sum(u, active, K):
    """(number, sum) of the active u_r."""
    k = 0
    total = 0.0
    for r in range(K):
        if active[r]:
            k += 1
            total += u[r]
    return k, total


@njit(cache=True, inline="always")
def _drop_below(u, active, K, threshold):
    """Deactivate every u_r <= threshold; returns whether one was."""
    dropped = False
    for r in range(K):
        if active[r] and u[r] <= threshold:
            active[r] = False
            dropped = True
    return dropped


@njit(cache=True)
def mira_steps(scores, K, label, norm2, variant, c, tau, active):
    """The steps tau[z] (z < K) of the update w_z += tau_z x on an example of class ``label``
    whose class scores are scores[:K] and |x|^2 = norm2 > 0 (module docstring); ``active``:
    scratch of K booleans. Returns Lambda = tau[label], 0 when no constraint is violated."""
    for r in range(K):   # u_r = l_r / a, active when l_r > 0
        tau[r] = (1.0 - scores[label] + scores[r]) / norm2
        active[r] = r != label and tau[r] > 0.0
    kappa = 1.0 + 1.0 / (2.0 * norm2 * c) if variant == PA2 else 1.0
    total = 0.0
    while True:
        k, sum_u = _active_sum(tau, active, K)
        if k == 0:
            break
        total = sum_u / (1.0 + k * kappa)
        if not _drop_below(tau, active, K, kappa * total):
            break
    threshold = kappa * total
    if variant == PA1 and total > c:   # the sum constraint binds: sum lambda = C
        while True:
            k, sum_u = _active_sum(tau, active, K)
            threshold = (sum_u - c) / k
            if not _drop_below(tau, active, K, threshold):
                break
        total = c
    for r in range(K):
        tau[r] = -(tau[r] - threshold) if active[r] else 0.0
    tau[label] = total
    return total


@njit(cache=True, inline="always")
def _update_blocks(w, layout, K, tau, indices, values, start, end):
    """w_z += tau_z x for every class with a step; returns whether every entry written is
    finite."""
    ok = True
    for z in range(K):
        if tau[z] == 0.0:
            continue
        for k in range(start, end):
            slot = slot_of(layout, z, indices[k])
            w[slot] += tau[z] * values[k]
            ok = ok and np.isfinite(w[slot])
    return ok


@njit(cache=True, nogil=True, error_model="numpy")
def mira_chunk(w, layout, known, cls, importance, indptr, indices, values, variant, c,
               predicted_out, scores, tau, active, spread):
    """Predict-then-update over one chunk with MIRA's update (the joint loop's conventions,
    loops.joint_loop: the prediction over the ``known`` classes, a new label joins before its
    update; ``spread``: multiclass.chunk_spread). Returns (updates, index of a bad example or
    -1, known)."""
    updates = 0
    for i in range(len(cls)):
        start, end = indptr[i], indptr[i + 1]
        label = cls[i]
        visible = visible_classes(known, label)
        prefetch_next_row_blocks(w, layout, known, indptr, indices, i, spread)
        class_scores(w, layout, visible, indices, values, start, end, scores)
        predicted_out[i] = best_class(scores, known, -1)
        if not scores_finite(scores, known):
            return updates, i, known
        if label < 0:
            continue
        known = visible
        norm2 = squared_norm(values, start, end)
        if not importance[i] > 0.0 or norm2 == 0.0:   # nothing to learn, or no direction
            continue
        if not finite(norm2, scores[label]):
            return updates, i, known
        step = mira_steps(scores, known, label, norm2, variant, c * importance[i], tau, active)
        if not finite(step):
            return updates, i, known
        if step > 0.0:
            updates += 1
            if not _update_blocks(w, layout, known, tau, indices, values, start, end):
                return updates, i, known
    return updates, -1, known
