"""The binary task: two label values (+1/-1, 1/0, or any two given ones), the learners' binary
kernels, progressive 0/1 loss, predict's label, margin (--raw) or P(y = +1 | x) (--proba, the
model's calibration map)."""
import numpy as np
from numba import njit

from streamherd.labels import BinaryLabels, numbers_only
from streamherd.tasks.base import PROBA, RAW, Classification, format_numbers, online_pass


@njit(cache=True, nogil=True)
def _zero_one_loss(y, margins, loss):
    # without branches (y - y is 0, or NaN for no label): mistakes come in no predictable order
    for i in range(len(y)):
        loss[i] = ((margins[i] > 0.0) != (y[i] > 0.0)) * 1.0 + (y[i] - y[i])


def zero_one_loss(y, margins):
    """Binary loss: 1 where the sign of the margin (> 0: positive) is not y's, NaN where there
    is no label (y NaN)."""
    loss = np.empty(len(y))
    _zero_one_loss(y, margins, loss)
    return loss


class BinaryTask(Classification):
    """Targets y = +1/-1 (NaN: no label); a label that is not a number is a bad line. Learning,
    the labels' two values are discovered (a third is an error); predicting, the sign of a
    label is its class (any value)."""

    kind = "binary"
    target_values = (-1.0, 1.0)   # every target, ascending (the experiment's label noise)

    def __init__(self, labels=None, skip_bad=False):
        super().__init__(skip_bad)
        self.labels = labels if labels is not None else BinaryLabels()

    @classmethod
    def check_meta(cls, saved, algo):
        super().check_meta(saved, algo)
        BinaryLabels.check_meta(saved)

    @classmethod
    def of_values(cls, positive, negative):
        """A problem over two given label values (the experiment's): rows with other labels are
        not part of it."""
        return cls(BinaryLabels(negative, positive))

    def targets(self, chunk, learning=True):
        """(chunk without its skipped bad lines, y); predicting, the labels themselves, which
        the loss reads by their sign."""
        chunk = numbers_only(chunk, self.skip_bad)
        return chunk, self.labels.observe(chunk) if learning else chunk.labels

    def value_targets(self, values):
        """(rows whose label value is one of the two, their y), for in-memory labels of a
        problem over two given values (the experiment's pairs of classes, where either may be
        the positive one)."""
        positive, negative = self.labels.positive, self.labels.negative
        rows = np.flatnonzero((values == positive) | (values == negative))
        return rows, np.where(values[rows] == positive, 1.0, -1.0)

    def learn(self, learner, y, rows):
        """One online pass: (updates, the margin of each row before its update)."""
        return online_pass(learner.learn, y, rows)

    def loss(self, y, margins):
        return zero_one_loss(y, margins)

    def prediction_text(self, margins, row):
        return self.labels.text(bool(margins[row] > 0))

    def has_probabilities(self, learner):
        return hasattr(learner, "probabilities")

    def lines(self, learner, scored, output):
        rows, margins = scored.chunk, scored.scores
        if output == PROBA:
            return format_numbers(self.probabilities(learner, rows, margins))
        if output == RAW:
            return format_numbers(margins)
        texts = np.array([self.labels.text(False), self.labels.text(True)], dtype=object)
        return texts[(margins > 0).astype(np.intp)].tolist()

    def probabilities(self, learner, rows, margins):
        """P(y = +1 | x): the model's calibration map (calibration.py) of each margin, or
        without one a Gaussian model's Phi(mu.x / sqrt(x' Sigma x))."""
        if self.calibration is None:
            return learner.probabilities(rows.indptr, rows.indices, rows.values)
        confidences = None
        if self.calibration.needs_confidences:
            confidences = np.empty(rows.n_examples)
            learner.confidences(rows.indptr, rows.indices, rows.values, confidences)
        return self.calibration.probabilities(margins, confidences)

    def meta(self):
        return {"task": self.kind, "labels": self.labels.to_meta()}

    def description(self):
        return f"binary (labels {self.labels.text(False)}/{self.labels.text(True)})"
