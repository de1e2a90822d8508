"""The perceptron (Rosenblatt 1958) and the averaged perceptron (Freund & Schapire 1999).

Mistake-driven: update w += s * y * x when y (w . x) <= 0, with step s the example's importance
weight. The averaged perceptron predicts with the average of the weight vectors after each
example, and updates the underlying w as the perceptron does.
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner
from streamherd.learners.sparse import axpy, dot
from streamherd.learners.prefetch import prefetch_next_row


@njit(cache=True, nogil=True)
def _perceptron_chunk(y, importance, indptr, indices, values, w, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row(w, indptr, indices, i)
        m = dot(w, indices, values, start, end)
        margins_out[i] = m
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        if y[i] * m <= 0.0:
            axpy(w, importance[i] * y[i], indices, values, start, end)
            updates += 1
    return updates


class Perceptron(Learner):
    def learn(self, y, importance, indptr, indices, values, margins_out):
        return _perceptron_chunk(y, importance, indptr, indices, values, self.mean, margins_out)


@njit(cache=True, nogil=True)
def _averaged_chunk(y, importance, indptr, indices, values, w, u, seen, margins_out):
    """Averaging without touching every slot per example.

    With Delta_t the update made on example t (t = 1-based count of learned examples), the
    average after T examples is (1/T) sum_{s<=T} w_s = w - u/T, where u = sum_t (t - 1) Delta_t.
    So each update also adds (t - 1) Delta_t to u, and a prediction needs only w . x and u . x.
    """
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row(w, indptr, indices, i)
        prefetch_next_row(u, indptr, indices, i)
        wx = dot(w, indices, values, start, end)
        if seen > 0:
            margins_out[i] = wx - dot(u, indices, values, start, end) / seen
        else:
            margins_out[i] = 0.0
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        if y[i] * wx <= 0.0:
            step = importance[i] * y[i]
            axpy(w, step, indices, values, start, end)
            axpy(u, step * seen, indices, values, start, end)
            updates += 1
        seen += 1
    return updates, seen


class AveragedPerceptron(Learner):
    state_arrays = ("average",)

    def init_state(self):
        self.examples_seen = 0
        self._weighted_updates = np.zeros(self.dim)

    def load_state(self, state, learner_meta):
        # average = w - u/T  =>  u = T (w - average)
        self.examples_seen = int(learner_meta.get("examples_seen", 0))
        self._weighted_updates = self.examples_seen * (self.mean - state["average"])

    def average(self):
        if self.examples_seen == 0:
            return self.mean.copy()
        return self.mean - self._weighted_updates / self.examples_seen

    def state(self):
        return {"mean": self.mean, "average": self.average()}

    def meta(self):
        return {"examples_seen": self.examples_seen}

    def learn(self, y, importance, indptr, indices, values, margins_out):
        updates, self.examples_seen = _averaged_chunk(
            y, importance, indptr, indices, values, self.mean, self._weighted_updates,
            self.examples_seen, margins_out)
        return updates

    def predict_margins(self, indptr, indices, values, out):
        from streamherd.learners.sparse import margins

        margins(self.state()["average"], indptr, indices, values, out)
