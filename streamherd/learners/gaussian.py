"""What the Gaussian (confidence-weighted) learners share: the model N(mu, Sigma) over weight
vectors, with Sigma kept either as its diagonal (state array ``variance``, float64[d]) or in full
(state array ``covariance``, float64[d, d]), Sigma_0 = a I (``-a/--init-variance``).

The step rules of algorithms/ (nherd, arow, narow, cw, scw) all follow one pattern per example x
with label y: margin mu.x (written to ``margins_out``), m = y mu.x, v = x' Sigma x (old Sigma), a
rule of the family gives the step alpha and the covariance coefficient, then
  mu += alpha y Sigma x   and   Sigma -= c (Sigma x)(Sigma x)'   (full)
or a per-coordinate rule on the diagonal; kernels/covariance.py holds that shared arithmetic.
Their step rules take state = (mu, sigma) (diagonal) or (mu, Sigma, g, active) (full: g and
active the workspace of kernels/covariance.full_sigma_x).

Numerical safety (learners/kernels/sparse.py): the kernels check the margin of every example,
the margin, confidence v and step of every update, and after it the touched entries (the mean, and
the variances, which must stay finite and > 0). On failure they return the index of the example,
and ``Learner.checked`` raises ``UnstableUpdate``, which training turns into a one-line error
naming the file and line.
"""
import numpy as np

from streamherd.errors import StreamherdError
from streamherd.learners.base import Learner, check_full_fits
from streamherd.learners.kernels.covariance import diag_confidences, full_confidences


# ---------------------------------------------------------------- the learner classes

class GaussianLearner(Learner):
    """N(mu, Sigma) over weight vectors, Sigma diagonal or full as the variant's LearnerSpec
    says; subclasses set their entry points and ``kernel_params``."""

    matrix_arrays = ("covariance",)
    positive_arrays = ("variance", "covariance")

    @classmethod
    def saved_arrays(cls, covariance):
        return ("mean", "covariance" if covariance == "full" else "variance")

    @property
    def full(self):
        return self.spec.covariance == "full"

    @property
    def live_arrays(self):
        return ("mean", "covariance") if self.full else ("mean", "variance")

    @property
    def interleaved(self):
        return () if self.full else ("mean", "variance")

    @property
    def side_by_side(self):
        return not self.full

    def kernel_state(self):
        if self.full:
            return (self.mean, self.covariance, *self._workspace())
        return (self.mean, self.variance)

    # what Learner.checked says failed
    failure = ("its margin, its confidence or its step, or the mean or a variance it wrote is "
               "not finite, or a variance is not positive")

    def check_size(self, size, blocks):
        if self.full:
            check_full_fits(self.name, size, blocks=blocks)
        else:
            super().check_size(size, blocks)

    def init_state(self):
        a = self.options["a"]
        if self.full:
            self.covariance = np.zeros((self.size, self.size))
            np.fill_diagonal(self.covariance, a)
        else:
            self.new_interleaved(variance=a)

    def load_state(self, state, learner_meta):
        if self.full:
            self.covariance = np.ascontiguousarray(state["covariance"])
            if self.covariance.shape != (self.size, self.size):
                raise StreamherdError(f"{self.name}: the model's covariance has shape "
                                      f"{self.covariance.shape}, expected "
                                      f"({self.size}, {self.size})")
        else:
            self.variance = state["variance"]

    def state(self):
        if self.full:
            return {"mean": self.mean, "covariance": self.covariance}
        return {"mean": self.in_blocks(self.mean), "variance": self.in_blocks(self.variance)}

    def confidences(self, indptr, indices, values, out):
        """out[i] = x_i' Sigma x_i, the variance of the margin of example i."""
        if self.full:
            full_confidences(self.covariance, indptr, indices, values, out)
        else:
            diag_confidences(self.variance, indptr, indices, values, out)

    def probabilities(self, indptr, indices, values):
        """P(y = +1 | x) = Phi(mu.x / sqrt(x' Sigma x)); 1, 0.5 or 0 by the sign of mu.x when
        x' Sigma x = 0."""
        from scipy.special import ndtr  # here, not at module level: 0.2 s and 26 MB per run

        n = len(indptr) - 1
        margins = np.empty(n)
        self.predict_margins(indptr, indices, values, margins)
        variances = np.empty(n)
        self.confidences(indptr, indices, values, variances)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = ndtr(margins / np.sqrt(variances))
        degenerate = ~(variances > 0)
        p[degenerate] = np.where(margins[degenerate] > 0, 1.0,
                                 np.where(margins[degenerate] < 0, 0.0, 0.5))
        return p

    def class_probabilities(self, indptr, indices, values):
        """Joint multiclass: P(class z has the largest score | x) under N(mu, Sigma), row by row
        (learners/reductions/proba.py: quadrature for a diagonal Sigma, Monte Carlo for a full
        one)."""
        from streamherd.learners.kernels.multiclass import all_class_scores
        from streamherd.learners.reductions import proba

        means = np.empty((len(indptr) - 1, self.blocks))
        self.class_scores(indptr, indices, values, means)
        if self.full:
            return proba.correlated_argmax_probabilities(means, self.covariance, self.dim, indptr,
                                                         indices, values)
        variances = np.empty_like(means)
        all_class_scores(self.variance, self.layout, self.blocks, indptr, indices, values * values,
                         variances)
        return proba.independent_argmax_probabilities(means, variances)
