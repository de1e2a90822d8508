"""Importance weights and margins beyond what a float holds: the probability map is fitted
without a numpy warning, and a map that overflowed is refused in one line (exit 2) instead of
written into a model that predict then calls damaged."""
import warnings

import numpy as np
import pytest

from streamherd import calibration
from streamherd.errors import StreamherdError
from streamherd.model.container import load_model, save_model

from helpers import REPO, one_line_error

SAMPLE = REPO / "samples" / "sample.svm"
OVERFLOW = "streamherd: the probability map (--calibration) overflowed"


@pytest.mark.parametrize("algo", ["pa", "pa1", "pa2", "arow", "cw"])
def test_one_huge_importance_weight_trains_a_usable_model_quietly(tmp_path, run_cli, algo):
    (tmp_path / "huge.vw").write_text("1 1e308 |f a\n")
    proc = run_cli("train", "--quiet", "--algo", algo, "huge.vw", "-f", "m.npz", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    proc = run_cli("predict", "--quiet", "--proba", "-m", "m.npz", "huge.vw", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_importance_weights_that_overflow_the_map_write_no_model(tmp_path, run_cli, method):
    (tmp_path / "huge.vw").write_text("1 1e308 |f a\n-1 1e308 |f b\n1 1e308 |f a\n"
                                      "-1 1e300 |f b c\n")
    (tmp_path / "m.npz").write_bytes(b"old")
    proc = run_cli("train", "--quiet", "--calibration", method, "huge.vw", "-f", "m.npz",
                   cwd=tmp_path)
    assert one_line_error(proc).startswith(OVERFLOW)
    assert (tmp_path / "m.npz").read_bytes() == b"old"


def test_continuing_a_model_of_huge_means_writes_no_unusable_model(tmp_path, run_cli):
    proc = run_cli("train", "--quiet", "--algo", "arow", SAMPLE, "-f", tmp_path / "base.npz")
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(tmp_path / "base.npz")
    arrays["mean"] = np.sign(arrays["mean"]) * 1e306
    save_model(tmp_path / "huge.npz", meta, arrays)
    proc = run_cli("train", "--quiet", "-i", "huge.npz", SAMPLE, "-f", "m.npz", cwd=tmp_path)
    assert one_line_error(proc).startswith(OVERFLOW)
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("method", ["platt", "isotonic", "probit"])
def test_the_binary_map_of_overflowing_margins_warns_nothing_and_is_refused(method):
    statistics = calibration.BinaryCalibration(method)
    margins = np.array([-1e308, -1e308, 1e308, 2.0, -1.0])   # one bin's sum: -inf
    statistics.observe(margins, np.array([-1.0, -1.0, 1.0, 1.0, -1.0]), np.ones(5),
                       np.ones(5) if method == "probit" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        statistics.probabilities(margins, np.ones(5))
        with pytest.raises(StreamherdError, match="overflowed"):
            statistics.to_meta()


def test_the_multiclass_map_of_overflowing_scores_warns_nothing_and_is_refused():
    statistics = calibration.MulticlassCalibration()
    scores = np.array([[1e308, -1e308, 0.0], [-1e308, 1e308, 1.0], [0.0, 1.0, 1e308]] * 40)
    classes = np.array([0, 1, 2] * 40)
    statistics.observe(scores, classes, np.ones(len(classes)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        statistics.probabilities(scores)
        with pytest.raises(StreamherdError, match="overflowed"):
            statistics.to_meta()
