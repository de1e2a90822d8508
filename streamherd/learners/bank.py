"""``-C auto`` (``-r``, ``--eta``, ``-a``, ``--narow-b`` auto): a bank of the same learner over a
grid of values of one hyperparameter, learning in one pass from every example: a binary learner
with a bank kernel in one loop for all members (Bank), any other learner or task by running each
member in turn over each chunk (TaskBank, which chooses on the task's loss alone).

Every member predicts each example before it learns from it, so each member's progressive loss
(its mistakes on examples it had not yet learned from) is an unbiased estimate of its error.
The bank chooses on the later half of the first pass (its most recent RECENT labeled rows at
most): the progressive loss of the whole stream favours the members that learn fast early over
those whose final model is best (amazon books at 30% label noise: C = 0.0625 chosen, 28.2% test
error, against 21.5% for C = 0.0039), while the later half still scores each member's recent
models on examples they had not seen. Among the members whose 0/1 loss there is within one
standard error of the lowest (indistinguishable on it; the error of a proportion, over the
window's effective size (sum w)^2 / sum w^2), it keeps the one of the highest AUC of its
progressive margins: a loss that uses every margin, not only its sign, and is blind to its
scale (which differs with C). Measured with benchmarks/auto.py's tasks (12 data sets, test
error of the chosen member minus the best member's, mean points; noise 0 / 0.1 / 0.3): the
whole stream's 0/1 loss nherd-p 0.10 / 0.25 / 1.21, arow-p 0.43 / 0.77 / 1.75; the later
half's 0.15 / 0.28 / 0.99 and 0.55 / 0.52 / 1.09; its AUC alone 0.19 / 0.36 / 0.50 and
0.62 / 0.52 / 0.50 (AUC alone ignores the threshold: w8a, 3% positives, 2.8% instead of 1.7%);
this rule 0.18 / 0.27 / 0.42 and 0.61 / 0.57 / 0.43. Ties go to the value nearest the learner's
default (as a ratio), then to the smaller value.

With several passes and a holdout set, the holdout 0/1 loss of the pass decides instead (the
lowest; training keeps the best pass, as without auto); with several passes and no holdout, the
first pass's rows (the only ones not already learned from). The model written is an ordinary
model of the chosen value; its meta's "auto" records the grid, each value's loss and AUC.

While learning, the bank's own predictions (the progress table, -p) are those of the member of
the lowest progressive 0/1 loss on the examples before each chunk (cheap to keep; the AUC is
computed once, at the end): the progressive loss of the whole procedure, honestly. The
calibration (--proba's map) is each member's own, from its own progressive margins
(calibrate_members), so that the model written, and each --save-bank file, is the model
``train`` with that value alone writes, its map included.

The K states are stored slot-major (kernels/bank.py), in one array per group of members
(group_sizes: with more than one core, groups of whole cache lines, each learning on a thread
of its own: MemberGroup, ThreadPool); each member learner's state arrays are views into its
group's array, so a member is an ordinary learner of its value (its ``state()``, ``meta()``,
``options``).
"""
import copy
import math
import os
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.learners.base import UnstableUpdate, check_memory
from streamherd.learners.spec import POSITIVE, log_grid

AUTO = "auto"
# the default grid of a positive hyperparameter (C, r, a, b): 2^-10 .. 2^10, every other power
DEFAULT_EXPONENTS = (-10, 10, 2)
# the most recent first-pass rows the choice reads: 64k rows give a 0/1 loss to +-0.2 point (one
# standard error at 30%), and 11 members' margins of them take 5.8 MB
RECENT = 1 << 16


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
    learner without that hyperparameter, or a --grid without auto or a bad one."""
    from streamherd.learners import spec

    names = [name for name, value in options.items() if value == AUTO]
    if not names:
        if grid_text is not None:
            raise StreamherdError("--grid lists the values 'auto' tries: give one hyperparameter "
                                  "auto (e.g. -C auto), or drop --grid")
        return None
    variant = spec(algo)
    flags = {h.name: h for h in variant.accepted(kind or "binary")}
    if len(names) > 1:
        raise StreamherdError(f"auto chooses one hyperparameter at a time, got "
                              f"{', '.join(_flag(n) for n in names)} auto; give the others values")
    name = names[0]
    if name not in flags:
        takes = ", ".join(h.flag for h in flags.values()) or "none"
        raise StreamherdError(f"{variant.name} does not take {_flag(name)}, so it cannot be auto; "
                              f"its hyperparameters are: {takes}")
    hyperparameter = flags[name]
    grid = parse_grid(grid_text, hyperparameter) if grid_text is not None \
        else default_grid(hyperparameter)
    if not grid:
        raise StreamherdError(f"{_flag(name)} auto has no default grid; give the values to try "
                              f"with --grid, e.g. --grid 1,10,100")
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


# the most values a --grid may give (each a model learning from every example)
MAX_GRID = 1000


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


def bank_entry_point(variant):
    """The bank kernel of a LearnerSpec's family and covariance kind, or None."""
    from streamherd.learners.kernels.bank import ENTRY_POINTS

    return ENTRY_POINTS.get((variant.module, variant.covariance))


def bank_path(final_model, k):
    """Where --save-bank writes member k (1-based, grid order): model.npz -> model.bankK.npz."""
    from streamherd.passes import per_pass_path

    return per_pass_path(final_model, k).replace(f".pass{k}.npz", f".bank{k}.npz")


LINE = 64   # bytes of a cache line


def slot_width(arrays, members):
    """Doubles of a bank's slot: ``members``' entries of each of its ``arrays`` state arrays,
    padded to whole cache lines (line_aligned)."""
    per_line = LINE // 8
    width = -(-arrays * members // per_line) * per_line
    while width % arrays:
        width += per_line
    return width


def line_aligned(slots, arrays, members):
    """The bank's array, (slots, arrays, padded members): slot j holds member 0..K-1's entry
    of each state array in turn, its members padded so that a slot is whole cache lines and
    starts one (11 members of two arrays: 176 bytes over 3 or 4 lines; padded, 192 bytes on 3;
    the bank's loop is bound by the lines it reads). The padding is never read as a member."""
    width = slot_width(arrays, members)
    buffer = np.zeros(slots * width + LINE // 8)
    skip = (-buffer.ctypes.data % LINE) // 8
    return buffer[skip:skip + slots * width].reshape(slots, arrays, width // arrays)


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def group_sizes(members, arrays, threads):
    """The members of each thread's group (a bank's members are independent): whole cache lines
    of a slot each, as many groups as ``threads`` at most and lines at most, the first groups
    the larger (the first runs on the calling thread, which reads the input too). 11 members
    of two arrays on two threads: 8 (2 lines) and 3 (1 line); a group's lines are its own
    (line_aligned), so no two threads write to one line, and the bank's lines are as many as
    on one thread. A thread of its own per group is the way past the memory latency a bank
    is bound by: each core waits on its own misses (benchmarks/README.md)."""
    per_line = max(1, LINE // 8 // arrays)
    lines = -(-members // per_line)
    threads = max(1, min(threads, lines))
    sizes, left = [], members
    for g in range(threads):
        size = min(left, (lines // threads + (g < lines % threads)) * per_line)
        sizes.append(size)
        left -= size
    return sizes


def bank_bytes(dim, arrays, sizes):
    """Bytes of a Bank's packed arrays: ``dim`` slots of groups of ``sizes`` members of
    ``arrays`` state arrays (line_aligned)."""
    return sum(8 * (dim * slot_width(arrays, size) + LINE // 8) for size in sizes)


class MemberGroup:
    """Members ``lo``..``hi - 1`` of a bank, run by one thread: their packed state
    (line_aligned), their rule numbers (``params``: at least one tuple per member), their slices
    of the bank's alive, updates and failed_at, and their margins of the last chunk they learned
    from (rows x members). To the kernel, each group is a bank of its own."""

    def __init__(self, lo, hi, packed, params, bank):
        from streamherd.learners.kernels.bank import WORK_ROWS

        self.lo = lo
        self.views = tuple(packed[:, w, :hi - lo] for w in range(packed.shape[1]))
        self.flat = packed.reshape(-1)
        self.work = np.zeros((WORK_ROWS, packed.shape[2]))   # a slot's padded members
        self.params = params
        self.alive, self.updates = bank.alive[lo:hi], bank.updates[lo:hi]
        self.failed_at = bank.failed_at[lo:hi]
        self.margins = np.empty((0, hi - lo))

    def learn(self, kernel, chunk, calibrations=None):
        """The group's members over one chunk, then each live one's calibration (of the bank's
        ``calibrations``, when given) from its margins; returns how many of them are alive."""
        y, importance, indptr, indices, values = chunk
        self.margins = np.empty((len(y), len(self.alive)))
        left = kernel((y, importance, indptr, indices, values, self.views, self.flat,
                       self.params, self.alive, self.margins, self.updates, self.failed_at,
                       self.work))
        if calibrations is not None:   # (it skips the rows unlabeled or of weight <= 0)
            by_member = np.ascontiguousarray(self.margins.T)
            weights = np.maximum(importance, 0.0)
            for k in np.flatnonzero(self.alive):
                calibrations[self.lo + k].observe(by_member[k], y, weights)
        return left


class ThreadPool:
    """``workers`` threads beside the calling one (kernels that release the GIL run at once on
    them), started at the first ``map`` in the process that calls it (a fork copies no
    threads)."""

    def __init__(self, workers):
        self.workers = workers
        self.executor = None
        self.pid = None

    def map(self, function, items):
        """[function(item) for item in items], the first item's on the calling thread."""
        if self.workers == 0 or len(items) == 1:
            return [function(item) for item in items]
        if self.pid != os.getpid():
            self.executor = ThreadPoolExecutor(self.workers, thread_name_prefix="bank")
            self.pid = os.getpid()
        futures = [self.executor.submit(function, item) for item in items[1:]]
        try:
            first = function(items[0])
        finally:   # (an error on this thread: the others still end before the state is read)
            wait(futures)
        return [first] + [future.result() for future in futures]


class RecentRows:
    """The last ``capacity`` rows added (label, importance weight, every member's margin; a
    TaskBank's: its loss), in a ring: the window the choice reads (module docstring)."""

    def __init__(self, capacity, members):
        self.y = np.zeros(capacity)
        self.weight = np.zeros(capacity)
        self.margins = np.zeros((capacity, members))
        self.added = 0

    def add(self, y, weight, margins):
        capacity = len(self.y)
        first = max(0, len(y) - capacity)
        at = (self.added + np.arange(first, len(y))) % capacity
        self.y[at], self.weight[at], self.margins[at] = y[first:], weight[first:], margins[first:]
        self.added += len(y)

    def later_half(self):
        """(y, weight, margins) of the later half of the rows added (their last ``capacity``
        at most), oldest first."""
        n = min(len(self.y), self.added - self.added // 2)
        at = (self.added - n + np.arange(n)) % len(self.y)
        return self.y[at], self.weight[at], self.margins[at]


def weighted_auc(margins, positive, weight):
    """P(a positive's margin > a negative's) + half P(equal), rows weighted (the Mann-Whitney
    statistic); NaN when a class has no weight."""
    values, rank = np.unique(margins, return_inverse=True)
    positives = np.bincount(rank, weight * positive, len(values))
    negatives = np.bincount(rank, weight * ~positive, len(values))
    pairs = positives.sum() * negatives.sum()
    if pairs == 0:
        return math.nan
    below = np.cumsum(negatives) - negatives
    return float(positives @ (below + 0.5 * negatives) / pairs)


@dataclass
class Scores:
    """What the choice compares, per member: its loss (inf: failed), its AUC (NaN: none) and
    ``spread``: the losses within it of the lowest are ranked by AUC (module docstring)."""

    losses: np.ndarray
    aucs: np.ndarray
    spread: float = 0.0
    on: str = "progressive"

    def ranking(self, values, defaults):
        """Member indices, best first: those within ``spread`` of the lowest loss before the
        others, those by AUC (highest first), the others by loss; then the lower loss, the value
        nearest its default (as a ratio), the smaller value."""
        band = self.losses <= np.min(self.losses) + self.spread
        by_auc = np.where(band, -np.nan_to_num(self.aucs, nan=0.0), 0.0)
        values, defaults = np.asarray(values, float), np.asarray(defaults, float)
        with np.errstate(divide="ignore", invalid="ignore"):   # (a default 0: as a difference)
            distance = np.where((values > 0) & (defaults > 0),
                                np.abs(np.log(values / defaults)), np.abs(values - defaults))
        return np.lexsort((values, distance, self.losses, by_auc, ~band))


def window_scores(y, weight, margins, alive):
    """Scores on the window's rows: each live member's weighted 0/1 loss and AUC, and the
    standard error of the lowest loss over the window's effective size (sum w)^2 / sum w^2."""
    members = margins.shape[1]
    if weight.sum() <= 0:
        return Scores(np.where(alive, 0.0, np.inf), np.full(members, math.nan))
    positive = y > 0
    losses = weight @ ((margins > 0.0) != positive[:, None]) / weight.sum()
    losses = np.where(alive, losses, np.inf)
    aucs = np.array([weighted_auc(margins[:, k], positive, weight) if alive[k] else math.nan
                     for k in range(members)])
    lowest = float(np.min(losses))
    size = weight.sum() ** 2 / (weight ** 2).sum()
    spread = math.sqrt(lowest * (1.0 - lowest) / size) if math.isfinite(lowest) else 0.0
    return Scores(losses, aucs, spread)


class Choosing:
    """What a bank answers once it can choose (a Bank of one learner, AlgoBank of several):
    the member chosen and how, and what training asks of a learner of it (``options``,
    ``meta()``, ``state()``, ``algo``). A subclass gives ``members``, ``values``, ``defaults``,
    ``labels`` (a member's name in the summary), ``_scores()`` (the final choice's),
    ``leading_scores()`` (the cheap one the learning follows), ``progressive``,
    ``progressive_weight``, ``passes_done`` and ``alive``."""

    def scores(self):
        """The final choice's Scores (``_scores()``), computed once per state of the bank: the
        AUCs sort the window."""
        key = (self.progressive_weight, self.passes_done, tuple(self.alive))
        if getattr(self, "_scored", (None,))[0] != key:
            self._scored = (key, self._scores())
        return self._scored[1]

    def ranking(self):
        return self.scores().ranking(self.values, self.defaults)

    def chosen(self):
        return int(self.ranking()[0])

    def leader(self):
        """The member whose predictions the bank gives while learning."""
        return int(self.leading_scores().ranking(self.values, self.defaults)[0])

    @property
    def chosen_on(self):
        return self.scores().on

    @property
    def options(self):
        return self.members[self.chosen()].options

    @property
    def failure(self):
        return self.members[0].failure

    @property
    def algo(self):
        return self.member_algos[self.chosen()]

    def meta(self):
        return self.members[self.chosen()].meta()

    def state(self):
        return self.members[self.chosen()].state()

    def model_meta(self, k=None):
        """The model meta's "auto" (what was tried and why the member was chosen; member
        ``k``: a --save-bank file's) and "algo" (the chosen member's)."""
        scores, ranking = self.scores(), self.ranking()

        def number(x):
            return float(x) if math.isfinite(x) else None
        return {"algo": self.algo, "auto": {
            **self.tried(), "losses": [number(x) for x in scores.losses],
            "aucs": [number(x) for x in scores.aucs], "spread": scores.spread,
            "chosen_on": scores.on, "chosen": self.values[ranking[0]],
            "chosen_label": self.labels[ranking[0]],
            **({"runner_up_label": self.labels[ranking[1]]}
               if len(ranking) > 1 and math.isfinite(scores.losses[ranking[1]]) else {}),
            **({"member": k + 1} if k is not None else {})}}

    def summary(self, loss_name, record=None):
        """The summary's lines, from ``record`` (the "auto" of the model written: with passes,
        the best pass's; default: the bank's now): the member chosen, the runner-up, every
        member's loss and AUC."""
        record = record or self.model_meta()["auto"]
        what = f"{record['chosen_on']} {loss_name}"
        if record["chosen_on"] == "progressive":
            what = f"recent {what}"   # the later half of the first pass (module docstring)
        scores = {label: (loss, auc) for label, loss, auc in
                  zip(self.labels, record["losses"], record["aucs"])}

        def score(label):
            loss, auc = scores[label]
            if loss is None:
                return "failed"
            return f"{what} {loss:.6f}" + (f", AUC {auc:.6f}" if auc is not None else "")
        lines = {f"auto {self.flag} chosen": f"{record['chosen_label']} "
                                             f"({score(record['chosen_label'])})"}
        if "runner_up_label" in record:
            lines[f"auto {self.flag} runner-up"] = f"{record['runner_up_label']} " \
                                                   f"({score(record['runner_up_label'])})"
        lines[f"auto {what} per {self.flag}"] = ", ".join(
            f"{label}: " + ("failed" if scores[label][0] is None else f"{scores[label][0]:.6f}")
            for label in self.labels)
        if record["chosen_on"] == "progressive" and any(a is not None for a in record["aucs"]):
            lines[f"auto recent AUC per {self.flag}"] = ", ".join(
                f"{label}: " + ("-" if scores[label][1] is None else f"{scores[label][1]:.6f}")
                for label in self.labels)
        return lines

    def member_models(self, meta):
        """(k, meta, arrays) of each live member (--save-bank) as the run left it, ``meta``
        the model's; a member's "progressive_loss" and calibration are its own (on the first
        pass)."""
        weight = self.progressive_weight
        for k, member in enumerate(self.members):
            if self.alive[k]:
                calibration = self.member_calibration(k)
                yield k, {**meta, "hyperparameters": member.options, "learner": member.meta(),
                          "progressive_loss": self.progressive[k] / weight if weight > 0
                          else math.nan, **self.model_meta(k), "algo": self.member_algos[k],
                          **({"calibration": calibration.to_meta()} if calibration else {})}, \
                    member.state()


class GridBank(Choosing):
    """K learners of ``algo`` (``options`` but the auto one, whose values are ``auto.grid``),
    learning together (module docstring): what Bank (its kernels) and TaskBank (through the
    task) share, the members' losses and the choice on them. A subclass gives ``members``,
    ``alive``, ``name``, its learning (which passes each chunk's losses to ``_account``) and
    ``_window_scores`` (the choice on the window's rows)."""

    def _start(self, auto, name):
        self.auto = auto
        self.name = name
        members = len(auto.grid)
        self.progressive = np.zeros(members)     # weighted losses, first pass
        self.progressive_weight = 0.0
        self.recent = RecentRows(RECENT, members)   # the first pass's latest learned rows
        self.calibrations = None                 # each member's (calibrate_members)
        self.holdout = np.zeros(members)         # this pass's held-out rows
        self.holdout_weight = 0.0
        self.pass_holdout = None                 # the last pass's holdout loss per member
        self.passes_done = 0
        self.values = tuple(auto.grid)
        self.defaults = (auto.hyperparameter.default,) * members
        self.member_algos = (name,) * members
        self.labels = tuple(f"{v:g}" for v in auto.grid)
        self.flag = auto.hyperparameter.flag

    def _account(self, y, importance, losses, window):
        """Each member's weighted ``losses`` (rows x members) on the chunk's learned rows (first
        pass only: and their ``window`` values, into the recent window) and on its held-out
        rows (importance < 0, passes.mark_held_out); the rows are labeled."""
        learned, held = np.maximum(importance, 0.0), np.maximum(-importance, 0.0)
        if self.passes_done == 0:
            self.progressive += learned @ losses
            self.progressive_weight += learned.sum()
            rows = learned > 0
            if rows.all():
                self.recent.add(y, learned, window)
            else:
                self.recent.add(y[rows], learned[rows], window[rows])
        if held.any():
            self.holdout += held @ losses
            self.holdout_weight += held.sum()

    def _fits(self, size, held=0):
        """Refuse, in one line, a bank of ``size`` bytes, ``held`` of them allocated already,
        larger than the available memory."""
        check_memory(size, f"{self.auto.hyperparameter.flag} auto's bank of "
                           f"{len(self.auto.grid)} {self.name} models needs",
                     "use a smaller -b or fewer --grid values", held)

    def calibrate_members(self, new_calibration):
        """Each member learns a calibration (``new_calibration()``'s) from its own progressive
        predictions on the first pass."""
        self.calibrations = [new_calibration() for _ in self.members]

    def member_calibration(self, k):
        """Member k's calibration (None: none learned)."""
        return None if self.calibrations is None else self.calibrations[k]

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

    def _scores(self):
        """The last pass's holdout losses, else the window's Scores."""
        if self.pass_holdout is not None:
            return Scores(np.where(self.alive, self.pass_holdout, np.inf),
                          np.full(len(self.members), math.nan), 0.0, "holdout")
        return self._window_scores(*self.recent.later_half(), self.alive)

    def leading_scores(self):
        """The lowest loss on the examples so far (the last pass's holdout, else the first
        pass's progressive)."""
        if self.pass_holdout is not None:
            return self.scores()
        losses = self.progressive / self.progressive_weight if self.progressive_weight > 0 \
            else np.zeros(len(self.members))
        return Scores(np.where(self.alive, losses, np.inf), np.full(len(self.members), math.nan))

    def losses(self):
        """Each member's loss the choice compares (inf: a member that failed)."""
        return self.scores().losses

    # ------------------------------------------------------------ what training asks

    @property
    def preamble_name(self):
        return self.name

    def settings(self):
        """The preamble's learner settings."""
        others = ", ".join(f"{k} = {v:g}" for k, v in self.members[0].options.items()
                           if k != self.auto.name)
        return f"{self.auto.describe()}{', ' + others if others else ''}"

    def tried(self):
        return {"hyperparameter": self.auto.name, "grid": list(self.auto.grid)}


class Bank(GridBank):
    """A bank of a binary learner with a bank kernel (kernels/bank.py): its members' states
    packed slot by slot, learning in one loop over the rows (module docstring). It answers what
    training asks of a learner: ``learn``, ``options``, ``meta()``, ``state()`` (those of the
    member chosen now)."""

    def __init__(self, task, algo, dim, options, auto, threads=None):
        members = len(auto.grid)
        probe = task.new_learner(algo, 1, {**options, auto.name: auto.grid[0]})
        self._start(auto, probe.name)
        self.kernel = bank_entry_point(probe.spec)
        attrs = probe.interleaved or ("mean",)
        assert len(probe.kernel_state()) == len(attrs) and all(
            a is getattr(probe, attr) for a, attr in zip(probe.kernel_state(), attrs)), \
            f"{self.name}: its kernel state is not its interleaved arrays"
        arrays = len(attrs)
        sizes = group_sizes(members, arrays, usable_cores() if threads is None else threads)
        self._fits(bank_bytes(dim, arrays, sizes))
        self.alive = np.ones(members, np.bool_)
        self.updates = np.zeros(members, np.int64)
        self.failed_at = np.full(members, -1, np.int64)
        self.members = []
        self.groups = []
        for lo, size in zip(np.cumsum([0] + sizes[:-1]).tolist(), sizes):
            packed = line_aligned(dim, arrays, size)
            for k in range(lo, lo + size):   # one at a time: its own arrays freed at once
                member = task.new_learner(algo, dim, {**options, auto.name: auto.grid[k]})
                for w, attr in enumerate(attrs):
                    packed[:, w, k - lo] = getattr(member, attr)
                    setattr(member, attr, packed[:, w, k - lo])
                self.members.append(member)
            # every group's rule numbers one tuple as long as the first group's (the numbers
            # of its last member repeated, never read): one compiled kernel serves them all
            params = [m.kernel_params() for m in self.members[lo:lo + size]]
            params += params[-1:] * (sizes[0] - size)
            self.groups.append(MemberGroup(lo, lo + size, packed, tuple(params), self))
        self.pool = ThreadPool(len(self.groups) - 1)

    # ------------------------------------------------------------ learning

    def learn(self, y, importance, indptr, indices, values, margins_out):
        """Every live member over one chunk (kernels/bank.py); ``margins_out``: the leader's
        margins (the one leading on the chunks before). Returns the leader's updates."""
        leader = self.leader()
        before = self.updates[leader]
        margins = self.learn_members(y, importance, indptr, indices, values)
        margins_out[:] = margins[:, leader]
        return int(self.updates[leader] - before)

    def learn_members(self, y, importance, indptr, indices, values, alone=True):
        """Every live member over one chunk, each group of them on a thread of its own; returns
        their margins (rows x members). The last of them failing is an UnstableUpdate,
        ``alone`` (an AlgoBank has others)."""
        alive_before = self.alive.copy()
        chunk = (y, importance, indptr, indices, values)
        calibrations = self.calibrations if self.passes_done == 0 else None
        left = sum(self.pool.map(lambda group: group.learn(self.kernel, chunk, calibrations),
                                 self.groups))
        if left == 0 and alone:
            raise UnstableUpdate(int(self.failed_at[alive_before].max()),
                                 f"the {self.name} update failed for every value of the grid: "
                                 f"{self.members[0].failure}")
        margins = self.groups[0].margins if len(self.groups) == 1 else \
            np.hstack([group.margins for group in self.groups])
        self._account_margins(y, importance, margins)
        return margins

    def _account_margins(self, y, importance, margins):
        """The members' 0/1 losses of the chunk's labeled rows (GridBank._account), their
        margins the window's values."""
        labeled = ~np.isnan(y)
        if not labeled.all():   # (the usual chunk is labeled whole: no copies of it then)
            y, importance, margins = y[labeled], importance[labeled], margins[labeled]
        self._account(y, importance, (margins > 0.0) != (y > 0.0)[:, None], margins)

    @staticmethod
    def _window_scores(y, weight, margins, alive):
        return window_scores(y, weight, margins, alive)


def member_bytes(member, dim, blocks):
    """Bytes of the state of a learner like ``member`` (of any dim) over ``dim`` slots and
    ``blocks`` class blocks (binary and regression: 1): its vectors, and a -full learner's
    matrix ((2^b K)^2 joint, K of 2^b x 2^b one-versus-all)."""
    from streamherd.learners import create

    full = member.spec.covariance == "full"
    if hasattr(member, "learners"):   # one-versus-all: a binary learner per class
        one = create(member.name, 1, member.options)
        return blocks * (one.state_bytes_per_slot() * dim + (8 * dim ** 2 if full else 0))
    return blocks * member.state_bytes_per_slot() * dim + (8 * (blocks * dim) ** 2 if full else 0)


def loss_window_scores(weight, losses, alive):
    """Scores on the window's rows of members without margins to rank (TaskBank): each live
    member's weighted mean loss, and the standard error of the lowest, the weighted spread of
    its losses over the window's effective size (of a 0/1 loss: window_scores' spread); no
    AUC, so the lowest loss is chosen."""
    members = losses.shape[1]
    total = weight.sum()
    if total <= 0:
        return Scores(np.where(alive, 0.0, np.inf), np.full(members, math.nan))
    means = np.where(alive, weight @ np.nan_to_num(losses) / total, np.inf)
    best = int(np.argmin(means))
    spread = 0.0
    if math.isfinite(means[best]):
        size = total ** 2 / (weight ** 2).sum()
        spread = math.sqrt(weight @ (losses[:, best] - means[best]) ** 2 / total / size)
    return Scores(means, np.full(members, math.nan), spread)


class TaskBank(GridBank):
    """A bank of any learner of any task (multiclass, ``--loss squared``, a binary learner
    without a bank kernel: a -full one): its members learn each chunk, each through the task as
    a run of its value alone would (``learn_chunk``), as many at once as there are cores, so it
    takes K times one learner's work and memory. The choice is Bank's on the task's own loss
    (0/1, squared), without the AUC (loss_window_scores)."""

    def __init__(self, task, algo, dim, options, auto, threads=None):
        self.task = task
        self.probe = task.new_learner(algo, 1, {**options, auto.name: auto.grid[0]})
        self._start(auto, self.probe.name)
        self.dim = dim
        self.blocks = 0           # the class blocks the members' memory was checked for,
        self.learned_blocks = 0   # and learned from
        self._check_memory()
        self.members = [task.new_learner(algo, dim, {**options, auto.name: value})
                        for value in auto.grid]
        self.alive = np.ones(len(self.members), np.bool_)
        self.failed_at = np.full(len(self.members), -1, np.int64)
        self.pool = ThreadPool(min(usable_cores() if threads is None else threads,
                                   len(self.members)) - 1)

    def _check_memory(self):
        """Refuse, in one line, members whose states, grown to the classes the task knows now,
        would not fit in memory together (each member checks only its own)."""
        blocks = max(1, len(self.task.labels)) if self.task.kind == "multiclass" else 1
        if blocks > self.blocks:
            members = len(self.auto.grid)
            # (the blocks learned from are held; a block not learned from yet may be zero
            # pages that hold no memory)
            self._fits(members * member_bytes(self.probe, self.dim, blocks),
                       members * member_bytes(self.probe, self.dim, self.learned_blocks))
        self.blocks = blocks

    def learn_chunk(self, targets, chunk, learn_member):
        """Every live member over one chunk: ``learn_member(task, member, its calibration or
        None)``, its (updates, predictions) as the task's learn gives them, on a thread of its
        own (ThreadPool; each member's own shallow copy of the task, whose count of the classes
        seen each member's pass moves on from the same); returns those of the member leading
        on the chunks before (while it lives). A member whose update fails (an UnstableUpdate)
        leaves the bank; the last one's failure is raised."""
        self._check_memory()
        leader = self.leader()

        def run(k):
            task = copy.copy(self.task)
            try:
                return task, learn_member(task, self.members[k], self.member_calibration(k)
                                          if self.passes_done == 0 else None)
            except UnstableUpdate as e:
                return task, e
        live = np.flatnonzero(self.alive)
        results = [None] * len(self.members)
        losses = np.full((chunk.n_examples, len(self.members)), np.nan)
        failure = None
        for k, (task, result) in zip(live, self.pool.map(run, live)):
            if isinstance(result, UnstableUpdate):
                self.alive[k], self.failed_at[k], failure = False, result.index, result
                continue
            results[k] = result
            losses[:, k] = self.task.loss(targets, result[1])
            if hasattr(task, "known"):
                self.task.known = task.known
        if not self.alive.any():
            raise UnstableUpdate(int(self.failed_at.max()), f"the {self.name} update failed for "
                                 f"every value of the grid: {failure.what}")
        self.learned_blocks = self.blocks
        live = np.flatnonzero(self.alive)
        labeled = ~np.isnan(losses[:, live[0]])
        self._account(np.asarray(targets, np.float64)[labeled], chunk.importance[labeled],
                      losses[labeled], losses[labeled])
        return results[leader] if results[leader] is not None else results[live[0]]

    @staticmethod
    def _window_scores(y, weight, losses, alive):
        return loss_window_scores(weight, losses, alive)


# --algo auto: a bank of each of these learners over the default grid of its hyperparameter,
# in the same pass (issue 20 §2's four)
ALGO_FAMILIES = (("nherd-p", "C"), ("arow-p", "r"), ("scw1", "C"), ("pa2", "C"))
ALGO_FLAG = SimpleNamespace(flag="--algo", name="algo")


@dataclass(frozen=True)
class AlgoAuto:
    """--algo auto: the Auto of each learner of ALGO_FAMILIES. ``grid`` (one entry per
    member), ``hyperparameter`` (the flag said in errors) and ``stand_in`` (the learner whose
    options and calibration are checked before the banks exist) stand for it where training
    reads an Auto's."""

    families: tuple   # (algo, Auto)

    @property
    def grid(self):
        return tuple((algo, v) for algo, auto in self.families for v in auto.grid)

    hyperparameter = ALGO_FLAG

    @property
    def stand_in(self):
        return self.families[0][0]


def algo_auto(options, grid_text, kind):
    """The AlgoAuto of --algo auto; a one-line error for a hyperparameter given a value (each
    learner's is chosen over its own grid), --grid, or a task other than binary."""
    given = [_flag(name) for name, value in options.items() if value is not None]
    if given:
        raise StreamherdError(f"--algo auto chooses each learner's hyperparameter over its own "
                              f"grid; drop {', '.join(given)} (or name one --algo and give it "
                              f"auto)")
    if grid_text is not None:
        raise StreamherdError("--grid lists the values of one learner's hyperparameter; with "
                              "--algo auto each learner tries its default grid: drop --grid")
    if kind is not None:
        raise StreamherdError("--algo auto works for binary tasks only; name one --algo")
    from streamherd.learners import spec

    families = []
    for algo, name in ALGO_FAMILIES:
        hyperparameter = next(h for h in spec(algo).accepted("binary") if h.name == name)
        families.append((algo, Auto(hyperparameter, default_grid(hyperparameter))))
    return AlgoAuto(tuple(families))


def new_bank(task, algo, dim, options, auto):
    """The learner an auto trains: a Bank of ``algo`` (binary, with a bank kernel), else a
    TaskBank; for --algo auto an AlgoBank."""
    if isinstance(auto, AlgoAuto):
        return AlgoBank(task, dim, auto)
    from streamherd.learners import spec

    if task.kind == "binary" and bank_entry_point(spec(algo)) is not None:
        return Bank(task, algo, dim, options, auto)
    return TaskBank(task, algo, dim, options, auto)


class AlgoBank(Choosing):
    """--algo auto: a Bank of each learner (AlgoAuto), learning from every example, chosen
    among as one bank's members are (module docstring): the window is the same rows for
    every bank, so their losses and AUCs compare."""

    def __init__(self, task, dim, auto):
        need = 0
        for algo, family in auto.families:   # all the banks checked at once, before any is made
            probe = task.new_learner(algo, 1, {family.name: family.grid[0]})
            arrays = len(probe.interleaved or ("mean",))
            need += bank_bytes(dim, arrays, group_sizes(len(family.grid), arrays, usable_cores()))
        check_memory(need, f"--algo auto's banks of {sum(len(f.grid) for _, f in auto.families)}"
                           f" models need",
                     "use a smaller -b, or name one --algo and give its hyperparameter auto")
        self.banks = [Bank(task, algo, dim, {}, family) for algo, family in auto.families]
        self.members = [m for b in self.banks for m in b.members]
        self.values = sum((b.values for b in self.banks), ())
        self.defaults = sum((b.defaults for b in self.banks), ())
        self.member_algos = sum((b.member_algos for b in self.banks), ())
        self.labels = tuple(f"{b.name} {b.flag} {label}" for b in self.banks
                            for label in b.labels)
        self.flag = ALGO_FLAG.flag

    @property
    def alive(self):
        return np.concatenate([b.alive for b in self.banks])

    @property
    def progressive(self):
        return np.concatenate([b.progressive for b in self.banks])

    @property
    def progressive_weight(self):
        return self.banks[0].progressive_weight

    def _locate(self, k):
        """(the bank of member k, its index there)."""
        for b in self.banks:
            if k < len(b.members):
                return b, k
            k -= len(b.members)
        raise IndexError(k)

    def learn(self, y, importance, indptr, indices, values, margins_out):
        """Every bank over the chunk; the leader's margins and updates (Bank.learn)."""
        leading, k = self._locate(self.leader())
        before = leading.updates[k]
        for b in self.banks:
            margins = b.learn_members(y, importance, indptr, indices, values, alone=False)
            if b is leading:
                margins_out[:] = margins[:, k]
        if not self.alive.any():
            raise UnstableUpdate(int(max(b.failed_at.max() for b in self.banks)),
                                 "the update of every learner failed for every value of its grid")
        return int(leading.updates[k] - before)

    def calibrate_members(self, new_calibration):
        for b in self.banks:
            b.calibrate_members(new_calibration)

    def member_calibration(self, k):
        bank, j = self._locate(k)
        return bank.member_calibration(j)

    def end_pass(self):
        for b in self.banks:
            b.end_pass()
        losses = self.scores().losses
        return float(losses[self.chosen()]) if self.scores().on == "holdout" else math.nan

    def _joined(self, of):
        """The Scores ``of(bank)`` of every bank, joined."""
        parts = [of(b) for b in self.banks]
        return Scores(np.concatenate([p.losses for p in parts]),
                      np.concatenate([p.aucs for p in parts]), 0.0, parts[0].on)

    @property
    def passes_done(self):
        return self.banks[0].passes_done

    def _scores(self):
        if self.banks[0].pass_holdout is not None:
            return self._joined(Bank.scores)
        first = self.banks[0].recent
        y, weight, _ = first.later_half()
        margins = np.hstack([b.recent.later_half()[2] for b in self.banks])
        return window_scores(y, weight, margins, self.alive)

    def leading_scores(self):
        return self._joined(Bank.leading_scores)

    preamble_name = "auto"

    def settings(self):
        return "banks of " + ", ".join(
            f"{algo} ({auto.hyperparameter.flag} over {len(auto.grid)} values)"
            for algo, auto in ((b.name, b.auto) for b in self.banks))

    def tried(self):
        return {"hyperparameter": "algo", "members": [
            {"algo": a, "hyperparameter": b.auto.name, "value": v}
            for b in self.banks for a, v in zip(b.member_algos, b.values)]}
