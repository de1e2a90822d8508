"""``streamherd experiment`` end to end, through the CLI, on real files (skipped without them)."""
import csv

import pytest

SMALL_GRID = ["--algos", "nherd-p,arow-p,perceptron", "--grid", "C=0.5,2", "--grid", "r=1,4",
              "--noise", "0,0.2", "--max-passes", "2", "--max-train", "400", "--folds", "2",
              "--seed", "3"]


def read_runs(folder):
    with open(folder / "runs.csv", newline="") as f:
        return list(csv.DictReader(f))


def without_seconds(rows):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


@pytest.fixture(scope="module")
def two_runs(data_dir, tmp_path_factory, request):
    """The same experiment twice, once in this process's worker and once in two workers."""
    runner = request.getfixturevalue("run_cli")
    datasets = [f"{data_dir}/agaricus.train.svm,{data_dir}/agaricus.test.svm",
                f"{data_dir}/dna.scale.svm"]
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path_factory.mktemp(f"exp-j{jobs}")
        proc = runner("experiment", *datasets, "--all-pairs", *SMALL_GRID, "-j", jobs,
                      "--out", out, "--no-plots", timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append((out, proc))
    return outs


def test_same_seed_same_results_in_any_number_of_processes(two_runs):
    (first, _), (second, _) = two_runs
    rows = read_runs(first)
    # agaricus (1 task, 1 fold) + dna all pairs (3 tasks, 2 folds), 2 noise levels, 3 algos
    assert len(rows) == (1 + 3 * 2) * 2 * 3
    assert without_seconds(rows) == without_seconds(read_runs(second))
    assert (first / "validation.csv").read_text() == (second / "validation.csv").read_text()


def test_runs_pick_from_the_grid_and_score_the_test_rows(two_runs):
    (out, proc), _ = two_runs
    rows = read_runs(out)
    assert {r["status"] for r in rows} == {"ok"}
    for row in rows:
        assert 1 <= int(row["passes"]) <= 2
        if row["algo"] == "nherd-p":
            assert row["hyperparameter"] == "C" and float(row["value"]) in (0.5, 2.0)
        if row["algo"] == "arow-p":
            assert row["hyperparameter"] == "r" and float(row["value"]) in (1.0, 4.0)
        assert 0.0 <= float(row["test_error"]) <= 1.0
        assert int(row["train_examples"]) <= 400
    agaricus = [r for r in rows if r["task"] == "agaricus"]
    assert {int(r["test_examples"]) for r in agaricus} == {1611}
    # dna's 2 folds test every example of a pair once: class 1 (464) + class 2 (485)
    pair = [r for r in rows if r["task"] == "dna.scale:1v2" and r["algo"] == "perceptron"
            and r["noise"] == "0.0"]
    assert sum(int(r["test_examples"]) for r in pair) == 464 + 485
    assert "Mean rank" in proc.stdout and "Win fraction, noise 0.2" in proc.stdout
    report = (out / "report.md").read_text()
    assert "streamherd experiment" in report and "NHERD_P beats AROW_P" in report


def test_plots_are_written(data_dir, run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    proc = run_cli("experiment", f"{data_dir}/spambase.train.svm,{data_dir}/spambase.test.svm",
                   "--algos", "nherd-p,arow-p", "--grid", "C=1", "--grid", "r=1", "--noise",
                   "0,0.1", "--max-passes", "1", "--out", tmp_path, "--quiet")
    assert proc.returncode == 0, proc.stderr
    for name in ("learning_curves.png", "scatter_nherd-p_vs_arow-p.png", "win_fractions.png"):
        assert (tmp_path / name).stat().st_size > 1000
    assert "![Win fractions" in (tmp_path / "report.md").read_text()


def test_missing_matplotlib_is_one_line(data_dir, tmp_path):
    """With matplotlib unimportable, the results are written and one line says why no plots."""
    import os
    import subprocess
    import sys

    blocker = tmp_path / "block"
    (blocker / "matplotlib").mkdir(parents=True)
    (blocker / "matplotlib" / "__init__.py").write_text("raise ImportError('blocked')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(blocker), str(__import__("pathlib").Path(__file__).resolve().parents[1])])}
    proc = subprocess.run(
        [sys.executable, "-m", "streamherd", "experiment",
         f"{data_dir}/spambase.train.svm,{data_dir}/spambase.test.svm", "--algos", "perceptron",
         "--noise", "0", "--max-passes", "1", "--out", str(tmp_path / "out"), "--quiet"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0
    assert proc.stderr.strip().splitlines() == [
        "streamherd: plots skipped: matplotlib is not installed; pip install 'streamherd[plot]'"]
    assert (tmp_path / "out" / "runs.csv").is_file()


@pytest.mark.parametrize("args, message", [
    (["--noise", "0,1.5"], "--noise 1.5"),
    (["--noise", "0,x"], "'x' is not a number"),
    (["--algos", "nherd-p,nope"], "unknown --algo 'nope'"),
    (["--grid", "eta=0.3"], "--grid eta"),
    (["--algos", "cw", "--grid", "eta=0.3"], "must be in (0.5, 1)"),
    (["--grid", "Q=1"], "--grid 'Q=1'"),
    (["--folds", "1"], "--folds 1"),
    (["-b", "0"], "--bits 0 is out of range"),
    (["--scatter", "cw,pa2", "--algos", "cw"], "pa2 is not in --algos"),
])
def test_user_errors_are_one_line_with_exit_code_2(data_dir, tmp_path, capsys, args, message):
    # in this process, through the CLI's entry point (the subprocess tests below cover the same
    # path from the shell)
    from streamherd.cli import run

    with pytest.raises(SystemExit) as exit_:
        run(["experiment", f"{data_dir}/dna.scale.svm", "--all-pairs", "--out", str(tmp_path),
             *args])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_multiclass_file_without_all_pairs_is_one_multiclass_task(data_dir, run_cli, tmp_path):
    proc = run_cli("experiment", f"{data_dir}/dna.scale.svm", "--algos", "nherd-p,perceptron",
                   "--grid", "C=1", "--noise", "0,0.2", "--max-passes", "1", "--max-train", "300",
                   "--folds", "2", "--seed", "2", "-j", "1", "--out", tmp_path, "--no-plots",
                   "--quiet")
    assert proc.returncode == 0, proc.stderr
    rows = read_runs(tmp_path)
    assert len(rows) == 2 * 2 * 2   # 1 task, 2 folds, 2 noise levels, 2 algorithms
    assert {(r["task"], r["kind"], r["status"]) for r in rows} == {
        ("dna.scale", "multiclass", "ok")}
    for algo in ("nherd-p", "perceptron"):
        for noise in ("0.0", "0.2"):
            runs = [r for r in rows if r["algo"] == algo and r["noise"] == noise]
            # the 2 folds test every example of the 3 classes once (464 + 485 + 1051)
            assert sum(int(r["test_examples"]) for r in runs) == 2000
    assert all(0.0 <= float(r["test_error"]) <= 1.0 for r in rows)
    # three classes, the largest 53% of the rows: nherd-p does far better than always saying it
    assert all(float(r["test_error"]) < 0.3 for r in rows
               if r["noise"] == "0.0" and r["algo"] == "nherd-p")


def test_missing_files(data_dir, run_cli, tmp_path):
    proc = run_cli("experiment", f"{data_dir}/nothing.svm,{data_dir}/dna.scale.svm", "--out",
                   tmp_path)
    assert proc.returncode == 2 and "nothing.svm does not exist" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_full_covariance_learners_on_a_small_dataset(data_dir, run_cli, tmp_path):
    """spambase's 57 features fit in 7 bits: a 128 x 128 covariance."""
    proc = run_cli("experiment", f"{data_dir}/spambase.train.svm,{data_dir}/spambase.test.svm",
                   "--algos", "arow-full,nherd-full", "--grid", "C=1", "--grid", "r=1",
                   "--noise", "0", "--max-passes", "1", "--max-train", "300", "--out", tmp_path,
                   "--no-plots", "--quiet")
    assert proc.returncode == 0, proc.stderr
    rows = read_runs(tmp_path)
    assert [r["algo"] for r in rows] == ["arow-full", "nherd-full"]
    assert all(r["status"] == "ok" and float(r["test_error"]) < 0.5 for r in rows)
    proc = run_cli("experiment", f"{data_dir}/sms_spam.vw", "--algos", "arow-full", "--out",
                   tmp_path)
    assert proc.returncode == 2 and "full covariance" in proc.stderr
