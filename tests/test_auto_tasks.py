"""-C auto beyond a binary learner's bank kernel (selection's TaskBank): multiclass (joint,
ova, mira), --loss squared and the -full learners. Each member learns each chunk through the
task as a run of its value alone, so every --save-bank file is that run's model bit for bit; the
bank keeps the member of the lowest loss on the later half of the pass."""
import math

import numpy as np
import pytest

from streamherd import tasks
from streamherd.learners import spec
from streamherd.learners.base import UnstableUpdate
from streamherd.model import load_model
from streamherd.selection import Grid, Search, TaskBank
from streamherd.selection.scores import loss_scores

from helpers import one_line_error

# keys of a member's meta that say it came from a bank (the rest is the single run's)
BANK_KEYS = {"auto", "algo"}


def regression_file(path, rows=600, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=8)
    with open(path, "w") as f:
        for _ in range(rows):
            x = rng.normal(size=8)
            f.write(f"{x @ truth + 0.3 * rng.normal():.5f} "
                    + " ".join(f"{j + 1}:{x[j]:.5f}" for j in range(8)) + "\n")
    return path


def _cases(data_dir, tmp_path):
    return {
        "joint": (["--algo", "nherd-p", "-C", "auto"], data_dir / "dna.scale.svm"),
        "ova": (["--algo", "pa2", "-C", "auto", "--multiclass", "ova"],
                data_dir / "dna.scale.svm"),
        "mira": (["--algo", "pa1", "-C", "auto", "--multiclass", "mira"],
                 data_dir / "dna.scale.svm"),
        "squared": (["--algo", "arow-p", "-r", "auto", "--loss", "squared"],
                    regression_file(tmp_path / "reg.svm")),
        "full": (["--algo", "arow-full", "-r", "auto", "-b", "8"],
                 data_dir / "spambase.train.svm"),
    }


@pytest.mark.parametrize("case", ["joint", "ova", "mira", "squared", "full"])
def test_each_bank_file_is_the_single_run_and_the_model_is_the_lowest_loss(
        run_cli, data_dir, tmp_path, case):
    """A 3-value grid: each member's model (arrays, meta, calibration, progressive loss) is the
    model `train` with its value alone writes, bit for bit; the model written is the member of
    the lowest recent loss, which the summary names."""
    flags, data = _cases(data_dir, tmp_path)[case]
    if not data.exists():
        pytest.skip(f"{data} is absent")
    grid = (2.0 ** -6, 2.0 ** -2, 4.0)
    model = tmp_path / "m.npz"
    proc = run_cli("train", *flags, "--grid", "2^-6,0.25,4", data, "-f", model, "--save-bank")
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(model)
    auto = meta["auto"]
    name = auto["hyperparameter"]
    assert auto["grid"] == list(grid) and auto["chosen_on"] == "progressive"
    assert all(a is None for a in auto["aucs"])
    for k, value in enumerate(grid, 1):
        single = tmp_path / f"single{k}.npz"
        given = [f if f != "auto" else repr(value) for f in flags]
        done = run_cli("train", *given, data, "-f", single, "--quiet")
        assert done.returncode == 0, done.stderr
        single_meta, single_arrays = load_model(single)
        member_meta, member_arrays = load_model(tmp_path / f"m.bank{k}.npz")
        assert member_meta["hyperparameters"][name] == value
        assert set(member_arrays) == set(single_arrays)
        for key in single_arrays:
            np.testing.assert_array_equal(member_arrays[key], single_arrays[key], err_msg=key)
        # (the progressive loss: the bank's sum of a squared loss in another order, to 1e-12)
        assert member_meta["progressive_loss"] == pytest.approx(single_meta["progressive_loss"],
                                                                rel=1e-12)
        for key in set(single_meta) - BANK_KEYS - {"progressive_loss"}:
            assert member_meta[key] == single_meta[key], key
    chosen = int(np.argmin(auto["losses"]))
    assert auto["chosen"] == grid[chosen] and meta["hyperparameters"][name] == grid[chosen]
    _, chosen_arrays = load_model(tmp_path / f"m.bank{chosen + 1}.npz")
    for key in chosen_arrays:
        np.testing.assert_array_equal(arrays[key], chosen_arrays[key])
    assert "AUC" not in proc.stderr
    assert f"chosen = {grid[chosen]:g} (recent progressive" in proc.stderr


def test_a_multiclass_auto_model_predicts_as_a_plain_one(run_cli, data_dir, tmp_path):
    """The chosen member's model is an ordinary multiclass model: predict and --proba read it,
    and its predictions are those of the single run of its value."""
    train, test = data_dir / "dna.scale.svm", data_dir / "dna.scale.t.svm"
    if not train.exists():
        pytest.skip(f"{train} is absent")
    model, single = tmp_path / "m.npz", tmp_path / "s.npz"
    assert run_cli("train", "--algo", "nherd-p", "-C", "auto", train, "-f", model,
                   "--quiet").returncode == 0
    value = load_model(model)[0]["hyperparameters"]["C"]
    assert run_cli("train", "--algo", "nherd-p", "-C", repr(value), train, "-f", single,
                   "--quiet").returncode == 0
    for output in ([], ["--proba"]):
        ours = run_cli("predict", "-m", model, test, *output, "-p", tmp_path / "a.txt")
        theirs = run_cli("predict", "-m", single, test, *output, "-p", tmp_path / "b.txt")
        assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
        assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()


def test_the_window_loss_and_its_spread_are_the_weighted_mean_and_its_standard_error():
    rng = np.random.default_rng(3)
    losses = rng.exponential(size=(500, 4))
    losses[:, 2] *= 0.5
    weight = rng.choice([0.5, 1.0, 2.0], 500)
    alive = np.array([True, True, True, False])
    scores = loss_scores(weight, losses, alive)
    means = weight @ losses / weight.sum()
    np.testing.assert_allclose(scores.losses[:3], means[:3], rtol=1e-12)
    assert scores.losses[3] == math.inf and np.isnan(scores.aucs).all()
    size = weight.sum() ** 2 / (weight ** 2).sum()
    variance = weight @ (losses[:, 2] - means[2]) ** 2 / weight.sum()
    assert scores.spread == pytest.approx(math.sqrt(variance / size), rel=1e-12)
    # a 0/1 loss: the spread is the binary bank's, the error of a proportion
    mistakes = (rng.random((400, 3)) < [0.3, 0.2, 0.4]).astype(float)
    ones = np.ones(400)
    scores = loss_scores(ones, mistakes, np.ones(3, bool))
    p = mistakes[:, 1].mean()
    assert scores.spread == pytest.approx(math.sqrt(p * (1 - p) / 400), rel=1e-12)
    assert int(scores.ranking((1.0, 2.0, 4.0), (1.0,) * 3)[0]) == 1


def _classes(n=300, dim=32, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    nnz = rng.integers(1, 6, n)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    # int32 slots, as the parser hands them to the learners: the tests run the kernels the
    # commands compile (and the install precompiles), not a second int64 copy of each
    indices = np.concatenate([rng.choice(dim, k, replace=False) for k in nnz]).astype(np.int32)
    values = rng.normal(size=indptr[-1]) * scale
    return rng.integers(0, 3, n).astype(np.int64), indptr, indices, values


class _Rows:
    def __init__(self, indptr, indices, values):
        self.indptr, self.indices, self.values = indptr, indices, values
        self.n_examples = len(indptr) - 1
        self.importance = np.ones(self.n_examples)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_member_whose_update_fails_leaves_the_bank_and_all_failing_is_an_error(threads):
    """Values of 1e77: nherd-p's multiclass update overflows for the larger C and not the
    smaller; those members leave the bank at the row their single run fails on (the others
    go on as their single runs, the classes seen moving on from the same count for each),
    on one thread or several; every member failing is an UnstableUpdate."""
    from streamherd.labels import ClassLabels

    classes, indptr, indices, values = _classes()
    h = next(h for h in spec("nherd-p").hyperparameters if h.name == "C")
    grid = tuple(2.0 ** e for e in range(-10, 11, 2))

    def run(scale, threads):
        task = tasks.MulticlassTask(ClassLabels.of_values([0, 1, 2]))
        bank = TaskBank(task, Search((Grid("nherd-p", h, grid),), h.flag), 32, {},
                        threads=threads)
        rows = _Rows(indptr, indices, values * scale)
        return task, bank, bank.learn_chunk(classes, rows, lambda task, member, calibration:
                                            task.learn(member, classes, rows))
    task, bank, _ = run(1e77, threads)
    failed = 0
    for k, value in enumerate(grid):
        single_task = tasks.MulticlassTask(ClassLabels.of_values([0, 1, 2]))
        single = single_task.new_learner("nherd-p", 32, {"C": value})
        try:
            single_task.learn(single, classes, _Rows(indptr, indices, values * 1e77))
        except UnstableUpdate as e:
            failed += 1
            assert not bank.alive[k] and bank.failed_at[k] == e.index
        else:
            assert bank.alive[k] and bank.failed_at[k] == -1
            for key, array in single.state().items():
                np.testing.assert_array_equal(bank.learners[k].state()[key], array)
    assert 0 < failed < len(grid)
    assert task.known == 3
    with pytest.raises(UnstableUpdate, match="failed for every value"):
        run(1e200, threads)


@pytest.mark.parametrize("flags, classes, expected", [
    (["--algo", "nherd-p", "-C", "auto", "-b", "20", "--multiclass", "joint"], 1000,
     "-C auto's bank of 11 nherd-p models needs 184,549,376,000 bytes"),
    (["--algo", "nherd-p", "-C", "auto", "-b", "20", "--multiclass", "ova"], 1000,
     "-C auto's bank of 11 nherd-p models needs 184,549,376,000 bytes"),
    (["--algo", "arow-full", "-r", "auto", "-b", "17"], 2,   # 11 matrices of 128 GiB
     "-r auto's bank of 11 arow-full models needs 1,511,851,556,864 bytes"),
], ids=["joint", "ova", "full"])
def test_a_bank_of_members_too_large_together_is_a_one_line_error(run_cli, tmp_path, flags,
                                                                   classes, expected):
    """Eleven members that do not fit in memory together (1000 classes at -b 20: 16 GiB each;
    a 2^17 x 2^17 matrix: 128 GiB each) are refused in one line before any of them is made or
    grows to the classes the first chunk brings."""
    data = tmp_path / "d.svm"
    labels = range(1, classes + 1) if classes > 2 else (1, -1)
    data.write_text("".join(f"{z} {k % 7 + 1}:1\n" for k, z in enumerate(labels)))
    model = tmp_path / "m.npz"
    model.write_bytes(b"kept")
    line = one_line_error(run_cli("train", *flags, data, "-f", model))
    assert expected in line, line
    assert model.read_bytes() == b"kept"


def test_multiclass_auto_with_passes_chooses_on_the_holdout_loss(run_cli, data_dir, tmp_path):
    """--passes 2 with the default holdout: each member's loss is the holdout 0/1 loss that
    `train -C v --passes 2` reports for pass 2, and the model is the lowest's."""
    data = data_dir / "dna.scale.svm"
    if not data.exists():
        pytest.skip(f"{data} is absent")
    grid = (2.0 ** -8, 2.0 ** -4, 16.0)
    model = tmp_path / "m.npz"
    flags = ["--passes", "2", "--early_terminate", "5"]
    proc = run_cli("train", "--algo", "nherd-p", "-C", "auto", "--grid", "2^-8,2^-4,16", data,
                   *flags, "-f", model)
    assert proc.returncode == 0, proc.stderr
    holdout = []
    for c in grid:
        single = run_cli("train", "--algo", "nherd-p", "-C", repr(c), data, *flags,
                         "-f", tmp_path / f"c{c}.npz")
        assert single.returncode == 0, single.stderr
        line = next(x for x in single.stderr.splitlines()
                    if x.startswith("holdout 0/1 loss per pass = "))
        holdout.append(float(line.rsplit(", ", 1)[-1]))
    meta, _ = load_model(model)
    best = int(np.argmin(holdout))
    assert holdout.count(holdout[best]) == 1, "a tie: choose other values for this test"
    assert f"auto -C chosen = {grid[best]:g} (holdout 0/1 loss {holdout[best]:.6f})" \
        in proc.stderr
    assert meta["hyperparameters"]["C"] == grid[best] and meta["auto"]["chosen_on"] == "holdout"
