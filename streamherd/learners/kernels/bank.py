"""The bank's loop: K copies of one binary learner learning in the same pass from every example,
each with its own hyperparameter value (streamherd.selection's PackedBank, ``-C auto``) or each
with its own labels (one-versus-all's classes, learners/reductions/ova.py).

The K states are stored slot-major (``packed[j, w, k]``: slot j, the learner's w-th state
array, member k; learners/packing.py line_aligned): a slot holds its K means, then its K
variances, padded to whole cache lines (11 members: 3 lines), so the features of a row bring the
lines of all K members into the cache at once. Member k's arrays are the strided views
``packed[:, w, k]``, of the same numba type as the interleaved columns a single learner runs on
(Learner.interleaved). A kernel call runs one group of a bank's members (a MemberGroup: each on
a thread of its own, with its own packed array); ``params`` may hold more tuples than the group
has members (``alive``), so that groups of every size share one compiled kernel, or one tuple
that every member takes (member_params); ``y`` one label per row, or one per row and member
(member_label).

Per row: every member's margin in one pass over the row's slots (``diag_margins`` and
``mean_margins``: the sums of kernels/loops.diag_margin and mean_margin for all members at once,
in the row's order with the same arithmetic, so equal to them), then the members' updates, by
the family's own rules: no update formula is written twice, and member k's numbers are those of
a single learner run with its value (tests/test_auto.py). A family without a covariance (pa)
runs its ``step`` on each member's views in turn (``bank_loop``); a diagonal Gaussian family
runs its step's parts (covariance.planned_step): each member's ``plan`` (its step's numbers),
then one pass over the row's slots that updates all members at once (``diag_bank_loop``), a
loop over contiguous members that LLVM vectorises where K strided ones did not. A member
whose margin or update fails (not finite: a value at the edge of the grid can diverge where
the others do not) is dropped from the bank (``alive``) and never chosen; its margins are NaN
from that example on.

Entry points: a family's bank is a task of its entry point (``bank=``; kernels/loops.py):
run_rules calls ``mean_bank_kernel``'s function for a family without a covariance,
run_planned_rules ``diag_bank_kernel``'s for a diagonal Gaussian one, each closed over the
family's rules so that numba inlines them, and compiled into the entry point's cached code. A
learner class names the entry points that serve its banks in ``bank_entry_points`` (by
covariance kind, as ``entry_points``). The banks' functions compile with numpy's error model
whatever the family's own: with Python's, each division tests its divisor for zero to raise,
and that branch kept LLVM from vectorising the update; their divisors are never zero (the steps
divide by v + 1/C, v + r, 1 + (a product >= 0) and the like; KEEP's r is infinite, not zero),
and a step that makes a number not finite fails the member as before.
"""
import numpy as np
from numba import njit
from numba.extending import overload

from streamherd.io.positions import unsigned
from streamherd.learners.kernels.covariance import entry_ok
from streamherd.learners.kernels.prefetch import NO_ROW, prefetch, row_ahead
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


def member_label(y, i, k):
    """Member k's label of row i: y[i] for a bank whose members learn the same labels (``-C
    auto``, y of the rows), y[i, k] for one whose members each learn their own (one-versus-all,
    y rows x members). numba compiles it (the overload below)."""
    raise TypeError("member_label runs inside a numba kernel (learners/kernels/bank.py)")


@overload(member_label, inline="always")
def _member_label(y, i, k):
    if y.ndim == 1:
        return lambda y, i, k: y[i]
    return lambda y, i, k: y[i, k]


def member_params(params, k):
    """Member k's rule numbers: params[k], or params[0] when ``params`` holds one tuple, which
    is then every member's (one-versus-all's members share their numbers: one compiled kernel
    serves every class count). numba compiles it (the overload below)."""
    raise TypeError("member_params runs inside a numba kernel (learners/kernels/bank.py)")


@overload(member_params, inline="always")
def _member_params(params, k):
    if len(params) == 1:
        return lambda params, k: params[0]
    return lambda params, k: params[k]


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
def drop_member(alive, failed_at, margins_out, i, k):
    """Member k failed on row i (a margin or an entry not finite): out of the bank from here
    on, its margin of the row NaN."""
    alive[k] = False
    failed_at[k] = i
    margins_out[i, k] = np.nan


@njit(cache=True, inline="always")
def live_members(alive):
    left = 0
    for k in range(len(alive)):
        left += alive[k]
    return left


@njit(cache=True, inline="always")
def slot_views(flat, base, padded, width):
    """The slot at ``base`` of the bank flattened (``width`` doubles): its (padded) members'
    means, then their variances (empty when the learner has none), as views, indexed by a
    loop's own counter from 0: numba's index of flat[base + k] handles a negative one (base is
    not known to be >= 0), and LLVM then read the members with gathers instead of vectors."""
    return flat[base:base + padded], flat[base + padded:base + width]


@njit(cache=True, inline="always")
def slot_sums(flat, indices, values, start, end, ahead, arrays, margins, confidences):
    """Every member's margin mu_k.x (and, ``arrays`` 2, its confidence x' diag(sigma_k) x) of
    the row, into ``margins`` and ``confidences``, of a slot's padded member count
    (learners/packing.py line_aligned; the padding's sums are zeros, never read as a member's).

    One pass over the row's features, and per feature an inner loop over the slot's contiguous
    members (slot_views): LLVM vectorises it (4 or 8 members per instruction), each member's
    sum still taken in the row's order with diag_margin's arithmetic ((sigma x) x, not
    sigma (x x)), so equal to a single learner's."""
    padded = len(margins)
    width = arrays * padded   # doubles per slot: the means, then the variances
    margins[:] = 0.0
    confidences[:] = 0.0
    for p in range(start, end):
        prefetch_slots(flat, indices, ahead, ahead[0] + p - start, width)
        means, variances = slot_views(flat, indices[unsigned(p)] * width, padded, width)
        x = values[unsigned(p)]
        for k in range(padded):
            margins[k] += means[k] * x
        if arrays == 2:
            for k in range(padded):
                confidences[k] += variances[k] * x * x
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
def read_rows(flat, indptr, indices, values, i, r, reads, arrays, margins, confidences):
    """The members' margins of the rows read before row i is learned (``reads`` = (rows, at,
    read_margins): rows[r] is read before row at[r], ``at`` ascending) into read_margins[r],
    from read ``r`` on, by slot_sums of ``arrays`` state arrays (so each is the member's own
    margin, as MemberGroup.scores gives it, not finite or not); returns the next read. The
    calibration's sample reads the class scores of the model as it was at its piece's start
    (model/online.py learn_calibrating), so one call learns the chunk."""
    rows, at, read_margins = reads
    while r < len(rows) and at[r] == i:
        row = rows[r]
        slot_sums(flat, indices, values, indptr[row], indptr[row + 1], NO_ROW, arrays, margins,
                  confidences)
        for k in range(read_margins.shape[1]):
            read_margins[r, k] = margins[k]
        r += 1
    return r


@njit(cache=True, inline="always")
def bank_loop(margins_of, step, bank):
    """Predict-then-update of every live member over one chunk (labels +1/-1, NaN: unlabeled).
    bank = (y, importance, indptr, indices, values, views, flat, params, alive, margins_out,
    updates_out, failed_at, work, spread, reads): ``y`` the labels (member_label), ``views`` the
    (slots, K) view of each state array, ``flat`` the bank flattened (prefetch), ``params`` the
    members' rule numbers (member_params), ``margins_out[i, k]`` member k's margin of row i
    before its update, ``updates_out[k]`` += its updates, ``failed_at[k]`` the row where it
    failed (alive[k] then False), ``work`` two arrays of a slot's padded member count,
    ``spread`` whether the rows ahead are prefetched (see diag_bank_loop), ``reads`` the rows
    whose margins are read on the way (read_rows; none: empty arrays). ``margins_of``
    fills every member's margin and confidence of a row (the family's margin rule, for all
    members at once: diag_margins, mean_margins); ``step`` is the family's own. Returns the
    number of live members left."""
    y, importance, indptr, indices, values, views, flat, params, alive, margins_out, \
        updates_out, failed_at, work, spread, reads = bank
    margins, confidences = work[0], work[1]
    members = len(alive)
    r = 0
    for i in range(len(y)):
        r = read_rows(flat, indptr, indices, values, i, r, reads, 1, margins, confidences)
        start, end = indptr[i], indptr[i + 1]
        if spread:   # (see diag_bank_loop)
            margins_of(flat, indices, values, start, end, row_ahead(indptr, i), margins,
                       confidences)
        else:
            margins_of(flat, indices, values, start, end, NO_ROW, margins, confidences)
        for k in range(members):
            m = margins[k]
            margins_out[i, k] = m if alive[k] else np.nan
            if not alive[k]:
                continue
            ok = finite(m)
            label = member_label(y, i, k)
            if ok and not np.isnan(label) and importance[i] > 0.0:
                updated, ok = step(member_state(views, k), member_params(params, k), indices,
                                   values, start, end, label * m, confidences[k], label,
                                   importance[i])
                updates_out[k] += updated
            if not ok:
                drop_member(alive, failed_at, margins_out, i, k)
    return live_members(alive)


# rows of a bank group's work array (MemberGroup.work, a slot's padded member count each): the
# margins, the confidences, the steps, whether each member learns from the row, its failures,
# then its numbers (a family's variance rule takes NUMBERS at most)
NUMBERS = 4
WORK_ROWS = 5 + NUMBERS


@njit(cache=True, inline="always")
def keep_member(scales, table, k, kept):
    """Member k's step the one that changes nothing: scale 0 and the family's KEEP numbers."""
    scales[k] = 0.0
    for n in range(len(kept)):
        table[n, k] = kept[n]


@njit(cache=True, inline="always")
def update_slots(variance, rule, flat, indices, values, start, end, scales, table, bad):
    """mu_k += scale_k Sigma_k x and sigma_k,r <- variance(sigma_k,r, x_r, numbers_k, rule)
    (covariance.diag_update's arithmetic, the old sigma in both) for every member k at once:
    per feature an inner loop over the slot's contiguous members, which LLVM vectorises.
    Every member is written, a member that does not learn from the row with the step that
    changes nothing (keep_member); ``bad[k]`` += each entry of member k that is not ok
    (covariance.entry_ok)."""
    padded = len(scales)
    width = 2 * padded
    for p in range(start, end):
        means, variances = slot_views(flat, indices[unsigned(p)] * width, padded, width)
        x = values[unsigned(p)]
        for k in range(padded):
            sj = variances[k]
            mu = means[k] + scales[k] * sj * x
            sigma = variance(sj, x, table[:, k], rule)
            means[k] = mu
            variances[k] = sigma
            bad[k] += not entry_ok(mu, sigma)


@njit(cache=True, inline="always")
def update_member(variance, rule, flat, indices, values, start, end, k, scales, table, bad):
    """update_slots for member k alone: its entries, with its arithmetic, the others' left as
    they are (as KEEP's numbers leave them)."""
    padded = len(scales)
    width = 2 * padded
    numbers = table[:, k]
    scale = scales[k]
    failed = 0.0
    for p in range(start, end):
        # flat indexed directly, unsigned (positions.py): slices per feature (slot_views)
        # made this loop several times slower
        mean_at = unsigned(indices[unsigned(p)] * width + k)
        x = values[unsigned(p)]
        sj = flat[mean_at + unsigned(padded)]
        mu = flat[mean_at] + scale * sj * x
        sigma = variance(sj, x, numbers, rule)
        flat[mean_at] = mu
        flat[mean_at + unsigned(padded)] = sigma
        failed += not entry_ok(mu, sigma)
    bad[k] += failed


@njit(cache=True, inline="always")
def update_learning(variance, rule, flat, indices, values, start, end, scales, table, learns,
                    learning, bad):
    """The row's update of the ``learning`` members (learns[k] not 0): each alone
    (update_member) when they are few, else all at once (update_slots)."""
    if learning * ALONE_SHARE > len(scales):
        update_slots(variance, rule, flat, indices, values, start, end, scales, table, bad)
        return
    for k in range(len(scales)):
        if learns[k] != 0.0:
            update_member(variance, rule, flat, indices, values, start, end, k, scales, table,
                          bad)


# a row's update goes member by member (update_member) while its learning members are at most
# a slot's padded members over this, else over all members at once (update_slots): a member
# alone writes one entry per feature where update_slots writes every member's. One-versus-all's
# members (one per class) learn 0.7 to a row on average; auto's learn mostly together
ALONE_SHARE = 2


@njit(cache=True, inline="always")
def diag_bank_loop(plan, kept, rule_of, variance, bank):
    """bank_loop for a diagonal Gaussian family, from its step's rules (covariance.planned_step:
    ``plan``, ``rule_of``, ``variance``) and ``kept``, the numbers of its step that changes
    nothing (sigma_r kept; with scale 0 mu_r is kept). Per row: every member's margin and
    confidence (diag_margins), each live member's plan in turn (its numbers into a column of
    ``work``), then one pass over the row's slots updating all members at once
    (update_slots), those that do not learn from the row with KEEP's numbers: one vectorised
    loop instead of K strided ones; or, when few members learn from the row, a pass for each of
    them alone (update_member, ALONE_SHARE). Member k's numbers are its own plan's, and its
    arithmetic per entry that of a single learner. KEEP's numbers leave a live member's entries
    exactly as they are (scale 0 adds a zero to the mean, which starts at +0.0 and so is never
    -0.0; the variance rules multiply their change by a zero) while the products they multiply
    are finite: x_r^2 is, on a row some member learns from (its v is), and sigma_r x_r^2
    (nherd-d: sigma_r^2 x_r^2) can overflow only where a x_r^2 (a^2 x_r^2) does, as the
    variances never grow past their initial a. An entry that KEEP made not ok drops its
    member, as a failed update does, rather than leaving it wrong. A dead member's entries go on
    being written with KEEP's numbers: they are never read again."""
    y, importance, indptr, indices, values, views, flat, params, alive, margins_out, \
        updates_out, failed_at, work, spread, reads = bank
    margins, confidences, scales, learns, bad = work[0], work[1], work[2], work[3], work[4]
    table = work[5:]
    if len(kept) > len(table):
        raise ValueError("a variance rule of the bank takes more numbers than kernels/bank.py's "
                         "NUMBERS")
    members = len(alive)
    rule = rule_of(member_params(params, 0))
    for k in range(len(scales)):   # the padding's too
        keep_member(scales, table, k, kept)
    r = 0
    for i in range(len(y)):
        r = read_rows(flat, indptr, indices, values, i, r, reads, 2, margins, confidences)
        start, end = indptr[i], indptr[i + 1]
        # the row ahead's slots asked for only when the bank's slots are spread past the cache
        # (kernels/multiclass.py chunk_spread): slots that stay cached need no request, and the
        # requests cost. Two copies of the call, in the second NO_ROW a constant: the compiler
        # drops the requests and their tests. (Written out: a helper taking the margin rule,
        # inlined, gave a family's bank the rules of the family compiled before it.)
        if spread:
            diag_margins(flat, indices, values, start, end, row_ahead(indptr, i), margins,
                         confidences)
        else:
            diag_margins(flat, indices, values, start, end, NO_ROW, margins, confidences)
        learning = 0
        for k in range(members):
            m = margins[k]
            margins_out[i, k] = m if alive[k] else np.nan
            learns[k] = 0.0
            if not alive[k]:
                continue
            ok = finite(m)
            label = member_label(y, i, k)
            if ok and not np.isnan(label) and importance[i] > 0.0:
                updated, ok, scale, numbers = plan(member_params(params, k), label * m,
                                                   confidences[k], label, importance[i])
                updates_out[k] += updated
                if updated and ok:
                    scales[k] = scale
                    for n in range(len(numbers)):
                        table[n, k] = numbers[n]
                    learns[k] = 1.0
                    learning += 1
            if not ok:
                drop_member(alive, failed_at, margins_out, i, k)
        if not learning:
            continue
        bad[:] = 0.0
        # the rule a constant of its own copy of the loop (nherd's variant, arow's drop: 0 or 1
        # for every family but nherd-d): LLVM then drops the variance rule's branches and
        # vectorises the loop over members, which it did not with the rule a variable
        if rule == 0:
            update_learning(variance, 0, flat, indices, values, start, end, scales, table,
                            learns, learning, bad)
        elif rule == 1:
            update_learning(variance, 1, flat, indices, values, start, end, scales, table,
                            learns, learning, bad)
        else:
            update_learning(variance, rule, flat, indices, values, start, end, scales, table,
                            learns, learning, bad)
        for k in range(members):
            if learns[k] != 0.0:
                keep_member(scales, table, k, kept)
            if alive[k] and bad[k] != 0.0:
                drop_member(alive, failed_at, margins_out, i, k)
    return live_members(alive)


def diag_bank_kernel(plan, rule_of, variance):
    """A diagonal family's bank kernel, (kept, bank) -> diag_bank_loop's, closed over its
    rules so that numba inlines them (loops.run_planned_rules calls it)."""
    @njit(nogil=True, error_model="numpy", _nrt=False)
    def run(kept, bank):
        return diag_bank_loop(plan, kept, rule_of, variance, bank)
    return run


def mean_bank_kernel(step):
    """The bank kernel of a family without a covariance, bank -> bank_loop's with mean_margins
    and its step, closed over it (loops.run_rules calls it)."""
    @njit(nogil=True, error_model="numpy", _nrt=False)
    def run(bank):
        return bank_loop(mean_margins, step, bank)
    return run
