"""The regression task (``--loss squared``): real labels, the learners' squared-loss updates,
progressive squared error, predict's value."""
import numpy as np

from streamherd import learners
from streamherd.labels import numbers_only
from streamherd.tasks.base import Task, format_numbers, online_pass


class RegressionTask(Task):
    """Targets are the labels themselves (NaN: no label); a label that is not a number is a bad
    line."""

    kind = "regression"
    loss_name = "squared loss"

    @classmethod
    def check_meta(cls, saved, algo):
        if learners.spec(algo).regression is None:
            raise saved.damaged(f"it is a regression model of {algo}, which has no squared-loss "
                                f"form")
        super().check_meta(saved, algo)

    def targets(self, chunk, learning=True):
        """(chunk without its skipped bad lines, its labels). Predicting, a bad label's error
        says the model is a regression one; learning, it says what every numeric task's says."""
        chunk = numbers_only(chunk, self.skip_bad,
                             None if learning else "a real number (a regression model)")
        return chunk, chunk.labels

    def learn(self, learner, y, rows):
        """One online pass: (updates, the prediction of each row before its update)."""
        return online_pass(learner.learn_regression, y, rows)

    def loss(self, y, predictions):
        return (y - predictions) ** 2   # NaN for unlabeled lines

    def prediction_text(self, predictions, row):
        return f"{predictions[row]:.6g}"

    def total(self, losses):
        return float(np.sum(losses))

    def report(self, loss, labeled):
        return f"average squared loss = {loss / labeled:.6f} ({labeled} labeled examples)"

    def lines(self, learner, scored, output):
        return format_numbers(scored.scores)   # the value is the margin: --raw prints it too

    def meta(self):
        return {"task": self.kind}

    def description(self):
        return "regression (squared loss)"
