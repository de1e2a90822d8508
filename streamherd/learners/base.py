"""What every learner is: hyperparameters, named state arrays, and a kernel over CSR chunks."""
from abc import ABC, abstractmethod

import numpy as np

from streamherd.errors import StreamherdError


class UnstableUpdate(Exception):
    """Raised by ``learn`` when the update on example ``index`` of the chunk made the state
    non-finite; training turns it into a StreamherdError naming the file and line."""

    def __init__(self, index, what):
        super().__init__(what)
        self.index = index
        self.what = what


class Learner(ABC):
    """Base class. A subclass sets the class attributes and implements ``learn``.

    ``hyperparameters`` maps a hyperparameter name (the key of the CLI flag, e.g. "C") to its
    default; ``state_arrays`` names the arrays saved in the model besides ``mean``.
    ``learn`` runs one chunk through the learner in order: for each example it predicts with the
    current state, writes the margin that prediction used to ``margins_out`` (the progressive
    prediction), then updates once. Labels y are +1/-1, or NaN for an unlabeled line (predicted,
    not learned). It returns the number of updates made.
    """

    name = ""
    hyperparameters: dict = {}
    state_arrays: tuple = ()

    def __init__(self, dim, options=None, state=None, learner_meta=None, name=None):
        self.name = name or self.name
        self.dim = dim
        self.options = {**self.hyperparameters, **(options or {})}
        for key, value in self.options.items():
            if not (np.isfinite(value) and value > 0):
                raise StreamherdError(f"{self.name}: {key} must be a positive number, got {value}")
        if state is None:
            self.mean = np.zeros(dim)
            self.init_state()
        else:
            self.mean = state["mean"]
            self.load_state(state, learner_meta or {})

    def init_state(self):
        """Create the extra state arrays of a fresh model."""

    def load_state(self, state, learner_meta):
        """Take the extra state arrays (and scalars from ``meta()``) of a saved model."""

    def meta(self):
        """Scalars of the learner's state, saved in the model's meta."""
        return {}

    def state(self):
        """Arrays to save: ``mean`` plus the learner's named state arrays."""
        return {"mean": self.mean}

    @abstractmethod
    def learn(self, y, importance, indptr, indices, values, margins_out):
        """Predict-then-update over one chunk; returns the number of updates."""

    def predict_margins(self, indptr, indices, values, out):
        """Margins of the trained model (no update)."""
        from streamherd.learners.sparse import margins

        margins(self.mean, indptr, indices, values, out)
