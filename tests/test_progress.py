"""Progressive validation and binary labels against per-example Python: the table's rows, the
summary, and y, however the stream is cut into chunks (the 0/1 loss: test_tasks.py)."""
import io
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamherd.errors import StreamherdError
from streamherd.labels import BinaryLabels
from streamherd.progress import ProgressiveValidation, format_row


def reference_table(importance, loss, lengths):
    """VW's rule, one example at a time: a row where the weighted labeled count reaches 1, then
    twice the count at the last row; returns (printed rows, weight, loss sum, labeled, nonzero
    losses of weight > 0)."""
    rows, weight, loss_sum, labeled, nonzero, next_row = [], 0.0, 0.0, 0, 0, 1.0
    last_weight = last_loss = 0.0
    for i, (s, example_loss) in enumerate(zip(importance, loss)):
        if not math.isnan(example_loss):
            weight += s
            loss_sum += example_loss * s
            labeled += 1
            nonzero += example_loss > 0 and s > 0   # an example of importance 0 is no mistake
        if weight >= next_row:
            since = (loss_sum - last_loss) / max(weight - last_weight, 1e-300)
            rows.append(format_row(loss_sum / weight, since, i + 1, weight, f"l{i}", f"p{i}",
                                   int(lengths[i])))
            last_weight, last_loss = weight, loss_sum
            next_row = 2.0 * weight
    return rows, weight, loss_sum, labeled, nonzero


def run_table(importance, loss, lengths, cuts, quiet=False):
    stream = io.StringIO()
    progress = ProgressiveValidation(quiet=quiet, stream=stream)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    for start, end in zip(cuts[:-1], cuts[1:]):
        progress.add_chunk(importance[start:end], loss[start:end], indptr[start:end + 1],
                           lambda i, start=start: (f"l{start + i}", f"p{start + i}"))
    summary = progress.finish()
    printed = stream.getvalue().split("\n")
    return progress, summary, printed


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(0, 2 ** 32 - 1), st.sampled_from(["ones", "weights"]))
def test_table_and_sums_match_one_example_at_a_time(n, seed, kind):
    rng = np.random.default_rng(seed)
    # 0/1 and squared losses, unlabeled lines (NaN), importance 0 and fractional or large ones
    loss = np.where(rng.random(n) < 0.5, rng.integers(0, 2, n).astype(float), rng.random(n) * 3)
    loss[rng.random(n) < 0.15] = np.nan
    importance = (np.ones(n) if kind == "ones" else
                  np.choose(rng.integers(0, 4, n), [0.0, 0.25, 1.0, 7.5]) * rng.random(n) * 4)
    lengths = rng.integers(0, 50, n)
    # repeated cuts make empty chunks (a block of blank lines)
    cuts = np.sort(np.concatenate([[0, n], rng.integers(0, n + 1, rng.integers(0, 12))]))
    rows, weight, loss_sum, labeled, nonzero = reference_table(importance, loss, lengths)

    progress, summary, printed = run_table(importance, loss, lengths, cuts)
    table = [line for line in printed if line and line[0].isdigit()]
    assert table == rows
    assert summary["number of examples"] == n
    assert summary["weighted example sum"] == pytest.approx(weight, rel=1e-12)
    assert progress.loss_sum == pytest.approx(loss_sum, rel=1e-12, abs=1e-12)
    assert progress.labeled == labeled
    assert summary["mistakes"] == nonzero
    assert summary["total feature number"] == int(lengths.sum())

    quiet, quiet_summary, quiet_printed = run_table(importance, loss, lengths, cuts, quiet=True)
    assert quiet_printed == [""]
    untimed = {k: v for k, v in summary.items() if "second" not in k}
    assert {k: v for k, v in quiet_summary.items() if "second" not in k} == \
        pytest.approx(untimed, nan_ok=True)


def test_after_a_heavy_example_the_next_row_is_twice_its_weight():
    # weight 5 at once: a row at example 1 (threshold 1), the next at weight 10 (VW 9.11 prints
    # its rows at examples 1 and 6 of this stream: test_rows_as_vw_prints_them)
    importance = np.array([5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    loss = np.array([1.0, 0.0, np.nan, 0.0, 0.0, 0.0, 0.0])
    _, _, printed = run_table(importance, loss, np.ones(7, np.int64), [0, 1, 7])
    counters = [int(line.split()[2]) for line in printed if line and line[0].isdigit()]
    assert counters == [1, 7]   # the unlabeled third line adds no weight


@pytest.mark.parametrize("flags", [[], ["-P", "3"], ["-P", "1.5"], ["-P", "2.0"], ["-P", "40"]])
def test_rows_as_vw_prints_them(run_cli, tmp_path, flags):
    """The example counter and weight of every row, against VW's own table for the same
    importance-weighted file and -P."""
    import subprocess
    import sys

    rng = np.random.default_rng(5)
    path = tmp_path / "weighted.vw"
    path.write_text("".join(f"{rng.choice(['1', '-1'])} {rng.choice([1, 1, 0.5, 3, 7])} "
                            f"|f a{i % 13} b{i % 7}\n" for i in range(400)))

    def columns(stderr):
        return [tuple(line.split()[2:4]) for line in stderr.splitlines()
                if line[:1].isdigit() and len(line.split()) >= 7]

    ours = run_cli("train", path, *flags)
    assert ours.returncode == 0, ours.stderr
    vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(path), *flags],
                        capture_output=True, text=True)
    assert vw.returncode == 0, vw.stderr
    assert len(columns(vw.stderr)) > 3
    assert columns(ours.stderr) == columns(vw.stderr)


def chunk_of(labels):
    labels = np.asarray(labels, float)
    return SimpleNamespace(labels=labels, line_numbers=np.arange(1, len(labels) + 1),
                           source="data.svm")


def test_binary_labels_learn_the_two_values_then_map_every_chunk():
    labels = BinaryLabels()
    chunks = [[np.nan, np.nan], [1.0, np.nan, 1.0], [0.0, 1.0, np.nan, 0.0], [1.0, 0.0, 0.0, 1.0]]
    for values in chunks:
        y = labels.observe(chunk_of(values))
        expected = np.where(np.isnan(values), np.nan, np.where(np.array(values) > 0, 1.0, -1.0))
        np.testing.assert_array_equal(y, expected)
    assert (labels.negative, labels.positive) == (0.0, 1.0)


def test_binary_labels_map_an_infinite_label_by_its_sign():
    labels = BinaryLabels()
    np.testing.assert_array_equal(labels.observe(chunk_of([np.inf, -1.0])), [1.0, -1.0])
    np.testing.assert_array_equal(labels.observe(chunk_of([-1.0, np.inf, np.nan])),
                                  [-1.0, 1.0, np.nan])


@pytest.mark.parametrize("second, message", [
    ([1.0, 2.0], "data.svm:2: label 2 is a third label value after 0 and 1"),
    ([3.0, -1.0], "data.svm:1: label 3 is a third label value after 0 and 1"),
    ([-2.0], "data.svm:1: label -2 is a third label value after 0 and 1"),
])
def test_binary_labels_name_the_line_of_a_third_value(second, message):
    labels = BinaryLabels()
    labels.observe(chunk_of([0.0, 1.0]))
    with pytest.raises(StreamherdError, match=message):
        labels.observe(chunk_of(second))


def test_binary_labels_reject_two_values_on_one_side():
    labels = BinaryLabels()
    labels.observe(chunk_of([1.0]))
    with pytest.raises(StreamherdError, match=r"data.svm:3: label 2 is positive like the earlier "
                                              r"label 1"):
        labels.observe(chunk_of([np.nan, 1.0, 2.0]))
