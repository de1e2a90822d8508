"""The one place the experiment calls into ``streamherd.learners``, and how it drives a task's
learner (streamherd.tasks): a binary task (targets +1/-1; a multiclass file with ``--all-pairs``
is K(K-1)/2 of them) or a multiclass one (targets are class ids 0..K-1, every class known from
the start, as ``streamherd train --classes``; its learner has K class blocks and learns with
``learn_joint``). A task's loss against the targets gives the experiment's errors.
"""
from streamherd import learners
from streamherd.learners.base import UnstableUpdate


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


def new_model(problem, algo, bits, hyperparameter, value):
    """A fresh learner of the task ``problem`` over 2^bits slots per class block."""
    return problem.new_learner(algo, 1 << bits,
                               {hyperparameter: value} if hyperparameter else {})


def learn_pass(problem, model, targets, rows):
    """One online pass (predict, then update) over ``rows`` (a Chunk) in its order; returns
    (updates, the progressive predictions, made before each update)."""
    try:
        return problem.learn(model, targets, rows)
    except UnstableUpdate:
        raise Diverged() from None
