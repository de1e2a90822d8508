"""auto's race (successive halving, Bank.race): at each checkpoint of the first pass the worse
half of the members still learning stop, ranked by the final choice's own rule on the later half
of the rows so far; those kept learn on exactly as their single learners, and the last one left
learns alone with its own kernel. --race 0 (and --save-bank) keep every member to the end."""
import subprocess
import sys

import numpy as np
import pytest

from streamherd import tasks
from streamherd.io.reader import ChunkReader
from streamherd.learners import create
from streamherd.model import ModelFlags, OnlineModel, load_model
from streamherd.selection import PackedBank, TaskBank

from helpers import one_line_error
from test_auto import one_grid, pairwise_auc, random_chunks


def race_order(rows, alive):
    """The members learning (``alive``), best first, by the choice's rule computed here from
    ``rows`` (label, weight, every member's progressive margin): on the later half of the rows,
    those within one standard error of the lowest 0/1 loss first, by AUC, then the others by
    loss."""
    window = rows[len(rows) // 2:]
    y = np.array([r[0] for r in window])
    w = np.array([r[1] for r in window])
    m = np.array([r[2] for r in window])
    losses = w @ ((m > 0) != (y > 0)[:, None]) / w.sum()
    lowest = losses[alive].min()
    spread = np.sqrt(lowest * (1 - lowest) * (w ** 2).sum()) / w.sum()
    live = np.flatnonzero(alive)
    return sorted(live, key=lambda k: (losses[k] > lowest + spread,
                                       -pairwise_auc(m[:, k], y, w)
                                       if losses[k] <= lowest + spread else losses[k]))


@pytest.mark.parametrize("threads", [1, 2])
def test_each_checkpoint_stops_the_worse_half_and_the_last_member_learns_on_alone(threads):
    """Eleven arow-p members raced every 100 rows, over chunks of about 360 learned rows (400
    rows, some unlabeled or of weight 0): one checkpoint passed in each of the first four
    chunks (the others in the same chunk count once) leaves 6, 3, 2, then one member, learning
    alone; at every
    checkpoint the members kept are the better half by the choice's rule, computed here from
    their single learners' margins; the survivor's state and its progressive margins are its
    single learner's throughout."""
    chunks, dim = random_chunks(7, chunks=8, n=400)
    bank = PackedBank(tasks.BinaryTask(), one_grid("arow-p", "r"), dim, {}, threads=threads)
    bank.race_after(100)
    singles = [create(m.algo, dim, m.options({}), task="binary") for m in bank.members]
    rows, live_counts, survivor_margins = [], [], []
    for y, importance, indptr, indices, values in chunks:
        alive_before = bank.alive.copy()
        ours = np.empty(len(y))
        bank.learn(y, importance, indptr, indices, values, ours)
        margins = np.empty((len(y), len(singles)))
        for k, single in enumerate(singles):
            single.learn(y, importance, indptr, indices, values, margins[:, k])
        learned = ~np.isnan(y) & (importance > 0)
        rows += zip(y[learned], importance[learned], margins[learned])
        stopped = alive_before & ~bank.alive
        if stopped.any():
            kept = -(-alive_before.sum() // 2)
            assert sorted(np.flatnonzero(bank.alive)) == \
                sorted(race_order(rows, alive_before)[:kept])
            assert (bank.dropped_at[stopped] == bank.rows_learned).all()
        live_counts.append(int(bank.alive.sum()))
        if alive_before.sum() == 1:   # learned alone: the leader's margins are its own
            survivor_margins.append((ours, margins[:, bank.alone]))
    assert live_counts == [6, 3, 2, 1, 1, 1, 1, 1]
    assert bank.alone is not None and len(survivor_margins) == 4
    for ours, theirs in survivor_margins:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    k = bank.alone
    for key, theirs in singles[k].state().items():
        np.testing.assert_allclose(bank.learners[k].state()[key], theirs, rtol=0, atol=1e-12)
    assert bank.chosen() == k
    assert (bank.failed_at == -1).all()


def test_race_zero_keeps_every_member_to_the_end():
    chunks, dim = random_chunks(7, chunks=6, n=400)
    bank = PackedBank(tasks.BinaryTask(), one_grid("arow-p", "r"), dim, {})
    bank.race_after(0)
    for y, importance, indptr, indices, values in chunks:
        bank.learn(y, importance, indptr, indices, values, np.empty(len(y)))
    assert bank.alive.all() and (bank.dropped_at == -1).all()


def test_a_task_bank_races_its_members_too(tmp_path):
    """A multiclass bank (TaskBank) stops the worse half at its checkpoints, and the members
    that stopped learn no more: their states stay as they were when they stopped."""
    rng = np.random.default_rng(3)
    data = tmp_path / "m.svm"
    data.write_text("".join(
        f"{label} " + " ".join(f"{j}:{v + label:.3f}" for j, v in zip(
            np.sort(rng.choice(np.arange(1, 60), 5, replace=False)), rng.normal(size=5))) + "\n"
        for label in rng.integers(1, 4, 3000)))
    model = OnlineModel.new(ModelFlags("arow-p", {"r": "auto"}, bits=8,
                                       choice=tasks.choose(multiclass="joint"), race=300))
    stopped_states = {}
    for chunk in ChunkReader([str(data)], features=model.space, block_size=16384):
        bank = model.learner
        alive_before = bank.alive.copy()
        model.learn(chunk)
        for k in np.flatnonzero(alive_before & ~bank.alive):
            stopped_states[k] = {key: np.array(v) for key, v in bank.learners[k].state().items()}
    assert isinstance(model.learner, TaskBank)
    assert int(model.learner.alive.sum()) == 1 and len(stopped_states) == 10
    for k, state in stopped_states.items():
        for key, value in model.learner.learners[k].state().items():
            np.testing.assert_array_equal(value, state[key])


def write_stream(path, n, seed=0, noise=0.1):
    """A binary svmlight file of ``n`` rows of a noisy linear rule over 40 features."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=40)
    lines = []
    for _ in range(n):
        idx = np.sort(rng.choice(40, 8, replace=False))
        x = rng.normal(size=8)
        y = 1 if x @ truth[idx] + 0.3 * rng.normal() > 0 else -1
        if rng.random() < noise:
            y = -y
        lines.append(f"{y} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in zip(idx, x)))
    path.write_text("\n".join(lines) + "\n")


def run(*args):
    return subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)],
                          capture_output=True, text=True)


def test_the_raced_model_is_the_single_run_of_the_value_chosen(tmp_path):
    """train -r auto with a race from 4096 examples on a 40,000-line file: members stop, the
    summary says when, and the model written is train's model of the chosen value alone; the
    meta records where each member stopped. --race 0 stops none."""
    data = tmp_path / "d.svm"
    write_stream(data, 40000)
    raced = run("train", "--algo", "arow-p", "-r", "auto", "--race", "4096", data,
                "-f", tmp_path / "raced.npz")
    assert raced.returncode == 0, raced.stderr
    assert "(stopped at " in raced.stderr and "auto race" in raced.stderr
    meta, arrays = load_model(tmp_path / "raced.npz")
    stopped = meta["auto"]["stopped_at"]
    assert meta["auto"]["race_from"] == 4096
    assert sum(n is not None for n in stopped) >= 5
    assert stopped[meta["auto"]["grid"].index(meta["auto"]["chosen"])] is None
    alone = run("train", "--algo", "arow-p", "-r", repr(meta["auto"]["chosen"]), data,
                "-f", tmp_path / "alone.npz")
    assert alone.returncode == 0, alone.stderr
    alone_meta, alone_arrays = load_model(tmp_path / "alone.npz")
    for key, value in alone_arrays.items():
        np.testing.assert_allclose(arrays[key], value, rtol=0, atol=1e-12, err_msg=key)
    assert meta["calibration"] == alone_meta["calibration"]
    full = run("train", "--algo", "arow-p", "-r", "auto", "--race", "0", data,
               "-f", tmp_path / "full.npz")
    assert full.returncode == 0 and "stopped at" not in full.stderr
    assert "stopped_at" not in load_model(tmp_path / "full.npz")[0]["auto"]


def test_a_negative_race_is_a_one_line_error(tmp_path):
    data = tmp_path / "d.svm"
    write_stream(data, 50)
    result = run("train", "--algo", "pa2", "-C", "auto", "--race", "-5", data)
    assert one_line_error(result).startswith("streamherd: --race -5")
