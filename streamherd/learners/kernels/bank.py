"""The bank's loop: K copies of one binary learner, each with its own hyperparameter value,
learning in the same pass from every example (learners/bank.py, ``-C auto``).

The K states are stored slot-major (``packed[j, k, w]``: slot j, member k, the learner's w-th
state array): one slot's K members lie side by side, so the features of a row bring the lines
of all K members into the cache at once, and the members after the first find them there.
Member k's arrays are the strided views ``packed[:, k, w]``, of the same numba type as the
interleaved columns a single learner runs on (Learner.interleaved), and the loop calls the
family's own ``margin`` and ``step`` rules on them (kernels/loops.py): no update formula is
written twice, and member k's numbers are those of a single learner run with its value.

Each row is predicted and learned by every member in turn (member-major within the row): the
row's lines then stay in L1 between members. A member whose margin or update fails (not
finite: a value at the edge of the grid can diverge where the others do not) is dropped from
the bank (``alive``) and never chosen; its margins are NaN from that example on.

One entry point per family (its error model as its own entry points'), the rules closed over
as in loops.run_rules, so numba inlines them.
"""
import numpy as np
from numba import njit
from numba.extending import overload

from streamherd.learners.algorithms import arow, cw, narow, nherd, pa, scw
from streamherd.learners.kernels.loops import diag_margin, entry_point, mean_margin
from streamherd.learners.kernels.prefetch import row_ahead
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
    return None


@njit(cache=True, inline="always")
def bank_loop(margin, step, bank):
    """Predict-then-update of every live member over one chunk (y = +1/-1, NaN: unlabeled).
    bank = (y, importance, indptr, indices, values, views, params, alive, margins_out,
    updates_out): ``params[k]`` member k's rule numbers, ``margins_out[i, k]`` its margin of row
    i before its update, ``updates_out[k]`` += its updates, ``failed_at[k]`` the row where it
    failed (alive[k] then False). Returns the number of live members left."""
    y, importance, indptr, indices, values, views, params, alive, margins_out, updates_out, \
        failed_at = bank
    members = len(alive)
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        ahead = row_ahead(indptr, i)
        learn = not np.isnan(y[i]) and importance[i] > 0.0
        for k in range(members):
            if not alive[k]:
                margins_out[i, k] = np.nan
                continue
            state = member_state(views, k)
            m, v = margin(state, indices, values, start, end, ahead)
            margins_out[i, k] = m
            ok = finite(m)
            if ok and learn:
                updated, ok = step(state, params[k], indices, values, start, end, y[i] * m, v,
                                   y[i], importance[i])
                updates_out[k] += updated
            if not ok:
                alive[k] = False
                failed_at[k] = i
                margins_out[i, k] = np.nan
    left = 0
    for k in range(members):
        left += alive[k]
    return left


def run_bank(margin, step, bank):
    """The body of a bank entry point: bank_loop with the family's rules (the overload below,
    closed over them as loops.run_rules is, so that numba inlines them)."""
    raise TypeError("run_bank is the body of a numba entry point (learners/kernels/bank.py)")


@overload(run_bank, inline="always")
def _run_bank_of_rules(margin, step, bank):
    margin_rule, step_rule = margin.dispatcher, step.dispatcher

    def run(margin, step, bank):
        return bank_loop(margin_rule, step_rule, bank)
    return run


@entry_point("numpy")
def pa_bank(bank):
    return run_bank(mean_margin, pa.step, bank)


@entry_point()
def nherd_bank(bank):
    return run_bank(diag_margin, nherd.diag_step, bank)


@entry_point("numpy")
def arow_bank(bank):
    return run_bank(diag_margin, arow.diag_step, bank)


@entry_point("numpy")
def narow_bank(bank):
    return run_bank(diag_margin, narow.diag_step, bank)


@entry_point()
def cw_bank(bank):
    return run_bank(diag_margin, cw.diag_step, bank)


@entry_point()
def scw_bank(bank):
    return run_bank(diag_margin, scw.diag_step, bank)


# the bank entry point of each family (its learner class's module) and covariance kind
ENTRY_POINTS = {("algorithms.pa", "none"): pa_bank, ("algorithms.nherd", "diagonal"): nherd_bank,
                ("algorithms.arow", "diagonal"): arow_bank,
                ("algorithms.narow", "diagonal"): narow_bank,
                ("algorithms.cw", "diagonal"): cw_bank, ("algorithms.scw", "diagonal"): scw_bank}
