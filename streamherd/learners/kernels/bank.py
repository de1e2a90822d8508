"""The bank's loop: K copies of one binary learner, each with its own hyperparameter value,
learning in the same pass from every example (learners/bank.py, ``-C auto``).

The K states are stored slot-major (``packed[j, w, k]``: slot j, the learner's w-th state
array, member k; bank.line_aligned): a slot holds its K means, then its K variances, padded to
whole cache lines (11 members: 3 lines), so the features of a row bring the lines of all K
members into the cache at once. Member k's arrays are the strided views ``packed[:, w, k]``,
of the same numba type as the interleaved columns a single learner runs on
(Learner.interleaved).

Per row: every member's margin in one pass over the row's slots (``diag_margins`` and
``mean_margins``: the sums of kernels/loops.diag_margin and mean_margin, for GROUP members at a
time, in the row's order with the same arithmetic, so equal to them), then each member's update
by the family's own ``step`` rule on its views: no update formula is written twice, and member
k's numbers are those of a single learner run with its value (tests/test_auto.py). A member
whose margin or update fails (not finite: a value at the edge of the grid can diverge where
the others do not) is dropped from the bank (``alive``) and never chosen; its margins are NaN
from that example on.

One entry point per family (its error model as its own entry points'), the step rule closed
over as in loops.run_rules, so numba inlines it.
"""
import numpy as np
from numba import njit
from numba.extending import overload

from streamherd.learners.algorithms import arow, cw, narow, nherd, pa, scw
from streamherd.learners.kernels.loops import entry_point
from streamherd.learners.kernels.prefetch import prefetch, row_ahead
from streamherd.learners.kernels.sparse import finite


def member_state(views, k):
    """The state tuple member k's rules take: column k of each (slots, K) view of the bank (one
    per state array of the learner). numba compiles it (the overload below)."""
    raise TypeError("member_state runs inside a numba kernel (learners/kernels/bank.py)")


@overload(member_state, inline="always")
def _member_state(views, k):
    if len(views) == 1:
        return lambda views, k: (views[0][:, k],)
    if len(views) == 2:
        return lambda views, k: (views[0][:, k], views[1][:, k])
    # (more state arrays: no family with a bank has them)
    return None


@njit(cache=True, inline="always")
def prefetch_slots(flat, indices, ahead, p, width):
    """Ask the cache for every line of the bank's slot of rank p in the row ``ahead``: ``width``
    = K x the state arrays, the doubles of one slot in ``flat`` (the bank, flattened)."""
    if p < ahead[1]:
        base = indices[p] * width
        for offset in range(0, width, 8):   # 8 doubles: a 64-byte line
            prefetch(flat, base + offset)
        prefetch(flat, base + width - 1)


# members summed together in registers: the means (and variances) of 4 members are 32 bytes of
# a slot, and a slot is padded to whole lines (bank.line_aligned), so a group never reads past it
GROUP = 4


@njit(cache=True, inline="always")
def diag_margins(views, flat, indices, values, start, end, ahead, margins, confidences):
    """Every member's diag_margin (kernels/loops.py) of the row: margins[k] = mu_k.x and
    confidences[k] = x' diag(sigma_k) x, each summed in the row's order with the same
    arithmetic as diag_margin, so equal to it. A slot holds its K means, then its K variances,
    side by side in ``flat`` (module docstring); GROUP members at a time, their sums in
    registers: independent chains of adds, and the slot's lines read from L1 after the first
    group."""
    members = len(margins)
    width = len(flat) // len(views[0])   # doubles per slot: the means, then the variances
    padded = width // 2
    for first in range(0, members, GROUP):
        m0 = m1 = m2 = m3 = v0 = v1 = v2 = v3 = 0.0
        for p in range(start, end):
            if first == 0:   # the first group asks for the row ahead's slots (prefetch.py)
                prefetch_slots(flat, indices, ahead, ahead[0] + p - start, width)
            base = indices[p] * width + first
            x = values[p]
            m0 += flat[base] * x
            m1 += flat[base + 1] * x
            m2 += flat[base + 2] * x
            m3 += flat[base + 3] * x
            v0 += flat[base + padded] * x * x
            v1 += flat[base + padded + 1] * x * x
            v2 += flat[base + padded + 2] * x * x
            v3 += flat[base + padded + 3] * x * x
        store_group(margins, first, m0, m1, m2, m3)
        store_group(confidences, first, v0, v1, v2, v3)
    for p in range(ahead[0] + end - start, ahead[1]):
        prefetch_slots(flat, indices, ahead, p, width)


@njit(cache=True, inline="always")
def mean_margins(views, flat, indices, values, start, end, ahead, margins, confidences):
    """Every member's mean_margin (kernels/loops.py): margins[k] = mu_k.x, confidences 0."""
    members = len(margins)
    width = len(flat) // len(views[0])
    for first in range(0, members, GROUP):
        m0 = m1 = m2 = m3 = 0.0
        for p in range(start, end):
            if first == 0:   # the first group asks for the row ahead's slots (prefetch.py)
                prefetch_slots(flat, indices, ahead, ahead[0] + p - start, width)
            base = indices[p] * width + first
            x = values[p]
            m0 += flat[base] * x
            m1 += flat[base + 1] * x
            m2 += flat[base + 2] * x
            m3 += flat[base + 3] * x
        store_group(margins, first, m0, m1, m2, m3)
        store_group(confidences, first, 0.0, 0.0, 0.0, 0.0)
    for p in range(ahead[0] + end - start, ahead[1]):
        prefetch_slots(flat, indices, ahead, p, width)


@njit(cache=True, inline="always")
def store_group(out, first, a, b, c, d):
    """out[first:first + 4] = a, b, c, d, those of them within out."""
    n = len(out) - first
    out[first] = a
    if n > 1:
        out[first + 1] = b
    if n > 2:
        out[first + 2] = c
    if n > 3:
        out[first + 3] = d


@njit(cache=True, inline="always")
def bank_loop(margins_of, step, bank):
    """Predict-then-update of every live member over one chunk (y = +1/-1, NaN: unlabeled).
    bank = (y, importance, indptr, indices, values, views, flat, params, alive, margins_out,
    updates_out, failed_at, work): ``views`` the (slots, K) view of each state array,
    ``flat`` the bank flattened (prefetch), ``params[k]`` member k's rule numbers,
    ``margins_out[i, k]`` its margin of row i before its update, ``updates_out[k]`` += its
    updates, ``failed_at[k]`` the row where it failed (alive[k] then False), ``work`` two
    K-arrays. ``margins_of`` fills every member's margin and confidence of a row (the family's
    margin rule, for all members at once: diag_margins, mean_margins); ``step`` is the family's
    own. Returns the number of live members left."""
    y, importance, indptr, indices, values, views, flat, params, alive, margins_out, \
        updates_out, failed_at, work = bank
    margins, confidences = work[0], work[1]
    members = len(alive)
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margins_of(views, flat, indices, values, start, end, row_ahead(indptr, i), margins,
                   confidences)
        learn = not np.isnan(y[i]) and importance[i] > 0.0
        for k in range(members):
            m = margins[k]
            margins_out[i, k] = m if alive[k] else np.nan
            if not alive[k]:
                continue
            ok = finite(m)
            if ok and learn:
                updated, ok = step(member_state(views, k), params[k], indices, values, start,
                                   end, y[i] * m, confidences[k], y[i], importance[i])
                updates_out[k] += updated
            if not ok:
                alive[k] = False
                failed_at[k] = i
                margins_out[i, k] = np.nan
    left = 0
    for k in range(members):
        left += alive[k]
    return left


def run_bank(margins_of, step, bank):
    """The body of a bank entry point: bank_loop with the family's rules (the overload below,
    closed over them as loops.run_rules is, so that numba inlines them)."""
    raise TypeError("run_bank is the body of a numba entry point (learners/kernels/bank.py)")


@overload(run_bank, inline="always")
def _run_bank_of_rules(margins_of, step, bank):
    margins_rule, step_rule = margins_of.dispatcher, step.dispatcher

    def run(margins_of, step, bank):
        return bank_loop(margins_rule, step_rule, bank)
    return run


@entry_point("numpy")
def pa_bank(bank):
    return run_bank(mean_margins, pa.step, bank)


@entry_point()
def nherd_bank(bank):
    return run_bank(diag_margins, nherd.diag_step, bank)


@entry_point("numpy")
def arow_bank(bank):
    return run_bank(diag_margins, arow.diag_step, bank)


@entry_point("numpy")
def narow_bank(bank):
    return run_bank(diag_margins, narow.diag_step, bank)


@entry_point()
def cw_bank(bank):
    return run_bank(diag_margins, cw.diag_step, bank)


@entry_point()
def scw_bank(bank):
    return run_bank(diag_margins, scw.diag_step, bank)


# the bank entry point of each family (its learner class's module) and covariance kind
ENTRY_POINTS = {("algorithms.pa", "none"): pa_bank, ("algorithms.nherd", "diagonal"): nherd_bank,
                ("algorithms.arow", "diagonal"): arow_bank,
                ("algorithms.narow", "diagonal"): narow_bank,
                ("algorithms.cw", "diagonal"): cw_bank, ("algorithms.scw", "diagonal"): scw_bank}
