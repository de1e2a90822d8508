"""The registry: ``--algo`` names to learner classes.

Entries name a module and a class, so listing the algorithms (``--help``) imports neither the
learner modules nor numba. A new algorithm is one module and one entry here.
"""
import importlib

from streamherd.errors import StreamherdError

# name -> (module, class, fixed keyword arguments)
REGISTRY = {
    "perceptron": ("streamherd.learners.perceptron", "Perceptron", {}),
    "avg-perceptron": ("streamherd.learners.perceptron", "AveragedPerceptron", {}),
    "pa": ("streamherd.learners.pa", "PassiveAggressive", {}),
    "pa1": ("streamherd.learners.pa", "PassiveAggressiveI", {}),
    "pa2": ("streamherd.learners.pa", "PassiveAggressiveII", {}),
    "nherd-e": ("streamherd.learners.nherd", "NherdExact", {}),
    "nherd-p": ("streamherd.learners.nherd", "NherdProject", {}),
    "nherd-d": ("streamherd.learners.nherd", "NherdDrop", {}),
    "nherd-full": ("streamherd.learners.nherd", "NherdFull", {}),
    "arow-p": ("streamherd.learners.arow", "ArowProject", {}),
    "arow-d": ("streamherd.learners.arow", "ArowDrop", {}),
    "arow-full": ("streamherd.learners.arow", "ArowFull", {}),
    "cw": ("streamherd.learners.cw", "ConfidenceWeighted", {}),
    "cw-full": ("streamherd.learners.cw", "ConfidenceWeightedFull", {}),
    "scw1": ("streamherd.learners.scw", "SoftConfidenceWeightedI", {}),
    "scw2": ("streamherd.learners.scw", "SoftConfidenceWeightedII", {}),
    "scw1-full": ("streamherd.learners.scw", "SoftConfidenceWeightedIFull", {}),
    "scw2-full": ("streamherd.learners.scw", "SoftConfidenceWeightedIIFull", {}),
    "sop": ("streamherd.learners.sop", "SecondOrderPerceptron", {}),
    "sop-full": ("streamherd.learners.sop", "SecondOrderPerceptronFull", {}),
}
ALIASES = {"nherd": "nherd-p", "arow": "arow-p"}
DEFAULT_ALGO = "pa2"


def canonical_name(name):
    name = ALIASES.get(name, name)
    if name not in REGISTRY:
        known = ", ".join(sorted(set(REGISTRY) | set(ALIASES)))
        raise StreamherdError(f"unknown --algo '{name}'; choose one of: {known}")
    return name


def learner_class(name):
    """The class for ``name`` and its fixed keyword arguments."""
    module, cls, fixed = REGISTRY[canonical_name(name)]
    return getattr(importlib.import_module(module), cls), fixed


def create(name, dim, options=None, state=None, learner_meta=None, blocks=1):
    """A learner over ``dim`` slots per block; ``blocks`` class blocks for joint multiclass."""
    name = canonical_name(name)
    cls, fixed = learner_class(name)
    return cls(dim, options=options, state=state, learner_meta=learner_meta, name=name,
               blocks=blocks, **fixed)
