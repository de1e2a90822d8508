"""Multiclass MIRA (``--multiclass mira``): the Passive-Aggressive family's joint model (one weight
block per class, as ``--multiclass joint``) learned with Crammer & Singer's update on every
violated constraint at once (learners/kernels/mira.py) instead of the single best wrong class.

The model is the joint one: the same ``mean`` of K blocks, the same scores and prediction; only
the update differs, so everything but ``learn_joint`` is the wrapped learner's.
"""
import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError

# the learners MIRA's update applies to: the Passive-Aggressive family's variants (registry)
FAMILY = tuple(name for name, spec in learners.REGISTRY.items() if spec.module == ".algorithms.pa")


def check_family(name):
    """Refuse, in one line, a learner MIRA's update does not apply to."""
    if learners.canonical_name(name) not in FAMILY:
        raise StreamherdError(f"--multiclass mira is the Passive-Aggressive family's multiclass "
                              f"update, not {name}'s; use --algo pa, pa1 or pa2, or "
                              f"--multiclass joint or ova with --algo {name}")


class Mira:
    """A joint PassiveAggressive learner whose chunks run through the MIRA kernel."""

    def __init__(self, name, dim, options=None, state=None, learner_meta=None, blocks=0):
        check_family(name)
        self.learner = learners.create(name, dim, options, state, learner_meta, blocks=blocks,
                                       task="multiclass")

    def __getattr__(self, attr):
        # everything but learn_joint (grow, state, meta, class_scores, options...) is the
        # joint learner's
        return getattr(self.learner, attr)

    def scores_while_learning(self):
        return False   # (Learner.scores_while_learning: the MIRA kernel reads no rows)

    def learn_joint(self, cls, importance, indptr, indices, values, known, predicted_out,
                    reads=None):
        """Learner.learn_joint's contract, with MIRA's update; returns (updates, known)."""
        from streamherd.learners.kernels.mira import mira_chunk

        if reads is not None:
            raise ValueError("the MIRA kernel reads no rows on the way (scores_while_learning)")
        from streamherd.learners.kernels.multiclass import chunk_spread

        learner = self.learner
        variant, c, _ = learner.kernel_params()
        size = max(learner.blocks, 1)
        return learner.checked(*mira_chunk(
            learner.mean, learner.layout, known, cls, importance, indptr, indices, values, variant,
            c, predicted_out, np.zeros(size), np.zeros(size), np.zeros(size, np.bool_),
            chunk_spread(learner, indptr, indices)))
