"""Conditional herding (Gelfand, Chen, van der Maaten & Welling 2010, section 2.4 and 3): the
algorithm of the ``streamherd herd`` command (its model file and its predictions:
model/herding.py).

CH needs mini-batches in a fixed shuffled order and many epochs, so the training set is read
whole into memory (as the experiment reads its datasets) and learned here rather than in
train's one-pass pipeline. Features: the distinct slots of the training file, in slot order,
become the dense rows of W, plus one last row for the normalising feature
phi0(x) = sqrt(R^2 - ||x||^2) (R: the largest training norm; 0 where negative, at test).
Parameters start N(0, (rho/|P|)^2) per block P and step eta/|P| (section 3: sigma_W =
sigma/(dim x dim z), steps scaled alike); only rho = sigma/eta matters, so eta = 1.

Prediction is the average of the 1-of-K predictions over the iterations after burn-in (the
algorithm box, step 4): for ``--test`` files at every iteration (transductive), for a saved
model over its ``--snapshots`` weight snapshots, evenly spaced after burn-in. One-versus-all:
one binary herder (classes "other", "this") per class; the prediction is the class whose
herder voted "this" most often.
"""
import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.learners.base import check_memory

KIND = "herding"
MODES = ("joint", "ova")
RATIOS = (0.3, 1.0, 3.0, 10.0, 30.0)
ANNEAL_HALVING = 500   # iterations between halvings of the hidden-bias annealing lambda
READ_BITS = 30         # slots as read (svmlight indices stay distinct up to 2^30)


@dataclass(frozen=True)
class Options:
    hidden: int = 100
    batch: int = 100
    ratio: float = 1.0
    burn_in: int = 1000
    max_epochs: int = 1000
    snapshots: int = 32
    mode: str = "joint"
    seed: int = 0


@dataclass
class Herder:
    """One herder's parameters (see learners/kernels/herding.py)."""
    W: np.ndarray
    B: np.ndarray
    theta: np.ndarray
    alpha: np.ndarray

    @classmethod
    def initial(cls, rng, features, hidden, classes, ratio):
        shapes = ((features, hidden), (classes, hidden), (hidden,), (classes,))
        return cls(*(rng.normal(0.0, ratio / math.prod(s), s) for s in shapes))

    def blocks(self):
        return self.W, self.B, self.theta, self.alpha

    def copy(self):
        return Herder(*(a.copy() for a in self.blocks()))

    def steps(self, batch):
        """The per-example step of each block: eta / |block| / |batch| (eta = 1)."""
        return np.array([1.0 / a.size / batch for a in self.blocks()])

    def predict(self, rows):
        from streamherd.learners.kernels.herding import herd_predict

        predicted = np.empty(rows.n_rows, np.int64)
        herd_predict(rows.indptr, rows.indices, rows.values, *self.blocks(), predicted)
        return predicted


# ---------------------------------------------------------------- data

@dataclass
class Rows:
    """Examples as CSR over dense feature columns (the last one phi0), with their labels."""
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    n_columns: int

    @property
    def n_rows(self):
        return len(self.indptr) - 1

    def take(self, rows):
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        picks = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Rows(indptr, self.indices[picks], self.values[picks], self.labels[rows],
                    self.n_columns)


@dataclass(frozen=True)
class Features:
    """The slots the training data uses (dense columns 0..len-1), R for phi0 and ``scale``,
    which every feature value is divided by (raw pixels 0..255: 255, the paper's grey levels)."""
    slots: np.ndarray
    r_max: float
    scale: float = 1.0

    @property
    def n_columns(self):
        return len(self.slots) + 1

    @classmethod
    def of(cls, chunk, scale=1.0):
        slots = np.unique(chunk.indices).astype(np.int64)
        norms = np.add.reduceat((chunk.values / scale) ** 2, chunk.indptr[:-1]) \
            if len(chunk.values) \
            else np.zeros(chunk.n_examples)
        norms[np.diff(chunk.indptr) == 0] = 0.0   # reduceat reads an empty row's next entry
        return cls(slots, float(np.sqrt(norms.max())) if len(norms) else 0.0, scale)

    def rows(self, chunk):
        """The chunk over these columns (unknown slots dropped), phi0 appended to every row."""
        column = np.searchsorted(self.slots, chunk.indices)
        column[column == len(self.slots)] = 0
        known = self.slots[column] == chunk.indices if len(self.slots) else \
            np.zeros(len(column), bool)
        row_of = np.repeat(np.arange(chunk.n_examples), np.diff(chunk.indptr))[known]
        values = chunk.values[known] / self.scale
        squares = np.bincount(row_of, values ** 2, minlength=chunk.n_examples)
        phi0 = np.sqrt(np.maximum(self.r_max ** 2 - squares, 0.0))
        counts = np.bincount(row_of, minlength=chunk.n_examples) + 1
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        order = np.argsort(np.concatenate([row_of, np.arange(chunk.n_examples)]), kind="stable")
        indices = np.concatenate([column[known], np.full(chunk.n_examples, len(self.slots))])
        return Rows(indptr, indices[order].astype(np.int64),
                    np.concatenate([values, phi0])[order], chunk.labels.copy(), self.n_columns)


def read_file(path, fmt="auto"):
    """Every labelled example of ``path`` (labels must be numbers), one Chunk, no bias."""
    from streamherd.io.csr import Chunk
    from streamherd.io.reader import ChunkReader
    from streamherd.tasks import BinaryTask

    reader = ChunkReader([path], fmt=fmt, features=FeatureSpace(READ_BITS, bias=False),
                         workers=0, process=BinaryTask().check_labels)
    chunks = [chunk.copy() for chunk in reader]
    rows = Chunk.concatenate(chunks) if chunks else None
    if rows is None or rows.n_examples == 0 or np.all(np.isnan(rows.labels)):
        raise StreamherdError(f"{path}: no labelled example; herd needs labelled examples "
                              f"(numeric labels)")
    labelled = np.flatnonzero(~np.isnan(rows.labels))
    return rows if len(labelled) == rows.n_examples else rows.take(labelled)


def class_ids(labels, classes):
    """Each label's index in ``classes`` (ascending), -1 when it is none of them."""
    at = np.minimum(np.searchsorted(classes, labels), len(classes) - 1)
    return np.where(classes[at] == labels, at, -1)


# ---------------------------------------------------------------- training

@dataclass
class Run:
    """What one herder's training gives: its snapshots, the test votes, and how it ended."""
    snapshots: list
    test_votes: "np.ndarray | None"
    iterations: int
    converged: bool
    last_epoch_errors: int
    final: Herder


class Snapshots:
    """Weights every ``interval`` iterations after burn-in, at most 2S kept: when full, every
    other one goes and the interval doubles, so those kept stay evenly spaced."""

    def __init__(self, count):
        self.count, self.interval, self.kept = count, 1, []

    def offer(self, since_burn_in, herder):
        if (since_burn_in + 1) % self.interval:
            return
        self.kept.append(herder.copy())
        if len(self.kept) == 2 * self.count:
            self.kept = self.kept[1::2]
            self.interval *= 2

    def chosen(self):
        """``count`` of them, evenly spaced (repeated when fewer were taken)."""
        at = np.round(np.linspace(0, len(self.kept) - 1, self.count)).astype(int)
        return [self.kept[i] for i in at]


def herd(rows, targets, n_classes, options, rng, test=None):
    """Train one herder on ``rows`` (class ids ``targets``); ``test``: Rows voted on at every
    iteration after burn-in. Stops once the training predictions were error-free for a whole
    epoch (then nothing moves any more), or after ``max_epochs``."""
    from streamherd.learners.kernels.herding import add_votes, herd_step

    herder = Herder.initial(rng, rows.n_columns, options.hidden, n_classes, options.ratio)
    order = rng.permutation(rows.n_rows)
    batches = [order[s:s + options.batch] for s in range(0, rows.n_rows, options.batch)]
    steps = [herder.steps(len(b)) for b in batches]
    snapshots = Snapshots(options.snapshots)
    votes = None if test is None else np.zeros((test.n_rows, n_classes))
    predicted = np.empty(options.batch, np.int64)
    error_free = epoch_errors = last_epoch_errors = 0
    t = 0
    for t in range(options.max_epochs * len(batches)):
        batch = t % len(batches)
        anneal = 0.5 ** (t // ANNEAL_HALVING) if t < options.burn_in else 0.0
        errors = herd_step(rows.indptr, rows.indices, rows.values, batches[batch], targets,
                           *herder.blocks(), steps[batch], anneal, predicted)
        error_free = 0 if errors else error_free + 1
        epoch_errors += errors
        if batch == len(batches) - 1:
            last_epoch_errors, epoch_errors = epoch_errors, 0
        if t >= options.burn_in:
            snapshots.offer(t - options.burn_in, herder)
            if test is not None:
                add_votes(herder.predict(test), votes)
            if error_free >= len(batches):
                return Run(snapshots.chosen(), votes, t + 1, True, 0, herder)
    return Run(snapshots.chosen(), votes, t + 1, False, last_epoch_errors, herder)


def check_options(options, n_rows, n_columns, n_classes, n_test):
    """One-line errors for values herding cannot run with, or sizes that do not fit."""
    for name, value, low in (("--hidden", options.hidden, 1), ("--batch", options.batch, 1),
                             ("--burn-in", options.burn_in, 0),
                             ("--max-epochs", options.max_epochs, 1),
                             ("--snapshots", options.snapshots, 1)):
        if value < low:
            raise StreamherdError(f"{name} must be at least {low}, got {value}")
    if options.mode not in MODES:
        raise StreamherdError(f"unknown --multiclass '{options.mode}'; use joint or ova")
    iterations = options.max_epochs * math.ceil(n_rows / options.batch)
    if iterations <= options.burn_in:
        raise StreamherdError(
            f"--max-epochs {options.max_epochs} gives {iterations} iterations, none after "
            f"--burn-in {options.burn_in}; raise --max-epochs or lower --burn-in")
    herders = n_classes if options.mode == "ova" else 1
    classes = 2 if options.mode == "ova" else n_classes
    one = 8 * (n_columns + classes + 1) * (options.hidden + 1)
    need = one * (herders * options.snapshots + 2 * options.snapshots) + \
        8 * n_test * n_classes + 16 * options.batch * options.hidden
    check_memory(need, f"herding {n_columns - 1} features with --hidden {options.hidden} and "
                       f"--snapshots {options.snapshots} needs",
                 "lower --hidden or --snapshots")


def train(rows, classes, options, test=None):
    """Train the joint herder, or one binary herder per class (ova). Returns (runs, votes:
    the test's per-class vote fractions or None)."""
    targets = class_ids(rows.labels, classes)
    if options.mode == "joint":
        run = herd(rows, targets, len(classes), options, np.random.default_rng(options.seed),
                   test)
        return [run], None if test is None else run.test_votes / run.test_votes.sum(1)[:, None]
    runs = [herd(rows, (targets == k).astype(np.int64), 2, options,
                 np.random.default_rng([options.seed, k]), test) for k in range(len(classes))]
    if test is None:
        return runs, None
    return runs, np.stack([r.test_votes[:, 1] / r.test_votes.sum(1) for r in runs], axis=1)


def snapshot_votes(snapshot_sets, rows, mode, n_classes):
    """Per-class vote fractions of saved snapshots (``snapshot_sets``: one list per herder)."""
    from streamherd.learners.kernels.herding import add_votes

    if mode == "joint":
        votes = np.zeros((rows.n_rows, n_classes))
        for herder in snapshot_sets[0]:
            add_votes(herder.predict(rows), votes)
        return votes / len(snapshot_sets[0])
    return np.stack([np.mean([h.predict(rows) for h in herders], axis=0)
                     for herders in snapshot_sets], axis=1)


def choose_ratio(rows, classes, options, ratios, validation, say_line):
    """The ratio of ``ratios`` with the lowest error on a held-out ``validation`` fraction of
    the training rows (the lowest ratio on ties)."""
    rng = np.random.default_rng([options.seed, 1])
    order = rng.permutation(rows.n_rows)
    held = max(1, int(round(validation * rows.n_rows)))
    fit, check = rows.take(np.sort(order[held:])), rows.take(np.sort(order[:held]))
    errors = []
    for ratio in ratios:
        _, votes = train(fit, classes, dataclasses.replace(options, ratio=ratio), check)
        errors.append(float(np.mean(classes[np.argmax(votes, 1)] != check.labels)))
        say_line(f"--ratio {ratio:g}: validation error {errors[-1]:.4f} ({held} examples)")
    return ratios[int(np.argmin(errors))]

