"""The bank's loop: K copies of one binary learner, each with its own hyperparameter value,
learning in the same pass from every example (learners/bank.py, ``-C auto``).

The K states are stored slot-major (``packed[j, w, k]``: slot j, the learner's w-th state
array, member k; bank.line_aligned): a slot holds its K means, then its K variances, padded to
whole cache lines (11 members: 3 lines), so the features of a row bring the lines of all K
members into the cache at once. Member k's arrays are the strided views ``packed[:, w, k]``,
of the same numba type as the interleaved columns a single learner runs on
(Learner.interleaved).

Per row: every member's margin in one pass over the row's slots (``diag_margins`` and
``mean_margins``: the sums of kernels/loops.diag_margin and mean_margin for all members at once,
in the row's order with the same arithmetic, so equal to them), then each member's update
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


@njit(cache=True, inline="always")
def slot_sums(flat, indices, values, start, end, ahead, arrays, margins, confidences):
    """Every member's margin mu_k.x (and, ``arrays`` 2, its confidence x' diag(sigma_k) x) of
    the row, into ``margins`` and ``confidences``, of a slot's padded member count
    (bank.line_aligned; the padding's sums are zeros, never read as a member's).

    One pass over the row's features, and per feature an inner loop over the slot's contiguous
    members: LLVM vectorises it (4 or 8 members per instruction), each member's sum still
    taken in the row's order with diag_margin's arithmetic ((sigma x) x, not sigma (x x)), so
    equal to a single learner's. Against the loop it replaced (4 members summed in registers, a
    pass of the row per group), nherd-p's 11 members on 400k in-memory lines of the 1M-line
    benchmark: the margin pass alone 0.35-0.41 s against
    0.44-0.49 s, the whole bank 1.05 s against 1.10 s (CPU time, 3 alternating runs)."""
    padded = len(margins)
    width = arrays * padded   # doubles per slot: the means, then the variances
    margins[:] = 0.0
    confidences[:] = 0.0
    for p in range(start, end):
        prefetch_slots(flat, indices, ahead, ahead[0] + p - start, width)
        base = indices[p] * width
        x = values[p]
        for k in range(padded):
            margins[k] += flat[base + k] * x
        if arrays == 2:
            for k in range(padded):
                confidences[k] += flat[base + padded + k] * x * x
    for p in range(ahead[0] + end - start, ahead[1]):
        prefetch_slots(flat, indices, ahead, p, width)


@njit(cache=True, inline="always")
def diag_margins(flat, indices, values, start, end, ahead, margins, confidences):
    """Every member's diag_margin (kernels/loops.py): (mu_k.x, x' diag(sigma_k) x)."""
    slot_sums(flat, indices, values, start, end, ahead, 2, margins, confidences)


@njit(cache=True, inline="always")
def mean_margins(flat, indices, values, start, end, ahead, margins, confidences):
    """Every member's mean_margin (kernels/loops.py): (mu_k.x, 0)."""
    slot_sums(flat, indices, values, start, end, ahead, 1, margins, confidences)


@njit(cache=True, inline="always")
def bank_loop(margins_of, step, bank):
    """Predict-then-update of every live member over one chunk (y = +1/-1, NaN: unlabeled).
    bank = (y, importance, indptr, indices, values, views, flat, params, alive, margins_out,
    updates_out, failed_at, work): ``views`` the (slots, K) view of each state array,
    ``flat`` the bank flattened (prefetch), ``params[k]`` member k's rule numbers,
    ``margins_out[i, k]`` its margin of row i before its update, ``updates_out[k]`` += its
    updates, ``failed_at[k]`` the row where it failed (alive[k] then False), ``work`` two
    arrays of a slot's padded member count. ``margins_of`` fills every member's margin and
    confidence of a row (the family's margin rule, for all members at once: diag_margins,
    mean_margins); ``step`` is the family's own. Returns the number of live members left."""
    y, importance, indptr, indices, values, views, flat, params, alive, margins_out, \
        updates_out, failed_at, work = bank
    margins, confidences = work[0], work[1]
    members = len(alive)
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        margins_of(flat, indices, values, start, end, row_ahead(indptr, i), margins,
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
