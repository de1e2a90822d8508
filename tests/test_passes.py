"""train --passes (streamherd/passes.py): several passes, the holdout set, early termination,
the best pass's model and --save_per_pass, end to end through the CLI on a9a, checked against
runs on files built independently (the data twice, its first N lines) and against the held-out
loss computed here in numpy from the parsed rows and the saved model."""
import gzip
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from helpers import REPO, one_line_error


@pytest.fixture(scope="module")
def a9a_lines(data_dir):
    with gzip.open(data_dir / "a9a.svm.gz", "rb") as f:
        return f.read().splitlines(keepends=True)


@pytest.fixture
def head(a9a_lines, tmp_path):
    """A file of the first n lines of a9a (and, with ``tail``, one of the lines after)."""
    def write(n, name="head.svm", lines=None):
        path = tmp_path / name
        path.write_bytes(b"".join((lines if lines is not None else a9a_lines)[:n]))
        return path
    return write


def arrays(path):
    from streamherd.model import load_model

    return load_model(path)[1]


def assert_same_model(a, b):
    left, right = arrays(a), arrays(b)
    assert left.keys() == right.keys()
    for name in left:
        np.testing.assert_array_equal(left[name], right[name], err_msg=name)


def summary_value(stderr, key):
    match = re.search(rf"^{re.escape(key)} = (.*)$", stderr, re.M)
    assert match, stderr
    return match.group(1)


def zero_one_loss(model_path, rows):
    """The 0/1 loss of the model's mean (margin > 0: +1) on parsed rows, in plain numpy."""
    mean = arrays(model_path)["mean"]
    margins = np.array([sum(mean[s] * v for s, v in row["x"].items()) for row in rows])
    labels = np.array([row["label"] for row in rows])
    return float(np.mean(np.where(margins > 0, 1.0, -1.0) != labels))


@pytest.mark.parametrize("algo", ["pa2", "nherd-p"])
def test_two_passes_without_holdout_equal_the_data_twice(run_cli, a9a_lines, head, tmp_path,
                                                         algo):
    once = head(5000)
    twice = head(10000, "twice.svm", a9a_lines[:5000] * 2)
    proc = run_cli("train", once, "--algo", algo, "--passes", "2", "--holdout_off", "-f",
                   tmp_path / "passes.npz")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("train", twice, "--algo", algo, "-f", tmp_path / "twice.npz").returncode == 0
    assert_same_model(tmp_path / "passes.npz", tmp_path / "twice.npz")
    assert summary_value(proc.stderr, "weighted example sum") == "10000.000000"
    assert " h\n" not in proc.stderr   # no holdout set: no holdout rows


def test_holdout_losses_early_termination_and_best_model(run_cli, head, read_rows, tmp_path):
    """--holdout_after N: every held-out example comes after the pass's learning, so the
    holdout loss of pass k is the loss, on lines N+1.., of k passes over the first N lines."""
    n, total, passes = 2000, 3000, 8
    data = head(total)
    learned = head(n, "learned.svm")
    held_rows, _, _ = read_rows(data)
    held_rows = held_rows[n:]
    proc = run_cli("train", learned, "--algo", "pa2", "--passes", passes, "--holdout_off",
                   "--save_per_pass", "-f", tmp_path / "alone.npz")
    assert proc.returncode == 0, proc.stderr
    expected = [zero_one_loss(tmp_path / f"alone.pass{k}.npz", held_rows)
                for k in range(1, passes + 1)]
    best, stop, no_win = 0, passes, 0
    for k, loss in enumerate(expected):   # VW's rule, as written here
        if loss < expected[best] or k == 0:
            best, no_win = k, 0
        else:
            no_win += 1
            if no_win == 2:
                stop = k + 1
                break
    proc = run_cli("train", data, "--algo", "pa2", "--passes", passes, "--holdout_after", n,
                   "--early_terminate", 2, "-f", tmp_path / "m.npz")
    assert proc.returncode == 0, proc.stderr
    reported = [float(x) for x in
                summary_value(proc.stderr, "holdout 0/1 loss per pass").split(", ")]
    np.testing.assert_allclose(reported, expected[:stop], rtol=0, atol=1e-6)
    assert int(summary_value(proc.stderr, "passes used")) == stop
    assert int(summary_value(proc.stderr, "best pass")) == best + 1
    assert f"model from pass {best + 1} (best holdout 0/1 loss" in proc.stderr
    assert_same_model(tmp_path / "m.npz", tmp_path / f"alone.pass{best + 1}.npz")


def test_holdout_period_holds_out_every_kth_example(run_cli, head, tmp_path):
    data = head(1000)
    proc = run_cli("train", data, "--passes", 3, "--holdout_period", 4, "--early_terminate", 9,
                   "--algo", "pa2", "-f", tmp_path / "m.npz")
    assert proc.returncode == 0, proc.stderr
    assert summary_value(proc.stderr, "weighted example sum") == f"{3 * 750:.6f}"
    rows = [line for line in proc.stderr.splitlines() if re.match(r"^\d+\.\d+ ", line)]
    counters = [int(line.split()[2]) for line in rows]
    # rows of the first pass show the progressive loss, later ones the holdout loss
    assert all(line.endswith(" h") == (c > 1000) for line, c in zip(rows, counters)), rows
    assert any(c > 1000 for c in counters)


def test_stdin_is_spilled_and_gives_the_file_model(run_cli, head, tmp_path):
    data = head(3000)
    from_file = run_cli("train", data, "--passes", 3, "-f", tmp_path / "file.npz")
    from_stdin = run_cli("train", "--passes", 3, "-f", tmp_path / "stdin.npz",
                         input=data.read_bytes())
    assert from_file.returncode == 0 and from_stdin.returncode == 0, from_stdin.stderr
    assert_same_model(tmp_path / "file.npz", tmp_path / "stdin.npz")
    spill = re.search(r"standard input is copied to (\S+) for the 3 passes", from_stdin.stderr)
    assert spill, from_stdin.stderr
    assert not os.path.exists(spill.group(1))


def test_save_per_pass_writes_each_pass(run_cli, head, tmp_path):
    data = head(2000)
    proc = run_cli("train", data, "--passes", 3, "--holdout_off", "--save_per_pass", "-f",
                   tmp_path / "m.npz")
    assert proc.returncode == 0, proc.stderr
    for k in (1, 2):
        assert run_cli("train", data, "--passes", k, "--holdout_off", "-f",
                       tmp_path / f"k{k}.npz").returncode == 0
        assert_same_model(tmp_path / f"m.pass{k}.npz", tmp_path / f"k{k}.npz")
    assert_same_model(tmp_path / "m.pass3.npz", tmp_path / "m.npz")


@pytest.mark.parametrize("flags, expected", [
    (["--passes", "0"], "--passes 0"),
    (["--passes", "2", "--holdout_period", "1"], "--holdout_period 1"),
    (["--passes", "2", "--save_per_pass"], "with -f"),
    (["--passes", "2", "--early_terminate", "0"], "--early_terminate 0"),
])
def test_user_errors(run_cli, tmp_path, flags, expected):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n-1 2:1\n")
    line = one_line_error(run_cli("train", data, *flags))
    assert expected in line


def test_interrupted_while_spilling_stdin_removes_the_copy_and_keeps_the_model(head, tmp_path):
    """Ctrl-C while standard input is being copied (the input never ends): exit 130, the
    temporary copy removed, the existing model left as it was."""
    model = tmp_path / "m.npz"
    model.write_bytes(b"the user's model")
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "train", "--passes", "2",
                             "-f", model], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO)
    proc.stdin.write(head(100).read_bytes())
    proc.stdin.flush()
    spill = None
    while spill is None:
        line = proc.stderr.readline().decode()
        assert line, "the run ended before copying standard input"
        spill = re.search(r"standard input is copied to (\S+) for", line)
    assert os.path.exists(spill.group(1))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted; no model was written" in err
    assert not os.path.exists(spill.group(1))
    assert model.read_bytes() == b"the user's model"


def test_exact_shuffle_is_the_documented_permutation_of_each_pass(run_cli, a9a_lines, head,
                                                                 tmp_path):
    """--shuffle on an input that fits in memory: pass k reads the rows in the order
    numpy.random.default_rng([seed, k]).permutation(n), as README says."""
    n, seed = 3000, 5
    data = head(n)
    orders = [np.random.default_rng([seed, k]).permutation(n) for k in (1, 2)]
    by_hand = head(2 * n, "by_hand.svm", [a9a_lines[i] for order in orders for i in order])
    proc = run_cli("train", data, "--passes", 2, "--holdout_off", "--shuffle", "--random_seed",
                   seed, "--algo", "nherd-p", "-f", tmp_path / "shuffled.npz")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("train", by_hand, "--algo", "nherd-p", "-f",
                   tmp_path / "by_hand.npz").returncode == 0
    assert_same_model(tmp_path / "shuffled.npz", tmp_path / "by_hand.npz")


def test_shuffle_keeps_the_holdout_set_and_windows_beyond_memory(run_cli, a9a_lines, head,
                                                                 tmp_path):
    """The held-out examples are the same in every shuffled pass (counted in input order: the
    lines after the 15000th, which alone have feature 999999, never reach the weights), and an
    input larger than --shuffle_memory is shuffled window by window: another order than the
    exact shuffle's, the same examples, reproducible with its seed."""
    n, learned = 20000, 15000
    marked = a9a_lines[:learned] + [line.rstrip() + b" 999999:1\n"
                                    for line in a9a_lines[learned:n]]
    data = head(n, "marked.svm", marked)
    common = ["train", data, "--passes", 3, "--holdout_after", learned, "--early_terminate", 9,
              "--shuffle", "--algo", "pa2"]
    exact = run_cli(*common, "-f", tmp_path / "exact.npz")
    windowed = run_cli(*common, "--shuffle_memory", 1, "-f", tmp_path / "windowed.npz")
    again = run_cli(*common, "--shuffle_memory", 1, "-f", tmp_path / "again.npz")
    first_lines = run_cli("train", head(learned), "--algo", "pa2", "-f", tmp_path / "first.npz")
    for proc in (exact, windowed, again, first_lines):
        assert proc.returncode == 0, proc.stderr
    for proc in (exact, windowed):
        assert summary_value(proc.stderr, "weighted example sum") == f"{3 * learned:.6f}"
    support = np.flatnonzero(arrays(tmp_path / "first.npz")["mean"])
    for name in ("exact", "windowed"):
        np.testing.assert_array_equal(np.flatnonzero(arrays(tmp_path / f"{name}.npz")["mean"]),
                                      support)
    assert_same_model(tmp_path / "windowed.npz", tmp_path / "again.npz")
    assert not np.array_equal(arrays(tmp_path / "exact.npz")["mean"],
                              arrays(tmp_path / "windowed.npz")["mean"])
