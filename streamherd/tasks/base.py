"""What every task is: the pieces train, predict and the experiment call, and what they share.

A task turns a chunk's labels into targets (its label rule, streamherd/labels.py), makes its
learner, learns from targets and rows (the progressive step: a prediction for each row before
its update), scores rows without learning, and gives the loss of predictions against targets.
Its ``predictions`` are what its loss compares: a binary model's margins (their sign is the
class), class ids, or real values. predict's lines come from its scores.
"""
from typing import NamedTuple

import numpy as np

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.labels import numbers_only

# what predict prints for each example
LABEL, RAW, PROBA, SCORES = "label", "raw", "proba", "scores"


class Scored(NamedTuple):
    """One chunk as predict sees it (``Task.score``): its rows after the label rule, the
    model's scores and predictions, and their loss (``tally``) over the labeled rows."""

    chunk: object
    scores: np.ndarray
    predictions: np.ndarray
    loss: object
    labeled: int


class Task:
    """The base of the three tasks: a subclass sets ``kind`` (the model meta's "task") and
    ``loss_name``, and gives the label rule (``targets``), its ``learn``, its ``loss`` and the
    texts of its predictions."""

    kind = ""
    loss_name = "0/1 loss"
    blocks = 1                 # class blocks of its learner
    calibration = None         # a loaded model's --proba map (calibration.py), if it has one
    has_class_scores = False   # predict --scores
    one_learner_per_class = False   # one-versus-all: its class blocks are apart (stacked)
    model_words = ""           # what a message says of its model beside its algorithm and bits

    def __init__(self, skip_bad=False):
        self.skip_bad = skip_bad   # a bad label drops its line (counted) instead of an error

    @classmethod
    def check_meta(cls, saved, algo):
        """Its keys beside "task" in the meta (``saved``: errors.SavedMeta) of an ``algo`` model."""
        saved.get("multiclass", lambda v: v is None, f"absent in a {cls.kind} model",
                  required=False)

    def check_labels(self, chunk):
        """On the parser threads (ChunkReader's ``process``), for a task known before the input:
        stop at a label the task never takes (binary, regression: numbers only), so that the
        reader reports a damaged compressed input as the damage, not as its garbage label."""
        if not self.skip_bad:
            numbers_only(chunk, skip_bad=False)

    def new_learner(self, algo, dim, options, state=None, learner_meta=None):
        """The learner of ``algo`` over ``dim`` slots (per class block) for this task: fresh, or
        holding a saved model's ``state`` and ``learner_meta``."""
        return learners.create(algo, dim, options, state, learner_meta, task=self.kind)

    def scores(self, learner, rows):
        """The model's score of each of ``rows``: its margin w.x (a multiclass task: every
        class's)."""
        margins = np.empty(rows.n_examples)
        learner.predict_margins(rows.indptr, rows.indices, rows.values, margins)
        return margins

    def predict(self, learner, rows):
        """The predictions for ``rows`` (a Chunk) without learning from them."""
        return self.predictions(self.scores(learner, rows))

    def predictions(self, scores):
        return scores

    def score(self, learner, chunk):
        """predict's per-chunk work, none of which depends on the chunks before: run on the
        parser threads (ChunkReader's ``process``)."""
        chunk, targets = self.targets(chunk, learning=False)
        scores = self.scores(learner, chunk)
        predictions = self.predictions(scores)
        return Scored(chunk, scores, predictions, *self.tally(targets, predictions))

    def check_output(self, output, learner, model_path, algo):
        """Refuse, in one line, an output (``RAW``, ``PROBA``, ``SCORES``) the model has not."""
        if output == SCORES and not self.has_class_scores:
            raise StreamherdError(f"--scores prints every class's score of a multiclass model; "
                                  f"{model_path} is a {self.kind} model: use --raw for its margin")
        if output == PROBA and self.calibration is None and not self.has_probabilities(learner):
            retrain = "" if self.kind == "regression" else \
                "retrain it with train --calibration isotonic (the default), or "
            raise StreamherdError(
                f"--proba needs a calibrated model or a Gaussian one (nherd, arow, cw, scw); "
                f"{model_path} is a {algo} {self.kind} model, which has no class probabilities: "
                f"{retrain}use --raw{' or --scores' if self.has_class_scores else ''}")

    def has_probabilities(self, learner):
        return False

    def tally(self, targets, predictions):
        """(loss, labeled examples) of a chunk's predictions, for predict's report."""
        labeled = self.labeled(targets)
        return (self.total(self.loss(targets[labeled], predictions[labeled])),
                int(np.count_nonzero(labeled)))

    def labeled(self, targets):
        """Rows with a target (NaN: none)."""
        return ~np.isnan(targets)


class Classification(Task):
    """Binary and multiclass: 0/1 loss, counted in mistakes."""

    def total(self, losses):
        return int(np.count_nonzero(losses))

    def report(self, mistakes, labeled):
        return (f"error rate = {mistakes / labeled:.6f} ({mistakes} mistakes in {labeled} "
                f"labeled examples)")


def online_pass(kernel, y, rows):
    """One online pass of a learner's ``kernel`` (``learn``, ``learn_regression``) over
    ``rows`` with targets ``y``: (updates, each row's prediction before its update)."""
    predictions = np.empty(rows.n_examples)
    updates = kernel(y, rows.importance, rows.indptr, rows.indices, rows.values, predictions)
    return updates, predictions


def format_numbers(values):
    """Numbers as predict prints them (output formatting only)."""
    return np.char.mod("%.9g", values).tolist()


def format_pairs(names, matrix):
    """'name:value' for every class, one string per row (output formatting only)."""
    if matrix.shape[1] == 0:
        return [""] * matrix.shape[0]
    cells = np.char.add(np.char.add(np.asarray(names, dtype=str), ":"),
                        np.char.mod("%.9g", matrix))
    return [" ".join(row) for row in cells.tolist()]
