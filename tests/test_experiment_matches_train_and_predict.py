"""The experiment runs the multiclass learners (voted-perceptron, narow, pa2 with --multiclass mira,
and herd) end to end through the CLI on a Pendigits subset, and each run's test error equals
the one ``streamherd train`` + ``predict`` (or ``herd`` + ``predict``) give by hand on the same
training rows, in the same order, with the hyperparameter and passes the run chose."""
import csv
import re

import numpy as np
import pytest

from streamherd.experiment import splits
from streamherd.experiment.data import load_dataset

from helpers import one_line_error

TRAIN_ROWS, TEST_ROWS = 500, 250
# (--algos name, runs.csv algo, the flag of its tuned hyperparameter, its values)
LEARNERS = [("voted-perceptron", "voted-perceptron", None, None),
            ("narow", "narow-p", "--narow-b", "0.5,2"),
            ("pa2", "pa2", "-C", "0.25,4"),
            ("herd", "herd", "--ratio", "1,3")]
GRIDS = ["--grid", "b=0.5,2", "--grid", "C=0.25,4", "--grid", "ratio=1,3"]


@pytest.fixture(scope="module")
def pendigits(data_dir, tmp_path_factory):
    """The first rows of Pendigits' train and test files (read, not copied into the repo)."""
    folder = tmp_path_factory.mktemp("pendigits")
    paths = {}
    for name, source, rows in (("train", "pendigits.scale.svm", TRAIN_ROWS),
                               ("test", "pendigits.scale.t.svm", TEST_ROWS)):
        with open(data_dir / source) as f:
            lines = [next(f) for _ in range(rows)]
        paths[name] = folder / f"digits.{name}.svm"
        paths[name].write_text("".join(lines))
    return paths


@pytest.fixture(scope="module")
def experiment(pendigits, tmp_path_factory, run_cli):
    rows = {}
    for algos, mode in (("voted-perceptron,narow,herd", "joint"), ("pa2", "mira")):
        out = tmp_path_factory.mktemp("out")
        proc = run_cli("experiment", f"{pendigits['train']},{pendigits['test']}", "--algos",
                        algos, "--multiclass", mode, *GRIDS, "--noise", "0", "--max-passes",
                        "3", "--normalize", "none", "--no-plots", "--out", out, "--quiet")
        assert proc.returncode == 0, proc.stderr
        with open(out / "runs.csv") as f:
            rows.update({row["algo"]: row for row in csv.DictReader(f)})
    return rows


def _error_by_hand(run_cli, tmp_path, pendigits, algo, flag, row):
    """Train the run's configuration by hand, predict the test file: its error rate."""
    lines = pendigits["train"].read_text().splitlines(keepends=True)
    model = tmp_path / "m.npz"
    hyperparameter = [flag, row["value"]] if flag else []
    if algo == "herd":   # all training rows in the file's order, herd's own batches
        trained = run_cli("herd", pendigits["train"], *hyperparameter, "--seed", "0", "-f",
                          model, "--quiet")
    else:   # the run's final training: its passes, each in the experiment's order for it
        dataset = load_dataset(f"{pendigits['train']},{pendigits['test']}", normalize="none")
        ordered = tmp_path / "passes.svm"
        ordered.write_text("".join(
            lines[i] for p in range(int(row["passes"]))
            for i in splits.rng_for(0, "digits", splits.TRAIN_ORDER, 0, p).permutation(
                len(lines))))
        classes = ",".join(f"{c:g}" for c in dataset.classes)
        trained = run_cli("train", ordered, "--algo", algo, *hyperparameter, "-b",
                          dataset.bits, "--classes", classes, "--multiclass",
                          "mira" if algo == "pa2" else "joint", "-f", model, "--quiet")
    assert trained.returncode == 0, trained.stderr
    predictions = tmp_path / "p.txt"
    assert run_cli("predict", pendigits["test"], "-m", model, "-p", predictions,
                   "--quiet").returncode == 0
    predicted = np.array(predictions.read_text().split(), float)
    labels = np.array([float(line.split()[0])
                       for line in pendigits["test"].read_text().splitlines()])
    return float(np.mean(predicted != labels))


@pytest.mark.parametrize("name,algo,flag,values", LEARNERS, ids=[n for n, *_ in LEARNERS])
def test_each_run_equals_train_and_predict_by_hand(experiment, run_cli, tmp_path, pendigits,
                                                   name, algo, flag, values):
    row = experiment[algo]
    assert row["status"] == "ok" and row["kind"] == "multiclass"
    assert int(row["train_examples"]) == TRAIN_ROWS and int(row["test_examples"]) == TEST_ROWS
    if flag:
        assert float(row["value"]) in [float(v) for v in values.split(",")]
    if algo == "herd":
        assert row["passes"] == "1"   # herd learns in one go
    error = float(row["test_error"])
    assert error < 0.5   # learned something (10 classes: chance is 0.9)
    assert error == pytest.approx(_error_by_hand(run_cli, tmp_path, pendigits, algo, flag, row),
                                  abs=1e-12)


def test_mira_refuses_a_learner_outside_the_pa_family(pendigits, run_cli, tmp_path):
    proc = run_cli("experiment", f"{pendigits['train']},{pendigits['test']}", "--algos",
                   "pa2,arow", "--multiclass", "mira", "--out", tmp_path / "out", "--quiet")
    assert proc.returncode == 2
    assert re.search(r"--multiclass mira .*not arow", one_line_error(proc))
    assert not (tmp_path / "out" / "runs.csv").exists()


def test_an_unknown_multiclass_mode_is_refused(pendigits, run_cli, tmp_path):
    proc = run_cli("experiment", f"{pendigits['train']},{pendigits['test']}", "--multiclass",
                   "pairs", "--out", tmp_path / "out", "--quiet")
    assert proc.returncode == 2
    assert "--multiclass pairs: use one of joint, ova, mira" in one_line_error(proc)
