"""Passive-Aggressive learners (Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, JMLR 2006).

With the hinge loss l = max(0, 1 - y w.x), update w += tau y x when l > 0, where
  PA:    tau = l / |x|^2                     (Eq. 6 of the paper)
  PA-I:  tau = min(C, l / |x|^2)             (Eq. 7)
  PA-II: tau = l / (|x|^2 + 1 / (2C))        (Eq. 8)
An importance weight s scales C (PA has no C: s repeats of one PA update change nothing after
the first, since the loss is then 0).
"""
import numpy as np
from numba import njit

from streamherd.learners.base import Learner
from streamherd.learners.prefetch import prefetch_next_row
from streamherd.learners.sparse import axpy, dot, squared_norm


@njit(cache=True, nogil=True)
def _pa_chunk(y, importance, indptr, indices, values, w, variant, C, margins_out):
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        prefetch_next_row(w, indptr, indices, i)
        m = dot(w, indices, values, start, end)
        margins_out[i] = m
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        loss = 1.0 - y[i] * m
        if loss <= 0.0:
            continue
        norm2 = squared_norm(values, start, end)
        if norm2 == 0.0:  # an empty example: no direction to move in
            continue
        c = C * importance[i]
        if variant == 0:
            tau = loss / norm2
        elif variant == 1:
            tau = min(c, loss / norm2)
        else:
            tau = loss / (norm2 + 1.0 / (2.0 * c))
        axpy(w, tau * y[i], indices, values, start, end)
        updates += 1
    return updates


class PassiveAggressive(Learner):
    """PA: no hyperparameter."""

    variant = 0

    def learn(self, y, importance, indptr, indices, values, margins_out):
        return _pa_chunk(y, importance, indptr, indices, values, self.mean, self.variant,
                         self.options.get("C", np.inf), margins_out)


class PassiveAggressiveI(PassiveAggressive):
    hyperparameters = {"C": 1.0}
    variant = 1


class PassiveAggressiveII(PassiveAggressive):
    hyperparameters = {"C": 1.0}
    variant = 2
