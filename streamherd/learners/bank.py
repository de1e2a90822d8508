"""``-C auto`` (``-r``, ``--eta``, ``-a``, ``--narow-b`` auto): a bank of the same binary learner
over a grid of values of one hyperparameter, learning in one pass from every example.

Every member predicts each example before it learns from it, so each member's progressive loss
(its mistakes on examples it had not yet learned from) is an unbiased estimate of its error.
After the pass the bank chooses the member with the lowest progressive 0/1 loss; ties go to the
value nearest the learner's default (as a ratio), then to the smaller value. With several passes
and a holdout set, it chooses on the holdout loss of the pass instead (training keeps the best
pass, as without auto); with several passes and no holdout, on the first pass's progressive
loss (the only one not measured on examples already learned from). The model written is an
ordinary model of the chosen value; its meta's "auto" records the grid and each value's loss.

While learning, the bank's own predictions (the progress table, -p) are the member leading on
the examples before each chunk: the progressive loss of the whole procedure, honestly.

The K states are stored slot-major in one array (kernels/bank.py); each member learner's state
arrays are views into it, so a member is an ordinary learner of its value (its ``state()``,
``meta()``, ``options``).
"""
import math
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.learners.base import UnstableUpdate, available_memory, memory_text
from streamherd.learners.spec import POSITIVE, log_grid

AUTO = "auto"
# the default grid of a positive hyperparameter (C, r, a, b): 2^-10 .. 2^10, every other power
DEFAULT_EXPONENTS = (-10, 10, 2)


@dataclass(frozen=True)
class Auto:
    """The hyperparameter ``auto`` chooses (its Hyperparameter declaration) and the values tried."""

    hyperparameter: object
    grid: tuple

    @property
    def name(self):
        return self.hyperparameter.name

    def describe(self):
        values = ", ".join(f"{v:g}" for v in self.grid)
        return f"{self.name} = auto over {len(self.grid)} values ({values})"


def auto_of(algo, options, grid_text, kind):
    """The Auto of ``options`` (a value "auto"), or None; a one-line error for two autos, a
    learner without that hyperparameter or no bank kernel, a task other than binary, or a
    --grid without auto or a bad one."""
    from streamherd.learners import spec

    names = [name for name, value in options.items() if value == AUTO]
    if not names:
        if grid_text is not None:
            raise StreamherdError("--grid lists the values 'auto' tries: give one hyperparameter "
                                  "auto (e.g. -C auto), or drop --grid")
        return None
    variant = spec(algo)
    flags = {h.name: h for h in variant.accepted("binary")}
    if len(names) > 1:
        raise StreamherdError(f"auto chooses one hyperparameter at a time, got "
                              f"{', '.join(_flag(n) for n in names)} auto; give the others values")
    name = names[0]
    if name not in flags:
        takes = ", ".join(h.flag for h in flags.values()) or "none"
        raise StreamherdError(f"{variant.name} does not take {_flag(name)}, so it cannot be auto; "
                              f"its hyperparameters are: {takes}")
    if kind is not None:
        raise StreamherdError(f"{_flag(name)} auto works for binary tasks only; for "
                              f"{'--loss squared' if kind == 'regression' else 'multiclass'} "
                              f"give {_flag(name)} a value")
    if bank_entry_point(variant) is None:
        raise StreamherdError(f"{variant.name} has no bank for auto; {_flag(name)} auto works "
                              f"with {', '.join(with_bank())}")
    hyperparameter = flags[name]
    grid = parse_grid(grid_text, hyperparameter) if grid_text is not None \
        else default_grid(hyperparameter)
    return Auto(hyperparameter, grid)


def _flag(name):
    from streamherd.learners.spec import _flag_of

    return _flag_of(name)


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
            values = log_grid(_exponent(low), _exponent(high), int(step) if step else 1)
        else:
            values = tuple(_number(v) for v in text.split(","))
    except (ValueError, ZeroDivisionError):
        raise StreamherdError(f"--grid {text!r} is not a list of values; {how}") from None
    values = tuple(sorted(set(values)))
    if len(values) < 2:
        raise StreamherdError(f"--grid {text!r} gives {len(values)} value; auto chooses among "
                              f"two or more: {how}")
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


def bank_entry_point(variant):
    """The bank kernel of a LearnerSpec's family and covariance kind, or None."""
    from streamherd.learners.kernels.bank import ENTRY_POINTS

    return ENTRY_POINTS.get((variant.module, variant.covariance))


def with_bank():
    """The learners that have a bank and a hyperparameter to choose."""
    from streamherd.learners import REGISTRY
    from streamherd.learners.kernels.bank import ENTRY_POINTS

    return [name for name, v in REGISTRY.items()
            if (v.module, v.covariance) in ENTRY_POINTS and v.hyperparameters]


def bank_path(final_model, k):
    """Where --save-bank writes member k (1-based, grid order): model.npz -> model.bankK.npz."""
    from streamherd.passes import per_pass_path

    return per_pass_path(final_model, k).replace(f".pass{k}.npz", f".bank{k}.npz")


LINE = 64   # bytes of a cache line


def line_aligned(slots, arrays, members, check=lambda size: None):
    """The bank's array, (slots, arrays, padded members): slot j holds member 0..K-1's entry
    of each state array in turn, its members padded so that a slot is whole cache lines and
    starts one (11 members of two arrays: 176 bytes over 3 or 4 lines; padded, 192 bytes on 3;
    the bank's loop is bound by the lines it reads). The padding is never read as a member."""
    per_line = LINE // 8
    width = -(-arrays * members // per_line) * per_line
    while width % arrays:
        width += per_line
    check(8 * (slots * width + per_line))
    buffer = np.zeros(slots * width + per_line)
    skip = (-buffer.ctypes.data % LINE) // 8
    return buffer[skip:skip + slots * width].reshape(slots, arrays, width // arrays)


class Bank:
    """K learners of ``algo`` (``options`` but the auto one, whose values are ``auto.grid``),
    learning together (module docstring). It answers what training asks of a learner: ``learn``,
    ``options``, ``meta()``, ``state()`` (those of the member chosen now)."""

    def __init__(self, task, algo, dim, options, auto):
        self.auto = auto
        members = len(auto.grid)
        probe = task.new_learner(algo, 1, {**options, auto.name: auto.grid[0]})
        self.name = probe.name
        self.kernel = bank_entry_point(probe.spec)
        attrs = probe.interleaved or ("mean",)
        assert len(probe.kernel_state()) == len(attrs) and all(
            a is getattr(probe, attr) for a, attr in zip(probe.kernel_state(), attrs)), \
            f"{self.name}: its kernel state is not its interleaved arrays"
        packed = line_aligned(dim, len(attrs), members, self._fits)
        self.members = []
        for k, value in enumerate(auto.grid):   # one at a time: its own arrays freed at once
            member = task.new_learner(algo, dim, {**options, auto.name: value})
            for w, attr in enumerate(attrs):
                packed[:, w, k] = getattr(member, attr)
                setattr(member, attr, packed[:, w, k])
            self.members.append(member)
        self.views = tuple(packed[:, w, :members] for w in range(len(attrs)))
        self.flat = packed.reshape(-1)
        self.work = np.empty((2, packed.shape[2]))   # a slot's padded members (kernels/bank)
        self.params = tuple(member.kernel_params() for member in self.members)
        self.alive = np.ones(members, np.bool_)
        self.updates = np.zeros(members, np.int64)
        self.failed_at = np.full(members, -1, np.int64)
        self.progressive = np.zeros(members)     # weighted 0/1 losses, first pass
        self.progressive_weight = 0.0
        self.holdout = np.zeros(members)         # this pass's held-out rows
        self.holdout_weight = 0.0
        self.pass_holdout = None                 # the last pass's holdout loss per member
        self.passes_done = 0

    def _fits(self, size):
        """Refuse, in one line, a bank of ``size`` bytes larger than the available memory."""
        available = available_memory()
        if available is not None and size > available:
            flag = self.auto.hyperparameter.flag
            raise StreamherdError(
                f"{flag} auto's bank of {len(self.auto.grid)} {self.name} models needs "
                f"{memory_text(size)}, more than the {memory_text(available)} of available "
                f"memory; use a smaller -b or fewer --grid values")

    # ------------------------------------------------------------ learning

    def learn(self, y, importance, indptr, indices, values, margins_out):
        """Every live member over one chunk (kernels/bank.py); ``margins_out``: the leader's
        margins (the one chosen on the chunks before). Returns the leader's updates."""
        leader = self.chosen()
        margins = np.empty((len(y), len(self.members)))
        before, alive_before = self.updates.copy(), self.alive.copy()
        left = self.kernel((y, importance, indptr, indices, values, self.views, self.flat,
                            self.params, self.alive, margins, self.updates, self.failed_at,
                            self.work))
        if left == 0:
            raise UnstableUpdate(int(self.failed_at[alive_before].max()),
                                 f"the {self.name} update failed for every value of the grid: "
                                 f"{self.members[0].failure}")
        self._account(y, importance, margins)
        margins_out[:] = margins[:, leader]
        return int(self.updates[leader] - before[leader])

    def _account(self, y, importance, margins):
        """Each member's weighted 0/1 losses on the chunk's learned rows (first pass only) and
        on its held-out rows (importance < 0, passes.mark_held_out)."""
        labeled = ~np.isnan(y)
        mistakes = (margins[labeled] > 0.0) != (y[labeled] > 0.0)[:, None]
        weight = importance[labeled]
        learned, held = np.maximum(weight, 0.0), np.maximum(-weight, 0.0)
        if self.passes_done == 0:
            self.progressive += learned @ mistakes
            self.progressive_weight += learned.sum()
        self.holdout += held @ mistakes
        self.holdout_weight += held.sum()

    def end_pass(self):
        """A pass ended: its holdout loss per member becomes what the bank chooses on (when it
        had held-out examples). Returns the chosen member's (NaN: none held out)."""
        self.passes_done += 1
        if self.holdout_weight > 0:
            self.pass_holdout = self.holdout / self.holdout_weight
        self.holdout, self.holdout_weight = np.zeros(len(self.members)), 0.0
        return float(self.pass_holdout[self.chosen()]) if self.pass_holdout is not None \
            else math.nan

    # ------------------------------------------------------------ the choice

    @property
    def chosen_on(self):
        return "holdout" if self.pass_holdout is not None else "progressive"

    def losses(self):
        """Each member's loss the choice compares (inf: a member that failed)."""
        if self.pass_holdout is not None:
            losses = self.pass_holdout
        elif self.progressive_weight > 0:
            losses = self.progressive / self.progressive_weight
        else:
            losses = np.zeros(len(self.members))
        return np.where(self.alive, losses, np.inf)

    def ranking(self):
        """Member indices, best first: lowest loss, then nearest the default, then smaller."""
        grid = np.array(self.auto.grid)
        distance = np.abs(np.log(grid / self.auto.hyperparameter.default))
        return np.lexsort((grid, distance, self.losses()))

    def chosen(self):
        return int(self.ranking()[0])

    # ------------------------------------------------------------ what training asks

    @property
    def options(self):
        return self.members[self.chosen()].options

    @property
    def failure(self):
        return self.members[0].failure

    def meta(self):
        return self.members[self.chosen()].meta()

    def state(self):
        return self.members[self.chosen()].state()

    def settings(self):
        """The preamble's learner settings."""
        others = ", ".join(f"{k} = {v:g}" for k, v in self.members[0].options.items()
                           if k != self.auto.name)
        return f"{self.auto.describe()}{', ' + others if others else ''}"

    def model_meta(self, k=None):
        """The model meta's "auto": what was tried and why the value was chosen (member ``k``:
        a --save-bank file's)."""
        losses = self.losses()
        chosen = self.chosen()
        return {"auto": {"hyperparameter": self.auto.name, "grid": list(self.auto.grid),
                         "losses": [float(x) if math.isfinite(x) else None for x in losses],
                         "chosen_on": self.chosen_on, "chosen": self.auto.grid[chosen],
                         **({"member": k + 1} if k is not None else {})}}

    def summary(self, loss_name):
        """The summary's lines: the value chosen, the runner-up, every value's loss."""
        flag = self.auto.hyperparameter.flag
        losses, ranking, grid = self.losses(), self.ranking(), self.auto.grid
        what = f"{self.chosen_on} {loss_name}"
        lines = {f"auto {flag} chosen": f"{grid[ranking[0]]:g} ({what} {losses[ranking[0]]:.6f})"}
        if len(ranking) > 1:
            lines[f"auto {flag} runner-up"] = f"{grid[ranking[1]]:g} ({what} " \
                                              f"{losses[ranking[1]]:.6f})"
        lines[f"auto {what} per {flag}"] = ", ".join(
            f"{v:g}: {x:.6f}" if math.isfinite(x) else f"{v:g}: failed"
            for v, x in zip(grid, losses))
        return lines

    def member_models(self, meta):
        """(k, meta, arrays) of each live member (--save-bank), ``meta`` the chosen model's;
        a member's "progressive_loss" is its own (on the first pass)."""
        weight = self.progressive_weight
        for k, member in enumerate(self.members):
            if self.alive[k]:
                yield k, {**meta, "hyperparameters": member.options, "learner": member.meta(),
                          "progressive_loss": self.progressive[k] / weight if weight > 0
                          else math.nan, **self.model_meta(k)}, member.state()
