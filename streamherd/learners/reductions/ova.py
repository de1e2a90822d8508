"""One-versus-all multiclass (``--multiclass ova``): one independent binary learner per class.

Class z's learner sees every example with label +1 when its class is z and -1 otherwise. Its
progressive margin is the score of class z; the prediction is the class of largest score among
those seen before the example (a class discovered in the chunk is learned from its first example
on, as in the joint kernels of learners/kernels/multiclass.py; kernels/one_versus_all.py).

A family with a bank kernel (learners/kernels/bank.py: the diagonal Gaussian ones and pa's)
learns its K classes as one bank, packed slot by slot (learners/packing.py): one pass over each
row reads every class's entries of a feature from the same cache lines, where K binary runs
would read the chunk K times. Each class learns with its own labels (member_label) and the
arithmetic of its binary run, so the state and the scores are those of the K runs, bit for bit
(tests/test_multiclass_learners.py). The other families run the family's own binary chunk
kernel once per class: K kernel calls per chunk, no Python work per line.

Saved state: class z's arrays are block z of each state array (rows z*D..(z+1)*D), so ``mean`` and
``variance`` hold K*D entries and a full ``covariance`` (or ``inverse``) is K*D x D: K separate
D x D matrices, one per class, stacked.
"""
import numpy as np

from streamherd import learners
from streamherd.learners.base import UnstableUpdate, available_memory
from streamherd.learners.kernels.multiclass import chunk_spread
from streamherd.learners.kernels.one_versus_all import class_labels, top_classes
from streamherd.learners.packing import (MemberGroup, bank_entry_point, group_sizes, pack,
                                         packed_attributes, packed_bytes)
from streamherd.learners.threads import ThreadPool, cores_beside_parsers


class OneVersusAll:
    """Joint-style interface (grow, learn_joint, class_scores, state) over K binary learners."""

    def __init__(self, name, dim, options=None, state=None, learner_meta=None, blocks=0):
        self.name = learners.canonical_name(name)
        self.dim = dim
        self.options = dict(options or {})
        self.cls = learners.learner_class(self.name)
        self.spec = learners.spec(self.name)
        self.learners = []
        self.groups = None   # the classes packed as one bank (MemberGroups), while learning
        self.pool = None
        self.alive = self.updates = self.failed_at = None   # each class's, in the bank
        if state is not None:
            metas = (learner_meta or {}).get("ova", [])
            blocks = len(state["mean"]) // dim
            for z, piece in enumerate(self.cls.split_saved(state, metas, blocks)):
                self.learners.append(learners.create(self.name, dim, self.options, piece,
                                                     metas[z] if z < len(metas) else {}))
            self.options = self.learners[0].options if self.learners else self.options
        self.grow(blocks)

    @property
    def blocks(self):
        return len(self.learners)

    def grow(self, blocks):
        """Add fresh learners up to ``blocks`` classes (no copy of the old ones), refused in one
        line when they would not fit in memory."""
        if blocks <= len(self.learners):
            return
        self._check_fits(blocks)
        while len(self.learners) < blocks:
            learner = learners.create(self.name, self.dim, self.options)
            self.options = learner.options
            self.learners.append(learner)

    def _check_fits(self, blocks):
        """K separate 2^b x 2^b matrices: refuse them together, as one joint matrix is refused;
        the diagonal learners' vectors likewise (the new classes' must fit)."""
        from streamherd.learners import base

        if self.spec.covariance != "full":
            slot_bytes = learners.create(self.name, 1, self.options).state_bytes_per_slot()
            base.check_blocks_fit(f"{self.name} --multiclass ova", slot_bytes, self.dim, blocks,
                                  held=slot_bytes * self.dim * len(self.learners))
            return
        base.check_memory(8 * blocks * self.dim * self.dim,
                          f"{self.name} --multiclass ova with -b {self.dim.bit_length() - 1} and "
                          f"{blocks} classes needs {blocks} {self.dim}x{self.dim} matrices,",
                          f"use a smaller -b or fewer classes or the diagonal variant --algo "
                          f"{learners.diagonal_variant(self.name)}")

    def state(self):
        states = [learner.state() for learner in self.learners]
        return {key: np.concatenate([s[key] for s in states]) for key in states[0]}

    def meta(self):
        return {"ova": [learner.meta() for learner in self.learners]}

    def scores_while_learning(self):
        """Whether learn_joint takes ``reads`` (Learner.scores_while_learning): while the
        classes learn as one bank, whose kernel reads them (kernels/bank.py read_rows)."""
        return self.blocks > 0 and self._packed_groups() is not None

    def learn_joint(self, cls, importance, indptr, indices, values, known, predicted_out,
                    reads=None):
        """The per-class binary runs; returns (updates, known) as Learner.learn_joint does, and
        writes the ``reads``' class scores as it does (only when scores_while_learning)."""
        n = len(cls)
        learns_from = np.zeros(self.blocks, np.int64)   # (kernels/one_versus_all.py)
        for z in range(known, self.blocks):   # a class new in the chunk: from its first example
            rows = np.flatnonzero(cls == z)
            learns_from[z] = rows[0] if len(rows) else n
        groups = self._packed_groups() if self.blocks else None
        if groups is None:
            if reads is not None:
                raise ValueError("one-versus-all reads rows on the way only while its classes "
                                 "learn as one bank (scores_while_learning)")
            margins = np.empty((n, self.blocks))
            updates = self._learn_apart(cls, importance, indptr, indices, values, learns_from,
                                        margins)
        else:
            updates, margins = self._learn_packed(groups, cls, importance, indptr, indices,
                                                  values, learns_from, reads)
        top_classes(margins, learns_from, known, predicted_out)
        seen = cls[cls >= 0]
        return updates, max(known, int(seen.max()) + 1 if len(seen) else 0)

    def _learn_apart(self, cls, importance, indptr, indices, values, learns_from, margins):
        """Each class's binary run over the rows it learns from, its margins into its column of
        ``margins``; returns the updates."""
        updates = 0
        for z, learner in enumerate(self.learners):
            first = learns_from[z]
            if first == len(cls):
                continue
            y = np.where(cls[first:] < 0, np.nan, np.where(cls[first:] == z, 1.0, -1.0))
            column = np.empty(len(cls) - first)
            try:
                updates += learner.learn(y, importance[first:], indptr[first:], indices, values,
                                         column)
            except UnstableUpdate as e:   # its index counts from the class's first example
                raise UnstableUpdate(e.index + first, e.what) from None
            margins[first:, z] = column
        return updates

    def _learn_packed(self, groups, cls, importance, indptr, indices, values, learns_from,
                      reads):
        """The classes as one bank over the chunk, each group of them on a thread of its own,
        each class with the labels of its binary run (class_labels), the ``reads``' class
        scores read on the way; returns (updates, margins)."""
        spread = chunk_spread(self, indptr, indices)
        rows_at = (reads.rows, reads.at) if reads is not None else None

        def learn(group):
            labels = np.empty((len(cls), len(group.alive)))
            class_labels(cls, learns_from, group.lo, labels)
            return group.learn((labels, importance, indptr, indices, values), spread=spread,
                               reads=rows_at)

        before = int(self.updates.sum())
        read_scores = self.pool.map(learn, groups)
        if reads is not None:
            reads.scores[:] = _side_by_side(read_scores)
        if not self.alive.all():   # the first class that failed, as the runs apart report it
            z = int(np.flatnonzero(~self.alive)[0])
            self.groups = None   # (packed anew, all alive, at the next chunk)
            self.learners[z].checked(0, int(self.failed_at[z]))   # raises its UnstableUpdate
        return int(self.updates.sum()) - before, _side_by_side([group.margins for group in groups])

    def _packed_groups(self):
        """The classes packed as one bank (learners/packing.py), packed anew when classes were
        added since; None when the family has no bank kernel, its learners' state is not what a
        bank packs, or the packed arrays would not fit in memory (the classes then learn apart)."""
        if self._packed():
            return self.groups
        kernel = bank_entry_point(self.name)
        attrs = packed_attributes(self.learners[0]) if kernel is not None else None
        if attrs is None:
            return None
        params = {learner.kernel_params() for learner in self.learners}
        if len(params) != 1:
            return None
        sizes = group_sizes(self.blocks, len(attrs), cores_beside_parsers())
        available = available_memory()
        if available is not None and packed_bytes(self.dim, len(attrs), sizes) > available:
            return None
        self.alive = np.ones(self.blocks, np.bool_)
        self.updates = np.zeros(self.blocks, np.int64)
        self.failed_at = np.full(self.blocks, -1, np.int64)
        self.groups, lo = [], 0
        for size, packed in zip(sizes, pack(self.learners, attrs, sizes)):
            # one tuple of rule numbers for every class (kernels/bank.py member_params)
            self.groups.append(MemberGroup(lo, lo + size, packed, tuple(params), kernel, self))
            lo += size
        self.pool = self.pool or ThreadPool(cores_beside_parsers() - 1)
        return self.groups

    def state_bytes_per_slot(self):
        """Bytes of a class's state per slot (kernels/multiclass.py chunk_spread: the bank's
        working set is the slots read, times this, times the classes)."""
        return self.learners[0].state_bytes_per_slot()

    def class_scores(self, indptr, indices, values, out):
        """out[:, z]: class z's margins of the rows: in one pass over them for every class while
        the classes are packed (the bank's margins, those of each learner's predict_margins),
        else each learner's."""
        if self._packed() and self._bank_scores(indptr, indices, values, out):
            return
        column = np.empty(len(indptr) - 1)
        for z, learner in enumerate(self.learners):
            learner.predict_margins(indptr, indices, values, column)
            out[:, z] = column

    def _bank_scores(self, indptr, indices, values, out):
        """The packed classes' margins of the rows into ``out``, by their bank, which learns
        nothing from them (MemberGroup.scores); False when a margin is not finite (the learners
        then score apart, as predict does)."""
        spread = chunk_spread(self, indptr, indices)
        parts = self.pool.map(lambda group: group.scores(indptr, indices, values, spread),
                              self.groups)
        if any(part is None for part in parts):
            return False
        out[:] = _side_by_side(parts)
        return True

    def _packed(self):
        """Whether the classes are packed as one bank, every class in it."""
        return self.groups is not None and len(self.alive) == self.blocks

    @property
    def gaussian(self):
        return hasattr(self.cls, "probabilities")

    def class_probabilities(self, indptr, indices, values):
        """P(class z has the largest score | x): the classes' Gaussians are independent, so this
        is learners/reductions/proba.py's quadrature."""
        from streamherd.learners.reductions.proba import independent_argmax_probabilities

        return independent_argmax_probabilities(*self._class_moments(indptr, indices, values))

    def _class_moments(self, indptr, indices, values):
        """(means, variances) of the class scores under each class's Gaussian."""
        n = len(indptr) - 1
        means = np.empty((n, self.blocks))
        variances = np.empty((n, self.blocks))
        column = np.empty(n)
        for z, learner in enumerate(self.learners):
            learner.predict_margins(indptr, indices, values, column)
            means[:, z] = column
            learner.confidences(indptr, indices, values, column)
            variances[:, z] = column
        return means, variances


def _side_by_side(parts):
    """The groups' (rows x their classes) arrays as one, their classes in order."""
    return parts[0] if len(parts) == 1 else np.hstack(parts)
