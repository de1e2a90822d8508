"""The tournament's statistics, over a table of test errors (one row per task, one column per
algorithm, at one noise level).

- mean rank (AROW paper, Table 1): rank the algorithms on each task (1 = lowest error, ties get
  the average rank), then average over tasks;
- win fraction (NHERD paper, Fig. 4): W[a, b] = the fraction of tasks on which a has a strictly
  lower test error than b (ties count for neither, so W[a, b] + W[b, a] <= 1);
- McNemar's test on one task: over the test examples, b = a right and b wrong, c = the reverse;
  the exact (binomial) test of b against c.
"""
import numpy as np
from scipy import stats

SIGNIFICANCE = 0.05


def mean_ranks(errors):
    """Mean rank of each column of ``errors`` (tasks x algorithms); a NaN error (a run that
    diverged) ranks last on its task."""
    errors = np.where(np.isnan(errors), np.inf, np.asarray(errors, float))
    return stats.rankdata(errors, method="average", axis=1).mean(axis=0)


def win_fractions(errors):
    """W[a, b]: fraction of tasks (rows) where algorithm a's error is strictly below b's."""
    errors = np.where(np.isnan(errors), np.inf, np.asarray(errors, float))
    wins = errors[:, :, None] < errors[:, None, :]
    return wins.mean(axis=0)


def mcnemar(correct_a, correct_b):
    """(b, c, p): test examples only a got right, only b got right, and the two-sided exact
    McNemar p-value (binomial test of b successes in b + c trials at 1/2; 1 when b + c = 0)."""
    correct_a = np.asarray(correct_a, bool)
    correct_b = np.asarray(correct_b, bool)
    only_a = int(np.count_nonzero(correct_a & ~correct_b))
    only_b = int(np.count_nonzero(~correct_a & correct_b))
    if only_a + only_b == 0:
        return only_a, only_b, 1.0
    return only_a, only_b, float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)


def mcnemar_tally(correct, alpha=SIGNIFICANCE):
    """For every pair of algorithms: on how many tasks a is significantly better than b
    (p < alpha and b > c). ``correct``: per task, a list (one per algorithm) of boolean vectors
    over the same test examples, or None where an algorithm has no predictions.
    Returns S[a, b] (tasks where a significantly beats b) and the number of tasks tested."""
    n_algos = len(correct[0]) if correct else 0
    better = np.zeros((n_algos, n_algos), np.int64)
    tested = np.zeros((n_algos, n_algos), np.int64)
    for per_algo in correct:
        for a in range(n_algos):
            for b in range(a + 1, n_algos):
                if per_algo[a] is None or per_algo[b] is None:
                    continue
                only_a, only_b, p = mcnemar(per_algo[a], per_algo[b])
                tested[a, b] += 1
                tested[b, a] += 1
                if p < alpha:
                    if only_a > only_b:
                        better[a, b] += 1
                    else:
                        better[b, a] += 1
    return better, tested
