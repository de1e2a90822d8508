"""What a bank's choice reads: the window of recent rows (RecentRows), and each member's
Scores on it (margin_scores of their margins, loss_scores of their losses) or on the holdout set."""
import math
from dataclasses import dataclass

import numpy as np

# the most recent first-pass rows the choice reads: 64k rows give a 0/1 loss to +-0.2 point (one
# standard error at 30%), and 11 members' margins of them take 5.8 MB
RECENT = 1 << 16


class RecentRows:
    """The last ``capacity`` rows added (label, importance weight, every member's margin; a
    TaskBank's: its loss), in a ring: the window the choice reads (streamherd.selection)."""

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
    ``spread``: the losses within it of the lowest are ranked by AUC (streamherd.selection);
    ``on``: the rows they are of ("progressive", "holdout")."""

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


def margin_scores(y, weight, margins, alive):
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


def loss_scores(weight, losses, alive):
    """Scores on the window's rows of members without margins to rank (TaskBank): each live
    member's weighted mean loss, and the standard error of the lowest, the weighted spread of
    its losses over the window's effective size (of a 0/1 loss: margin_scores' spread); no
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
