"""The registry: one line per ``--algo`` variant, with its hyperparameters.

A line names the module and class that implement the variant (imported only when the learner
is created, so listing the algorithms and building the command line's flags imports neither
the learner modules nor numba) and declares what the rest of streamherd derives from it (see
spec.py). A new algorithm is one module in algorithms/ and one line per variant here, or, for
a family kept outside the package, its module and a call to ``register``.
"""
import importlib
from typing import NamedTuple

from streamherd.errors import StreamherdError
from streamherd.learners.spec import (NON_NEGATIVE, POSITIVE, Domain, Hyperparameter,
                                      LearnerSpec, flag_of, log_grid)

# C, r and a: a log grid, as LIBOL's 2^-4..2^4 but twice as wide at the same cost (every other
# power of two): with 2^-4..2^4 a third of the experiment's runs at noise 0.3 chose an end of
# the grid (AROW's r = 16, NHERD's and PA's C = 1/16). eta is a probability in (0.5, 1): an even
# grid over it.
WIDE = log_grid(-8, 8, 2)
C = Hyperparameter("C", ("-C",), 1.0, POSITIVE,
                   "aggressiveness C; a VW importance weight scales it", WIDE)
R = Hyperparameter("r", ("-r",), 1.0, POSITIVE,
                   "regularization r; a VW importance weight divides it", WIDE)
ETA = Hyperparameter("eta", ("--eta",), 0.9, Domain(0.5, 1.0), "confidence level eta",
                     (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95))
A = Hyperparameter("a", ("-a", "--init-variance"), 1.0, POSITIVE,
                   "initial variance a, Sigma0 = a I", WIDE)
# NAROW's b: an uncertain example (v = x' Sigma x >> 1/b) is learned as AROW with r = 1/b, so its
# default 1 is AROW's r = 1 and its grid is r's, inverted (the same powers of two).
B = Hyperparameter("b", ("--narow-b",), 1.0, POSITIVE,
                   "NAROW's b: examples with x' Sigma x <= 1/b are not learned; a VW importance "
                   "weight divides its r_t", WIDE)
# an update count: whole numbers (the learner refuses others); no grid, the experiment keeps
# the default
MAX_SUPPORT = Hyperparameter(
    "max_support", ("--max-support",), 100000, NON_NEGATIVE,
    "the voted perceptron's most updates kept, each snapshot voting on its own; the oldest fold "
    "into one collective vote of their averaged weights (0: the averaged perceptron); training's "
    "progressive loss uses the averaged margin (a vote per example would be quadratic)")
EPSILON = Hyperparameter("epsilon", ("--epsilon",), 0.0, NON_NEGATIVE,
                         "insensitivity epsilon of the regression loss (--loss squared)")

_VARIANTS = (
    LearnerSpec("perceptron", ".algorithms.perceptron", "Perceptron"),
    LearnerSpec("avg-perceptron", ".algorithms.perceptron", "AveragedPerceptron"),
    LearnerSpec("voted-perceptron", ".algorithms.voted", "VotedPerceptron", (MAX_SUPPORT,)),
    LearnerSpec("pa", ".algorithms.pa", "PassiveAggressive", (), (EPSILON,)),
    LearnerSpec("pa1", ".algorithms.pa", "PassiveAggressive", (C,), (EPSILON,), rule="I"),
    LearnerSpec("pa2", ".algorithms.pa", "PassiveAggressive", (C,), (EPSILON,), rule="II"),
    LearnerSpec("nherd-e", ".algorithms.nherd", "Nherd", (C, A), (), "diagonal", "exact"),
    LearnerSpec("nherd-p", ".algorithms.nherd", "Nherd", (C, A), (), "diagonal", "project"),
    LearnerSpec("nherd-d", ".algorithms.nherd", "Nherd", (C, A), (), "diagonal", "drop"),
    LearnerSpec("nherd-full", ".algorithms.nherd", "Nherd", (C, A), (), "full"),
    LearnerSpec("arow-p", ".algorithms.arow", "Arow", (R, A), (), "diagonal", "project"),
    LearnerSpec("arow-d", ".algorithms.arow", "Arow", (R, A), (), "diagonal", "drop"),
    LearnerSpec("arow-full", ".algorithms.arow", "Arow", (R, A), (), "full"),
    LearnerSpec("narow-p", ".algorithms.narow", "Narow", (B, A), None, "diagonal", "project"),
    LearnerSpec("narow-d", ".algorithms.narow", "Narow", (B, A), None, "diagonal", "drop"),
    LearnerSpec("narow-full", ".algorithms.narow", "Narow", (B, A), None, "full"),
    LearnerSpec("cw", ".algorithms.cw", "ConfidenceWeighted", (ETA, A), None, "diagonal"),
    LearnerSpec("cw-full", ".algorithms.cw", "ConfidenceWeighted", (ETA, A), None, "full"),
    LearnerSpec("scw1", ".algorithms.scw", "SoftConfidenceWeighted", (C, ETA, A), None,
                "diagonal", "I"),
    LearnerSpec("scw2", ".algorithms.scw", "SoftConfidenceWeighted", (C, ETA, A), None,
                "diagonal", "II"),
    LearnerSpec("scw1-full", ".algorithms.scw", "SoftConfidenceWeighted", (C, ETA, A), None,
                "full", "I"),
    LearnerSpec("scw2-full", ".algorithms.scw", "SoftConfidenceWeighted", (C, ETA, A), None,
                "full", "II"),
    LearnerSpec("sop", ".algorithms.sop", "SecondOrderPerceptron", (A,), None, "diagonal"),
    LearnerSpec("sop-full", ".algorithms.sop", "SecondOrderPerceptronFull", (A,), None, "full"),
)
REGISTRY = {spec.name: spec for spec in _VARIANTS}
ALIASES = {"nherd": "nherd-p", "arow": "arow-p", "narow": "narow-p"}


def register(*variants, aliases=None):
    """Add learner variants (LearnerSpec, each ``module`` an absolute module name) and their
    ``aliases`` at run time: each is then a learner of every face, as the built-in ones are (the
    command line's, when registered before streamherd.cli is imported). A name taken is an
    error: a variant is never replaced under a model that names it."""
    aliases = aliases or {}
    taken = [name for name in (*(v.name for v in variants), *aliases) if
             name in REGISTRY or name in ALIASES]
    if taken:
        raise StreamherdError(f"cannot register {', '.join(taken)}: the name is taken")
    REGISTRY.update((variant.name, variant) for variant in variants)
    ALIASES.update(aliases)


class TaskDefault(NamedTuple):
    """What ``train`` with no --algo learns for a task: ``algo``, its ``hyperparameter`` chosen
    by auto (a raced bank over its default grid), rows scaled to unit L2 norm or not
    (``normalize``), the constant's weight started at the first labels' mean (``center``)."""

    algo: str
    hyperparameter: str
    normalize: bool
    center: bool = False

    def describe(self):
        return (f"--algo {self.algo} {flag_of(self.hyperparameter)} auto"
                f"{' --normalize' if self.normalize else ''}"
                f"{' --center' if self.center else ''}")


# benchmarks/defaults.py's choice (its tables in benchmarks/README.md): per task, the learner
# whose auto had the lowest mean test error among those below Vowpal Wabbit's at 0, 10 and 30%
# label noise alike; for regression, the one within reach of offline least squares on every set
# (rows normalized were better on one set and a hundred times worse on unscaled dense data). No
# one learner, nor one setting of --normalize, was for every task
DEFAULTS = {"binary": TaskDefault("arow-p", "r", False),
            "multiclass": TaskDefault("scw1", "C", True),
            "regression": TaskDefault("arow-d", "r", False, center=True)}


def canonical_name(name):
    name = ALIASES.get(name, name)
    if name not in REGISTRY:
        known = ", ".join(sorted(set(REGISTRY) | set(ALIASES)))
        raise StreamherdError(f"unknown --algo '{name}'; choose one of: {known}")
    return name


def spec(name):
    """The LearnerSpec of ``name`` (an alias too)."""
    return REGISTRY[canonical_name(name)]


def hyperparameters():
    """Every hyperparameter some learner declares, once each (by name), in registry order,
    with the learners that take it."""
    found = {}
    for variant in REGISTRY.values():
        for h in (*variant.hyperparameters, *(variant.regression or ())):
            known, takers = found.setdefault(h.name, (h, []))
            assert known == h, f"two declarations of hyperparameter {h.name}"
            takers.append(variant.name)
    return list(found.values())


def diagonal_variant(name):
    """The diagonal variant suggested for a full one whose matrix does not fit: its name without
    "-full", or that name's alias (nherd-full: nherd-p)."""
    return canonical_name(name.removesuffix("-full"))


def learner_class(name):
    """The class that implements ``name``."""
    variant = spec(name)
    return getattr(importlib.import_module(variant.module, __name__), variant.cls)


def create(name, dim, options=None, state=None, learner_meta=None, blocks=1, task=None):
    """A learner over ``dim`` slots per block; ``blocks`` class blocks for joint multiclass.
    ``options``: hyperparameter values (the others take their defaults); ``task``: whose
    hyperparameters it takes (regression adds its own; None: see LearnerSpec.options)."""
    variant = spec(name)
    return learner_class(variant.name)(dim, options=options, state=state,
                                       learner_meta=learner_meta, name=variant.name,
                                       blocks=blocks, task=task)
