"""A file appended to while it is read is read to the end found, in whole lines: the run learns
exactly the file's first N lines, for the N it read, never a line its writer had only half
written."""
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import run_cli

from streamherd.model import load_model

# appends lines of 8 features, each written in three pieces a millisecond apart: a reader that
# reaches the end of the file most often finds it inside a line
WRITER = r"""
import random, sys, time
random.seed(int(sys.argv[2]))
with open(sys.argv[1], "a") as f:
    print("started", flush=True)
    stop = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < stop:
        line = f"{random.choice([1, -1])} " + " ".join(
            f"{j}:{random.random():.3f}" for j in sorted(random.sample(range(1, 500), 8))) + "\n"
        for piece in (line[:2], line[2:9], line[9:]):
            f.write(piece)
            f.flush()
            time.sleep(0.001)
"""


def write_lines(path, n, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(n):
            slots = np.sort(rng.choice(np.arange(1, 500), 8, replace=False))
            f.write(f"{rng.choice([1, -1])} "
                    + " ".join(f"{j}:{rng.random():.3f}" for j in slots) + "\n")


# each seed a writer appending for 3 s while the run reads: the first in every pytest, the
# other timings a slow scenario
@pytest.mark.parametrize("seed", [1, *(pytest.param(seed, marks=pytest.mark.slow)
                                       for seed in (2, 3, 4))])
def test_a_file_appended_to_while_read_is_learned_in_whole_lines(tmp_path, seed):
    grow = tmp_path / "grow.svm"
    write_lines(grow, 3000, seed)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(grow), str(seed), "3"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "started\n"
        time.sleep(0.05 * seed)
        # (one learner: a bank's -p follows its leader chunk by chunk, and chunks end where
        # the reads do)
        proc = run_cli("train", "--algo", "pa2", grow, "-f", tmp_path / "grown.npz", "-p",
                       tmp_path / "grown.txt", "--quiet")
    finally:
        writer.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    predictions = (tmp_path / "grown.txt").read_text().splitlines()
    read = len(predictions)
    lines = grow.read_text().splitlines(keepends=True)
    assert 3000 <= read <= len(lines)
    # the same run on the file's first `read` lines, written apart: the same model and answers
    prefix = tmp_path / "prefix.svm"
    prefix.write_text("".join(lines[:read]))
    assert run_cli("train", "--algo", "pa2", prefix, "-f", tmp_path / "prefix.npz", "-p",
                   tmp_path / "prefix.txt", "--quiet").returncode == 0
    assert (tmp_path / "prefix.txt").read_text().splitlines() == predictions
    grown_meta, grown = load_model(tmp_path / "grown.npz")
    prefix_meta, expected = load_model(tmp_path / "prefix.npz")
    assert grown_meta["examples"] == prefix_meta["examples"] == read
    for name in expected:
        assert grown[name].tobytes() == expected[name].tobytes(), name


def test_a_last_line_without_a_newline_is_still_a_line(tmp_path):
    """A file that does not grow: its unterminated last line is learned as before."""
    data = tmp_path / "d.svm"
    write_lines(data, 50)
    data.write_text(data.read_text() + "1 3:0.5")
    proc = run_cli("train", data, "-f", tmp_path / "m.npz", "-p", tmp_path / "p.txt", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "p.txt").read_text().splitlines()) == 51
