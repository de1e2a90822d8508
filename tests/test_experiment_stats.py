"""Tournament arithmetic on hand-made tables: mean ranks, win fractions, McNemar's test."""
import math

import numpy as np
import pytest

from streamherd.experiment import stats
from streamherd.experiment.report import NoiseLevel, claim_checks

# tasks x algorithms (A, B, C); NaN: A diverged on the last task
ERRORS = np.array([
    [0.10, 0.20, 0.30],
    [0.20, 0.10, 0.30],
    [0.10, 0.10, 0.05],
    [np.nan, 0.40, 0.30],
])


def test_mean_ranks_by_hand():
    # ranks per task, worked out by hand (ties share the average, NaN ranks last):
    # A: 1, 2, 2.5, 3   B: 2, 1, 2.5, 2   C: 3, 3, 1, 1
    assert stats.mean_ranks(ERRORS) == pytest.approx([8.5 / 4, 7.5 / 4, 8 / 4])


def test_win_fractions_by_hand():
    # A beats B on task 1 only; B beats A on tasks 2 and 4 (task 3 is a tie);
    # A beats C on 1, 2 and C beats A on 3, 4; B beats C on 1, 2 and C beats B on 3, 4
    expected = np.array([
        [0, 1 / 4, 2 / 4],
        [2 / 4, 0, 2 / 4],
        [2 / 4, 2 / 4, 0],
    ])
    assert stats.win_fractions(ERRORS) == pytest.approx(expected)


def exact_mcnemar_p(b, c):
    """Two-sided exact McNemar: twice the smaller binomial tail at 1/2, capped at 1."""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def test_mcnemar_counts_and_p_value_by_hand():
    a = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0], bool)
    b = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0], bool)
    only_a, only_b, p = stats.mcnemar(a, b)
    assert (only_a, only_b) == (7, 1)
    assert p == pytest.approx(exact_mcnemar_p(7, 1)) and p == pytest.approx(18 / 256)
    assert stats.mcnemar(a, a) == (0, 0, 1.0)


def test_mcnemar_tally_counts_significant_tasks():
    a1 = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0], bool)
    b1 = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0], bool)   # p = 0.07: not significant
    a2 = np.zeros(20, bool)
    b2 = np.ones(20, bool)                                      # b better, p = 2^-19
    correct = [[a1, b1, a1], [a2, b2, None]]
    better, tested = stats.mcnemar_tally(correct)
    assert better.tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]
    assert tested.tolist() == [[0, 2, 1], [2, 0, 1], [1, 1, 0]]


def _level(noise, errors):
    return NoiseLevel(noise, [f"t{i}" for i in range(len(errors))], np.array(errors), [])


def test_claims_follow_the_win_fractions():
    algos = ["nherd-p", "arow-p"]
    levels = [_level(0.0, [[0.1, 0.2], [0.2, 0.1], [0.3, 0.3]]),   # 1/3 each: no lead
              _level(0.3, [[0.1, 0.2], [0.2, 0.3], [0.3, 0.2]])]   # nherd-p 2/3, arow-p 1/3
    checks = {description.split(" (")[0]: verdict
              for description, _, verdict in claim_checks(levels, algos)}
    assert checks["NHERD_P beats AROW_P"] == "agrees at some noise levels only"
    assert checks["NHERD_P's lead over AROW_P grows with noise"] == "agrees"
    assert len(checks) == 2   # the other claims need algorithms that did not run


def test_choice_prefers_low_error_then_fewer_passes_then_the_default():
    from streamherd.experiment.runner import choose

    values = (0.25, 1.0, 4.0)
    nan = np.nan
    errors = np.array([[0.3, 0.1, 0.1],     # value 0.25: 0.1 after 2 passes
                       [0.2, 0.1, 0.05],    # value 1: 0.05 after 3 passes, the lowest
                       [nan, nan, nan]])    # value 4 diverged
    assert choose(errors, values, 1.0) == (2, 1)
    tied = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.0]])
    # 1 pass; 0.25 and 4 are equally near the default 1: the earlier one
    assert choose(tied, values, 1.0) == (0, 0)
    assert choose(tied, values, 4.0) == (0, 2)
    assert choose(np.array([[0.2, 0.1]]), (None,), None) == (1, 0)


def test_grid_values_parse_lists_and_power_ranges():
    from streamherd.errors import StreamherdError
    from streamherd.experiment.command import parse_values

    assert parse_values("2^-2..2^2", "x") == (0.25, 0.5, 1.0, 2.0, 4.0)
    assert parse_values("2^-8..2^8:4", "x") == (2 ** -8, 2 ** -4, 1.0, 16.0, 256.0)
    assert parse_values("0.5, 2^3,7", "x") == (0.5, 8.0, 7.0)
    for bad in ("2^3..2^1", "1..2", "2^1..2^3:0", ""):
        with pytest.raises(StreamherdError):
            parse_values(bad, "x")
