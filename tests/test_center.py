"""--center: a regression model's constant starts at the mean label of its first block, which is
learning the labels less that mean with the constant from 0 (each update reads the residual and
x alone); the default regression learner does it, a named one only when asked."""
import numpy as np
import pytest

from streamherd.features.space import FeatureSpace
from streamherd.model import load_model

from helpers import one_line_error


def write_prices(path, n=600, shift=0.0, seed=3):
    """Dense unscaled positive features and a large offset; labels less ``shift``."""
    rng = np.random.default_rng(seed)
    scales, weights = rng.uniform(1.0, 30.0, 5), rng.normal(size=5)
    lines = []
    for _ in range(n):
        x = np.abs(rng.normal(size=5)) * scales
        y = 250.0 + x @ weights + rng.normal() - shift
        lines.append(f"{y:.3f} " + " ".join(f"{j + 1}:{v:.3f}" for j, v in enumerate(x)))
    path.write_text("\n".join(lines) + "\n")
    return np.array([float(line.split()[0]) for line in lines])


@pytest.mark.parametrize("algo", ["arow-d", "pa2", "nherd-p"])
def test_centering_is_learning_the_labels_less_their_mean(run_cli, tmp_path, algo):
    labels = write_prices(tmp_path / "p.svm")
    mean = labels.mean()   # (the file is one block)
    write_prices(tmp_path / "shifted.svm", shift=float(f"{mean:.3f}"))
    flags = ["--algo", algo, "--loss", "squared", "--quiet"]
    assert run_cli("train", *flags, "--center", tmp_path / "p.svm",
                   "-f", tmp_path / "c.npz").returncode == 0
    assert run_cli("train", *flags, tmp_path / "shifted.svm",
                   "-f", tmp_path / "s.npz").returncode == 0
    meta, centered = load_model(tmp_path / "c.npz")
    shifted = load_model(tmp_path / "s.npz")[1]
    bias = FeatureSpace(meta["bits"]).bias_slot
    difference = centered["mean"] - shifted["mean"]
    # (the shifted labels are written to 3 decimals: the runs agree to their rounding)
    assert abs(difference[bias] - mean) < 1e-2
    np.testing.assert_allclose(np.delete(difference, bias), 0.0, atol=1e-3)
    assert np.abs(np.delete(centered["mean"], bias)).max() > 0.1   # (it learned something)


def test_the_default_regression_learner_centers_and_a_named_one_does_not(run_cli, tmp_path):
    labels = write_prices(tmp_path / "p.svm")
    assert run_cli("train", "--quiet", tmp_path / "p.svm", "-f", tmp_path / "d.npz",
                   "--race", "0").returncode == 0
    assert run_cli("train", "--quiet", "--algo", "arow-d", "-r", "auto", "--loss", "squared",
                   "--center", "--race", "0", tmp_path / "p.svm",
                   "-f", tmp_path / "e.npz").returncode == 0
    default, explicit = load_model(tmp_path / "d.npz"), load_model(tmp_path / "e.npz")
    assert default[0]["algo"] == "arow-d"
    np.testing.assert_array_equal(default[1]["mean"], explicit[1]["mean"])
    assert run_cli("train", "--quiet", "--algo", "arow-d", "--loss", "squared",
                   tmp_path / "p.svm", "-f", tmp_path / "n.npz").returncode == 0
    uncentered = load_model(tmp_path / "n.npz")[1]["mean"]
    assert np.abs(uncentered).max() < labels.mean() / 2   # the constant far from the mean


def test_center_and_no_center_together_are_a_one_line_error(run_cli, tmp_path):
    write_prices(tmp_path / "p.svm", n=10)
    line = one_line_error(run_cli("train", "--center", "--no-center", tmp_path / "p.svm"))
    assert "--center and --no-center" in line
