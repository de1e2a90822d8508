"""Mixing the shards' models after a round (McDonald, Hall & Mann, NAACL 2010, §4.2).

Each rule turns a shard's state arrays into a Partial (sums), adds Partials, and turns the
total into the mixed state: addition is associative, so a tree of pairwise mixes (a cluster's
reduction) gives the flat mix. For a Gaussian learner with means μᵢ and covariances σᵢ from the
round's start (μ₀, σ₀):

- ``mean``: every state array averaged (the only rule for perceptrons and PA);
- ``prec``: σ⁻¹ = meanᵢ σᵢ⁻¹, μ = σ (meanᵢ σᵢ⁻¹ μᵢ) (the default for Gaussian learners);
- ``sum``: the information filter, σ⁻¹ = σ₀⁻¹ + Σᵢ(σᵢ⁻¹ − σ₀⁻¹),
  μ = σ [σ₀⁻¹μ₀ + Σᵢ(σᵢ⁻¹μᵢ − σ₀⁻¹μ₀)], exact for recursive least squares from one prior;
- ``jubatus``: μ = meanᵢ μᵢ, σ = minᵢ σᵢ (Jubatus' mix, for comparison).

The means are weighted: uniformly, or by each shard's mistakes of the round (``mistakes``:
McDonald et al.'s error-weighted mixing). A diagonal σ (``variance``) is inverted element by
element; a full one (``covariance``) as a matrix.

A running average over the examples seen (the averaged perceptron's ``average``, with its
``examples_seen``) is not a parameter to mix but a statistic: whatever the rule, it becomes the
average over every shard's examples, (T₀a₀ + Σᵢ(Tᵢaᵢ − T₀a₀)) / (T₀ + Σᵢ(Tᵢ − T₀))
(mix_running_averages). Averaging the shards' averages instead would weigh the rounds before
by N/(N+1) in place of their share of the examples, so the average would lag behind the more
the shards.
"""
from dataclasses import astuple, dataclass, field

import numpy as np

from streamherd.errors import StreamherdError

RULES = ("prec", "mean", "sum", "jubatus")
WEIGHTS = ("uniform", "mistakes")
GAUSSIAN_ARRAYS = ("variance", "covariance")


@dataclass(frozen=True)
class Counters:
    """What a shard's epoch counted, its ProgressiveValidation's counters of the same names:
    examples read, labeled examples, their importance sum, progressive loss sum
    (importance-weighted), mistakes and updates, and the held-out labeled examples' loss sum
    and importance sum (a holdout set: --holdout_period)."""

    examples: int = 0
    labeled: int = 0
    weighted: float = 0.0
    loss_sum: float = 0.0
    mistakes: int = 0
    updates: int = 0
    holdout_loss_sum: float = 0.0
    holdout_weight: float = 0.0

    def __add__(self, other):
        return Counters(*(a + b for a, b in zip(astuple(self), astuple(other))))

    @property
    def average_loss(self):
        return self.loss_sum / self.weighted if self.weighted > 0 else float("nan")

    @property
    def holdout_loss(self):
        """The held-out labeled examples' average loss (NaN: none)."""
        return self.holdout_loss_sum / self.holdout_weight if self.holdout_weight > 0 \
            else float("nan")


@dataclass
class ShardResult:
    """A shard's model after its epoch (state arrays, the learner's and the task's meta), its
    counters, and in a calibrating round the calibration's statistics (calibration.py's
    BinaryCalibration or MulticlassCalibration; None otherwise)."""

    state: dict
    learner_meta: dict
    task_meta: dict
    counters: Counters
    calibration: object = None

    @property
    def learned(self):
        """Whether the shard learned from a labeled example of weight > 0 this round: a shard
        that did not (no example, all unlabeled or held out) returns the round's start
        unchanged, which carries no information and would only dilute the mix."""
        return self.counters.weighted > 0


@dataclass
class Partial:
    """Sums over some shards: ``sums`` (name -> array), ``weight`` (the sum of their weights),
    ``minima`` (name -> array, jubatus' σ)."""

    sums: dict
    weight: float
    minima: dict = field(default_factory=dict)

    def __add__(self, other):
        return Partial({k: self.sums[k] + other.sums[k] for k in self.sums},
                       self.weight + other.weight,
                       {k: np.minimum(self.minima[k], other.minima[k]) for k in self.minima})


def gaussian_array(state):
    """The name of the state's covariance array ("variance" or "covariance"), or None."""
    return next((name for name in GAUSSIAN_ARRAYS if name in state), None)


def _inverse(name, array):
    return 1.0 / array if name == "variance" else np.linalg.inv(array)


def _times(name, matrix, vector):
    return matrix * vector if name == "variance" else matrix @ vector


class Rule:
    """How shard states become Partials, and the total Partial the mixed state."""

    def __init__(self, name, start):
        """``start``: the state every shard began the round from."""
        self.name = name
        self.start = start
        self.sigma = gaussian_array(start)
        if name != "mean" and self.sigma is None:
            raise StreamherdError(f"--mix {name} mixes the covariances of a Gaussian learner "
                                  f"(arow, cw, nherd, scw); this learner has none: use --mix "
                                  f"mean")
        if name == "jubatus" and self.sigma == "covariance":
            raise StreamherdError("--mix jubatus takes the element-wise minimum of diagonal "
                                  "variances; a full covariance mixes with --mix mean or prec")

    def lift(self, state, weight):
        """One shard's Partial."""
        name, sigma = self.name, self.sigma
        if name == "mean":
            return Partial({k: weight * v for k, v in state.items()}, weight)
        others = {k: weight * v for k, v in state.items() if k not in ("mean", sigma)}
        if name == "jubatus":
            return Partial({**others, "mean": weight * state["mean"]}, weight,
                           {sigma: state[sigma]})
        precision = _inverse(sigma, state[sigma])
        information = _times(sigma, precision, state["mean"])
        if name == "prec":
            return Partial({**others, "precision": weight * precision,
                            "information": weight * information}, weight)
        start = self.start   # sum: the changes since the round's start, unweighted
        start_precision = _inverse(sigma, start[sigma])
        return Partial({**{k: state[k] - start[k] for k in others},
                        "precision": precision - start_precision,
                        "information": information - _times(sigma, start_precision,
                                                            start["mean"])}, 1.0)

    def finish(self, total):
        """The mixed state of the total Partial of every shard."""
        name, sigma, sums = self.name, self.sigma, total.sums
        if name == "sum":
            start, start_precision = self.start, _inverse(self.sigma, self.start[self.sigma])
            precision = start_precision + sums["precision"]
            information = _times(sigma, start_precision, start["mean"]) + sums["information"]
            others = {k: start[k] + v for k, v in sums.items()
                      if k not in ("precision", "information")}
        else:
            others = {k: v / total.weight for k, v in sums.items()
                      if k not in ("precision", "information")}
            if name in ("mean", "jubatus"):
                return {**others, **total.minima}
            precision, information = sums["precision"] / total.weight, \
                sums["information"] / total.weight
        covariance = _inverse(sigma, precision)
        return {**others, sigma: covariance, "mean": _times(sigma, covariance, information)}


def shard_weights(results, weights):
    """Each shard's weight: 1, or its mistakes of the round (all 1 when none made one)."""
    if weights == "mistakes":
        mistakes = np.array([r.counters.mistakes for r in results], np.float64)
        if mistakes.sum() > 0:
            return mistakes
    return np.ones(len(results))


def mix_states(rule, results, weights="uniform"):
    """The mixed state of the shards' ``results`` by ``rule`` (a Rule), flat. Every rule's
    mix of one shard is that shard's state: given as is, not inverted twice (1/(1/x) is not
    always x in floating point), so that one shard is exactly ``train -i``."""
    if len(results) == 1:
        return dict(results[0].state)
    total = None
    for result, weight in zip(results, shard_weights(results, weights)):
        partial = rule.lift(result.state, weight)
        total = partial if total is None else total + partial
    return rule.finish(total)


def mix_learner_meta(start, metas):
    """The learner's scalars: a counter (an int: examples seen) is the start's plus every
    shard's increase; anything else (nested per class: ova) is mixed item by item, or the
    first shard's."""
    first = metas[0]
    if isinstance(first, dict):
        return {k: mix_learner_meta(start.get(k, first[k]) if isinstance(start, dict)
                                    else first[k], [m[k] for m in metas]) for k in first}
    if isinstance(first, list):
        starts = start if isinstance(start, list) and len(start) == len(first) else first
        return [mix_learner_meta(s, list(items)) for s, items in zip(starts, zip(*metas))]
    if isinstance(first, int) and not isinstance(first, bool) and isinstance(start, int):
        return start + sum(m - start for m in metas)
    return first


RUNNING_AVERAGES = ("average",)   # state arrays averaging the weights over examples_seen


def _examples_seen(learner_meta, size):
    """A learner's examples seen, one per element of its state array of ``size`` elements: its
    ``examples_seen``, or each one-vs-all class's for that class's block of the array."""
    if "ova" in learner_meta:
        counts = [float(m["examples_seen"]) for m in learner_meta["ova"]]
        return np.repeat(counts, size // len(counts))
    return float(learner_meta["examples_seen"])


def mix_running_averages(start, start_learner_meta, results, mixed):
    """``mixed`` (a mixed state) with each running average (RUNNING_AVERAGES) replaced by the
    average over the examples of every shard's round and of the rounds before (the module's
    doc); ``start``: the state the shards began from."""
    names = [k for k in RUNNING_AVERAGES if k in mixed and k in start]
    if len(results) == 1 or not names:
        return mixed
    mixed = dict(mixed)
    for name in names:
        size = start[name].size
        seen_before = _examples_seen(start_learner_meta, size) if start_learner_meta else 0.0
        before = seen_before * start[name]
        total, seen = before.copy(), seen_before
        for result in results:
            seen_here = _examples_seen(result.learner_meta, size)
            total += seen_here * result.state[name] - before
            seen = seen + seen_here - seen_before
        # no example anywhere: the average of the weights is the (mixed) weights themselves
        mixed[name] = np.divide(total, seen, out=np.array(mixed["mean"], np.float64),
                                where=np.broadcast_to(seen, total.shape) > 0)
    return mixed


def mix_task_meta(metas, shards):
    """The task's meta: a binary task's two label values, each as the shards found it (one
    value per side over every shard); anything else must be the same in every shard."""
    first = metas[0]
    if first.get("task") != "binary":
        for meta, shard in zip(metas, shards):
            if meta != first:
                raise StreamherdError(
                    f"{shard} learned other classes than {shards[0]} ({meta.get('classes')} "
                    f"against {first.get('classes')}); pass --classes with every class")
        return first
    labels = {}
    for meta, shard in zip(metas, shards):
        for side, value in meta["labels"].items():
            if value is None:
                continue
            known = labels.setdefault(side, (value, shard))
            if known[0] != value:
                raise StreamherdError(
                    f"{shard}: label {value:g} is {side} like label {known[0]:g} of "
                    f"{known[1]}; binary labels are +1/-1 or 1/0 (labels > 0 are the positive "
                    f"class): relabel the data, or pass --multiclass with --classes")
    return {**first, "labels": {side: labels.get(side, (None,))[0]
                                for side in ("negative", "positive")}}


def check_rule(rule, kind, shards, force):
    """--mix sum overshoots on classification with more than two shards (they correct the same
    margin errors, and the summed steps add up): refused there unless --force."""
    if rule == "sum" and kind != "regression" and shards > 2 and not force:
        raise StreamherdError(f"--mix sum adds the {shards} shards' steps, which diverges on "
                              f"classification with more than 2 shards; use --mix prec (or "
                              f"mean), or pass --force to run it anyway")


def informative(results):
    """The results of the shards that learned this round (ShardResult.learned), in shard
    order: the only ones every rule, weighting and running average mixes."""
    return [r for r in results if r.learned]
