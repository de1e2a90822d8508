"""The parameters of the scikit-learn and river estimators, generated from the learner registry.

An estimator's ``__init__`` is an EstimatorInit. Its signature, which scikit-learn (get_params,
clone, repr) and river (_get_params, clone) read with inspect.signature, is ``algo``, then the
hyperparameters of the registry's learners as the registry stands when it is read (a family
registered at run time included; for a named estimator such as AROWClassifier, those of its
families alone), each None by default (the learner's own default), then the estimator's
settings. A call stores every argument as the attribute of its name, as both libraries ask of an
__init__. So a learner's new hyperparameter is a parameter of every estimator with no edit here.
"""
import inspect
import types

from streamherd import learners

_PARAMETER = inspect.Parameter


class EstimatorInit:
    """``algo``: the default learner; ``settings``: the other parameters and their defaults;
    ``families``: the registry modules whose learners the estimator takes (all: empty);
    ``task``: "regression" adds the hyperparameters of the learners' squared-loss forms;
    ``then(estimator)``: run after the parameters are stored (river's buffers)."""

    def __init__(self, algo, settings, families=(), task="binary", then=None):
        self.algo, self.settings, self.families = algo, settings, families
        self.task, self.then = task, then

    def takes(self, variant):
        """Whether the estimator takes the learner ``variant`` (a LearnerSpec)."""
        return (not self.families or variant.module in self.families) and self.task in variant.tasks

    def hyperparameters(self):
        """The names of the hyperparameters the estimator's learners take, in registry order."""
        variants = [v for v in learners.REGISTRY.values() if self.takes(v)]
        names = dict.fromkeys(h.name for v in variants for h in v.hyperparameters)
        if self.task == "regression":
            names.update(dict.fromkeys(h.name for v in variants for h in v.regression))
        return tuple(names)

    @property
    def __signature__(self):
        return inspect.Signature([
            _PARAMETER("self", _PARAMETER.POSITIONAL_OR_KEYWORD),
            _PARAMETER("algo", _PARAMETER.POSITIONAL_OR_KEYWORD, default=self.algo),
            *(_PARAMETER(name, _PARAMETER.KEYWORD_ONLY, default=None)
              for name in self.hyperparameters()),
            *(_PARAMETER(name, _PARAMETER.KEYWORD_ONLY, default=value)
              for name, value in self.settings.items())])

    def __get__(self, estimator, owner=None):
        # a method of each estimator, as a function defined in the class body would be
        return self if estimator is None else types.MethodType(self, estimator)

    def __call__(self, estimator, *args, **kwargs):
        bound = self.__signature__.bind(estimator, *args, **kwargs)
        bound.apply_defaults()
        vars(estimator).update(list(bound.arguments.items())[1:])
        if self.then is not None:
            self.then(estimator)
