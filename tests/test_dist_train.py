"""dist-train (streamherd/distributed): one shard for P rounds is train run P times; the model
is the same for any worker count, after a resume with -i, and when a worker dies mid-round;
user errors are one line."""
import logging
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from helpers import one_line_error

distributed = pytest.importorskip("dask.distributed")

from streamherd.distributed.driver import Cluster, Mix, dist_train  # noqa: E402
from streamherd.distributed.epoch import Settings  # noqa: E402
from streamherd.errors import StreamherdError  # noqa: E402
from streamherd.model import load_model  # noqa: E402


def _write(path, y, x):
    path.write_text("".join(f"{label} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(row)
                                                   if v) + "\n" for label, row in zip(y, x)))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Small svmlight files: binary (1/0 labels), three classes, real targets."""
    rng = np.random.default_rng(22)
    folder = tmp_path_factory.mktemp("dist")
    x = rng.normal(size=(1200, 12)) * (rng.random((1200, 12)) < 0.5)
    w = rng.normal(size=(3, 12))
    scores = x @ w.T + rng.normal(scale=0.3, size=(1200, 3))
    return {"binary": _write(folder / "binary.svm", (scores[:, 0] > 0).astype(int), x),
            "multiclass": _write(folder / "classes.svm", scores.argmax(axis=1) + 1, x),
            "regression": _write(folder / "real.svm", np.round(scores[:, 0], 3), x)}


def _local_cluster(workers, processes=False):
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                    processes=processes, dashboard_address="127.0.0.1:0",
                                    silence_logs=logging.CRITICAL)


@pytest.fixture(scope="module")
def client():
    with _local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


def _same_arrays(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


TASKS = {"binary": [], "multiclass": ["--classes", "1,2,3"], "regression": ["--loss", "squared"]}
FLAGS = {"binary": {}, "multiclass": {"classes": "1,2,3"}, "regression": {"loss": "squared"}}


@pytest.mark.parametrize("algo,task", [("arow-p", "binary"), ("avg-perceptron", "binary"),
                                       ("pa2", "multiclass"), ("arow-d", "regression")])
def test_one_shard_for_p_rounds_is_train_p_times(run_cli, data, client, tmp_path, algo, task):
    trained = tmp_path / "train.npz"
    flags = ["--algo", algo, *TASKS[task]]
    assert run_cli("train", data[task], *flags, "-f", trained, "--quiet").returncode == 0
    again = run_cli("train", data[task], "-i", trained, "-f", trained, "--quiet")
    assert again.returncode == 0, again.stderr
    dist_train([str(data[task])], tmp_path / "dist.npz", rounds=2, cluster=Cluster(shards="1"),
               client=client, quiet=True, algo=algo, **FLAGS[task])
    meta_t, arrays_t = load_model(trained)
    meta_d, arrays_d = load_model(tmp_path / "dist.npz")
    assert _same_arrays(arrays_t, arrays_d)
    for key in ("examples", "learner", "labels", "classes"):
        assert meta_t.get(key) == meta_d.get(key)


def test_cli_one_worker_one_shard_equals_train(run_cli, data, tmp_path):
    trained = tmp_path / "train.npz"
    assert run_cli("train", data["binary"], "--algo", "nherd-p", "--passes", "1", "-f",
                   trained, "--quiet").returncode == 0
    assert run_cli("train", data["binary"], "-i", trained, "-f", trained,
                   "--quiet").returncode == 0
    proc = run_cli("dist-train", data["binary"], "--workers", 1, "--shards", 1, "--passes", 2,
                   "--algo", "nherd-p", "-f", tmp_path / "dist.npz")
    assert proc.returncode == 0, proc.stderr
    assert "holdout" not in proc.stderr
    rows = [line.split() for line in proc.stderr.splitlines() if line[:5].strip().isdigit()]
    assert [(r[0], r[2]) for r in rows] == [("1", "1200"), ("2", "1200")]
    assert _same_arrays(load_model(trained)[1], load_model(tmp_path / "dist.npz")[1])


def _run(client, path, model, rounds=2, shards="3", **flags):
    return dist_train([str(path)], model, rounds=rounds, cluster=Cluster(shards=shards),
                      client=client, quiet=True, **flags)


@pytest.mark.parametrize("algo,mix", [("arow-p", Mix()), ("nherd-p", Mix("jubatus")),
                                      ("perceptron", Mix(weights="mistakes"))])
def test_same_model_for_any_worker_count_and_after_a_resume(data, client, tmp_path, algo, mix):
    _run(client, data["binary"], tmp_path / "two.npz", rounds=3, algo=algo, mix=mix)
    with _local_cluster(1) as cluster, distributed.Client(cluster) as one:
        _run(one, data["binary"], tmp_path / "one.npz", rounds=3, algo=algo, mix=mix)
    _run(client, data["binary"], tmp_path / "resumed.npz", algo=algo, mix=mix)
    _run(client, data["binary"], tmp_path / "resumed.npz", rounds=1, mix=mix,
         initial_model=tmp_path / "resumed.npz")
    models = [load_model(tmp_path / f"{name}.npz") for name in ("two", "one", "resumed")]
    assert _same_arrays(models[0][1], models[1][1])
    assert models[0][0]["calibration"] == models[1][0]["calibration"]
    assert _same_arrays(models[0][1], models[2][1])
    assert models[0][0]["examples"] == models[2][0]["examples"] == 3 * 1200
    single = tmp_path / "single.npz"
    _run(client, data["binary"], single, rounds=3, shards="1", algo=algo)
    assert not _same_arrays(models[0][1], load_model(single)[1])   # three shards did mix


def test_classes_without_flags_come_from_a_label_scan(run_cli, data, client, tmp_path):
    """Every shard scanned: the classes in order of first appearance in the file; one shard is
    then train with those --classes."""
    labels = [line.split()[0] for line in data["multiclass"].read_text().splitlines()]
    order = ",".join(dict.fromkeys(labels))
    _run(client, data["multiclass"], tmp_path / "three.npz", shards="3", algo="pa2")
    assert load_model(tmp_path / "three.npz")[0]["classes"] == order.split(",")
    _run(client, data["multiclass"], tmp_path / "one.npz", rounds=1, shards="1", algo="pa2")
    trained = tmp_path / "train.npz"
    assert run_cli("train", data["multiclass"], "--algo", "pa2", "--classes", order, "-f",
                   trained, "--quiet").returncode == 0
    assert _same_arrays(load_model(trained)[1], load_model(tmp_path / "one.npz")[1])


def test_a_worker_killed_mid_round_changes_nothing(data, client, tmp_path):
    _run(client, data["binary"], tmp_path / "calm.npz", shards="4", algo="arow-p")
    outcome = {}
    with _local_cluster(2, processes=True) as cluster, distributed.Client(cluster) as processes:
        pids = processes.run(os.getpid)

        def run():
            try:
                outcome["summary"] = _run(processes, data["binary"], tmp_path / "killed.npz",
                                          shards="4", algo="arow-p")
            except BaseException as e:   # noqa: BLE001 - the test reports it
                outcome["error"] = e
        thread = threading.Thread(target=run)
        thread.start()
        killed = None
        while killed is None and thread.is_alive():
            busy = [worker for worker, keys in processes.processing().items()
                    if any("-shard-" in str(key) for key in keys)]
            if busy:
                killed = busy[0]
                os.kill(pids[killed], signal.SIGKILL)
        thread.join()
    assert killed is not None and "error" not in outcome, outcome
    assert _same_arrays(load_model(tmp_path / "calm.npz")[1],
                        load_model(tmp_path / "killed.npz")[1])


def _error(run_cli, *args):
    return one_line_error(run_cli("dist-train", *args))


def test_user_errors_are_one_line(run_cli, data, tmp_path):
    model = tmp_path / "m.npz"
    binary = data["binary"]
    assert "--force" in _error(run_cli, binary, "--shards", 4, "--mix", "sum", "--algo",
                               "arow-p", "-f", model)
    assert "use --mix mean" in _error(run_cli, binary, "--shards", 2, "--mix", "prec",
                                      "--algo", "perceptron", "-f", model)
    assert "avg-perceptron" in _error(run_cli, binary, "--algo", "voted-perceptron", "-f", model)
    assert "not standard input" in _error(run_cli, "--shards", 2, "-f", model)
    assert "--shards 0" in _error(run_cli, binary, "--shards", 0, "-f", model)
    assert "-f MODEL.npz" in _error(run_cli, binary, "--shards", 2)
    assert not model.exists()


def test_without_dask_the_command_says_what_to_install(data, tmp_path):
    """dask made unimportable: the one-line error names the extra."""
    code = ("import sys; sys.modules['dask'] = sys.modules['dask.distributed'] = None; "
            "from streamherd.cli import main; sys.argv[0] = 'streamherd'; main()")
    proc = subprocess.run([sys.executable, "-c", code, "dist-train", str(data["binary"]),
                           "--shards", "1", "-f", str(tmp_path / "m.npz")],
                          capture_output=True, text=True, timeout=300)
    assert 'pip install "streamherd[dask]"' in one_line_error(proc)


@pytest.fixture(scope="module")
def bad_lines(data, tmp_path_factory):
    """The binary data with a bad label on line 1001 and a bad feature value on line 1101:
    both in the second of two shards (the first chunk, which fixes the task, is fine)."""
    lines = data["binary"].read_text().splitlines(keepends=True)
    folder = tmp_path_factory.mktemp("bad")
    label, value = list(lines), list(lines)
    label[1000] = "x7" + label[1000][label[1000].index(" "):]
    value[1100] = value[1100].rstrip("\n") + " 40:abc\n"
    return {"label": _write_text(folder / "label.svm", label),
            "value": _write_text(folder / "value.svm", value)}


def _write_text(path, lines):
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("kind,line", [("label", 1001), ("value", 1101)])
def test_a_user_error_in_a_shard_runs_once_and_reads_as_trains(run_cli, bad_lines, client,
                                                               tmp_path, kind, line):
    """The shard task returns the error instead of raising it: Dask runs it once (no retry),
    and the message is train's, naming the file and line."""
    path = bad_lines[kind]
    trained = one_line_error(run_cli("train", path, "-f", tmp_path / "t.npz"))
    assert f"{path}:{line}:" in trained
    with distributed.get_task_stream(client) as stream, \
            pytest.raises(StreamherdError) as raised:
        _run(client, path, tmp_path / "m.npz", rounds=3, shards="2", algo="arow-p")
    assert f"streamherd: {raised.value}" == trained
    shard_tasks = [t["key"] for t in stream.data if "-shard-" in str(t["key"])]
    assert sorted(shard_tasks) == sorted(set(shard_tasks)) and len(shard_tasks) == 2
    assert all(t["status"] == "OK" for t in stream.data)
    assert not (tmp_path / "m.npz").exists()


def test_cli_user_error_in_a_shard_is_one_line(run_cli, bad_lines, tmp_path):
    message = one_line_error(run_cli("dist-train", bad_lines["label"], "--workers", 1,
                                     "--shards", 2, "-f", tmp_path / "m.npz"))
    assert f"{bad_lines['label']}:1001: bad label 'x7'" in message
    assert not (tmp_path / "m.npz").exists()


def _holdout_per_pass(proc):
    """train's summary line "holdout 0/1 loss per pass = a, b, ..." as floats."""
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if " per pass = " in x)
    return [float(v) for v in line.split(" = ")[1].split(", ")]


def test_holdout_of_one_shard_is_trains_holdout(run_cli, data, tmp_path):
    """One shard, --holdout_period 7: each round's holdout loss is train --passes's of the same
    pass (a file without blank lines: line numbers are example numbers), printed in the
    round's row and the summary."""
    expected = _holdout_per_pass(run_cli("train", data["binary"], "--algo", "arow-p",
                                         "--passes", 3, "--holdout_period", 7,
                                         "--early_terminate", 9, "-f", tmp_path / "t.npz"))
    proc = run_cli("dist-train", data["binary"], "--workers", 1, "--shards", 1, "--passes", 3,
                   "--holdout_period", 7, "--algo", "arow-p", "-f", tmp_path / "d.npz")
    assert proc.returncode == 0, proc.stderr
    assert "holdout 0/1 loss" in proc.stderr.splitlines()[0]
    rows = [line.split() for line in proc.stderr.splitlines() if line[:5].strip().isdigit()]
    assert [float(r[2]) for r in rows] == pytest.approx(expected, abs=1e-6), proc.stderr
    summary = next(x for x in proc.stderr.splitlines()
                   if x.startswith("holdout 0/1 loss per round = "))
    assert [float(v) for v in summary.split(" = ")[1].split(", ")] == \
        pytest.approx(expected, abs=1e-6)


def test_holdout_of_shards_is_their_held_out_lines_pooled(run_cli, data, client, tmp_path):
    """Two files, a shard each: round 1's holdout loss is the two files' train holdout losses
    of pass 1 weighted by their held-out lines (every 7th); the same for 1 or 2 workers."""
    lines = data["binary"].read_text().splitlines(keepends=True)
    parts = [_write_text(tmp_path / "a.svm", lines[:500]),
             _write_text(tmp_path / "b.svm", lines[500:])]
    losses = [_holdout_per_pass(run_cli("train", p, "--algo", "nherd-p", "--passes", 2,
                                        "--holdout_period", 7, "-f", tmp_path / "t.npz"))[0]
              for p in parts]
    held = np.array([500 // 7, 700 // 7])
    flags = dict(rounds=2, cluster=Cluster(shards="2"), quiet=True, algo="nherd-p",
                 settings=Settings(holdout_period=7))
    two = dist_train([str(p) for p in parts], tmp_path / "two.npz", client=client, **flags)
    with _local_cluster(1) as cluster, distributed.Client(cluster) as one:
        single = dist_train([str(p) for p in parts], tmp_path / "one.npz", client=one, **flags)
    per_round = [float(v) for v in two["holdout 0/1 loss per round"].split(", ")]
    assert per_round[0] == pytest.approx(held @ losses / held.sum(), abs=1e-6)
    assert single["holdout 0/1 loss per round"] == two["holdout 0/1 loss per round"]
    assert _same_arrays(load_model(tmp_path / "two.npz")[1], load_model(tmp_path / "one.npz")[1])


def test_without_holdout_every_example_is_learned(run_cli, data, tmp_path):
    """No --holdout_period: no holdout column, and --holdout_period 1 is refused."""
    assert "every line" in _error(run_cli, data["binary"], "--holdout_period", 1, "--shards", 1,
                                  "-f", tmp_path / "m.npz")


def _per_round(summary):
    return [float(v) for v in summary["holdout 0/1 loss per round"].split(", ")]


def test_holdout_keeps_the_best_round_and_its_model_is_a_run_of_that_many(data, client,
                                                                          tmp_path):
    """Three shards, 8 rounds, --holdout_period 7: nherd-p's holdout loss is lowest in round
    2, higher in rounds 5 to 7 and as low again in rounds 3, 4 and 8 (a tie: the earlier
    round). The model written is round 2's: bit for bit, meta included, the model of the same
    run with 2 rounds."""
    flags = dict(shards="3", algo="nherd-p", settings=Settings(holdout_period=7))
    summary = _run(client, data["binary"], tmp_path / "eight.npz", rounds=8, early_terminate=9,
                   **flags)
    losses = _per_round(summary)
    best = losses.index(min(losses)) + 1
    assert summary["rounds"] == 8 and summary["best round"] == best
    assert summary["best holdout 0/1 loss"] == pytest.approx(min(losses), abs=1e-6)
    # what makes the data a test: later rounds higher, and one as low (the tie)
    assert best < 8 and max(losses[best:]) > min(losses) and min(losses) in losses[best:], \
        losses
    _run(client, data["binary"], tmp_path / "best.npz", rounds=best, **flags)
    (meta_kept, kept), (meta_best, arrays_best) = (load_model(tmp_path / f"{name}.npz")
                                                   for name in ("eight", "best"))
    assert _same_arrays(kept, arrays_best)
    assert meta_kept == meta_best   # its examples: the best round's, as train's best pass


def test_cli_holdout_stops_after_early_terminate_rounds_and_says_the_best(run_cli, data,
                                                                          tmp_path):
    """train's --early_terminate, with its default (3): arow-p's holdout loss is lowest in
    round 2 of 8 (--holdout_period 7, three shards), so rounds 3 to 5 end the run; the
    summary gives the best loss and round, a line says which round's model was written."""
    model = tmp_path / "m.npz"
    proc = run_cli("dist-train", data["binary"], "--workers", 1, "--shards", 3, "--passes", 8,
                   "--holdout_period", 7, "--algo", "arow-p", "-f", model)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stderr.splitlines() if line[:5].strip().isdigit()]
    losses = [float(r[2]) for r in rows]
    assert len(rows) == 5 and losses.index(min(losses)) == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert "rounds = 5" in lines
    assert f"best holdout 0/1 loss = {min(losses):.6f}" in lines
    assert "best round = 2" in lines
    assert f"streamherd: model from round 2 (best holdout 0/1 loss {min(losses):.6f})" in lines
    assert load_model(model)[0]["examples"] == 2 * (1200 - 1200 // 7)
    assert "--early_terminate 0" in _error(run_cli, data["binary"], "--holdout_period", 7,
                                           "--early_terminate", 0, "-f", tmp_path / "n.npz")
    assert not (tmp_path / "n.npz").exists()


def test_no_labeled_held_out_line_keeps_the_last_round(data, client, tmp_path, capsys):
    """A holdout period longer than the file holds no line out: no best round, the last
    round's model (every line learned, as without a holdout set), said on stderr."""
    summary = dist_train([str(data["binary"])], tmp_path / "m.npz", rounds=3,
                         cluster=Cluster(shards="2"), client=client, algo="arow-p",
                         settings=Settings(holdout_period=5000), early_terminate=1)
    assert summary["rounds"] == 3 and "best round" not in summary
    assert "no held-out example was labeled: model from the last round (3)" in \
        capsys.readouterr().err
    _run(client, data["binary"], tmp_path / "plain.npz", rounds=3, shards="2", algo="arow-p")
    assert _same_arrays(load_model(tmp_path / "m.npz")[1], load_model(tmp_path / "plain.npz")[1])


def _proba(run_cli, model, path):
    proc = run_cli("predict", "--proba", "-m", model, path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("algo,task", [("arow-p", "binary"), ("pa2", "binary"),
                                       ("pa2", "multiclass")])
def test_one_shard_one_round_has_trains_calibration(run_cli, data, client, tmp_path, algo,
                                                    task):
    """The calibration learns from round 1's progressive predictions, as train from its first
    pass: one shard, one round gives train's --proba bit for bit."""
    trained = tmp_path / "train.npz"
    assert run_cli("train", data[task], "--algo", algo, *TASKS[task], "-f", trained,
                   "--quiet").returncode == 0
    dist_train([str(data[task])], tmp_path / "dist.npz", rounds=1, cluster=Cluster(shards="1"),
               client=client, quiet=True, algo=algo, **FLAGS[task])
    assert load_model(tmp_path / "dist.npz")[0]["calibration"] == \
        load_model(trained)[0]["calibration"]
    assert _proba(run_cli, tmp_path / "dist.npz", data[task]) == \
        _proba(run_cli, trained, data[task])


def _labels(path):
    return [line.split()[0] for line in path.read_text().splitlines()]


def test_shards_merge_their_calibration_statistics(data, client, tmp_path):
    """Three shards, two rounds: the binary histograms hold round 1's examples, each once,
    with their labels' counts (the file's); the multiclass sample (all of them fit) holds
    every example's class once; -i adds the next run's round 1 to the saved statistics."""
    labels = _labels(data["binary"])
    model = tmp_path / "b.npz"
    _run(client, data["binary"], model, rounds=2, algo="arow-p")
    saved = load_model(model)[0]["calibration"]
    assert saved["method"] == "isotonic" and saved["params"]["x"]
    assert (sum(saved["positive"]), sum(saved["negative"])) == \
        (labels.count("1"), labels.count("0"))
    _run(client, data["binary"], model, rounds=1, initial_model=model)
    continued = load_model(model)[0]["calibration"]
    assert (sum(continued["positive"]), sum(continued["negative"])) == \
        (2 * labels.count("1"), 2 * labels.count("0"))
    classes = _labels(data["multiclass"])
    _run(client, data["multiclass"], tmp_path / "m.npz", rounds=2, algo="pa2",
         calibration="platt")   # any method: multiclass models calibrate by softmax
    sample = load_model(tmp_path / "m.npz")[0]["calibration"]
    assert sample["seen"] == len(classes) == len(sample["scores"])
    names = load_model(tmp_path / "m.npz")[0]["classes"]
    assert sorted(names[z] for z in sample["classes"]) == sorted(classes)
    _run(client, data["binary"], tmp_path / "p.npz", rounds=1, algo="pa2", calibration="platt")
    assert set(load_model(tmp_path / "p.npz")[0]["calibration"]["params"]) == {"a", "b"}


@pytest.mark.parametrize("algo,mix", [("avg-perceptron", Mix()), ("arow-p", Mix()),
                                      ("nherd-p", Mix("jubatus", "mistakes"))])
def test_an_empty_shard_gives_the_model_of_the_others(data, client, tmp_path, algo, mix):
    """An empty file beside the data (two shards) gives the model of the data alone (one
    shard) bit for bit, calibration included: the empty shard learned nothing, so it is not
    mixed in (it halved every weight under mean)."""
    empty = tmp_path / "empty.svm"
    empty.write_text("")
    for name, paths, shards in (("two", [data["binary"], empty], "2"),
                                ("one", [data["binary"]], "1")):
        dist_train([str(p) for p in paths], tmp_path / f"{name}.npz", rounds=2,
                   cluster=Cluster(shards=shards), client=client, quiet=True, algo=algo, mix=mix)
    (meta_two, two), (meta_one, one) = (load_model(tmp_path / f"{n}.npz") for n in ("two", "one"))
    assert _same_arrays(two, one)
    for key in ("calibration", "learner", "examples", "labels"):
        assert meta_two[key] == meta_one[key]


def test_cli_ova_without_classes_scans_them_and_its_model_predicts(run_cli, data, tmp_path):
    """--multiclass ova without --classes: the classes of the label scan (it failed before
    the cluster started); the model predicts, gives probabilities that sum to 1 and continues
    with train -i (the multiclass calibration was an empty sample that did not load)."""
    model = tmp_path / "ova.npz"
    proc = run_cli("dist-train", data["multiclass"], "--workers", 2, "--shards", 2,
                   "--algo", "pa2", "--multiclass", "ova", "-f", model, "--quiet")
    assert proc.returncode == 0, proc.stderr
    meta = load_model(model)[0]
    assert meta["classes"] == list(dict.fromkeys(_labels(data["multiclass"])))
    assert meta["calibration"]["seen"] == 1200 and meta["calibration"]["params"]["biases"]
    assert run_cli("predict", "-m", model, data["multiclass"]).returncode == 0
    rows = [[float(x.split(":")[1]) for x in line.split()]
            for line in _proba(run_cli, model, data["multiclass"]).splitlines()]
    assert len(rows) == 1200 and all(abs(sum(r) - 1) < 1e-6 for r in rows)
    assert len({tuple(r) for r in rows}) > 100   # not one uniform row
    again = run_cli("train", data["multiclass"], "-i", model, "-f", tmp_path / "t.npz",
                    "--quiet")
    assert again.returncode == 0, again.stderr


def test_cli_auto_and_no_workers_are_refused_before_a_cluster(run_cli, data, tmp_path):
    model = tmp_path / "m.npz"
    assert "train -C auto" in _error(run_cli, data["binary"], "-C", "auto", "-f", model)
    assert "train --algo auto" in _error(run_cli, data["binary"], "--algo", "auto", "-f", model)
    assert "start at least 1 worker" in _error(run_cli, data["binary"], "--workers", 0,
                                               "-f", model)
    assert not model.exists()
