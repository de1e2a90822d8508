"""Learners packed slot by slot: a bank's members (K learners of one family, learning from the
same rows in one loop: learners/kernels/bank.py) hold their states in shared arrays, slot j
holding every member's entries of each state array side by side (line_aligned), in one array per
group of members, each group learning on a thread of its own (MemberGroup). Each member learner's
state arrays are views into its group's array, so a member is an ordinary learner (its
``state()``, ``meta()``, ``options``, its predictions).

Two banks pack their members so: ``-C auto``'s, whose members learn the same labels with their
own hyperparameter values (selection/packed.py), and one-versus-all's, whose members share their
values and each learns its own class's labels (learners/reductions/ova.py).
"""
import numpy as np

from streamherd import learners
from streamherd.learners.base import populated_zeros
from streamherd.learners.kernels.bank import WORK_ROWS
from streamherd.learners.kernels.multiclass import NO_READS, Reads

LINE = 64   # bytes of a cache line


def bank_entry_point(algo):
    """The bank kernel of ``algo``'s family for its covariance kind, or None: a family without
    one (its learner class declares no ``bank_entry_points``) learns in a TaskBank."""
    entry_points = getattr(learners.learner_class(algo), "bank_entry_points", {})
    return entry_points.get(learners.spec(algo).covariance)


def slot_width(arrays, members):
    """Doubles of a bank's slot: ``members``' entries of each of its ``arrays`` state arrays,
    padded to whole cache lines (line_aligned)."""
    per_line = LINE // 8
    width = -(-arrays * members // per_line) * per_line
    while width % arrays:
        width += per_line
    return width


def line_aligned(slots, arrays, members):
    """The bank's array, (slots, arrays, padded members): slot j holds member 0..K-1's entry
    of each state array in turn, its members padded so that a slot is whole cache lines and
    starts one (11 members of two arrays: 176 bytes over 3 or 4 lines; padded, 192 bytes on 3;
    the bank's loop is bound by the lines it reads). The padding is never read as a member."""
    width = slot_width(arrays, members)
    buffer = populated_zeros(slots * width + LINE // 8)
    skip = (-buffer.ctypes.data % LINE) // 8
    return buffer[skip:skip + slots * width].reshape(slots, arrays, width // arrays)


def group_sizes(members, arrays, threads):
    """The members of each thread's group (a bank's members are independent): whole cache lines
    of a slot each, as many groups as ``threads`` at most and lines at most, the first groups
    the larger (the first runs on the calling thread, which reads the input too). 11 members
    of two arrays on two threads: 8 (2 lines) and 3 (1 line); a group's lines are its own
    (line_aligned), so no two threads write to one line, and the bank's lines are as many as
    on one thread. A thread of its own per group is the way past the memory latency a bank
    is bound by: each core waits on its own misses (benchmarks/README.md)."""
    per_line = max(1, LINE // 8 // arrays)
    lines = -(-members // per_line)
    threads = max(1, min(threads, lines))
    sizes, left = [], members
    for g in range(threads):
        size = min(left, (lines // threads + (g < lines % threads)) * per_line)
        sizes.append(size)
        left -= size
    return sizes


def packed_bytes(dim, arrays, sizes):
    """Bytes of a grid's packed arrays: ``dim`` slots of groups of ``sizes`` members of
    ``arrays`` state arrays (line_aligned)."""
    return sum(8 * (dim * slot_width(arrays, size) + LINE // 8) for size in sizes)


class MemberGroup:
    """Members ``lo``..``hi - 1`` of a bank (of one grid), run by one thread with their
    family's bank ``kernel``: their packed state (line_aligned), their rule numbers
    (``params``: at least one tuple per member, or one that every member takes:
    kernels/bank.py member_params), their slices of the bank's alive, updates and
    failed_at, and their margins of the last chunk they learned from (rows x members). To the
    kernel, each group is a bank of its own."""

    def __init__(self, lo, hi, packed, params, kernel, bank):
        self.lo = lo
        self.kernel = kernel
        self.views = tuple(packed[:, w, :hi - lo] for w in range(packed.shape[1]))
        self.flat = packed.reshape(-1)
        self.work = np.zeros((WORK_ROWS, packed.shape[2]))   # a slot's padded members
        self.params = params
        self.alive, self.updates = bank.alive[lo:hi], bank.updates[lo:hi]
        self.failed_at = bank.failed_at[lo:hi]
        self.margins = np.empty((0, hi - lo))

    def learn(self, chunk, calibrations=None, spread=True, reads=None):
        """The group's members over one chunk, (y, importance, indptr, indices, values) with y
        the rows' labels or each member's (rows x members: kernels/bank.py member_label), then
        each live one's calibration (of the bank's ``calibrations``, when given: labels of the
        rows) from its margins. ``spread``: whether the bank's slots overflow the cache (then
        the rows ahead are prefetched: kernels/bank.py). ``reads``: (rows, at), rows whose
        margins are read before row ``at`` is learned (kernels/bank.py read_rows); returns
        their margins (reads x members)."""
        y, importance, indptr, indices, values = chunk
        rows, at = reads if reads is not None else (NO_READS, NO_READS)
        read_margins = np.empty((len(rows), len(self.alive)))
        self.margins = np.empty((len(y), len(self.alive)))
        self.kernel(bank=(y, importance, indptr, indices, values, self.views, self.flat,
                          self.params, self.alive, self.margins, self.updates, self.failed_at,
                          self.work, spread, Reads(rows, at, read_margins)))
        if calibrations is not None:   # (it skips the rows unlabeled or of weight <= 0)
            by_member = np.ascontiguousarray(self.margins.T)
            weights = np.maximum(importance, 0.0)
            for k in np.flatnonzero(self.alive):
                calibrations[self.lo + k].observe(by_member[k], y, weights)
        return read_margins

    def scores(self, indptr, indices, values, spread=True):
        """The members' margins of the rows (rows x members), learning nothing: the kernel with
        no labels, on work arrays and flags of this call's own (so that calls at once do not
        share them); None when a margin is not finite. ``spread``: as learn's."""
        n, members = len(indptr) - 1, len(self.alive)
        alive = np.ones(members, np.bool_)
        margins = np.empty((n, members))
        self.kernel(bank=(np.full((n, members), np.nan), np.zeros(n), indptr, indices, values,
                          self.views, self.flat, self.params, alive, margins,
                          np.zeros(members, np.int64), np.full(members, -1, np.int64),
                          np.zeros_like(self.work), spread, Reads.none(members)))
        return margins if alive.all() else None


def packed_attributes(learner):
    """The names of the state arrays a bank packs of ``learner``'s (its interleaved arrays, or
    its mean), or None when its kernel's state is something else (an averaged mean, a full
    covariance): such a learner learns on its own."""
    attrs = learner.interleaved or ("mean",)
    state = learner.kernel_state()
    if len(state) != len(attrs) or any(a is not getattr(learner, attr)
                                       for a, attr in zip(state, attrs)):
        return None
    return attrs


def pack(members, attrs, sizes):
    """Move the states of ``members`` (learners of one family and size, each holding arrays of
    its own or views of an earlier packing) into new packed arrays, one per group of ``sizes``
    members (line_aligned); each member's ``attrs`` become views of its columns. Returns the
    arrays."""
    arrays, lo = [], 0
    dim = members[0].size
    for size in sizes:
        packed = line_aligned(dim, len(attrs), size)
        for k, learner in enumerate(members[lo:lo + size]):
            learner.hold_in({attr: packed[:, w, k] for w, attr in enumerate(attrs)})
        arrays.append(packed)
        lo += size
    return arrays
