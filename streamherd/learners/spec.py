"""What a learner declares: its hyperparameters (name, flag, default, range, help, search grid)
and its kind (tasks, covariance). Everything else is derived from these declarations: the
command line's flags and their help, the check of a value's range, the "does not take"
errors, the defaults saved in a model and checked when it loads, the experiment's grids.

This module imports neither numpy nor numba: the command line builds its flags from the
registry (learners/__init__.py) before it knows whether it will run a kernel.
"""
import math
import numbers
from dataclasses import dataclass

from streamherd.errors import StreamherdError

TASKS = ("binary", "multiclass", "regression")
COVARIANCES = ("none", "diagonal", "full")


@dataclass(frozen=True)
class Domain:
    """An interval of the real line: open or closed at each end."""

    low: float = 0.0
    high: float = math.inf
    low_open: bool = True
    high_open: bool = True

    def __contains__(self, value):
        return (math.isfinite(value)
                and (self.low < value if self.low_open else self.low <= value)
                and (value < self.high if self.high_open else value <= self.high))

    def text(self):
        if self.high == math.inf:
            return f"a number {'>' if self.low_open else '>='} {self.low:g}"
        return (f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}"
                f"{')' if self.high_open else ']'}")


POSITIVE = Domain()
NON_NEGATIVE = Domain(low_open=False)


def log_grid(low_exponent, high_exponent, step=1):
    """Powers of two 2^low .. 2^high, every ``step``-th."""
    return tuple(2.0 ** e for e in range(low_exponent, high_exponent + 1, step))


@dataclass(frozen=True)
class Hyperparameter:
    """``name``: the key in the options and in a model's meta; ``flags``: the command line's
    (the first is the one messages name); ``grid``: the values the experiment searches by
    default (empty: it never tunes this one)."""

    name: str
    flags: tuple
    default: float
    domain: Domain
    help: str
    grid: tuple = ()

    @property
    def flag(self):
        return self.flags[0]

    def check(self, value, algo):
        """The value, or a one-line error naming the learner, the flag and the range."""
        # numbers.Real: numpy's scalars too (GridSearchCV over np.array([...]) or np.logspace
        # hands them over); a bool (numpy's bool_ is no Real) is no value of a hyperparameter
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                value not in self.domain:
            raise StreamherdError(f"{algo}: {self.flag} ({self.help.split(';')[0]}) must be "
                                  f"{self.domain.text()}, got {value}")
        return float(value)


@dataclass(frozen=True)
class LearnerSpec:
    """One ``--algo`` variant: the class that implements it (``module``: relative to
    streamherd.learners, e.g. ".algorithms.pa", or absolute for a family registered from outside;
    imported only when the learner is created), its hyperparameters in
    order of preference for tuning, the extra hyperparameters of its squared-loss form
    (``regression``; None: it has none), its covariance kind (which of the class's entry points
    it runs, base.Learner) and ``rule``, which of its family's rules it is (e.g. nherd's
    diagonal rules "exact", "project" and "drop"; the class reads it)."""

    name: str
    module: str
    cls: str
    hyperparameters: tuple = ()
    regression: tuple | None = None
    covariance: str = "none"
    rule: str = ""

    def __post_init__(self):
        assert self.covariance in COVARIANCES, self.covariance
        for h in (*self.hyperparameters, *(self.regression or ())):
            _DECLARED_FLAGS.setdefault(h.name, h.flag)

    @property
    def tasks(self):
        return TASKS if self.regression is not None else TASKS[:2]

    def accepted(self, task="binary"):
        """The hyperparameters a ``task`` model of this learner takes."""
        extra = self.regression if task == "regression" and self.regression is not None else ()
        return (*self.hyperparameters, *extra)

    def options(self, given=None, task=None):
        """Every hyperparameter of ``task`` with its default or its ``given`` value, checked;
        a given one the learner does not take is a one-line error. ``task`` None: regression
        when a hyperparameter only its regression form takes is given, else classification."""
        given = {k: v for k, v in (given or {}).items() if v is not None}
        if task is None:
            regression_only = {h.name for h in self.regression or ()}
            task = "regression" if regression_only & set(given) else "binary"
        accepted = {h.name: h for h in self.accepted(task)}
        unknown = [name for name in given if name not in accepted]
        if unknown:
            flags = ", ".join(flag_of(name) for name in sorted(unknown))
            takes = ", ".join(h.flag for h in accepted.values()) or "none"
            raise StreamherdError(f"{self.name} does not take {flags}; its hyperparameters "
                                  f"are: {takes}")
        return {name: h.check(given.get(name, h.default), self.name)
                for name, h in accepted.items()}

    @property
    def tuned(self):
        """The hyperparameter the experiment searches (the first with a grid), or None."""
        return next((h for h in self.hyperparameters if h.grid), None)


# The flag of each hyperparameter some LearnerSpec declares (the first declaration's, in the
# registry's order): noted as the specs are made, so that an error here can spell a flag
# without importing the registry (learners/__init__.py), which imports this module.
_DECLARED_FLAGS = {}


def flag_of(name):
    """A flag for a hyperparameter name no learner of the moment declares (in an error)."""
    return _DECLARED_FLAGS.get(name, f"-{name}" if len(name) == 1 else f"--{name}")
