"""The confidence-weighted learners through the command line, on the shared data sets
(helpers.DATA_DIR; skipped when a file is absent)."""
import gzip
import subprocess
import sys

import numpy as np
import pytest

from streamherd import learners
from streamherd.model import load_model
from streamherd.training import train

from helpers import DATA_DIR

DIAGONAL = [name for name, variant in learners.REGISTRY.items() if variant.covariance == "diagonal"]


def data_file(name):
    path = DATA_DIR / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


def streamherd(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)],
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"streamherd {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


def read_labels(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return np.array([float(line.split(None, 1)[0]) for line in f])


def binary_digits(tmp_path, name, positive, negative):
    """The lines of a digits file with label `positive` or `negative`, relabeled +1 / -1."""
    out = tmp_path / f"{name}_{positive}v{negative}.svm"
    with gzip.open(data_file(name), "rt") as f, open(out, "w") as g:
        for line in f:
            label, rest = line.split(None, 1)
            if label in (positive, negative):
                g.write(("+1 " if label == positive else "-1 ") + rest)
    return out


@pytest.fixture(scope="module")
def a9a_model(tmp_path_factory):
    model = tmp_path_factory.mktemp("a9a") / "nherd.npz"
    streamherd("train", data_file("a9a.svm.gz"), "--algo", "nherd-p", "-C", "0.1", "-f", model,
               "--quiet")
    return model


def test_nherd_on_a9a_predicts_a9a_t(a9a_model, tmp_path):
    predictions = tmp_path / "p.txt"
    result = streamherd("predict", data_file("a9a.t.svm.gz"), "-m", a9a_model, "-p", predictions)
    rate = float(result.stderr.split("error rate = ")[1].split()[0])
    assert rate < 0.25
    predicted = np.loadtxt(predictions)
    truth = read_labels(data_file("a9a.t.svm.gz"))
    assert np.mean(predicted != truth) == pytest.approx(rate, abs=1e-6)
    meta, arrays = load_model(a9a_model)
    assert meta["algo"] == "nherd-p" and meta["hyperparameters"]["C"] == 0.1
    assert set(arrays) == {"mean", "variance"}
    assert np.all(arrays["variance"] > 0) and np.all(arrays["variance"] <= 1.0)


def test_proba_is_a_probability_consistent_with_labels(a9a_model, tmp_path):
    out_proba = tmp_path / "proba.txt"
    out_label = tmp_path / "label.txt"
    streamherd("predict", data_file("a9a.t.svm.gz"), "-m", a9a_model, "--proba", "-p", out_proba,
               "--quiet")
    streamherd("predict", data_file("a9a.t.svm.gz"), "-m", a9a_model, "-p", out_label, "--quiet")
    p = np.loadtxt(out_proba)
    labels = np.loadtxt(out_label)
    assert p.shape == labels.shape and np.all((p >= 0) & (p <= 1))
    # calibrated (the default isotonic map): a non-decreasing function of the margin,
    # whose 0.5 need not sit at margin 0
    raw = np.loadtxt(streamherd("predict", data_file("a9a.t.svm.gz"), "-m", a9a_model, "--raw",
                                "--quiet").stdout.splitlines())
    assert np.all(np.diff(p[np.argsort(raw, kind="stable")]) >= -1e-12)
    truth = read_labels(data_file("a9a.t.svm.gz"))
    # a calibrated-ish probability: positives get more mass than negatives on average
    assert p[truth > 0].mean() > p[truth < 0].mean() + 0.2


def test_proba_on_an_uncalibrated_first_order_model_is_one_line_error(tmp_path):
    model = tmp_path / "pa.npz"
    streamherd("train", data_file("agaricus.train.svm"), "--algo", "pa2", "--calibration",
               "none", "-f", model, "--quiet")
    result = streamherd("predict", data_file("agaricus.test.svm"), "-m", model, "--proba",
                        check=False)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "--proba" in result.stderr


def test_arow_full_on_spambase(tmp_path):
    model = tmp_path / "arow.npz"
    streamherd("train", data_file("spambase.train.svm"), "--algo", "arow-full", "-b", "10",
               "-f", model, "--quiet")
    meta, arrays = load_model(model)
    cov = arrays["covariance"]
    assert cov.shape == (1024, 1024)
    np.testing.assert_allclose(cov, cov.T, rtol=1e-9, atol=1e-12)
    assert np.all(np.diag(cov) > 0)
    result = streamherd("predict", data_file("spambase.test.svm"), "-m", model, "--proba", "-p",
                        tmp_path / "p.txt")
    assert float(result.stderr.split("error rate = ")[1].split()[0]) < 0.3
    p = np.loadtxt(tmp_path / "p.txt")
    assert np.all((p >= 0) & (p <= 1))


def test_arow_full_with_30_bits_refuses(tmp_path):
    result = streamherd("train", data_file("spambase.train.svm"), "--algo", "arow-full", "-b",
                        "30", check=False)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
    assert "bytes" in result.stderr and "arow-p" in result.stderr


def test_hyperparameter_flags_are_checked(tmp_path):
    result = streamherd("train", data_file("agaricus.train.svm"), "--algo", "arow", "--eta",
                        "0.8", check=False)
    assert result.returncode != 0 and "--eta" in result.stderr
    result = streamherd("train", data_file("agaricus.train.svm"), "--algo", "cw", "--eta", "0.3",
                        check=False)
    assert result.returncode != 0 and "0.5" in result.stderr
    model = tmp_path / "m.npz"
    streamherd("train", data_file("agaricus.train.svm"), "--algo", "scw2", "-C", "0.5", "--eta",
               "0.7", "-a", "2", "-f", model, "--quiet")
    meta, arrays = load_model(model)
    assert meta["hyperparameters"] == {"C": 0.5, "eta": 0.7, "a": 2.0}


def test_non_finite_update_names_the_line(tmp_path):
    path = tmp_path / "huge.svm"
    path.write_text("1 1:1\n-1 2:1\n-1 1:1e160\n")
    result = streamherd("train", path, "--algo", "nherd-p", "--quiet", check=False)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
    assert f"{path}:3:" in result.stderr


def test_normalize_is_saved_and_used_by_predict(tmp_path):
    train = tmp_path / "t.svm"
    train.write_text("1 1:3 2:4\n-1 1:-30 3:40\n1 2:0.5\n")
    model = tmp_path / "m.npz"
    streamherd("train", train, "--algo", "arow", "--normalize", "--no-bias", "-f", model,
               "--quiet")
    meta, arrays = load_model(model)
    assert meta["normalize"] == "l2"
    test = tmp_path / "one.svm"
    test.write_text("1 1:30 2:40\n")
    scaled = float(streamherd("predict", test, "-m", model, "--raw", "--quiet").stdout)
    test.write_text("1 1:0.6 2:0.8\n")
    unit = float(streamherd("predict", test, "-m", model, "--raw", "--quiet").stdout)
    assert scaled != 0 and scaled == pytest.approx(unit, rel=1e-12)
    # without --normalize the same data gives a model that sees the scale
    plain = tmp_path / "plain.npz"
    streamherd("train", train, "--algo", "arow", "--no-bias", "-f", plain, "--quiet")
    assert not np.allclose(load_model(plain)[1]["mean"], arrays["mean"])
    # continuing keeps the saved setting; asking for the other one is refused
    streamherd("train", train, "-i", model, "--quiet")
    result = streamherd("train", train, "-i", plain, "--normalize", "--quiet", check=False)
    assert result.returncode != 0 and "--normalize" in result.stderr


@pytest.mark.parametrize("name", DIAGONAL)
def test_raw_pixels_and_counts_keep_the_model_finite(name, tmp_path):
    mnist = binary_digits(tmp_path, "mnist5k.svm.gz", "3", "5")
    news = data_file("news20_sci_elec_vs_med.train.svm.gz")
    for path in (mnist, news):  # in-process (the CLI is covered above): numba compiles once
        model = tmp_path / f"{name}.npz"
        train([path], algo=name, final_model=model, quiet=True)
        meta, arrays = load_model(model)  # load_model rejects NaN / infinity
        if "variance" in arrays:
            assert np.all(arrays["variance"] > 0)
        assert meta["progressive_loss"] < 0.5
