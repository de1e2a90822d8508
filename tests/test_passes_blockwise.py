"""train --shuffle beyond --shuffle_memory (streamherd/passes.py): the block-wise shuffle. The
order of each pass is checked against the documented draws (default_rng([seed, pass]): the
block order, then the rows of each window) on chunks made here, and end to end through the CLI
on a generated VW file whose tags number its lines, read back from -p (one prediction and tag
per example seen, in the order seen): every pass sees every example once, the passes and seeds
differ, a seed repeats, the holdout set is the same, gzip and stdin inputs work, and the spill
is removed after success, a malformed line and Ctrl-C."""
import gzip
import os
import random
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from streamherd.io.csr import Chunk
from streamherd.passes import PassChunks, Passes

from helpers import REPO

SPILL_NOTE = re.compile(r"copied to (\S+streamherd-shuffle-\S+\.spill) for the block-wise")


def numbered_chunk(block, rows, features):
    """A chunk of ``rows`` examples whose labels are (block, row) coded as block * 10^6 + row,
    with ``features`` features each (over 1 MiB of arrays for 1000 x 100)."""
    indptr = np.arange(rows + 1, dtype=np.int64) * features
    nothing = np.full(rows, -1, np.int64)
    return Chunk(source="made", block=np.zeros(0, np.uint8),
                 labels=block * 1e6 + np.arange(rows, dtype=np.float64),
                 importance=np.ones(rows), line_numbers=np.arange(rows, dtype=np.int64) + 1,
                 indptr=indptr, indices=np.zeros(rows * features, np.int32),
                 values=np.ones(rows * features), tag_start=nothing, tag_end=nothing,
                 label_start=nothing, label_end=nothing, n_lines=rows, bad_lines=0,
                 n_bytes=rows * 10)


class MadeReader:
    """A reader of made chunks, its arrays reused between chunks as ChunkReader's are."""

    def __init__(self, blocks, rows, features):
        self.blocks, self.rows, self.features = blocks, rows, features
        self.bytes_done = 0

    def __iter__(self):
        for block in range(self.blocks):
            self.bytes_done += self.rows * 10
            yield numbered_chunk(block, self.rows, self.features)


def seen_labels(chunks):
    return np.concatenate([chunk.labels for chunk in chunks])


def test_each_later_pass_is_the_documented_block_order_then_rows(tmp_path, monkeypatch):
    """Chunks of 1000 rows, each over 1 MiB (so a window of --shuffle_memory 1 is one block):
    pass 1 reads the blocks in input order, rows permuted; pass k > 1 reads block
    rng.permutation(n_blocks) order, then each block's rows in rng.permutation(rows) order, with
    rng = default_rng([seed, k]); the spill lies in TMPDIR during the run, gone after it."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    n_blocks, rows, seed = 7, 1000, 11
    passes = Passes(count=3, shuffle=True, random_seed=seed, shuffle_memory_mib=1,
                    holdout_off=True)
    notes = []
    with PassChunks(passes, lambda: pytest.fail("the inputs were read again"),
                    MadeReader(n_blocks, rows, 100), notes.append) as chunks:
        for k in (1, 2, 3):
            rng = np.random.default_rng([seed, k])
            blocks = range(n_blocks) if k == 1 else rng.permutation(n_blocks)
            expected = np.concatenate([block * 1e6 + rng.permutation(rows) for block in blocks])
            np.testing.assert_array_equal(seen_labels(chunks.of_pass(k)), expected)
            assert len(os.listdir(tmp_path)) == 1
    assert len(notes) == 1 and str(tmp_path) in notes[0]
    assert os.listdir(tmp_path) == []


def test_an_input_of_one_window_is_shuffled_exactly_in_memory(tmp_path, monkeypatch):
    """Small chunks that fit one window: no spill, pass k a permutation of all the rows."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    passes = Passes(count=2, shuffle=True, random_seed=3, holdout_off=True)
    with PassChunks(passes, lambda: pytest.fail("the inputs were read again"),
                    MadeReader(3, 50, 2), lambda text: pytest.fail(text)) as chunks:
        all_rows = seen_labels([numbered_chunk(b, 50, 2) for b in range(3)])
        for k in (1, 2):
            order = np.random.default_rng([3, k]).permutation(150)
            np.testing.assert_array_equal(seen_labels(chunks.of_pass(k)), all_rows[order])
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def numbered(tmp_path_factory):
    """A VW file of 40,000 lines (5 MB, several 1 MiB blocks) tagged with their line numbers."""
    rng = random.Random(1)
    path = tmp_path_factory.mktemp("blockwise") / "numbered.vw"
    with open(path, "w") as f:
        for i in range(1, 40001):
            features = " ".join(f"f{rng.randrange(5000)}:{rng.random():.3f}" for _ in range(10))
            f.write(f"{rng.choice([-1, 1])} 'r{i}| {features}\n")
    return path


def passes_seen(predictions, n_passes):
    """The line numbers of the examples of each pass, in the order seen, from -p's tags."""
    tags = [int(line.split()[1][1:]) for line in predictions.read_text().splitlines()]
    assert len(tags) % n_passes == 0
    size = len(tags) // n_passes
    return [tags[k * size:(k + 1) * size] for k in range(n_passes)]


def shuffled_run(run_cli, tmp_path, data, seed, name, *flags, input=None):
    predictions = tmp_path / f"{name}.txt"
    proc = run_cli("train", data, "--passes", 3, "--shuffle", "--shuffle_memory", 1,
                   "--random_seed", seed, "-p", predictions, *flags, input=input)
    assert proc.returncode == 0, proc.stderr
    spill = SPILL_NOTE.search(proc.stderr)
    assert spill, proc.stderr
    assert not os.path.exists(spill.group(1))
    return passes_seen(predictions, 3)


def test_every_pass_sees_every_example_once_in_its_own_order(run_cli, numbered, tmp_path):
    """Each pass is a permutation of the 40,000 lines; pass 1 has its windows in input order
    (its first rows come from the first lines), the later passes their blocks permuted (their
    first rows come from elsewhere), every pass and seed in another order, a seed repeated in
    the same."""
    first = shuffled_run(run_cli, tmp_path, numbered, 0, "first", "--holdout_off")
    again = shuffled_run(run_cli, tmp_path, numbered, 0, "again", "--holdout_off")
    other = shuffled_run(run_cli, tmp_path, numbered, 1, "other", "--holdout_off")
    lines = list(range(1, 40001))
    for run in (first, other):
        for seen in run:
            assert sorted(seen) == lines
    assert first == again
    assert len({tuple(seen) for seen in first + other}) == 6
    window = 1000   # fewer rows than any window of 1 MiB of parsed rows holds
    assert max(first[0][:window]) < 10000
    assert any(min(seen[:window]) > 10000 for seen in first[1:] + other[1:])


def test_the_holdout_set_is_the_same_in_every_pass(run_cli, numbered, tmp_path):
    """--holdout_period 7: the held-out examples are the 7th, 14th, ... lines (counted in input
    order) in every pass; the weighted example sum counts the others, three times."""
    predictions = tmp_path / "p.txt"
    proc = run_cli("train", numbered, "--passes", 3, "--shuffle", "--shuffle_memory", 1,
                   "--holdout_period", 7, "--early_terminate", 9, "-p", predictions)
    assert proc.returncode == 0, proc.stderr
    learned = 40000 - 40000 // 7
    assert re.search(rf"^weighted example sum = {3 * learned}\.000000$", proc.stderr, re.M)
    for seen in passes_seen(predictions, 3):
        assert sorted(seen) == list(range(1, 40001))


def test_gzip_and_stdin_inputs_give_the_file_order(run_cli, numbered, tmp_path):
    """The same blocks from a gzip file and from standard input: the same order as the file."""
    from_file = shuffled_run(run_cli, tmp_path, numbered, 4, "file", "--holdout_off")
    packed = tmp_path / "numbered.vw.gz"
    packed.write_bytes(gzip.compress(numbered.read_bytes()))
    assert shuffled_run(run_cli, tmp_path, packed, 4, "gz", "--holdout_off") == from_file
    assert shuffled_run(run_cli, tmp_path, "-", 4, "stdin", "--holdout_off",
                        input=numbered.read_bytes()) == from_file


def test_a_malformed_line_after_the_first_window_removes_the_spill(run_cli, numbered, tmp_path):
    data = tmp_path / "bad.vw"
    data.write_bytes(numbered.read_bytes() + b"oops |x\n")
    model = tmp_path / "m.npz"
    proc = run_cli("train", data, "--passes", 2, "--shuffle", "--shuffle_memory", 1, "-f", model)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "bad.vw:40001: bad label 'oops'" in proc.stderr.splitlines()[-1]
    spill = SPILL_NOTE.search(proc.stderr)
    assert spill and not os.path.exists(spill.group(1))
    assert not model.exists()


def test_ctrl_c_removes_the_spill_and_keeps_the_model(numbered, tmp_path):
    """An input that pauses (a FIFO whose writer stops after the first blocks): Ctrl-C once the
    spill is made; exit 130, the spill removed, the existing model left as it was."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    model = tmp_path / "m.npz"
    model.write_bytes(b"the user's model")
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "train", fifo, "--passes", "2",
                             "--shuffle", "--shuffle_memory", "1", "-f", model],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    with open(fifo, "wb") as writer:
        writer.write(numbered.read_bytes()[:4 << 20])
        writer.flush()
        spill = None
        while spill is None:
            line = proc.stderr.readline().decode()
            assert line, "the run ended before spilling"
            spill = SPILL_NOTE.search(line)
        assert os.path.exists(spill.group(1))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert not os.path.exists(spill.group(1))
    assert model.read_bytes() == b"the user's model"
