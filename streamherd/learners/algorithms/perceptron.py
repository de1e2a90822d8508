"""The perceptron (Rosenblatt 1958) and the averaged perceptron (Freund & Schapire 1999).

Mistake-driven: update w += s * y * x when y (w . x) <= 0, with step s the example's importance
weight. The averaged perceptron predicts with the average of the weight vectors after each
example, and updates the underlying w as the perceptron does.

Joint multiclass (Collins 2002): the same update on Delta = f(x, y) - f(x, y') with y = +1, i.e.
w_y += s x and w_y' -= s x when the best wrong class y' scores at least as high as y. The
averaged perceptron predicts with the average's class scores and picks y' with w's.
Neither has a regression form: ``--loss squared`` refuses them.
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_rules
from streamherd.learners.kernels.multiclass import (class_scores, joint_prepare,
                                                    prefetch_next_row_blocks, visible_classes)
from streamherd.learners.kernels.prefetch import row_ahead
from streamherd.learners.kernels.sparse import axpy, dot, dot_ahead, finite


@njit(cache=True, inline="always")
def perceptron_step(w, indices, values, start, end, m, scale):
    """On a mistake (signed margin m <= 0) w += scale x; returns (updated, ok): ok is False when
    a weight written is not finite (learners/kernels/sparse.py)."""
    if m > 0.0:
        return False, True
    return True, axpy(w, scale, indices, values, start, end)


@njit(cache=True, inline="always")
def step(state, params, indices, values, start, end, m, v, y, s):
    return perceptron_step(state[0], indices, values, start, end, m, s * y)


@entry_point("numpy")
def run(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, step, None, binary, regression, joint, args)


class Perceptron(Learner):
    entry_points = {"none": run}
    side_by_side = True


@njit(cache=True, inline="always")
def _averaged_step(w, u, seen, indices, values, start, end, m, scale):
    """perceptron_step on w, and on a mistake u += seen scale x (_averaged_chunk), in one pass;
    ok also requires the average w - u / (seen + 1) after this example to be finite where the
    update wrote (which it is not when w or u is not; later averages divide u by more)."""
    if not finite(m):
        return False, False
    if m > 0.0:
        return False, True
    u_scale = scale * seen
    inverse = 1.0 / (seen + 1)
    ok = True
    for k in range(start, end):
        j = indices[k]
        x = values[k]
        w[j] += scale * x
        u[j] += u_scale * x
        ok = ok and np.isfinite(w[j] - u[j] * inverse)
    return True, ok


@njit(cache=True, nogil=True, error_model="numpy")
def _averaged_chunk(y, importance, indptr, indices, values, w, u, seen, margins_out):
    """Averaging without touching every slot per example.

    With Delta_t the update made on example t (t = 1-based count of learned examples), the
    average after T examples is (1/T) sum_{s<=T} w_s = w - u/T, where u = sum_t (t - 1) Delta_t.
    So each update also adds (t - 1) Delta_t to u, and a prediction needs only w . x and u . x.
    Returns (updates, seen, index of a bad example or -1).
    """
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        wx = dot_ahead(w, indices, values, start, end, row_ahead(indptr, i))  # and u (interleaved)
        if seen > 0:
            margins_out[i] = wx - dot(u, indices, values, start, end) / seen
        else:
            margins_out[i] = 0.0
        if not finite(wx, margins_out[i]):
            return updates, seen, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = _averaged_step(w, u, seen, indices, values, start, end, y[i] * wx,
                                     importance[i] * y[i])
        updates += updated
        if not ok:
            return updates, seen, i
        seen += 1
    return updates, seen, -1


@njit(cache=True, nogil=True, error_model="numpy")
def _averaged_joint(cls, importance, indptr, indices, values, w, u, seen, layout, known,
                    predicted_out, work):
    """The joint form of _averaged_chunk: average class scores w_z.x - u_z.x / T predict."""
    updates = 0
    scores = work[0]
    average = np.zeros(len(scores))
    for i in range(len(cls)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row_blocks(w, layout, known, indptr, indices, i, work[3])  # u: paired
        visible = visible_classes(known, cls[i])
        class_scores(u, layout, visible, indices, values, start, end, average)
        class_scores(w, layout, visible, indices, values, start, end, scores)
        for z in range(visible):
            average[z] = scores[z] - average[z] / seen if seen > 0 else 0.0
        predicted_out[i], known, n = joint_prepare(average, known, cls, importance, indices,
                                                   values, start, end, layout, i, work)
        if n < 0:
            return updates, seen, i, known
        if cls[i] < 0 or importance[i] <= 0.0:
            continue
        if n > 0:
            updated, ok = _averaged_step(w, u, seen, work[1], work[2], 0, n,
                                         dot(w, work[1], work[2], 0, n), importance[i])
            updates += updated
            if not ok:
                return updates, seen, i, known
        seen += 1
    return updates, seen, -1, known


class AveragedPerceptron(Learner):
    state_arrays = ("average",)
    meta_scalars = ("examples_seen",)
    live_arrays = ("mean", "_weighted_updates")
    interleaved = ("mean", "_weighted_updates")

    def init_state(self):
        self.examples_seen = 0
        self.new_interleaved()

    def load_state(self, state, learner_meta):
        # average = w - u/T  =>  u = T (w - average)
        self.examples_seen = int(learner_meta.get("examples_seen", 0))
        self._weighted_updates = self.examples_seen * (self.mean - state["average"])

    def average(self):
        """w - u/T, kept until the next update: predict asks for it once per chunk (a 2^b array
        computed 166 times over the 1M-line benchmark took longer than the predictions)."""
        cached = getattr(self, "_average", None)
        if cached is not None and len(cached) == self.size:
            return cached
        if self.examples_seen == 0:
            average = self.mean.copy()
        else:
            average = self.mean - self._weighted_updates / self.examples_seen
        self._average = average
        return average

    def state(self):
        return {"mean": self.mean, "average": self.average()}

    def meta(self):
        return {"examples_seen": self.examples_seen}

    def learn(self, y, importance, indptr, indices, values, margins_out):
        self._average = None
        updates, self.examples_seen, bad = _averaged_chunk(
            y, importance, indptr, indices, values, self.mean, self._weighted_updates,
            self.examples_seen, margins_out)
        return self.checked(updates, bad)

    def predict_margins(self, indptr, indices, values, out):
        from streamherd.learners.kernels.sparse import margins

        margins(self.average(), indptr, indices, values, out)

    def scores_while_learning(self):
        return False   # (its joint kernel is its own, and reads none)

    def _run_joint(self, cls, importance, indptr, indices, values, known, predicted_out, work):
        self._average = None
        updates, self.examples_seen, bad, known = _averaged_joint(
            cls, importance, indptr, indices, values, self.mean, self._weighted_updates,
            self.examples_seen, self.layout, known, predicted_out, work)
        return updates, bad, known

    def class_scores(self, indptr, indices, values, out):
        from streamherd.learners.kernels.multiclass import all_class_scores

        all_class_scores(self.average(), self.layout, self.blocks, indptr, indices, values, out)
