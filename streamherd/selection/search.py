"""What auto chooses among: a Search of one Grid (``-C auto``: one learner's hyperparameter
over its values) or of several (``--algo auto``: each learner of LEARNER_GRIDS that has a form
for the task over its hyperparameter's default grid), and the Member each value of each Grid
makes."""
import math
from dataclasses import dataclass
from typing import NamedTuple

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.learners.reductions.mira import FAMILY as MIRA_FAMILY
from streamherd.learners.spec import POSITIVE, Hyperparameter, flag_of, log_grid

AUTO = "auto"
# the default grid of a positive hyperparameter (C, r, a, b): 2^-10 .. 2^10, every other power
DEFAULT_EXPONENTS = (-10, 10, 2)
# the most values a --grid may give (each a model learning from every example)
MAX_GRID = 1000
# --algo auto: each of these learners that has a form for the task over the default grid of its
# hyperparameter
LEARNER_GRIDS = (("nherd-p", "C"), ("arow-p", "r"), ("scw1", "C"), ("pa2", "C"))
ALGO_FLAG = "--algo"


class Member(NamedTuple):
    """One learner of a bank: ``algo`` with ``hyperparameter`` (a Hyperparameter) at
    ``value``."""

    algo: str
    hyperparameter: Hyperparameter
    value: float

    def options(self, shared):
        """Its hyperparameters: ``shared`` (those every member of its Grid has) and its value."""
        return {**shared, self.hyperparameter.name: self.value}


@dataclass(frozen=True)
class Grid:
    """The values of one hyperparameter of one learner (``algo``, its canonical name) a bank
    tries."""

    algo: str
    hyperparameter: Hyperparameter
    values: tuple

    @property
    def name(self):
        return self.hyperparameter.name

    @property
    def members(self):
        return tuple(Member(self.algo, self.hyperparameter, v) for v in self.values)

    def describe(self):
        values = ", ".join(f"{v:g}" for v in self.values)
        return f"{self.name} = auto over {len(self.values)} values ({values})"


@dataclass(frozen=True)
class Search:
    """The Grids a bank learns and chooses among, and ``flag``, what auto stands for in
    messages and in the summary: the grid's hyperparameter's (``-C``), or ``--algo`` for a
    search of learners (``--algo auto``)."""

    grids: tuple
    flag: str

    @property
    def of_learners(self):
        """Whether it chooses the learner too (--algo auto)."""
        return self.flag == ALGO_FLAG

    @property
    def members(self):
        """Every Member, grid by grid, each grid's values in order."""
        return tuple(m for grid in self.grids for m in grid.members)

    @property
    def stand_in(self):
        """The learner whose options and calibration are checked before the bank exists."""
        return self.grids[0].algo

    @property
    def name(self):
        """The name the preamble gives the bank's learner: its own, or "auto"."""
        return AUTO if self.of_learners else self.grids[0].algo

    def labels(self):
        """Each member's name in the summary: its value (with its learner and flag in a search
        of learners)."""
        if self.of_learners:
            return tuple(f"{m.algo} {m.hyperparameter.flag} {m.value:g}" for m in self.members)
        return tuple(f"{m.value:g}" for m in self.members)

    def to_meta(self):
        """What was tried, as the model's meta "auto" records it."""
        if self.of_learners:
            return {"hyperparameter": "algo", "members": [
                {"algo": m.algo, "hyperparameter": m.hyperparameter.name, "value": m.value}
                for m in self.members]}
        grid = self.grids[0]
        return {"hyperparameter": grid.name, "grid": list(grid.values)}

    def for_task(self, kind, mode=None):
        """The Search a bank of a task of ``kind`` (and multiclass ``mode``) learns: a search of
        learners keeps the learners that have a form for it (has_form); a one-line error when
        none has."""
        if not self.of_learners:
            return self
        grids = tuple(g for g in self.grids if has_form(g.algo, kind, mode))
        if not grids:
            tried = ", ".join(g.algo for g in self.grids)
            raise StreamherdError(f"--algo auto: none of its learners ({tried}) learns a "
                                  f"{kind}{' ' + mode if mode else ''} task; name one --algo")
        return self if grids == self.grids else Search(grids, self.flag)


def has_form(algo, kind, mode=None):
    """Whether ``algo`` learns a task of ``kind`` (and multiclass ``mode``): regression takes
    the learners with a squared-loss form (their LearnerSpec's ``regression``), --multiclass
    mira the Passive-Aggressive family (MIRA's update); binary, joint and one-versus-all take
    every learner."""
    if kind == "regression":
        return learners.spec(algo).regression is not None
    if kind == "multiclass" and mode == "mira":
        return learners.canonical_name(algo) in MIRA_FAMILY
    return True


def search_hyperparameter(algo, options, grid_text, kind):
    """The Search of the one hyperparameter of ``options`` whose value is "auto" (None: none
    is); a one-line error for two autos, a learner without that hyperparameter, or a --grid
    without auto or a bad one."""
    names = [name for name, value in options.items() if value == AUTO]
    if not names:
        if grid_text is not None:
            raise StreamherdError("--grid lists the values 'auto' tries: give one hyperparameter "
                                  "auto (e.g. -C auto), or drop --grid")
        return None
    variant = learners.spec(algo)
    flags = {h.name: h for h in variant.accepted(kind or "binary")}
    if len(names) > 1:
        raise StreamherdError(f"auto chooses one hyperparameter at a time, got "
                              f"{', '.join(flag_of(n) for n in names)} auto; give the others "
                              f"values")
    name = names[0]
    if name not in flags:
        takes = ", ".join(h.flag for h in flags.values()) or "none"
        raise StreamherdError(f"{variant.name} does not take {flag_of(name)}, so it cannot be "
                              f"auto; its hyperparameters are: {takes}")
    hyperparameter = flags[name]
    values = parse_grid(grid_text, hyperparameter) if grid_text is not None \
        else default_grid(hyperparameter)
    if not values:
        raise StreamherdError(f"{flag_of(name)} auto has no default grid; give the values to "
                              f"try with --grid, e.g. --grid 1,10,100")
    return Search((Grid(variant.name, hyperparameter, values),), hyperparameter.flag)


def search_learners(options, grid_text, kind, mode=None):
    """The Search of --algo auto: each learner of LEARNER_GRIDS that has a form for the task
    ``kind`` (and multiclass ``mode``; None: not known yet, every learner, and the bank keeps
    those of the task the labels choose: Search.for_task); a one-line error for a
    hyperparameter given a value (each learner's is chosen over its own grid), --grid, or a task
    none of them learns."""
    given = [flag_of(name) for name, value in options.items() if value is not None]
    if given:
        raise StreamherdError(f"--algo auto chooses each learner's hyperparameter over its own "
                              f"grid; drop {', '.join(given)} (or name one --algo and give it "
                              f"auto)")
    if grid_text is not None:
        raise StreamherdError("--grid lists the values of one learner's hyperparameter; with "
                              "--algo auto each learner tries its default grid: drop --grid")
    grids = []
    for algo, name in LEARNER_GRIDS:
        hyperparameter = next(h for h in learners.spec(algo).hyperparameters if h.name == name)
        grids.append(Grid(algo, hyperparameter, default_grid(hyperparameter)))
    search = Search(tuple(grids), ALGO_FLAG)
    if kind is None:
        return search
    return search.for_task(kind, mode)


def default_grid(hyperparameter):
    """2^-10..2^10 (every other power) for a positive hyperparameter, else the experiment's grid
    (eta's, in (0.5, 1))."""
    if hyperparameter.domain == POSITIVE:
        return log_grid(*DEFAULT_EXPONENTS)
    return tuple(hyperparameter.grid)


def parse_grid(text, hyperparameter):
    """--grid: 'v1,v2,...' (numbers, or powers written 2^k), or '2^LO..2^HI' (every power) or
    '2^LO..2^HI:STEP' (every STEP-th power); at least two distinct values, each in the
    hyperparameter's range, in ascending order."""
    flag = hyperparameter.flag
    how = "give e.g. --grid 0.1,1,10 or --grid 2^-10..2^10:2"
    try:
        if ".." in text:
            low, high = text.split("..")
            high, _, step = high.partition(":")
            low, high, step = _exponent(low), _exponent(high), int(step) if step else 1
            if step > 0 and (high - low) // step >= MAX_GRID:
                raise StreamherdError(f"--grid {text!r} gives more than {MAX_GRID} values; "
                                      f"{how}")
            values = log_grid(low, high, step)
        else:
            values = tuple(_number(v) for v in text.split(","))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise StreamherdError(f"--grid {text!r} is not a list of values (each a finite number, "
                              f"a power 2^k within 2^-1074..2^1023); {how}") from None
    if len(values) > MAX_GRID:
        raise StreamherdError(f"--grid {text!r} gives more than {MAX_GRID} values; {how}")
    values = tuple(sorted(set(values)))
    if len(values) < 2:
        raise StreamherdError(f"--grid {text!r} gives {'one value' if values else 'no value'}"
                              f"{' (a range runs from low to high)' if '..' in text else ''}; "
                              f"auto chooses among two or more: {how}")
    for value in values:
        if value not in hyperparameter.domain:
            raise StreamherdError(f"--grid {text!r}: {value:g} is not a valid {flag} (it must be "
                                  f"{hyperparameter.domain.text()})")
    return values


def _exponent(text):
    base, caret, exponent = text.strip().partition("^")
    if base != "2" or not caret:
        raise ValueError(text)
    return int(exponent)


def _number(text):
    text = text.strip()
    if text.startswith("2^"):
        return 2.0 ** int(text[2:])
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value
