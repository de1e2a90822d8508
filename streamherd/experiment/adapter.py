"""The one place the experiment calls into ``streamherd.learners``.

A task kind decides how targets reach a learner and how its predictions come back:

- "binary": targets +1/-1, ``learn`` and the sign of ``predict_margins`` (a multiclass file
  with ``--all-pairs`` is K(K-1)/2 binary tasks);
- "multiclass": targets are class ids 0..K-1; the learner has K class blocks and learns with
  ``learn_joint``, every class known from the start (as ``streamherd train --classes``), and
  predicts the argmax of ``class_scores``. Its error is the multiclass 0/1 error.

Everything else in the experiment compares predicted and true targets with ``==``.
"""
import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.learners.base import UnstableUpdate

TASK_KINDS = ("binary", "multiclass")


class Diverged(Exception):
    """An update made the learner's state non-finite: the configuration is unusable."""


def canonical_algo(name):
    return learners.canonical_name(name)


def tunable():
    """The hyperparameters the grid can search (those declared with a grid), by name."""
    return {h.name: h for h, _ in learners.hyperparameters() if h.grid}


def tuned_hyperparameter(algo):
    """The name of the hyperparameter the grid searches for ``algo`` (its first declared one
    with a grid: C for nherd/pa/scw, r for arow, eta for cw, a for sop), or None."""
    tuned = learners.spec(algo).tuned
    return tuned.name if tuned else None


def default_value(algo, hyperparameter):
    return next(h.default for h in learners.spec(algo).hyperparameters if h.name == hyperparameter)


def needs_full_covariance(algo):
    return learners.spec(algo).covariance == "full"


def validate(algo, hyperparameter, values):
    """Fail before the grid starts on a value the learner refuses (e.g. eta outside (0.5, 1))."""
    for value in values:
        learners.create(algo, 1, {hyperparameter: value} if hyperparameter else {})


def new_model(kind, algo, bits, hyperparameter, value, blocks=1):
    """A fresh learner over 2^bits slots per class block (``blocks``: the task's, K for
    multiclass)."""
    if kind not in TASK_KINDS:
        raise StreamherdError(f"task kind '{kind}' is not supported; use one of {TASK_KINDS}")
    return learners.create(algo, 1 << bits, {hyperparameter: value} if hyperparameter else {},
                           blocks=blocks if kind == "multiclass" else 1)


def learn_pass(model, kind, targets, rows):
    """One online pass (predict, then update) over ``rows`` (a CSR) in its order; returns
    (updates, the progressive predictions, made before each update)."""
    try:
        if kind == "multiclass":
            predicted = np.empty(rows.n_rows, np.int64)
            updates, _ = model.learn_joint(targets.astype(np.int64), rows.importance,
                                           rows.indptr, rows.indices, rows.values, model.blocks,
                                           predicted)
            return updates, predicted
        margins = np.empty(rows.n_rows)
        updates = model.learn(targets, rows.importance, rows.indptr, rows.indices, rows.values,
                              margins)
    except UnstableUpdate:
        raise Diverged() from None
    return updates, _signs(margins)


def predict(model, kind, rows):
    """The model's predicted targets for ``rows`` (no update)."""
    if kind == "multiclass":
        scores = np.empty((rows.n_rows, model.blocks))
        model.class_scores(rows.indptr, rows.indices, rows.values, scores)
        # ties: the earliest class, as the joint kernels predict
        return np.argmax(scores, axis=1)
    margins = np.empty(rows.n_rows)
    model.predict_margins(rows.indptr, rows.indices, rows.values, margins)
    return _signs(margins)


def _signs(margins):
    # binary: the sign of the margin, 0 counted negative as ``streamherd predict`` does
    return np.where(margins > 0, 1.0, -1.0)
