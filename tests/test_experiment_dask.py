"""``experiment --workers N`` / ``--scheduler ADDRESS`` (streamherd/experiment/cluster.py): the
runs on a Dask cluster write what a ``-j`` run writes (seconds aside), also when a worker dies
mid-run; a user error in a run is one line and runs once; Ctrl-C exits 130 and closes the
cluster; the options and a missing dask are one-line errors."""
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import REPO, one_line_error

distributed = pytest.importorskip("dask.distributed")

from streamherd.errors import StreamherdError  # noqa: E402
from streamherd.experiment.cluster import Source, run_on_client  # noqa: E402
from streamherd.experiment.command import parse_grids, parse_noise  # noqa: E402
from streamherd.experiment.data import tasks_of  # noqa: E402
from streamherd.experiment.runner import Settings, load_datasets, make_jobs, run_grid  # noqa: E402

SAMPLE = str(REPO / "samples" / "sample.svm")
SMALL = [SAMPLE, "--algos", "nherd-p,arow-p,perceptron", "--grid", "C=0.5,2", "--grid", "r=1,4",
         "--noise", "0,0.2", "--max-passes", "2", "--folds", "2", "--seed", "3"]


def _without_seconds(text):
    """runs.csv without its last column (seconds)."""
    return [line.rsplit(",", 1)[0] for line in text.splitlines()]


def _report_tables(text):
    """report.md without its command line and its summary (wall time, where the runs ran)."""
    return [line for line in text.splitlines()
            if not line.startswith(("streamherd experiment ", "1 tasks from "))]


def _same_outputs(first, second):
    names = sorted(os.listdir(first))
    assert names == sorted(os.listdir(second))
    assert {"runs.csv", "validation.csv", "report.md"} <= set(names)
    for name in names:
        a, b = (first / name).read_bytes(), (second / name).read_bytes()
        if name == "runs.csv":
            assert _without_seconds(a.decode()) == _without_seconds(b.decode())
        elif name == "report.md":
            assert _report_tables(a.decode()) == _report_tables(b.decode())
        else:   # validation.csv and the plots, byte for byte
            assert a == b, name


@pytest.fixture(scope="module")
def with_jobs(tmp_path_factory, run_cli):
    out = tmp_path_factory.mktemp("j2")
    proc = run_cli("experiment", *SMALL, "-j", "2", "--out", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address="127.0.0.1:0",
                                  silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        yield cluster, client


def test_local_cluster_writes_what_jobs_write(run_cli, with_jobs, tmp_path):
    proc = run_cli("experiment", *SMALL, "--workers", "2", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "on a local Dask cluster of 2 workers" in (tmp_path / "report.md").read_text()
    _same_outputs(with_jobs, tmp_path)


def test_a_running_scheduler_writes_what_jobs_write(run_cli, with_jobs, cluster, tmp_path):
    address = cluster[0].scheduler_address
    proc = run_cli("experiment", *SMALL, "--scheduler", address, "--out", tmp_path, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert f"on the Dask cluster at {address}" in (tmp_path / "report.md").read_text()
    _same_outputs(with_jobs, tmp_path)


def _grid(algos, grid, max_passes=2, max_train=None, path=SAMPLE):
    """(the datasets, their Source, the jobs, the Settings) of an experiment on ``path``."""
    options = {"fmt": "auto", "bits_cap": 18, "normalize": "l2"}
    datasets = load_datasets([str(path)], **options)
    settings = Settings(parse_grids(algos, grid), parse_noise("0,0.2"), 2, max_passes, 0.2,
                        max_train, 3)
    tasks = [t for d in datasets.values() for t in tasks_of(d)]
    return (datasets, Source.of([str(path)], options, datasets),
            make_jobs(datasets, tasks, settings), settings)


def _comparable(result):
    row = {k: v for k, v in result.row.items() if k != "seconds"}
    return (row, result.validation, result.correct.tolist(),
            [part.tolist() for part in result.curve])


def _kill_a_worker_in_a_run(client, thread):
    """SIGKILL the process of the first worker seen running a run while ``thread`` runs the
    experiment; returns that run's key (None if none was seen)."""
    pids = client.run(os.getpid)
    while thread.is_alive():
        for worker, keys in client.processing().items():
            runs = [key for key in keys if "-run-" in str(key)]
            if runs:
                os.kill(pids[worker], signal.SIGKILL)
                return runs[0]
    return None


def test_a_worker_killed_mid_run_changes_nothing(cluster):
    _, client = cluster
    datasets, source, jobs, settings = _grid(["arow-p", "nherd-p"],
                                             ["r=2^-2..2^2", "C=2^-2..2^2"], 4)
    expected = [_comparable(r) for r in run_grid(datasets, None, None, jobs, settings)]
    outcome = {}

    def run():
        try:
            outcome["results"] = run_on_client(client, source, jobs, settings)
        except BaseException as e:   # noqa: BLE001 - the test reports it
            outcome["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    killed = _kill_a_worker_in_a_run(client, thread)
    thread.join()
    assert killed is not None and "error" not in outcome, outcome
    # the killed run was started again on a worker (its task went to processing twice)
    story = client.story(killed)
    assert sum(1 for event in story if event[2] == "processing") >= 2, story
    assert [_comparable(r) for r in outcome["results"]] == expected


def test_a_user_error_in_a_run_runs_once(cluster):
    """herd's 1000 burn-in iterations need more than 100 rows: with 40 the run refuses, the
    same way in any process; it comes back as the run's result, run once, not an error."""
    _, client = cluster
    _, source, jobs, settings = _grid(["herd"], ["ratio=1"], max_train=40)
    with pytest.raises(StreamherdError, match="--burn-in"):
        run_on_client(client, source, jobs[:1], settings)
    runs = client.run_on_scheduler(lambda dask_scheduler: [
        entry[:3] for entry in dask_scheduler.transition_log if "-run-" in str(entry[0])])
    key = runs[-1][0]
    assert [finish for run, _, finish in runs if run == key].count("processing") == 1, runs
    assert "erred" not in [finish for run, _, finish in runs if run == key], runs


def test_a_file_changed_since_the_driver_read_it_is_refused(cluster, tmp_path):
    _, client = cluster
    copy = tmp_path / "sample.svm"
    copy.write_text(Path(SAMPLE).read_text())
    _, source, jobs, settings = _grid(["perceptron"], [], path=copy)
    with open(copy, "a") as f:
        f.write("+1 1:1\n")
    with pytest.raises(StreamherdError, match="changed while the experiment ran"):
        run_on_client(client, source, jobs[:1], settings)


def test_a_user_error_in_a_run_is_one_line(run_cli, tmp_path):
    proc = run_cli("experiment", SAMPLE, "--algos", "herd", "--noise", "0", "--max-train", "40",
                   "--folds", "2", "--workers", "2", "--out", tmp_path, "--quiet")
    assert "--burn-in" in one_line_error(proc)
    assert not (tmp_path / "runs.csv").exists()


def test_ctrl_c_exits_130_closes_the_cluster_and_keeps_the_old_results(tmp_path):
    """Ctrl-C reaches every process of the group; the workers leave it to the driver, which
    closes the cluster: one line, no worker's traceback."""
    psutil = pytest.importorskip("psutil")
    (tmp_path / "runs.csv").write_text("earlier results\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamherd", "experiment", SAMPLE, "--algos", "arow-p,nherd-p",
         "--folds", "10", "--max-passes", "10", "--workers", "2", "--out", str(tmp_path),
         "--quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        parent = psutil.Process(proc.pid)
        children = []
        deadline = time.monotonic() + 60
        while len(children) < 2 and time.monotonic() < deadline and proc.poll() is None:
            children = [c for c in parent.children(recursive=True)
                        if "spawn_main" in " ".join(c.cmdline())]
            time.sleep(0.2)
        assert len(children) >= 2, "the local cluster's workers did not start"
        time.sleep(2)   # runs under way
        os.killpg(proc.pid, signal.SIGINT)   # as a terminal does: to the workers too
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in one_line_error(subprocess.CompletedProcess([], 130, "", stderr), 130)
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive
    assert (tmp_path / "runs.csv").read_text() == "earlier results\n"


@pytest.mark.parametrize("args, message", [
    (["-j", "2", "--workers", "2"], "drop -j"),
    (["-j", "2", "--scheduler", "tcp://127.0.0.1:8786"], "drop -j"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "give one of them"),
    (["--workers", "0"], "--workers 0"),
])
def test_option_errors_are_one_line(tmp_path, capsys, args, message):
    from streamherd.cli import run

    with pytest.raises(SystemExit) as exit_:
        run(["experiment", SAMPLE, "--out", str(tmp_path), *args])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_without_dask_the_command_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['dask'] = sys.modules['dask.distributed'] = None; "
            "from streamherd.cli import main; sys.argv[0] = 'streamherd'; main()")
    proc = subprocess.run([sys.executable, "-c", code, "experiment", SAMPLE, "--workers", "2",
                           "--algos", "perceptron", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    line = one_line_error(proc)
    assert line.startswith("streamherd: experiment --workers/--scheduler runs on Dask"), line
    assert 'pip install "streamherd[dask]"' in line
