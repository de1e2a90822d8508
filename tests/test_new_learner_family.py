"""A learner family added from outside the package (tests/toy_family.py: a module and its registry
lines, registered at run time, as the README's Development section says) is a learner of every
face with no other edit: the command line's flags, help, -C auto's bank, the model file's check,
predict, inspect and experiment; scikit-learn's and river's estimators' parameters."""
import csv
import importlib
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
from river import base as river_base
from sklearn.base import clone

import toy_family
from helpers import REPO as ROOT
from streamherd import learners, load_svmlight
from streamherd.river import OnlineClassifier as RiverClassifier
from streamherd.sklearn import OnlineClassifier, OnlineRegressor, load_model

SAMPLE = ROOT / "samples" / "sample.svm"
# the command line in a process that registers the family first
# the flags the registry notes as it grows (restored with it)
DECLARED_FLAGS = importlib.import_module("streamherd.learners.spec")._DECLARED_FLAGS
REGISTERED_CLI = "import toy_family; toy_family.register()\nfrom streamherd.cli import main; main()"


def cli(*args, check=True):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", REGISTERED_CLI, *map(str, args)],
                            capture_output=True, text=True, env=env, cwd=ROOT)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def registered():
    """The toy family registered in this process for one test, the registry restored after."""
    variants, aliases = dict(learners.REGISTRY), dict(learners.ALIASES)
    flags = dict(DECLARED_FLAGS)
    toy_family.register()
    yield
    for table, saved in ((learners.REGISTRY, variants), (learners.ALIASES, aliases),
                         (DECLARED_FLAGS, flags)):
        table.clear()
        table.update(saved)


def margin_perceptron(X, y, tau):
    """The family's update in plain numpy over dense rows with the bias appended: w += y x
    whenever y w.x <= tau."""
    rows = np.hstack([X.toarray(), np.ones((X.shape[0], 1))])
    w = np.zeros(rows.shape[1])
    for x, label in zip(rows, np.where(y > 0, 1.0, -1.0)):
        if label * (w @ x) <= tau:
            w += label * x
    return w[:-1], w[-1]


def test_a_registered_name_cannot_be_taken_again(registered):
    with pytest.raises(Exception, match="margin-perceptron, mp: the name is taken"):
        toy_family.register()


def test_the_command_line_trains_predicts_and_inspects_a_registered_family(tmp_path):
    model = tmp_path / "m.npz"
    assert "--tau FLOAT|auto" in cli("train", "--help").stdout
    cli("train", "--algo", "mp", "--tau", "0.5", SAMPLE, "-f", model, "--quiet")
    predictions = cli("predict", "-m", model, SAMPLE).stdout.split()
    assert len(predictions) == 2000 and set(predictions) == {"-1", "1"}
    assert "weight" in cli("inspect", model).stdout
    refused = cli("train", "--algo", "mp", "-C", "1", SAMPLE, check=False)
    assert refused.returncode == 2
    assert "margin-perceptron does not take -C; its hyperparameters are: --tau" in refused.stderr


def test_the_command_lines_model_is_the_papers_update_and_the_estimators(registered, tmp_path):
    """One pass in order: the command line's weights, scikit-learn's and the numpy
    transcription's are the same numbers."""
    model = tmp_path / "m.npz"
    cli("train", "--algo", "margin-perceptron", "--tau", "0.5", SAMPLE, "-f", model, "--quiet")
    X, y = load_svmlight(SAMPLE)
    fitted = OnlineClassifier(algo="margin-perceptron", tau=0.5, max_iter=1, shuffle=False,
                              calibration="none").fit(X, y)
    weights, bias = margin_perceptron(X, y, 0.5)
    assert np.count_nonzero(weights) > 100
    np.testing.assert_array_equal(fitted.coef_.ravel(), weights)
    assert fitted.intercept_ == bias
    loaded = load_model(model)   # column j of its 2^18: svmlight index j + 1, as X's column j
    assert loaded.get_params()["tau"] == 0.5
    np.testing.assert_array_equal(loaded.coef_.ravel()[:X.shape[1]], weights)
    assert loaded.intercept_ == bias


def test_auto_chooses_the_new_hyperparameter_over_its_grid(tmp_path):
    result = cli("train", "--algo", "mp", "--tau", "auto", SAMPLE, "-f", tmp_path / "m.npz")
    assert "tau = auto over 4 values (0, 0.5, 1, 2)" in result.stderr


def test_the_estimators_take_the_new_hyperparameter_as_a_parameter(registered):
    assert "tau" in inspect.signature(OnlineClassifier).parameters
    assert "tau" not in inspect.signature(OnlineRegressor).parameters  # no squared-loss form
    estimator = OnlineClassifier(algo="mp", tau=2.0)
    assert clone(estimator).tau == 2.0
    assert estimator.set_params(tau=1.0).get_params()["tau"] == 1.0
    X, y = load_svmlight(SAMPLE)
    with pytest.raises(ValueError, match="--tau .* must be a number >= 0, got -1"):
        OnlineClassifier(algo="mp", tau=-1.0).fit(X, y)


def test_the_river_model_learns_the_new_family(registered):
    model = RiverClassifier(algo="mp", tau=0.5)
    assert model._get_params()["tau"] == 0.5 and model.clone().tau == 0.5
    assert isinstance(model, river_base.Classifier)
    rows = [line.split() for line in SAMPLE.read_text().splitlines()]
    examples = [({f.split(":")[0]: float(f.split(":")[1]) for f in row[1:]}, row[0] == "1")
                for row in rows]
    mistakes = 0
    for x, label in examples:
        mistakes += model.predict_one(x) != label
        model.learn_one(x, label)
    assert mistakes < 0.3 * len(examples)
    assert model._model.meta()["hyperparameters"] == {"tau": 0.5}


def test_experiment_runs_the_new_family(tmp_path):
    out = tmp_path / "experiment"
    cli("experiment", SAMPLE, "--algos", "mp", "--grid", "tau=0,1", "--noise", "0", "--folds",
        "2", "--max-passes", "1", "--no-plots", "--quiet", "--out", out)
    with (out / "runs.csv").open() as f:
        runs = list(csv.DictReader(f))
    assert runs and {run["algo"] for run in runs} == {"margin-perceptron"}
