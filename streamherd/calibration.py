"""Calibrated probabilities (``predict --proba``), learned during ``train`` from the progressive
predictions: each example's margin (or class scores) before its update, so an honest sample of
how the model's outputs relate to the labels it has not yet learned from, at no extra pass.

Binary models keep sufficient statistics of (margin, label), fitted into a map when the model
is written (``to_meta``) and stored in the model's meta ("calibration"):
  * a histogram of the margin, BINS bins of asinh(SCALE m) over [-LIMIT, LIMIT] (2.5% of the
    margin wide at |m| = 1, 2.5e-4 absolute near 0; any learner's margin scale fits), each bin
    holding the weight of its positives and negatives and the weighted sum of its margins (the
    fit reads each bin at its centroid, so binning moves a margin by far less than a bin);
      platt:    sigma(a m + b), by Newton's method on the bins with Platt's targets
                (N+ + 1) / (N+ + 2) and 1 / (N- + 2), which keep a separable stream finite;
      isotonic: the pool-adjacent-violators fit on the bins, a block's probability
                (pos + 1) / (n + 2) (never 0 or 1), interpolated linearly between the blocks'
                centroids, constant beyond them, blended with 1e-4 of Platt's map (TIE_BREAK);
  * probit (Gaussian learners): P = Phi(a m / sqrt(v + s^2)), v = x' Sigma x, a and s^2 by
    maximum likelihood on a 2-D histogram of (margin, sqrt v).
  * none: no map; a Gaussian model's --proba stays Phi(m / sqrt v), the probability that a
    weight vector drawn from N(mu, Sigma) classifies x positively (not P(y = +1 | x)).
Multiclass models (any method but none): P(z | x) = softmax(beta s_z + b_z) over the class
scores s, beta (an inverse temperature) and the per-class biases b by maximum likelihood
(Newton's method: fit_softmax) on a uniform sample of the progressive (scores, class) pairs:
RESERVOIR rows kept by reservoir sampling whose choices depend only on the example's count, so
that continuing a model (-i) keeps the sample one run over both inputs would.
"""
import functools
import math

import numpy as np
from numba import njit

from streamherd.errors import StreamherdError

METHODS = ("platt", "isotonic", "probit", "none")
# isotonic: the lowest mean log-loss of most learners on benchmarks/calibration.py; probit fits
# Gaussian learners only. Weighting the statistics towards recent examples, or rescaling each
# margin by a running spread, made every learner's log-loss and ECE worse: the map stays one of
# the whole stream's progressive predictions
DEFAULT_METHOD = "isotonic"
BINS, SCALE, LIMIT = 2048, 100.0, 26.0
PROBIT_MARGIN_BINS, PROBIT_SPREAD_BINS = 256, 64
SPREAD_LOW, SPREAD_HIGH = 1e-4, 1e4        # the range of sqrt(v) binned (log scale)
# isotonic's share given to Platt's map: a step function ties every margin of a step (and all
# beyond its outer blocks, where a model trained longer than its progressive predictions puts
# many), which lowered the AUC below the margin's; 1e-4 of a strictly increasing map orders
# them as the margin does and moves no probability by more
TIE_BREAK = 1e-4
# predict's label is the learner's decision (margin > 0; the top class score), --proba the
# calibrated map, which may put its 0.5 elsewhere (Platt's b, the isotonic steps, a class's
# softmax bias): a row whose label and most probable class disagree has its probability drawn
# to the boundary's side of the label, DECISION_GAP * tanh(|a m|) beyond 0.5 (binary: still
# strictly increasing in the margin), or the two classes' probabilities swapped (multiclass).
DECISION_GAP = 1e-3
RESERVOIR_ENTRIES = 200_000                 # scores kept at most (rows x classes)
RESERVOIR_ROWS = 4000
RESERVOIR_MIN_ROWS = 100                    # the sample's rows whatever the classes


@njit(cache=True, inline="always")
def _margin_bin(m, bins):
    u = (math.asinh(SCALE * m) + LIMIT) * (bins / (2.0 * LIMIT))
    return min(bins - 1, max(0, int(u)))


@njit(cache=True, inline="always")
def _spread_bin(v):
    s = math.sqrt(max(v, 0.0))
    if s <= SPREAD_LOW:
        return 0
    u = math.log(s / SPREAD_LOW) / math.log(SPREAD_HIGH / SPREAD_LOW) * PROBIT_SPREAD_BINS
    return min(PROBIT_SPREAD_BINS - 1, max(0, int(u)))


@njit(cache=True, nogil=True)
def _add_rows(margins, confidences, y, weights, positive, negative, margin_sums, confidence_sums):
    """Add each labeled row to its cell: its margin's bin, or with ``confidence_sums`` (probit:
    empty otherwise) the cell of its margin's and its sqrt(x' Sigma x)'s bins."""
    probit = len(confidence_sums) > 0
    for i in range(len(y)):
        if np.isnan(y[i]) or not weights[i] > 0.0 or not np.isfinite(margins[i]):
            continue
        if probit:
            b = _margin_bin(margins[i], PROBIT_MARGIN_BINS) * PROBIT_SPREAD_BINS + \
                _spread_bin(confidences[i])
        else:
            b = _margin_bin(margins[i], len(positive))
        if y[i] > 0.0:
            positive[b] += weights[i]
        else:
            negative[b] += weights[i]
        margin_sums[b] += weights[i] * margins[i]
        if probit:
            confidence_sums[b] += weights[i] * confidences[i]


# the maps' arithmetic on margins beyond what a float holds (an importance weight of 1e308, a
# model continued from huge weights) gives infinities and NaN, which usable refuses: no numpy
# warning on the way
def quietly(function):
    @functools.wraps(function)
    def without_warnings(*args, **kwargs):
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)
    return without_warnings


def usable(meta):
    """A calibration's meta as it is written, refused in one line when it holds a number that
    is not finite (the model would be unusable: predict calls it damaged)."""
    if not meta_ok(meta):
        raise StreamherdError("the probability map (--calibration) overflowed: the margins or "
                              "importance weights of the examples go beyond what a float holds; "
                              "scale the features or the importance weights down, or pass "
                              "--calibration none; the model is not written")
    return meta


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


# ---------------------------------------------------------------- the fits (independent of bins)

def _spread(x, weight):
    """The weighted root mean square of the points x (1 when they are all 0)."""
    return math.sqrt(np.sum(weight * x * x) / max(weight.sum(), 1e-300)) or 1.0


def fit_platt(x, positive, negative, prior=True):
    """(a, b) of sigma(a x + b) maximising the likelihood of ``positive`` and ``negative``
    weights at points x, with Platt's targets (``prior``) or 1/0 ones; Newton's method with a
    halving line search, on x scaled to unit spread (the margins of some learners are 1e3)."""
    n_pos, n_neg = positive.sum(), negative.sum()
    high = (n_pos + 1.0) / (n_pos + 2.0) if prior else 1.0
    low = 1.0 / (n_neg + 2.0) if prior else 0.0
    weight = positive + negative
    target = np.divide(positive * high + negative * low, weight, out=np.zeros_like(weight),
                       where=weight > 0)
    spread = _spread(x, weight)
    z = x / spread
    a, b = 0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))

    def loss(a, b):
        t = a * z + b   # the cross-entropy of sigma(t), written stably
        return float(np.sum(weight * (np.logaddexp(0.0, t) - target * t)))

    current = loss(a, b)
    for _ in range(100):
        p = _sigmoid(a * z + b)
        g = weight * (p - target)
        h = weight * p * (1.0 - p) + 1e-12
        grad = np.array([np.sum(g * z), np.sum(g)])
        hess = np.array([[np.sum(h * z * z), np.sum(h * z)], [np.sum(h * z), np.sum(h)]])
        step = np.linalg.solve(hess + 1e-9 * np.eye(2), grad)
        t = 1.0
        while t > 1e-10:
            trial = loss(a - t * step[0], b - t * step[1])
            if trial <= current:
                break
            t *= 0.5
        a, b = a - t * step[0], b - t * step[1]
        improved, current = current - trial, min(current, trial)
        if abs(improved) <= 1e-12 * max(1.0, abs(current)) or np.max(np.abs(grad)) < 1e-10:
            break
    return a / spread, b


def fit_isotonic(positive, negative):
    """The pool-adjacent-violators fit of the positive rate over points in ascending order:
    (start index of each block, its positive weight, its total weight)."""
    starts, pos, tot = [], [], []
    for k in range(len(positive)):
        starts.append(k)
        pos.append(float(positive[k]))
        tot.append(float(positive[k] + negative[k]))
        while len(tot) > 1 and pos[-2] * tot[-1] >= pos[-1] * tot[-2]:
            last_pos, last_tot = pos.pop(), tot.pop()
            pos[-1] += last_pos
            tot[-1] += last_tot
            starts.pop()
    return np.array(starts, np.int64), np.array(pos), np.array(tot)


def fit_probit(m, v, positive, negative):
    """(a, s2) of Phi(a m / sqrt(v + s2)) maximising the likelihood (scipy, on log a, log s2)."""
    from scipy.optimize import minimize
    from scipy.special import log_ndtr

    def nll(theta):
        z = np.exp(theta[0]) * m / np.sqrt(v + np.exp(theta[1]))
        return -float(np.sum(positive * log_ndtr(z) + negative * log_ndtr(-z)))

    scale = float(np.median(v[(positive + negative) > 0])) if np.any(v > 0) else 1.0
    best = min((minimize(nll, np.array([0.0, math.log(max(scale, 1e-12) * f)]),
                         method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10,
                                                        "maxiter": 2000})
                for f in (0.1, 1.0, 10.0)), key=lambda r: r.fun)
    return float(np.exp(best.x[0])), float(np.exp(best.x[1]))


# ---------------------------------------------------------------- binary

def _increasing(a, b, centroids, weight):
    """Platt's (a, b) as the isotonic map's tie break, which must increase with the margin: a
    short stream's margins can run against its labels (a <= 0), then sigma(m / spread)."""
    if a > 0:
        return a, b
    return 1.0 / _spread(centroids, weight), 0.0


def _on_the_labels_side(p, margins, slope):
    """``p`` moved to predict's side of 0.5 where it is not: above 0.5 for margin > 0, at or
    below it otherwise, by DECISION_GAP tanh(|slope m|); both bounds increase with the margin,
    so the map stays increasing (strictly, if it was)."""
    gap = DECISION_GAP * np.tanh(np.abs(slope * margins))
    return np.where(margins > 0, np.maximum(p, 0.5 + gap), np.minimum(p, 0.5 - gap))


class BinaryCalibration:
    """The statistics of a binary model's progressive margins and the map fitted on them."""

    def __init__(self, method):
        self.method = method
        cells = PROBIT_MARGIN_BINS * PROBIT_SPREAD_BINS if method == "probit" else BINS
        self.positive, self.negative = np.zeros(cells), np.zeros(cells)
        self.margin_sums = np.zeros(cells)
        self.confidence_sums = np.zeros(cells) if method == "probit" else None
        self.params = None

    @property
    def needs_confidences(self):
        return self.method == "probit"

    def observe(self, margins, y, weights, confidences=None):
        """Add labeled rows (y +1/-1, NaN: none) of weight > 0."""
        sums = self.confidence_sums if self.needs_confidences else np.empty(0)
        _add_rows(margins, confidences if self.needs_confidences else sums, y, weights,
                  self.positive, self.negative, self.margin_sums, sums)
        self.params = None

    @quietly
    def fit(self):
        used = np.flatnonzero(self.positive + self.negative > 0)
        pos, neg = self.positive[used], self.negative[used]
        weight = pos + neg
        centroids = self.margin_sums[used] / weight
        if not len(used):
            self.params = {}
        elif self.method == "platt":
            a, b = fit_platt(centroids, pos, neg)
            self.params = {"a": a, "b": b}
        elif self.method == "isotonic":
            starts, block_pos, block_tot = fit_isotonic(pos, neg)
            ends = np.append(starts[1:], len(used))
            x = [float(np.sum(weight[s:e] * centroids[s:e]) / np.sum(weight[s:e]))
                 for s, e in zip(starts, ends)]
            p = np.maximum.accumulate((block_pos + 1.0) / (block_tot + 2.0))
            a, b = _increasing(*fit_platt(centroids, pos, neg), centroids, weight)
            self.params = {"x": x, "p": p.tolist(), "a": a, "b": b}
        else:
            v = self.confidence_sums[used] / weight
            a, s2 = fit_probit(centroids, v, pos, neg)
            self.params = {"a": a, "s2": s2}
        return self.params

    @quietly
    def probabilities(self, margins, confidences=None):
        """P(y = +1 | x) of each margin (and x' Sigma x, probit), on the side of 0.5 of the
        label predict gives (margin > 0: above; DECISION_GAP)."""
        params = self.params if self.params is not None else self.fit()
        if not params:   # learned from nothing: the prior, on the label's side
            return _on_the_labels_side(np.full(len(margins), 0.5), margins, 1.0)
        if self.method == "probit":
            from scipy.special import ndtr

            p = ndtr(params["a"] * margins /
                     np.sqrt(np.maximum(confidences, 0.0) + params["s2"]))
        else:
            p = _sigmoid(params["a"] * margins + params["b"])
            if self.method == "isotonic":
                p = (1.0 - TIE_BREAK) * np.interp(margins, params["x"], params["p"]) + TIE_BREAK * p
        return _on_the_labels_side(p, margins, params["a"])

    @property
    def empty(self):
        """Whether no row was observed (merging it changes nothing)."""
        return not np.any(self.positive + self.negative > 0)

    def merged(self, other):
        """The statistics of both streams: the histograms are sums per cell, so merging is
        adding (dist-train's shards, each of which observed its own rows). Either one's
        statistics as they are when the other observed nothing (0 + x is x, but a cell's
        -0.0 margin sum would become 0.0)."""
        if self.needs_confidences != other.needs_confidences:
            raise ValueError("probit statistics merge with probit statistics only")
        merged = BinaryCalibration(self.method)
        for name in ("positive", "negative", "margin_sums", "confidence_sums"):
            ours, theirs = getattr(self, name), getattr(other, name)
            if ours is not None:
                setattr(merged, name, ours.copy() if other.empty else theirs.copy()
                        if self.empty else ours + theirs)
        return merged

    def to_meta(self):
        used = np.flatnonzero(self.positive + self.negative > 0)
        meta = {"method": self.method, "cells": used.tolist(),
                "positive": self.positive[used].tolist(), "negative": self.negative[used].tolist(),
                "margin_sums": self.margin_sums[used].tolist(),
                "params": self.params if self.params is not None else self.fit()}
        if self.confidence_sums is not None:
            meta["confidence_sums"] = self.confidence_sums[used].tolist()
        return usable(meta)

    @classmethod
    def from_meta(cls, meta, method=None):
        """The saved statistics, continued with ``method`` (platt and isotonic share theirs)."""
        calibration = cls(method or meta["method"])
        cells = np.asarray(meta["cells"], np.int64)
        for name in ("positive", "negative", "margin_sums", "confidence_sums"):
            if getattr(calibration, name) is not None:
                getattr(calibration, name)[cells] = meta[name]
        if calibration.method == meta["method"]:
            calibration.params = meta["params"]
        return calibration


# ---------------------------------------------------------------- multiclass

def _capacity(classes):
    """The reservoir's rows over ``classes`` classes (RESERVOIR_ENTRIES scores at most)."""
    return max(RESERVOIR_MIN_ROWS, min(RESERVOIR_ROWS, RESERVOIR_ENTRIES // max(classes, 1)))


@njit(cache=True, inline="always")
def _mix(t):
    """A fixed pseudo-random 64-bit number of the count t (splitmix64)."""
    z = np.uint64(t) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _reservoir_slot(seen, capacity):
    """Algorithm R: row t (the count of rows seen before it) replaces sample row
    mix(t) mod (t + 1) when that is within the sample (>= capacity: not kept)."""
    return seen if seen < capacity else np.int64(_mix(seen) % np.uint64(seen + 1))


@njit(cache=True, nogil=True)
def _reservoir_add(scores, score_rows, classes, seen, kept_scores, kept_classes):
    """Add the rows of class >= 0 to the sample (_reservoir_slot), ``scores`` holding the rows
    ``score_rows`` (ascending; among them every row the sample takes). Returns the new count,
    or -1 when a row the sample takes has no scores."""
    capacity = kept_scores.shape[0]
    r = 0
    for i in range(len(classes)):
        if classes[i] < 0:
            continue
        slot = _reservoir_slot(seen, capacity)
        seen += 1
        if slot < capacity:
            while r < len(score_rows) and score_rows[r] < i:
                r += 1
            if r == len(score_rows) or score_rows[r] != i:
                return -1
            # element by element: a slice's assignment loaded numba's array module (28 ms of
            # imports) with the kernel
            for j in range(kept_scores.shape[1]):
                kept_scores[slot, j] = scores[r, j] if j < scores.shape[1] else np.nan
            kept_classes[slot] = classes[i]
    return seen


@njit(cache=True, nogil=True)
def _reservoir_keeps(classes, seen, capacity, keeps):
    """keeps[i]: whether _reservoir_add would put row i in the sample."""
    for i in range(len(classes)):
        keeps[i] = False
        if classes[i] >= 0:
            keeps[i] = _reservoir_slot(seen, capacity) < capacity
            seen += 1


def fit_softmax(scores, classes, penalty=1e-3):
    """(beta, biases) of softmax(beta s + b) maximising the likelihood of ``classes`` given the
    rows of ``scores`` (NaN: a class not known then, left out of that row's softmax), with a
    small ridge on b (which makes it unique). Newton's method with a halving line search, as
    fit_platt, on the scores scaled to unit spread: K + 1 numbers, whose Hessian costs less
    than importing a general optimiser (scipy.optimize: 0.2 s, in every multiclass run)."""
    own = ~np.isnan(scores[np.arange(len(classes)), classes])
    scores, classes = scores[own], classes[own]   # a row whose class was not known yet: none
    n, K = scores.shape
    if n == 0:
        return 1.0, np.zeros(K)
    known = ~np.isnan(scores)
    spread = float(np.nanstd(scores)) or 1.0
    if not math.isfinite(spread):   # scores past a float's range: no map (to_meta refuses it)
        return math.nan, np.zeros(K)
    z = np.where(known, scores / spread, 0.0)
    onehot = np.zeros((n, K))
    onehot[np.arange(n), classes] = 1.0

    def loss(a, b):
        """(the penalised negative log-likelihood at beta = a / spread, the probabilities)."""
        logits = np.where(known, a * z + b, -np.inf)
        top = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - top)
        total = e.sum(axis=1, keepdims=True)
        value = -np.sum(np.sum(onehot * np.where(known, logits, 0.0), axis=1) - top[:, 0]
                        - np.log(total[:, 0]))
        return float(value + 0.5 * penalty * (b @ b)), e / total

    a, b = 1.0, np.zeros(K)
    current, p = loss(a, b)
    for _ in range(100):
        residual = p - onehot
        grad = np.concatenate([[np.sum(residual * z)], residual.sum(axis=0) + penalty * b])
        # the Hessian: each row's covariance of (z_j, e_j) under its softmax p, summed
        pz = np.sum(p * z, axis=1)
        hess = np.empty((K + 1, K + 1))
        hess[0, 0] = np.sum(p * z * z) - pz @ pz
        hess[0, 1:] = hess[1:, 0] = np.sum(p * (z - pz[:, None]), axis=0)
        hess[1:, 1:] = np.diag(p.sum(axis=0) + penalty) - p.T @ p
        if not (np.isfinite(hess).all() and np.isfinite(grad).all()):
            break
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]   # (all scores 0: a flat beta)
        t = 1.0
        while t > 1e-10:
            trial, trial_p = loss(a - t * step[0], b - t * step[1:])
            if trial <= current:
                break
            t *= 0.5
        else:
            break   # no step lowers the loss: the minimum, to the arithmetic's precision
        a, b, p = a - t * step[0], b - t * step[1:], trial_p
        improved, current = current - trial, trial
        if improved <= 1e-12 * max(1.0, abs(current)) or np.max(np.abs(grad)) < 1e-10:
            break
    return a / spread, b


def _top_class_first(p, scores):
    """``p`` with, in each row where the top class score's class (predict's, the first of
    equal scores) is not the most probable, the two classes' probabilities swapped
    (DECISION_GAP)."""
    label = np.argmax(np.where(np.isnan(scores), -np.inf, scores), axis=1)
    top = np.argmax(p, axis=1)
    rows = np.flatnonzero((label != top) & (p[np.arange(len(p)), label] < p.max(axis=1)))
    p = p.copy()
    p[rows, label[rows]], p[rows, top[rows]] = p[rows, top[rows]], p[rows, label[rows]]
    return p


class MulticlassCalibration:
    """A sample of a multiclass model's progressive (class scores, class) and the softmax map
    fitted on it."""

    method = "softmax"
    needs_confidences = False

    def __init__(self, seen=0, kept=None, kept_classes=None):
        self.seen = seen
        self.kept = kept if kept is not None else np.full((0, 0), np.nan)
        self.kept_classes = kept_classes if kept_classes is not None else np.zeros(0, np.int64)
        self.params = None

    def _grow(self, classes):
        rows = _capacity(classes)
        if self.kept.shape[1] >= classes and self.kept.shape[0] == max(rows, len(self.kept)):
            return
        grown = np.full((max(rows, len(self.kept)), max(classes, self.kept.shape[1])), np.nan)
        grown[:self.kept.shape[0], :self.kept.shape[1]] = self.kept
        classes_grown = np.full(len(grown), -1, np.int64)
        classes_grown[:len(self.kept_classes)] = self.kept_classes
        self.kept, self.kept_classes = grown, classes_grown

    def observe(self, scores, classes, weights, rows=None):
        """Add labeled rows (class id >= 0) of weight > 0; a NaN score: a class not known yet.
        ``scores``: of every row, or of ``rows`` only (ascending), which hold those kept_rows
        names, the only ones read."""
        self._grow(scores.shape[1])
        classes = self._counted(classes, weights)
        rows = np.arange(len(classes)) if rows is None else rows
        seen = _reservoir_add(np.ascontiguousarray(scores), rows, classes, self.seen,
                              self.kept, self.kept_classes)
        if seen < 0:
            raise ValueError("observe's scores lack a row the sample takes (kept_rows)")
        self.seen = int(seen)
        self.params = None

    @staticmethod
    def _counted(classes, weights):
        """The class of each row the sample counts, -1 for the others."""
        return np.where(weights > 0, classes, -1).astype(np.int64)

    def kept_rows(self, classes, weights, n_classes):
        """The rows of the next ``observe`` (over ``n_classes`` classes) that enter the sample:
        the only ones whose scores it reads, known from the count alone, so that the trainer
        scores those rows only (after RESERVOIR_ROWS rows, a share that falls as 1 / count)."""
        self._grow(n_classes)
        keeps = np.empty(len(classes), np.bool_)
        _reservoir_keeps(self._counted(classes, weights), self.seen, len(self.kept), keeps)
        return np.flatnonzero(keeps)

    @quietly
    def fit(self):
        rows = min(self.seen, len(self.kept))
        if rows == 0:
            self.params = {}
        else:
            beta, biases = fit_softmax(self.kept[:rows], self.kept_classes[:rows])
            self.params = {"beta": beta, "biases": biases.tolist()}
        return self.params

    @quietly
    def probabilities(self, scores):
        params = self.params if self.params is not None else self.fit()
        K = scores.shape[1]
        if not params:
            return np.full(scores.shape, 1.0 / max(K, 1))
        biases = np.zeros(K)
        known = min(K, len(params["biases"]))
        biases[:known] = params["biases"][:known]
        logits = params["beta"] * scores + biases
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return _top_class_first(e / e.sum(axis=1, keepdims=True), scores)

    @property
    def empty(self):
        return self.seen == 0

    def sample(self, width):
        """(the rows in use, NaN-padded to ``width`` classes, and their classes)."""
        rows = min(self.seen, len(self.kept))
        scores = np.full((rows, width), np.nan)
        scores[:, :self.kept.shape[1]] = self.kept[:rows]
        return scores, self.kept_classes[:rows].copy()

    def merged(self, other):
        """A uniform sample of both streams' rows, as one reservoir over them would hold (in
        distribution): of the merged sample's n rows, a hypergeometric number m comes from
        this stream's seen rows and n - m from the other's, each a uniform choice among its
        sample (itself uniform over its stream). The draws are seeded by the counts only, so
        merging the same samples gives the same bits (dist-train's retries, any worker count).
        Either sample as it is when the other saw nothing; both whole when they fit.
        Capacity: the reservoir's for the wider one's classes (dist-train's shards share
        theirs); a sample that already dropped rows gives at most as many as it holds."""
        width = max(self.kept.shape[1], other.kept.shape[1])
        (a, a_classes), (b, b_classes) = self.sample(width), other.sample(width)
        seen = self.seen + other.seen
        if other.empty or self.empty:
            scores, classes = (a, a_classes) if other.empty else (b, b_classes)
        elif seen <= _capacity(width) and len(a) == self.seen and len(b) == other.seen:
            scores, classes = np.concatenate([a, b]), np.concatenate([a_classes, b_classes])
        else:
            n = min(_capacity(width), seen, *(len(s) for s, whole in
                                              ((a, len(a) == self.seen), (b, len(b) == other.seen))
                                              if not whole))
            rng = np.random.default_rng([self.seen, other.seen, len(a), len(b), n])
            from_a = int(rng.hypergeometric(self.seen, other.seen, n))
            from_a = min(max(from_a, n - len(b)), len(a))
            pick_a = np.sort(rng.choice(len(a), from_a, replace=False))
            pick_b = np.sort(rng.choice(len(b), n - from_a, replace=False))
            scores = np.concatenate([a[pick_a], b[pick_b]])
            classes = np.concatenate([a_classes[pick_a], b_classes[pick_b]])
        return MulticlassCalibration(seen=seen, kept=scores, kept_classes=classes)

    def to_meta(self):
        rows = min(self.seen, len(self.kept))
        sample = self.kept[:rows].tolist()
        for row in np.flatnonzero(np.isnan(self.kept[:rows]).any(axis=1)):  # classes not known
            sample[row] = [None if math.isnan(x) else x for x in sample[row]]
        return usable({"method": self.method, "seen": self.seen, "scores": sample,
                       "classes": self.kept_classes[:rows].tolist(),
                       "params": self.params if self.params is not None else self.fit()})

    @classmethod
    def from_meta(cls, meta):
        """The saved sample; an empty one (a model that learned from no example, as train
        --allow-empty writes) has no class columns yet, and predicts uniform probabilities."""
        rows = meta["scores"]
        width = len(rows[0]) if rows else 0
        sample = np.array([[np.nan if x is None else x for x in row] for row in rows],
                          dtype=np.float64).reshape(len(rows), width)
        calibration = cls(seen=meta["seen"], kept=sample,
                          kept_classes=np.asarray(meta["classes"], np.int64))
        calibration.params = meta["params"]
        return calibration


# ---------------------------------------------------------------- choosing and loading

def check_method(method, algo, kind, gaussian):
    """Refuse, in one line, a --calibration the model cannot take."""
    if method not in METHODS:
        raise StreamherdError(f"unknown --calibration '{method}'; use {', '.join(METHODS)}")
    if kind == "regression" and method != "none":
        raise StreamherdError("--calibration maps a classifier's scores to probabilities; a "
                              "regression model (--loss squared) has none: drop it")
    if method == "probit" and not gaussian:
        raise StreamherdError(f"--calibration probit reads x' Sigma x, which {algo} has not (it "
                              f"is no Gaussian learner); use platt or isotonic")


def new(method, kind):
    """The calibration a new model of task ``kind`` learns (None: none)."""
    if method == "none" or kind == "regression":
        return None
    return MulticlassCalibration() if kind == "multiclass" else BinaryCalibration(method)


def of_meta(meta, method=None):
    """The calibration saved in a model's meta (None: the model has none, as every model saved
    before calibration existed), continued with ``method`` if given."""
    saved = meta.get("calibration")
    if method == "none" or (saved is None and method is None):
        return None
    if saved is None:
        return new(method, meta.get("task", "binary"))
    if saved["method"] == "softmax":
        return MulticlassCalibration.from_meta(saved)
    if method is not None and (method == "probit") != (saved["method"] == "probit"):
        raise StreamherdError(f"the model's calibration statistics are {saved['method']}'s, "
                              f"which --calibration {method} cannot continue; drop "
                              f"--calibration (platt and isotonic share theirs)")
    return BinaryCalibration.from_meta(saved, method)


def merged(parts):
    """The statistics of every part's stream (BinaryCalibration or MulticlassCalibration, in
    order; None: no calibration), folded left (dist-train: the model's, then each shard's)."""
    parts = [p for p in parts if p is not None]
    return functools.reduce(lambda total, part: total.merged(part), parts) if parts else None


def _reals(value, length=None):
    """Whether ``value`` is a list of finite numbers (of ``length`` if given)."""
    return isinstance(value, list) and (length is None or len(value) == length) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        for x in value)


def _params_ok(method, params, cells):
    if not isinstance(params, dict):
        return False
    if not params:
        return True
    keys = {"platt": ("a", "b"), "probit": ("a", "s2"), "isotonic": ("a", "b", "x", "p"),
            "softmax": ("beta", "biases")}[method]
    if set(params) != set(keys):
        return False
    scalars = [params[k] for k in keys if k not in ("x", "p", "biases")]
    if not _reals(scalars) or (method == "probit" and params["s2"] < 0):
        return False
    if method == "isotonic":
        return _reals(params["x"]) and _reals(params["p"], len(params["x"])) and \
            0 < len(params["x"]) <= cells
    return method != "softmax" or _reals(params["biases"])


def meta_ok(saved):
    """Whether a model's "calibration" meta is well formed: every list of the
    length and kind its method says, every number finite, the map's parameters those of the
    method."""
    if not isinstance(saved, dict) or saved.get("method") not in ("platt", "isotonic", "probit",
                                                                  "softmax"):
        return False
    try:
        if saved["method"] == "softmax":
            rows, classes = saved["scores"], saved["classes"]
            width = len(rows[0]) if isinstance(rows, list) and rows else 0
            # a reservoir keeps every row up to RESERVOIR_MIN_ROWS at least: fewer rows than
            # that of a count beyond them is a sample that lost its rows (or never had any)
            return isinstance(saved["seen"], int) and not isinstance(saved["seen"], bool) and \
                saved["seen"] >= len(rows) >= min(saved["seen"], RESERVOIR_MIN_ROWS) and \
                (width > 0 or not rows) and isinstance(classes, list) and \
                len(classes) == len(rows) and \
                all(isinstance(z, int) and not isinstance(z, bool) and 0 <= z < width
                    for z in classes) and \
                all(isinstance(row, list) and len(row) == width and
                    _reals([x for x in row if x is not None]) for row in rows) and \
                _params_ok("softmax", saved["params"], 0)
        probit = saved["method"] == "probit"
        size = PROBIT_MARGIN_BINS * PROBIT_SPREAD_BINS if probit else BINS
        cells = saved["cells"]
        names = ("positive", "negative", "margin_sums") + (("confidence_sums",) if probit else ())
        return isinstance(cells, list) and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < size for c in cells) \
            and len(set(cells)) == len(cells) and \
            all(_reals(saved[name], len(cells)) for name in names) and \
            all(x >= 0 for name in ("positive", "negative") for x in saved[name]) and \
            _params_ok(saved["method"], saved["params"], len(cells))
    except (KeyError, TypeError):
        return False
