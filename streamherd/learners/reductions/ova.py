"""One-versus-all multiclass (``--multiclass ova``): one independent binary learner per class.

Class z's learner sees every example with label +1 when its class is z and -1 otherwise, through
the family's own binary chunk kernel: K kernel calls per chunk, no Python work per line. Its
progressive margin is the score of class z; the prediction is the class of largest score among
those seen before the example (a class discovered in the chunk is learned from its first example
on, as in the joint kernels of learners/kernels/multiclass.py).

Saved state: class z's arrays are block z of each state array (rows z*D..(z+1)*D), so ``mean`` and
``variance`` hold K*D entries and a full ``covariance`` (or ``inverse``) is K*D x D: K separate
D x D matrices, one per class, stacked.
"""
import numpy as np

from streamherd import learners
from streamherd.learners.base import UnstableUpdate


class OneVersusAll:
    """Joint-style interface (grow, learn_joint, class_scores, state) over K binary learners."""

    def __init__(self, name, dim, options=None, state=None, learner_meta=None, blocks=0):
        self.name = learners.canonical_name(name)
        self.dim = dim
        self.options = dict(options or {})
        self.cls = learners.learner_class(self.name)
        self.spec = learners.spec(self.name)
        self.learners = []
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

    def learn_joint(self, cls, importance, indptr, indices, values, known, predicted_out):
        """The per-class binary runs; returns (updates, known) as Learner.learn_joint does."""
        n = len(cls)
        scores = np.full((n, self.blocks), -np.inf)
        updates = 0
        for z, learner in enumerate(self.learners):
            # a class new in this chunk is learned from its first example, and is not a
            # candidate for that example's prediction
            first = 0 if z < known else int(np.argmax(cls == z))
            if z >= known and cls[first] != z:
                continue
            y = np.where(cls[first:] < 0, np.nan, np.where(cls[first:] == z, 1.0, -1.0))
            margins = np.empty(n - first)
            try:
                updates += learner.learn(y, importance[first:], indptr[first:], indices, values,
                                         margins)
            except UnstableUpdate as e:   # its index counts from the class's first example
                raise UnstableUpdate(e.index + first, e.what) from None
            scores[first + (z >= known):, z] = margins[(z >= known):]
        if self.blocks:   # argmax: the earliest class on ties, as the joint kernels
            predicted_out[:] = np.where(np.isfinite(scores).any(axis=1),
                                        np.argmax(scores, axis=1), -1)
        else:
            predicted_out[:] = -1
        seen = cls[cls >= 0]
        return updates, max(known, int(seen.max()) + 1 if len(seen) else 0)

    def class_scores(self, indptr, indices, values, out):
        column = np.empty(len(indptr) - 1)
        for z, learner in enumerate(self.learners):
            learner.predict_margins(indptr, indices, values, column)
            out[:, z] = column

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
