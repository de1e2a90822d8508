"""End to end through ``python -m streamherd`` on real data: train, predict, the progress table,
continuing from a model, and one-line errors for every kind of user mistake."""
import gzip
import importlib.metadata
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from streamherd.model import load_model

from helpers import REPO, without_compile_notice

CONSTANT = 11650396


def one_line_error(proc):
    """The process failed with exactly one line on stderr and no traceback."""
    assert proc.returncode != 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = without_compile_notice(proc.stderr).strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    assert lines[0].strip()
    return lines[0]


def progress_rows(stderr):
    """The rows of the progress table: list of (average loss, since last, counter, weight)."""
    lines = stderr.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("average  since"))
    assert lines[start + 1].startswith("loss     last")
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        parts = line.split()
        rows.append((float(parts[0]), float(parts[1]), int(parts[2]), float(parts[3])))
    return rows


def summary(stderr):
    return dict(re.findall(r"^([a-z0-9/ ]+?) = (\S+)$", stderr, re.M))


def svm_labels(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [float(line.split()[0]) for line in f if line.strip()]


def svm_rows(path):
    """Pure-Python read of a clean svmlight file: (labels, list of {index: value})."""
    opener = gzip.open if str(path).endswith(".gz") else open
    labels, rows = [], []
    with opener(path, "rt") as f:
        for line in f:
            tokens = line.split()
            labels.append(float(tokens[0]))
            rows.append({int(k): float(v) for k, v in (t.split(":") for t in tokens[1:])})
    return labels, rows


# ---------------------------------------------------------------- a9a: train and predict

@pytest.fixture(scope="module")
def a9a(data_dir, tmp_path_factory, run_cli):
    """PA-II on a9a, once from stdin (gzip already undone) and once from the file path."""
    folder = tmp_path_factory.mktemp("a9a")
    train = data_dir / "a9a.svm.gz"
    from_stdin = run_cli("train", "--algo", "pa2", "-C", "0.1", "-f", folder / "stdin.npz",
                         input=gzip.decompress(train.read_bytes()))
    from_file = run_cli("train", "--algo", "pa2", "-C", "0.1", "-f", folder / "file.npz", train)
    return {"folder": folder, "stdin": from_stdin, "file": from_file, "train": train,
            "test": data_dir / "a9a.t.svm.gz"}


def test_train_from_stdin_and_from_file(a9a):
    for key in ("stdin", "file"):
        proc = a9a[key]
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""  # stdout stays clean for pipelines
        assert "Traceback" not in proc.stderr
    meta_s, arrays_s = load_model(a9a["folder"] / "stdin.npz")
    meta_f, arrays_f = load_model(a9a["folder"] / "file.npz")
    np.testing.assert_array_equal(arrays_s["mean"], arrays_f["mean"])
    assert meta_f["algo"] == "pa2"
    assert meta_f["hyperparameters"]["C"] == 0.1
    assert meta_f["bits"] == 18 and meta_f["bias"] is True
    assert meta_f["examples"] == 32561


def test_trained_model_is_pa2_on_the_data(a9a):
    """The CLI's model equals a dense PA-II written here, run over a Python parse of a9a."""
    labels, rows = svm_rows(a9a["train"])
    d = 124
    bias = d  # one extra column for the constant feature
    w = np.zeros(d + 1)
    C = 0.1
    mistakes = 0
    for label, row in zip(labels, rows):
        idx = np.fromiter(list(row) + [bias], np.int64)
        val = np.fromiter(list(row.values()) + [1.0], np.float64)
        y = 1.0 if label > 0 else -1.0
        m = w[idx] @ val
        mistakes += (m > 0) != (y > 0)
        loss = max(0.0, 1.0 - y * m)
        if loss > 0:
            w[idx] += loss / (val @ val + 1.0 / (2 * C)) * y * val
    _, arrays = load_model(a9a["folder"] / "file.npz")
    mean = arrays["mean"]
    np.testing.assert_allclose(mean[:d], w[:d], rtol=1e-9, atol=1e-12)
    assert mean[CONSTANT & (2 ** 18 - 1)] == pytest.approx(w[bias], rel=1e-9)
    others = np.ones(len(mean), bool)
    others[:d] = False
    others[CONSTANT & (2 ** 18 - 1)] = False
    assert np.all(mean[others] == 0.0)
    stats = summary(a9a["file"].stderr)
    assert int(stats["mistakes"]) == mistakes
    assert int(stats["number of examples"]) == 32561


def test_progress_table(a9a):
    stderr = a9a["file"].stderr
    rows = progress_rows(stderr)
    assert [r[2] for r in rows] == [2 ** k for k in range(15)]  # 1, 2, 4, ... 16384 <= 32561
    assert [r[3] for r in rows] == [float(2 ** k) for k in range(15)]
    for average, since, counter, _ in rows:
        assert 0.0 <= average <= 1.0 and 0.0 <= since <= 1.0
        # average is printed with 6 decimals: average * counter must be a whole mistake count
        assert average * counter == pytest.approx(round(average * counter),
                                                  abs=counter * 5e-7 + 1e-9)
    stats = summary(stderr)
    assert int(stats["number of examples"]) == 32561
    assert float(stats["weighted example sum"]) == 32561.0
    assert int(stats["bad lines skipped"]) == 0
    mistakes = int(stats["mistakes"])
    assert float(stats["average progressive 0/1 loss"]) == pytest.approx(mistakes / 32561, abs=1e-6)
    assert 0.1 < mistakes / 32561 < 0.3


def test_predict_a9a_test(a9a, run_cli):
    proc = run_cli("predict", "-m", a9a["folder"] / "file.npz", a9a["test"])
    assert proc.returncode == 0, proc.stderr
    predictions = proc.stdout.split("\n")
    assert predictions[-1] == ""
    predictions = predictions[:-1]
    assert len(predictions) == 16281
    assert set(predictions) == {"-1", "1"}
    truth = svm_labels(a9a["test"])
    errors = sum((p == "1") != (t > 0) for p, t in zip(predictions, truth))
    match = re.search(r"error rate = ([0-9.]+)", proc.stderr)
    assert match, proc.stderr
    rate = float(match.group(1))
    assert 0.10 < rate < 0.30
    assert rate == pytest.approx(errors / 16281, abs=1e-6)


def test_predict_to_file_and_from_stdin(a9a, run_cli, tmp_path):
    out = tmp_path / "p.txt"
    by_file = run_cli("predict", "-m", a9a["folder"] / "file.npz", "-p", out, a9a["test"])
    assert by_file.returncode == 0 and by_file.stdout == ""
    by_stdin = run_cli("predict", "-m", a9a["folder"] / "file.npz", "--quiet",
                       input=a9a["test"].read_bytes())  # still gzip: detected on stdin too
    assert by_stdin.returncode == 0 and by_stdin.stderr == ""
    assert out.read_text() == by_stdin.stdout
    assert len(by_stdin.stdout.splitlines()) == 16281


def test_quiet_prints_nothing(data_dir, run_cli, tmp_path):
    proc = run_cli("train", "--quiet", "-f", tmp_path / "m.npz", data_dir / "agaricus.train.svm")
    assert proc.returncode == 0
    assert proc.stderr == "" and proc.stdout == ""
    assert (tmp_path / "m.npz").exists()


def test_continue_training_with_initial_model(a9a, run_cli):
    folder = a9a["folder"]
    proc = run_cli("train", "-i", folder / "file.npz", "-f", folder / "second.npz", "--quiet",
                   a9a["train"])
    assert proc.returncode == 0, proc.stderr
    first_meta, first = load_model(folder / "file.npz")
    meta, second = load_model(folder / "second.npz")
    assert meta["algo"] == "pa2" and meta["hyperparameters"]["C"] == 0.1
    assert meta["examples"] == 2 * 32561
    assert not np.allclose(first["mean"], second["mean"])


@pytest.mark.parametrize("algo", ["pa2", "avg-perceptron"])
def test_continue_training_equals_one_run(data_dir, run_cli, tmp_path, algo):
    train, test = data_dir / "agaricus.train.svm", data_dir / "agaricus.test.svm"
    assert run_cli("train", "--algo", algo, "--quiet", "-f", tmp_path / "a.npz",
                   train).returncode == 0
    assert run_cli("train", "--quiet", "-i", tmp_path / "a.npz", "-f", tmp_path / "ab.npz",
                   test).returncode == 0
    assert run_cli("train", "--algo", algo, "--quiet", "-f", tmp_path / "both.npz", train,
                   test).returncode == 0
    meta_ab, ab = load_model(tmp_path / "ab.npz")
    meta_both, both = load_model(tmp_path / "both.npz")
    assert set(ab) == set(both)
    for name in both:
        np.testing.assert_allclose(ab[name], both[name], rtol=1e-9, atol=1e-12)
    assert meta_ab["examples"] == meta_both["examples"] == 6513 + 1611


# ---------------------------------------------------------------- labels, --raw, VW tags

def test_zero_one_labels_round_trip_and_raw(data_dir, run_cli, tmp_path):
    model = tmp_path / "ag.npz"
    assert run_cli("train", "--quiet", "-f", model, data_dir / "agaricus.train.svm").returncode == 0
    test = data_dir / "agaricus.test.svm"
    labels = run_cli("predict", "-m", model, test)
    raw = run_cli("predict", "-m", model, "--raw", "--quiet", test)
    assert labels.returncode == 0 and raw.returncode == 0
    predicted = labels.stdout.splitlines()
    margins = [float(v) for v in raw.stdout.splitlines()]
    assert len(predicted) == len(margins) == 1611
    assert set(predicted) == {"0", "1"}
    assert all(math.isfinite(m) for m in margins)
    assert [p == "1" for p in predicted] == [m > 0 for m in margins]
    truth = svm_labels(test)
    errors = sum((p == "1") != (t > 0) for p, t in zip(predicted, truth))
    assert errors / 1611 < 0.15  # agaricus is nearly separable
    rate = float(re.search(r"error rate = ([0-9.]+)", labels.stderr).group(1))
    assert rate == pytest.approx(errors / 1611, abs=1e-6)
    # The margins are w.x of the saved mean (hashing model written here: svmlight index = slot).
    _, arrays = load_model(model)
    w = arrays["mean"]
    _, rows = svm_rows(test)
    expected = [sum(w[k] * v for k, v in row.items()) + w[CONSTANT & (2 ** 18 - 1)] for row in rows]
    np.testing.assert_allclose(margins, expected, rtol=1e-7, atol=1e-9)


def test_vw_tags_follow_the_prediction(run_cli, tmp_path):
    data = tmp_path / "tiny.vw"
    data.write_text("1 'alpha |f a b\n"
                    "-1 'beta |f c d\n"
                    "1 |f a\n"
                    "-1 2.0 gamma|f c\n"
                    "|f a b 'not_a_tag\n"
                    "'delta |f d\n")
    model = tmp_path / "vw.npz"
    train = run_cli("train", "--algo", "perceptron", "-f", model, data)
    assert train.returncode == 0, train.stderr
    pred = run_cli("predict", "-m", model, data)
    raw = run_cli("predict", "-m", model, "--raw", data)
    assert pred.returncode == 0, pred.stderr
    lines = pred.stdout.splitlines()
    tags = ["alpha", "beta", None, "gamma", None, "delta"]
    assert len(lines) == 6
    raw_lines = raw.stdout.splitlines()
    for line, raw_line, tag in zip(lines, raw_lines, tags):
        parts = line.split(" ")
        raw_parts = raw_line.split(" ")
        assert parts[0] in ("-1", "1")
        assert (parts[0] == "1") == (float(raw_parts[0]) > 0)
        assert parts[1:] == ([] if tag is None else [tag])
        assert raw_parts[1:] == parts[1:]


def test_closed_output_ends_quietly_with_the_sigpipe_status(run_cli, tmp_path):
    """``streamherd predict ... | head -1``: when the reader of the predictions goes away, the
    run stops with status 141 (128 + SIGPIPE), as cat and vw do, and prints nothing more."""
    sample = REPO / "samples" / "sample.svm"
    data = tmp_path / "big.svm"
    data.write_bytes(sample.read_bytes() * 25)  # 50,000 predictions: more than a pipe holds
    model = tmp_path / "m.npz"
    assert run_cli("train", "--algo", "pa2", "-f", model, sample).returncode == 0
    with open(tmp_path / "stderr", "w+b") as errors:
        proc = subprocess.Popen([sys.executable, "-m", "streamherd", "predict", "-m", str(model),
                                 str(data)], cwd=REPO, stdout=subprocess.PIPE, stderr=errors)
        first = proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=300) == 141
        errors.seek(0)
        assert errors.read() == b""
    assert first.strip() in (b"1", b"-1")


# ---------------------------------------------------------------- --version, --help

def test_version(run_cli):
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"streamherd {importlib.metadata.version('streamherd')}"


def test_help(run_cli):
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "train" in proc.stdout and "predict" in proc.stdout
    proc = run_cli("train", "--help")
    assert proc.returncode == 0
    for flag in ("--algo", "-C", "--bits", "-f", "-i", "--skip-bad", "--quiet", "--format"):
        assert flag in proc.stdout
    proc = run_cli("predict", "--help")
    assert proc.returncode == 0 and "--raw" in proc.stdout and "--model" in proc.stdout


# ---------------------------------------------------------------- errors

@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_text("1 1:1 2:1\n-1 3:1\n\n1 4:1 5:oops 6:1\n-1 7:1\n")
    return path


def test_malformed_line_stops_with_one_line_and_no_model(run_cli, bad_file, tmp_path):
    model = tmp_path / "m.npz"
    proc = run_cli("train", "-f", model, bad_file)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"{bad_file}:4:" in line
    assert "5:oops" in line
    assert proc.stdout == ""
    assert not model.exists()


def test_malformed_line_keeps_an_existing_model(run_cli, bad_file, tmp_path, data_dir):
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "-f", model, data_dir / "agaricus.test.svm").returncode == 0
    before = model.read_bytes()
    proc = run_cli("train", "-f", model, bad_file)
    assert proc.returncode == 2
    assert model.read_bytes() == before


def test_skip_bad(run_cli, bad_file, tmp_path):
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--skip-bad", "-f", model, bad_file)
    assert proc.returncode == 0, proc.stderr
    stats = summary(proc.stderr)
    assert stats["bad lines skipped"] == "1"
    assert stats["number of examples"] == "3"
    assert model.exists()
    # one output line per example line: an empty one for the malformed line 4 (line 3 is
    # blank, no example)
    pred = run_cli("predict", "--skip-bad", "-m", model, bad_file)
    assert pred.returncode == 0, pred.stderr
    lines = pred.stdout.splitlines()
    assert len(lines) == 4 and lines[2] == "" and all(lines[k] for k in (0, 1, 3))
    assert "1 malformed lines skipped" in pred.stderr
    pred = run_cli("predict", "-m", model, bad_file)
    assert pred.returncode == 2
    assert f"{bad_file}:4:" in pred.stderr and "Traceback" not in pred.stderr


def _usage_cases(tmp_path):
    good = tmp_path / "good.svm"
    good.write_text("1 1:1\n-1 2:1\n")
    three = tmp_path / "three.svm"
    three.write_text("1 1:1\n-1 2:1\n\n2 3:1\n")
    junk_model = tmp_path / "junk.npz"
    junk_model.write_text("not a model\n")
    m = tmp_path / "out.npz"
    return {
        "missing input": (["train", "-f", m, tmp_path / "absent.svm"], ["absent.svm"]),
        "missing model": (["predict", "-m", tmp_path / "absent.npz", good], ["absent.npz"]),
        "bad model file": (["predict", "-m", junk_model, good], ["junk.npz"]),
        "bad initial model": (["train", "-i", junk_model, "-f", m, good], ["junk.npz"]),
        "bits 0": (["train", "--bits", "0", "-f", m, good], ["bits"]),
        "bits 31": (["train", "--bits", "31", "-f", m, good], ["bits"]),
        "bits abc": (["train", "--bits", "abc", "-f", m, good], ["bits"]),
        "C abc": (["train", "-C", "abc", "-f", m, good], ["-C"]),
        "C negative": (["train", "--algo", "pa1", "-C", "-1", "-f", m, good], ["C"]),
        "unknown algo": (["train", "--algo", "nosuch", "-f", m, good], ["nosuch"]),
        "third label": (["train", "-f", m, three], [f"{three}:4:", "2"]),
        "C for perceptron": (["train", "--algo", "perceptron", "-C", "0.5", "-f", m, good],
                             ["perceptron", "-C"]),
        "unknown format": (["train", "--format", "csv", "-f", m, good], ["csv"]),
        "unknown option": (["train", "--no-such-flag", "-f", m, good], ["--no-such-flag"]),
        "predict without model": (["predict", good], ["model"]),
        "option without value": (["train", good, "--algo"], ["--algo"]),
        "model folder missing": (["train", "-f", tmp_path / "nodir" / "m.npz", good], ["nodir"]),
    }


USAGE_CASES = ["missing input", "missing model", "bad model file", "bad initial model", "bits 0",
               "bits 31", "bits abc", "C abc", "C negative", "unknown algo", "third label",
               "C for perceptron", "unknown format", "unknown option", "predict without model",
               "option without value", "model folder missing"]


@pytest.mark.parametrize("case", USAGE_CASES)
def test_user_errors_are_one_line(run_cli, tmp_path, case):
    args, must_contain = _usage_cases(tmp_path)[case]
    proc = run_cli(*args)
    line = one_line_error(proc)
    for text in must_contain:
        assert text in line, line
    assert proc.stdout == ""
    assert not (tmp_path / "out.npz").exists()


def test_no_arguments_shows_usage_without_traceback(run_cli):
    proc = run_cli()
    assert "Traceback" not in proc.stderr
    assert "Usage" in proc.stdout + proc.stderr


def test_option_values_of_every_kind_reach_the_model(run_cli, tmp_path):
    """A run with every kind of option (int, float, str, Path, repeated str, bool) trains the
    model those values ask for."""
    data = tmp_path / "d.svm"
    data.write_text("1 1:1 2:0.5\n-1 2:1 3:2\n1 1:0.25\n")
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--algo", "nherd-e", "-C", "0.25", "-a", "2", "-b", "7",
                   "--normalize", "--no-bias", "-f", model, "-d", data, "-d", data, "--quiet")
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(model)
    assert (meta["algo"], meta["bits"], meta["bias"], meta["normalize"]) == ("nherd-e", 7,
                                                                           False, "l2")
    assert meta["hyperparameters"] == {"C": 0.25, "a": 2.0}
    assert meta["examples"] == 6          # -d given twice: both files read
    assert len(arrays["mean"]) == 128


@pytest.mark.parametrize("flag, value, expected", [
    ("--bits", "2.5", "Input should be a valid integer"),
    ("-C", "one", "Input should be a valid number"),
    ("--eta", "", "Input should be a valid number"),
])
def test_bad_option_values_name_the_option(run_cli, tmp_path, flag, value, expected):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n")
    proc = run_cli("train", flag, value, data)
    line = one_line_error(proc)
    assert flag in line and expected in line, line


def test_train_start_up_imports_neither_pydantic_nor_scipy_nor_numba_compiler(tmp_path):
    """Start-up weight (its cost is measured in benchmarks/, not here): a plain train
    or predict loads neither typer's pydantic conversion nor scipy (numba's version check and
    BLAS probe, scipy.special) nor pyyaml (numba's config file) nor colorama (numba's coloured
    error messages, without a colour scheme chosen) nor numpy.ma (np.unique's first call) nor,
    with its kernels cached,
    what only numba's compiler needs (its registries, here the typed dict's) nor numba's array
    module (which loading a kernel that allocates or sorts imports). A multiclass train, whose
    calibration fits a softmax, and its predict --proba neither. The first run may compile
    (a cold cache); the second must not."""
    data, classes = tmp_path / "d.svm", tmp_path / "c.svm"
    data.write_text("1 1:1 2:0.5\n-1 2:1 3:2\n")
    classes.write_text("".join(f"{z} {z + 1}:1 4:0.5\n" for z in (0, 1, 2) * 20))
    model = tmp_path / "m.npz"
    probe = ("import sys\nfrom streamherd.cli import run\n"
             "for argv in (['train', '--algo', 'cw', '-b', '12', '-f', sys.argv[2], sys.argv[1]],\n"
             "             ['predict', '-m', sys.argv[2], sys.argv[1], '--quiet'],\n"
             "             ['train', '--algo', 'arow-p', '-b', '12', '-f', sys.argv[2],\n"
             "              '--quiet', sys.argv[3]],\n"
             "             ['predict', '-m', sys.argv[2], sys.argv[3], '--proba', '--quiet']):\n"
             "    try:\n        run(argv)\n    except SystemExit as e:\n"
             "        assert e.code == 0, e.code\n"
             "print(sorted(m for m in ('pydantic', 'scipy', 'yaml', 'colorama', 'numpy.ma',"
             " 'numba.typed.dictimpl', 'numba.np.arrayobj') if m in sys.modules))\n")
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", probe, str(data), str(model), str(classes)],
                              capture_output=True, text=True, cwd=REPO, timeout=600)
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
