"""PackedBank: binary learners whose family declares a bank kernel (its learner class's
``bank_entry_points``, over learners/kernels/bank.py) learn in one loop over the rows for all
members of a grid.

The members' states are stored slot-major (learners/packing.py), in one array per group of
members, each learning on a thread of its own (MemberGroup); each member learner's state arrays
are views into its group's array, so a member is an ordinary learner of its value (its
``state()``, ``meta()``, ``options``).
"""
import numpy as np

from streamherd.learners.packing import (MemberGroup, bank_entry_point, group_sizes,
                                         line_aligned, packed_attributes, packed_bytes)
from streamherd.learners.threads import ThreadPool, usable_cores
from streamherd.selection.bank import Bank
from streamherd.selection.scores import margin_scores


class PackedBank(Bank):
    """A bank of binary learners with a bank kernel: each grid's members packed slot by slot
    (``groups``: each grid's MemberGroups), learning in one loop over the rows, grid after grid
    (a search of learners packs each learner's grid apart). Every member predicts each example
    before it learns from it; the bank chooses on their margins (margin_scores). It is the
    binary task's learner too (``learn``)."""

    def __init__(self, task, search, dim, options, threads=None):
        """``options``: the hyperparameters every member shares (but the one its grid
        varies); ``threads``: at most this many groups per grid (default: every core)."""
        super().__init__(task, search)
        threads = usable_cores() if threads is None else threads
        layouts = [self._layout(grid, options, threads) for grid in search.grids]
        self._fits(sum(packed_bytes(dim, len(attrs), sizes) for _, attrs, sizes in layouts))
        self.updates = np.zeros(len(self.members), np.int64)
        self.groups = []
        lo = 0
        for (kernel, attrs, sizes), grid in zip(layouts, search.grids):
            groups = []
            for size in sizes:
                packed = line_aligned(dim, len(attrs), size)
                # each member a fresh learner of one slot, whose state every slot starts from,
                # written slot by slot for all members at once (whole lines, in order), then
                # spread over the packed columns: no member's own arrays are made and copied
                members = [task.new_learner(grid.algo, 1, self.members[k].options(options))
                           for k in range(lo, lo + size)]
                for w, attr in enumerate(attrs):
                    first = np.array([getattr(learner, attr)[0] for learner in members])
                    if first.any():
                        packed[:, w, :size] = first
                for k, learner in enumerate(members):
                    learner.spread_over(dim, {attr: packed[:, w, k]
                                              for w, attr in enumerate(attrs)})
                self.learners += members
                # every group's rule numbers one tuple as long as the grid's first group's (the
                # numbers of its last member repeated, never read): one compiled kernel serves
                # them all
                params = [learner.kernel_params() for learner in self.learners[lo:lo + size]]
                params += params[-1:] * (sizes[0] - size)
                groups.append(MemberGroup(lo, lo + size, packed, tuple(params), kernel, self))
                lo += size
            self.groups.append(groups)
        self.pool = ThreadPool(max(map(len, self.groups)) - 1)
        # each member's packed state arrays (its learner's attributes)
        self.packed_attrs = [attrs for _, attrs, sizes in layouts for _ in range(sum(sizes))]
        self.alone = None   # the one member the race left (learning alone, unpacked)

    def _layout(self, grid, options, threads):
        """(the bank kernel of ``grid``'s learner, its state arrays, its group sizes)."""
        probe = self.task.new_learner(grid.algo, 1, grid.members[0].options(options))
        attrs = packed_attributes(probe)
        assert attrs is not None, f"{probe.name}: its kernel state is not its interleaved arrays"
        return bank_entry_point(grid.algo), attrs, group_sizes(len(grid.values), len(attrs),
                                                                threads)

    # ------------------------------------------------------------ learning

    def learn_chunk(self, targets, chunk, learn_member):
        """Bank.learn_chunk: the members learn in one kernel, so the task learns the bank as it
        would one binary learner (``learn``); the members calibrate themselves."""
        return learn_member(self.task, self, None)

    def learn(self, y, importance, indptr, indices, values, margins_out):
        """A binary learner's learn: every live member over one chunk; ``margins_out``: the
        leader's margins (the one leading on the chunks before). Returns the leader's
        updates."""
        if self.alone is not None:
            return self._learn_alone(y, importance, indptr, indices, values, margins_out)
        leader = self.leader()
        before = self.updates[leader]
        margins = self.learn_members(y, importance, indptr, indices, values)
        margins_out[:] = margins[:, leader]
        if self.alive.sum() == 1:
            self._unpack(int(np.flatnonzero(self.alive)[0]))
        return int(self.updates[leader] - before)

    def _unpack(self, k):
        """The race left member ``k`` alone: its state becomes arrays of its own, and it learns
        with its learner's own kernel from now on (the bank's kernel computes as it does,
        bit for bit: tests/test_auto.py), at one learner's speed. The packed arrays are freed:
        the members stopped keep no state (they are never chosen nor written)."""
        for j, learner in enumerate(self.learners):
            if j == k:
                learner.own_state()
            else:
                for attr in self.packed_attrs[j]:
                    setattr(learner, attr, np.zeros(0))
        self.groups = []
        self.alone = k

    def _learn_alone(self, y, importance, indptr, indices, values, margins_out):
        """learn, once the race left one member: its own learn, calibration and accounting."""
        k = self.alone
        updates = self.learners[k].learn(y, importance, indptr, indices, values, margins_out)
        self.updates[k] += updates
        if self.passes_done == 0 and self.calibrations is not None:
            self.calibrations[k].observe(margins_out, y, np.maximum(importance, 0.0))
        margins = np.zeros((len(y), len(self.members)))   # (the others' columns never read)
        margins[:, k] = margins_out
        self._account_margins(y, importance, margins)
        return updates

    def learn_members(self, y, importance, indptr, indices, values):
        """Every live member over one chunk, each group of a grid on a thread of its own;
        returns their margins (rows x members). The last of them failing is an
        UnstableUpdate."""
        alive_before = self.alive.copy()
        chunk = (y, importance, indptr, indices, values)
        calibrations = self.calibrations if self.passes_done == 0 else None
        margins = []
        for groups in self.groups:
            self.pool.map(lambda group: group.learn(chunk, calibrations), groups)
            margins += [group.margins for group in groups]
        if not self.alive.any():
            raise self._every_member_failed(alive_before, self.learners[0].failure)
        margins = margins[0] if len(margins) == 1 else np.hstack(margins)
        self._account_margins(y, importance, margins)
        return margins

    def _account_margins(self, y, importance, margins):
        """The members' 0/1 losses of the chunk's labeled rows (Bank._account), their margins
        the window's values."""
        labeled = ~np.isnan(y)
        if not labeled.all():   # (the usual chunk is labeled whole: no copies of it then)
            y, importance, margins = y[labeled], importance[labeled], margins[labeled]
        self._account(y, importance, (margins > 0.0) != (y > 0.0)[:, None], margins)

    def window_scores(self, y, weight, margins, alive):
        return margin_scores(y, weight, margins, alive)
