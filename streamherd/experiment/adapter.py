"""The one place the experiment calls into ``streamherd.learners``, and how it drives a model
(model.OnlineModel) of a task (streamherd.tasks): a binary task (targets +1/-1; a multiclass file
with ``--all-pairs``
is K(K-1)/2 of them) or a multiclass one (targets are class ids 0..K-1, every class known from
the start, as ``streamherd train --classes``; its learner has K class blocks and learns with
``learn_joint``). A task's loss against the targets gives the experiment's errors.

``herd`` (conditional herding, ``streamherd herd``) is no online learner: HerdModel learns from
all its training rows at once, in the file's order (it shuffles its mini-batches itself), as one
"pass", with herd's defaults but --ratio, which the grid searches.
"""
from dataclasses import replace

import numpy as np

from streamherd import herding, learners
from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.learners.spec import POSITIVE, Hyperparameter
from streamherd.model import OnlineModel, UpdateFailed

HERD = "herd"
RATIO = Hyperparameter("ratio", ("--ratio",), herding.Options().ratio, POSITIVE,
                       "herd's rho = sigma/eta", herding.RATIOS)
MULTICLASS_MODES = ("joint", "ova", "mira")


class Diverged(Exception):
    """An update made the learner's state non-finite: the configuration is unusable."""


def canonical_algo(name):
    return HERD if name == HERD else learners.canonical_name(name)


def tunable():
    """The hyperparameters the grid can search (those declared with a grid), by name."""
    return {**{h.name: h for h, _ in learners.hyperparameters() if h.grid}, RATIO.name: RATIO}


def check_multiclass(mode, algos):
    """Refuse, before any data is read, a --multiclass mode or a learner it does not take (herd
    is its own joint herder whatever the mode)."""
    if mode not in MULTICLASS_MODES:
        raise StreamherdError(f"--multiclass {mode}: use one of {', '.join(MULTICLASS_MODES)}")
    if mode == "mira":
        from streamherd.learners.reductions.mira import check_family

        for algo in algos:
            if algo != HERD:
                check_family(algo)


def passes(algo, max_passes):
    """How many passes the grid tries: herd learns in one."""
    return 1 if algo == HERD else max_passes


def shuffled(algo):
    """Whether each pass visits the rows in a new random order (herd orders its own batches)."""
    return algo != HERD


def tuned_hyperparameter(algo):
    """The name of the hyperparameter the grid searches for ``algo`` (its first declared one
    with a grid: C for nherd/pa/scw, r for arow, eta for cw, a for sop), or None."""
    if algo == HERD:
        return RATIO.name
    tuned = learners.spec(algo).tuned
    return tuned.name if tuned else None


def default_value(algo, hyperparameter):
    if algo == HERD:
        return RATIO.default
    return next(h.default for h in learners.spec(algo).hyperparameters if h.name == hyperparameter)


def needs_full_covariance(algo):
    return algo != HERD and learners.spec(algo).covariance == "full"


def validate(algo, hyperparameter, values):
    """Fail before the grid starts on a value the learner refuses (e.g. eta outside (0.5, 1))."""
    for value in values:
        if algo == HERD:
            RATIO.check(value, HERD)
            continue
        learners.create(algo, 1, {hyperparameter: value} if hyperparameter else {})


def new_model(problem, algo, bits, hyperparameter, value, seed=0):
    """A fresh model of the task ``problem`` over 2^bits slots per class block, uncalibrated
    (herd: its batch order and initial weights from ``seed``)."""
    if algo == HERD:
        return HerdModel(problem, bits, value, seed)
    return OnlineModel(algo, {hyperparameter: value} if hyperparameter else {},
                       FeatureSpace(bits), problem)


def learn_pass(model, targets, rows):
    """One online pass (predict, then update) over ``rows`` (a Chunk) in its order; returns
    (updates, the progressive predictions, made before each update; herd: its iterations and
    its predictions of the rows once trained)."""
    try:
        return model.learn_targets(targets, rows)
    except UpdateFailed:
        raise Diverged() from None


class HerdModel:
    """Conditional herding as the experiment's learner: ``streamherd herd`` with its defaults
    (joint, --hidden, --batch, --burn-in, --max-epochs, --snapshots) and the given --ratio and
    --seed, on the rows without their bias (herd adds none: phi0 and its biases take its place);
    it predicts as ``predict`` of a herd model, by its snapshots' votes."""

    def __init__(self, problem, bits, ratio, seed):
        self.problem = problem
        self.classes = np.asarray(problem.target_values, float)   # ascending, as herd's
        self.bias_slot = FeatureSpace(bits).bias_slot
        self.options = herding.Options(ratio=ratio, seed=seed)
        self.runs = self.features = None

    def learn_targets(self, targets, rows):
        """Herding learns from every row at once (see the module's docstring)."""
        chunk = rows.take(np.arange(rows.n_examples))   # a copy, its bias entries dropped below
        keep = chunk.indices != self.bias_slot
        row_of = np.repeat(np.arange(chunk.n_examples), np.diff(chunk.indptr))[keep]
        indptr = np.zeros(chunk.n_examples + 1, np.int64)
        np.cumsum(np.bincount(row_of, minlength=chunk.n_examples), out=indptr[1:])
        chunk = replace(chunk, indptr=indptr, indices=chunk.indices[keep],
                        values=chunk.values[keep])
        self.features = herding.Features.of(chunk)
        train = replace(self.features.rows(chunk), labels=np.asarray(targets, float))
        herding.check_options(self.options, train.n_rows, self.features.n_columns,
                              len(self.classes), 0)
        self.runs, _ = herding.train(train, self.classes, self.options)
        return sum(r.iterations for r in self.runs), self.predict(rows)

    def predict(self, rows):
        return self.problem.predict(self, rows)

    def _votes(self, indptr, indices, values):
        """Each class's share of the snapshots' votes, per row (the bias slot is unknown to
        the features: Features.rows drops it)."""
        from types import SimpleNamespace

        n = len(indptr) - 1
        chunk = SimpleNamespace(indptr=indptr, indices=indices, values=values, n_examples=n,
                                labels=np.zeros(n))
        return herding.snapshot_votes([r.snapshots for r in self.runs],
                                      self.features.rows(chunk), self.options.mode,
                                      len(self.classes))

    def class_scores(self, indptr, indices, values, out):
        out[:] = self._votes(indptr, indices, values)

    def predict_margins(self, indptr, indices, values, out):
        votes = self._votes(indptr, indices, values)
        out[:] = votes[:, 1] - votes[:, 0]
