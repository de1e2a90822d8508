"""TaskBank: a bank of any learners of any task (multiclass, ``--loss squared``, a binary learner
without a bank kernel: a -full one; the learners of --algo auto on such a task), each member
learning each chunk through the task as a run of its learner and value alone would."""
import copy

import numpy as np

from streamherd import learners
from streamherd.learners.base import UnstableUpdate
from streamherd.selection.bank import Bank
from streamherd.selection.scores import loss_scores
from streamherd.learners.threads import ThreadPool, usable_cores


def member_bytes(member, dim, blocks):
    """Bytes of the state of a learner like ``member`` (of any dim) over ``dim`` slots and
    ``blocks`` class blocks (binary and regression: 1): its vectors, and a -full learner's
    matrix ((2^b K)^2 joint, K of 2^b x 2^b one-versus-all)."""
    full = member.spec.covariance == "full"
    if hasattr(member, "learners"):   # one-versus-all: a binary learner per class
        one = learners.create(member.name, 1, member.options)
        return blocks * (one.state_bytes_per_slot() * dim + (8 * dim ** 2 if full else 0))
    return blocks * member.state_bytes_per_slot() * dim + (8 * (blocks * dim) ** 2 if full else 0)


class TaskBank(Bank):
    """The members of a Search (of one grid, or of several learners' grids), each learning
    each chunk through the task (``learn_chunk``), as many at once as there are cores, so it
    takes the work and memory of its members' learners together. The choice is PackedBank's
    on the task's own loss (0/1, squared), without the AUC (loss_scores)."""

    def __init__(self, task, search, dim, options, threads=None):
        """``options``: the hyperparameters every member shares (but the one its grid
        varies; a search of learners: none, each member at its learner's defaults);
        ``threads``: at most this many members learn at once (default: every core)."""
        super().__init__(task, search)
        # one learner of each grid over one slot: its state per slot, for the memory check
        self.probes = [task.new_learner(grid.algo, 1, grid.members[0].options(options))
                       for grid in search.grids]
        self.dim = dim
        self.blocks = 0           # the class blocks the members' memory was checked for,
        self.learned_blocks = 0   # and learned from
        self._check_memory()
        self.learners = [task.new_learner(member.algo, dim, member.options(options))
                         for member in self.members]
        self.pool = ThreadPool(min(usable_cores() if threads is None else threads,
                                   len(self.learners)) - 1)

    def _check_memory(self):
        """Refuse, in one line, members whose states, grown to the classes the task knows now,
        would not fit in memory together (each member checks only its own)."""
        blocks = max(1, len(self.task.labels)) if self.task.kind == "multiclass" else 1
        if blocks > self.blocks:
            # (the blocks learned from are held; a block not learned from yet may be zero
            # pages that hold no memory)
            self._fits(self.members_bytes(blocks), self.members_bytes(self.learned_blocks))
        self.blocks = blocks

    def members_bytes(self, blocks):
        """Bytes of every member's state over ``blocks`` class blocks: each grid's values
        times its learner's (member_bytes)."""
        return sum(len(grid.values) * member_bytes(probe, self.dim, blocks)
                   for grid, probe in zip(self.search.grids, self.probes))

    def learn_chunk(self, targets, chunk, learn_member):
        """Bank.learn_chunk: each live member on a thread of its own (ThreadPool), through its
        own shallow copy of the task, whose count of the classes seen each member's pass moves
        on from the same. A member whose update fails (an UnstableUpdate) leaves the bank."""
        self._check_memory()
        leader = self.leader()
        alive_before = self.alive.copy()

        def run(k):
            task = copy.copy(self.task)
            try:
                return task, learn_member(task, self.learners[k], self.member_calibration(k)
                                          if self.passes_done == 0 else None)
            except UnstableUpdate as e:
                return task, e
        live = np.flatnonzero(self.alive)
        results = [None] * len(self.learners)
        losses = np.full((chunk.n_examples, len(self.learners)), np.nan)
        failure = None
        for k, (task, result) in zip(live, self.pool.map(run, live)):
            if isinstance(result, UnstableUpdate):
                self.alive[k], self.failed_at[k], failure = False, result.index, result
                continue
            results[k] = result
            losses[:, k] = self.task.loss(targets, result[1])
            if hasattr(task, "known"):
                self.task.known = task.known
        if not self.alive.any():
            raise self._every_member_failed(alive_before, failure.what)
        self.learned_blocks = self.blocks
        live = np.flatnonzero(self.alive)
        labeled = ~np.isnan(losses[:, live[0]])
        labeled_losses = losses[labeled]   # (the losses are the window's values too)
        self._account(np.asarray(targets, np.float64)[labeled], chunk.importance[labeled],
                      labeled_losses, labeled_losses)
        return results[leader] if results[leader] is not None else results[live[0]]

    def window_scores(self, y, weight, losses, alive):
        return loss_scores(weight, losses, alive)
