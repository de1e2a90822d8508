"""A throwaway learner family outside streamherd, for tests/test_new_learner_family.py: the
perceptron with margin (a mistake-driven update whenever the signed margin is at most a new
hyperparameter tau; tau = 0 is the perceptron), written as the README's Development section says
a family is written: its step rule, one entry point, a Learner class, and its registry lines."""
from numba import njit

from streamherd import learners
from streamherd.learners.base import Learner
from streamherd.learners.kernels.loops import entry_point, mean_margin, run_rules
from streamherd.learners.kernels.sparse import axpy
from streamherd.learners.spec import NON_NEGATIVE, Hyperparameter, LearnerSpec

TAU = Hyperparameter("tau", ("--tau",), 0.0, NON_NEGATIVE,
                     "margin tau: an update whenever y w.x <= tau", (0.0, 0.5, 1.0, 2.0))


@njit(cache=True, inline="always")
def step(state, params, indices, values, start, end, m, v, y, s):
    """w += s y x when the signed margin m <= tau = params[0]."""
    if m > params[0]:
        return False, True
    return True, axpy(state[0], s * y, indices, values, start, end)


@entry_point("numpy")
def run(binary=None, regression=None, joint=None, args=None):
    return run_rules(mean_margin, step, None, binary, regression, joint, args)


class MarginPerceptron(Learner):
    entry_points = {"none": run}

    def kernel_params(self):
        return (self.options["tau"],)


VARIANTS = (LearnerSpec("margin-perceptron", "toy_family", "MarginPerceptron", (TAU,)),)


def register():
    learners.register(*VARIANTS, aliases={"mp": "margin-perceptron"})
