"""streamherd.sklearn against the command line: one pass of fit(load_svmlight(f)) is the model
`streamherd train f` writes (weights to 1e-12, predictions as `streamherd predict` prints them)
for binary, multiclass and regression learners; model files go both ways; and the estimator's
own rules (classes, shuffling, sample weights, partial_fit, pickling, parameters) each against
an independent computation."""
import pickle
from functools import partial

import numpy as np
import pytest

from streamherd import learners, load_svmlight
from streamherd.errors import StreamherdError
from streamherd.model import load_model as load_cli_model
from streamherd.sklearn import (
    AROWClassifier,
    InvalidParameter,
    OnlineClassifier,
    OnlineRegressor,
    PAClassifier,
    load_model,
)

pytest.importorskip("sklearn")

FEATURES = 30


def _write_svmlight(path, labels, rng):
    lines = []
    for label in labels:
        indices = np.sort(rng.choice(np.arange(1, FEATURES + 1), rng.integers(1, 9),
                                     replace=False))
        lines.append(" ".join([str(label), *(f"{i}:{rng.normal():.6g}" for i in indices)]))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(21)
    folder = tmp_path_factory.mktemp("data")
    n = 400
    return {
        "binary": _write_svmlight(folder / "binary.svm", rng.choice([-1, 1], n), rng),
        # the first class is not the smallest: block order is the order classes come in
        "multiclass": _write_svmlight(folder / "multi.svm",
                                      np.r_[[3, 1], rng.choice([1, 2, 3, 4], n - 2)], rng),
        "regression": _write_svmlight(folder / "regression.svm",
                                      np.round(rng.normal(size=n), 4), rng),
    }


def _cli_model(run_cli, path, model, algo, bits, *flags):
    proc = run_cli("train", path, "-f", model, "--algo", algo, "-b", bits, "--quiet", *flags)
    assert proc.returncode == 0, proc.stderr
    return load_cli_model(model)


def _cli_predictions(run_cli, model, path, *flags):
    proc = run_cli("predict", "-m", model, path, "--quiet", *flags)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("\n")[:-1]


def _by_column(mean, bits):
    """A CLI model's weights: (blocks, columns 0..FEATURES-1) and the bias of each block."""
    blocks = mean.reshape(-1, 1 << bits)
    bias_slot = 11650396 & ((1 << bits) - 1)
    return blocks[:, 1:FEATURES + 1], blocks[:, bias_slot]


# (algo, estimator bits, CLI bits): the full-covariance learners at few bits, both sides
BINARY = [("perceptron", None, 18), ("avg-perceptron", None, 18), ("pa2", None, 18),
          ("arow-p", None, 18), ("cw", None, 18), ("scw2", None, 18), ("narow-d", None, 18),
          ("nherd-full", 6, 6), ("sop", None, 18)]


@pytest.mark.parametrize("algo, bits, cli_bits", BINARY)
def test_binary_pass_equals_cli_train(run_cli, files, tmp_path, algo, bits, cli_bits):
    X, y = load_svmlight(files["binary"])
    estimator = OnlineClassifier(algo, max_iter=1, shuffle=False, bits=bits).fit(X, y)
    meta, arrays = _cli_model(run_cli, files["binary"], tmp_path / "m.npz", algo, cli_bits)
    weights, bias = _by_column(arrays["mean"], cli_bits)
    if bits == 6:   # bias slot 28 is column 27's: they share a weight on both sides
        assert (11650396 & 63) == 28
    np.testing.assert_allclose(estimator.coef_, weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(estimator.intercept_, bias, rtol=1e-12, atol=1e-12)
    if "variance" in arrays:
        np.testing.assert_allclose(estimator.sigma_, _by_column(arrays["variance"], cli_bits)[0],
                                   rtol=1e-12)
    raw = np.array(_cli_predictions(run_cli, tmp_path / "m.npz", files["binary"], "--raw"),
                   float)
    np.testing.assert_allclose(estimator.decision_function(X), raw, rtol=1e-8, atol=1e-12)
    labels = np.array(_cli_predictions(run_cli, tmp_path / "m.npz", files["binary"]), float)
    np.testing.assert_array_equal(estimator.predict(X), labels)
    assert estimator.examples_ == meta["examples"] == X.shape[0]


@pytest.mark.parametrize("algo, mode", [("arow-p", "joint"), ("perceptron", "joint"),
                                        ("pa1", "mira"), ("cw", "ova")])
def test_multiclass_pass_equals_cli_train(run_cli, files, tmp_path, algo, mode):
    X, y = load_svmlight(files["multiclass"])
    estimator = OnlineClassifier(algo, multiclass=mode, max_iter=1, shuffle=False).fit(X, y)
    meta, arrays = _cli_model(run_cli, files["multiclass"], tmp_path / "m.npz", algo, 18,
                              "--multiclass", mode)
    assert meta["classes"][:2] == ["3", "1"]
    weights, bias = _by_column(arrays["mean"], 18)
    rows = np.searchsorted(estimator.classes_, [float(t) for t in meta["classes"]])
    np.testing.assert_allclose(estimator.coef_[rows], weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(estimator.intercept_[rows], bias, rtol=1e-12, atol=1e-12)
    labels = np.array(_cli_predictions(run_cli, tmp_path / "m.npz", files["multiclass"]), float)
    np.testing.assert_array_equal(estimator.predict(X), labels)


@pytest.mark.parametrize("algo", ["pa1", "arow-d", "nherd-e"])
def test_regression_pass_equals_cli_train(run_cli, files, tmp_path, algo):
    X, y = load_svmlight(files["regression"])
    estimator = OnlineRegressor(algo, max_iter=1, shuffle=False).fit(X, y)
    _, arrays = _cli_model(run_cli, files["regression"], tmp_path / "m.npz", algo, 18,
                           "--loss", "squared")
    weights, bias = _by_column(arrays["mean"], 18)
    np.testing.assert_allclose(estimator.coef_, weights[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(estimator.intercept_, bias[0], rtol=1e-12, atol=1e-12)
    values = np.array(_cli_predictions(run_cli, tmp_path / "m.npz", files["regression"]), float)
    np.testing.assert_allclose(estimator.predict(X), values, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("kind, estimator", [
    ("binary", OnlineClassifier("scw1", max_iter=3, random_state=0)),
    ("multiclass", OnlineClassifier("nherd-p", max_iter=2, random_state=0)),
    ("multiclass", OnlineClassifier("arow-d", multiclass="ova", random_state=0)),
    ("regression", OnlineRegressor("pa2", max_iter=2, random_state=0)),
])
def test_models_go_both_ways(run_cli, files, tmp_path, kind, estimator):
    X, y = load_svmlight(files[kind])
    estimator.fit(X, y)
    estimator.save_model(tmp_path / "python.npz")
    cli = _cli_predictions(run_cli, tmp_path / "python.npz", files[kind])
    np.testing.assert_allclose(np.array(cli, float), estimator.predict(X), rtol=1e-8)
    # and back: the file's estimator predicts as the fitted one
    loaded = load_model(tmp_path / "python.npz")
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    assert loaded.n_features_in_ == X.shape[1]
    # a CLI model in Python: its 2^bits columns are load_svmlight(f, bits=bits)'s
    algo = estimator.algo
    flags = {"regression": ("--loss", "squared"),
             "multiclass": ("--multiclass", getattr(estimator, "multiclass", "joint"))}
    _cli_model(run_cli, files[kind], tmp_path / "cli.npz", algo, 12, *flags.get(kind, ()))
    from_cli = load_model(tmp_path / "cli.npz")
    X12, _ = load_svmlight(files[kind], bits=12)
    assert from_cli.n_features_in_ == 1 << 12
    expected = np.array(_cli_predictions(run_cli, tmp_path / "cli.npz", files[kind]), float)
    np.testing.assert_allclose(from_cli.predict(X12), expected, rtol=1e-8)


def test_partial_fit_in_chunks_equals_one_pass(files):
    X, y = load_svmlight(files["multiclass"])
    whole = OnlineClassifier("arow-p", max_iter=1, shuffle=False).fit(X, y)
    chunked = OnlineClassifier("arow-p")
    for start in range(0, X.shape[0], 70):
        chunked.partial_fit(X[start:start + 70], y[start:start + 70], classes=[1, 2, 3, 4])
    np.testing.assert_array_equal(chunked.coef_, whole.coef_)
    np.testing.assert_array_equal(chunked.sigma_, whole.sigma_)
    # a label outside the first call's classes is refused before anything is learned
    with pytest.raises(ValueError, match=r"labels \[9.0\] that are not in classes"):
        chunked.partial_fit(X[:5], np.full(5, 9.0))
    np.testing.assert_array_equal(chunked.coef_, whole.coef_)
    binary = OnlineClassifier("pa2").partial_fit(X[:5], np.r_[1, 1, 2, 2, 1], classes=[1, 2])
    with pytest.raises(ValueError, match=r"labels \[3.0\] that are not in classes"):
        binary.partial_fit(X[:2], np.array([1.0, 3.0]))
    with pytest.raises(ValueError, match="classes must be passed"):
        OnlineClassifier().partial_fit(X, y)


def test_dense_and_sparse_inputs_learn_alike(files):
    X, y = load_svmlight(files["binary"])
    sparse = OnlineClassifier("arow-p", random_state=3).fit(X, y)
    for other in (X.toarray(), X.tocsc(), X.tocoo()):
        model = OnlineClassifier("arow-p", random_state=3).fit(other, y)
        np.testing.assert_array_equal(model.coef_, sparse.coef_)


def test_shuffle_is_the_random_state_permutation_per_epoch(files):
    X, y = load_svmlight(files["binary"])
    shuffled = OnlineClassifier("pa2", max_iter=2, shuffle=True, random_state=7).fit(X, y)
    rng = np.random.RandomState(7)
    by_hand = OnlineClassifier("pa2")
    for _ in range(2):
        order = rng.permutation(X.shape[0])
        by_hand.partial_fit(X[order], y[order], classes=[-1, 1])
    np.testing.assert_array_equal(shuffled.coef_, by_hand.coef_)
    assert shuffled.n_iter_ == 2


def test_sample_weight_is_the_importance_weight(run_cli, files, tmp_path):
    X, y = load_svmlight(files["binary"])
    weights = np.random.default_rng(1).choice([0.0, 0.5, 2.0], X.shape[0])
    estimator = OnlineClassifier("arow-p", max_iter=1, shuffle=False).fit(X, y, weights)
    # the same rows as VW lines with those importance weights, learned by the CLI
    lines = files["binary"].read_text().splitlines()
    vw = tmp_path / "weighted.vw"
    vw.write_text("".join(f"{line.split()[0]} {w:g} | {' '.join(line.split()[1:])}\n"
                          for line, w in zip(lines, weights)))
    _, arrays = _cli_model(run_cli, vw, tmp_path / "m.npz", "arow-p", 18)
    np.testing.assert_allclose(estimator.coef_, _by_column(arrays["mean"], 18)[0], rtol=1e-12,
                               atol=1e-12)


def test_classes_beyond_numbers_and_binary_labels(files, tmp_path):
    X, y = load_svmlight(files["binary"])
    names = np.where(y > 0, "spam", "ham")
    model = OnlineClassifier("cw", random_state=0).fit(X, names)
    numeric = OnlineClassifier("cw", random_state=0).fit(X, y)
    # classes_ sorted ("ham" < "spam"): spam is the positive class, as +1 is
    np.testing.assert_array_equal(model.coef_, numeric.coef_)
    np.testing.assert_array_equal(model.predict(X), np.where(numeric.predict(X) > 0, "spam",
                                                             "ham"))
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    with pytest.raises(StreamherdError, match="a number <= 0 and one > 0"):
        model.save_model(tmp_path / "m.npz")


def test_pickle_keeps_the_model(files):
    X, y = load_svmlight(files["multiclass"])
    model = OnlineClassifier("arow-p", random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.decision_function(X), model.decision_function(X))
    copy.partial_fit(X[:50], y[:50])
    model.partial_fit(X[:50], y[:50])
    np.testing.assert_array_equal(copy.coef_, model.coef_)


def test_grid_search_over_algorithms(files):
    from sklearn.model_selection import GridSearchCV

    X, y = load_svmlight(files["binary"])
    search = GridSearchCV(OnlineClassifier(random_state=0),
                          {"algo": ["perceptron", "arow-p", "pa1"], "C": [0.1, 1.0]}, cv=3)
    search.fit(X, y)
    assert len(search.cv_results_["params"]) == 6
    assert search.best_params_["algo"] in ("perceptron", "arow-p", "pa1")


def test_numpy_hyperparameter_values_are_numbers(files):
    """A grid of numpy values (np.array, np.logspace) hands GridSearchCV's candidates over as
    numpy scalars, which were refused as "must be a number > 0, got 2" (every candidate then
    scored NaN under GridSearchCV's default error_score); each learns as the Python number."""
    from sklearn.model_selection import GridSearchCV

    X, y = load_svmlight(files["binary"])
    for algo, name, value in (("pa2", "C", np.int64(2)), ("arow-p", "r", np.float32(0.5)),
                              ("nherd-p", "C", np.float64(0.125))):
        numpy_model = OnlineClassifier(algo, max_iter=1, shuffle=False, **{name: value})
        plain_model = OnlineClassifier(algo, max_iter=1, shuffle=False, **{name: float(value)})
        np.testing.assert_array_equal(numpy_model.fit(X, y).coef_, plain_model.fit(X, y).coef_)
    search = GridSearchCV(OnlineClassifier("pa2", random_state=0), {"C": np.array([1, 10])},
                          cv=3, error_score="raise").fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    with pytest.raises(InvalidParameter, match="got True"):
        OnlineClassifier("pa2", C=np.bool_(True)).fit(X, y)


def test_parameters_are_the_registry_hyperparameters():
    import inspect

    for estimator, kind in ((OnlineClassifier, "binary"), (OnlineRegressor, "regression")):
        names = set(inspect.signature(estimator).parameters)
        declared = {h.name for spec in learners.REGISTRY.values() if kind in spec.tasks
                    for h in spec.accepted(kind)}
        assert declared <= names, declared - names


@pytest.mark.parametrize("make, words", [
    (lambda: OnlineClassifier("arow-p", r=-1.0), "-r (regularization r) must be"),
    (lambda: OnlineClassifier("nope"), "unknown --algo 'nope'"),
    (lambda: AROWClassifier("pa2"), "AROWClassifier takes algo arow-p, arow-d, arow-full"),
    (lambda: OnlineRegressor("cw"), "cw has no squared-loss form"),
    (lambda: OnlineClassifier(max_iter=0), "max_iter"),
    (lambda: OnlineClassifier("arow-full", bits=20), "arow-full"),
    (lambda: PAClassifier("pa", multiclass="nope"), "multiclass must be one of"),
])
def test_invalid_parameters_are_one_line_value_errors(files, make, words):
    X, y = load_svmlight(files["multiclass"])
    with pytest.raises(ValueError) as caught:
        make().fit(X, y if "Regressor" not in repr(make()) else y.astype(float))
    assert isinstance(caught.value, InvalidParameter)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_predict_proba_for_every_calibrated_learner():
    assert hasattr(OnlineClassifier("arow-p"), "predict_proba")
    assert hasattr(OnlineClassifier("pa2"), "predict_proba")
    assert hasattr(OnlineClassifier("perceptron", multiclass="mira"), "predict_proba")
    # without a calibration, only the Gaussian learners' own probabilities (not mira's)
    assert hasattr(OnlineClassifier("arow-p", calibration="none"), "predict_proba")
    assert not hasattr(OnlineClassifier("pa2", calibration="none"), "predict_proba")
    assert not hasattr(OnlineClassifier("arow-p", multiclass="mira", calibration="none"),
                       "predict_proba")


def _cli_probabilities(run_cli, model, path, classes=None):
    """``streamherd predict --proba``: binary, P(+1) per row; multiclass, the columns of
    ``classes`` (numbers) from each row's "class:p" pairs."""
    lines = _cli_predictions(run_cli, model, path, "--proba")
    if classes is None:
        return np.array(lines, float)
    rows = [dict(pair.split(":") for pair in line.split()) for line in lines]
    return np.array([[float(row[f"{c:g}"]) for c in classes] for row in rows])


def _positive_column(proba, kind):
    return proba[:, 1] if kind == "binary" else proba


@pytest.mark.parametrize("kind, algo, calibration", [
    ("binary", "pa2", "isotonic"), ("binary", "perceptron", "platt"),
    ("binary", "arow-p", "probit"), ("binary", "cw", "none"),
    ("multiclass", "pa1", "isotonic"), ("multiclass", "arow-p", "platt")])
def test_predict_proba_is_the_cli_calibration(run_cli, files, tmp_path, kind, algo,
                                              calibration):
    """One pass in order feeds the calibration the progressive predictions `streamherd train`
    feeds its own: predict_proba is `predict --proba` of the CLI's model; and the estimator's
    saved model gives `predict --proba` the same numbers, a CLI model load_model the CLI's."""
    X, y = load_svmlight(files[kind])
    estimator = OnlineClassifier(algo, max_iter=1, shuffle=False,
                                 calibration=calibration).fit(X, y)
    classes = None if kind == "binary" else estimator.classes_
    proba = _positive_column(estimator.predict_proba(X), kind)
    _cli_model(run_cli, files[kind], tmp_path / "cli.npz", algo, 18, "--calibration",
               calibration)
    np.testing.assert_allclose(proba, _cli_probabilities(run_cli, tmp_path / "cli.npz",
                                                         files[kind], classes), atol=1e-8)
    estimator.save_model(tmp_path / "python.npz")
    np.testing.assert_allclose(proba, _cli_probabilities(run_cli, tmp_path / "python.npz",
                                                         files[kind], classes), atol=1e-8)
    X18, _ = load_svmlight(files[kind], bits=18)
    from_cli = load_model(tmp_path / "cli.npz")
    np.testing.assert_allclose(_positive_column(from_cli.predict_proba(X18), kind),
                               proba, atol=1e-8)
    # a multiclass model's softmax, which every method but none makes, loads as the default
    saved = calibration if kind == "binary" or calibration == "none" else "isotonic"
    assert load_model(tmp_path / "python.npz").calibration == saved


def test_calibration_learns_from_first_pass_and_every_partial_fit(files):
    X, y = load_svmlight(files["binary"])
    one = OnlineClassifier("pa2", max_iter=1, shuffle=False).fit(X, y)
    three = OnlineClassifier("pa2", max_iter=3, shuffle=False).fit(X, y)
    # the later passes predict rows already learned from: the statistics are the first's
    calibration = three._model.calibration
    np.testing.assert_array_equal(calibration.positive, one._model.calibration.positive)
    np.testing.assert_array_equal(calibration.negative, one._model.calibration.negative)
    assert calibration.positive.sum() == (y > 0).sum()
    # and by hand: the map of those statistics applied to the final model's margins
    np.testing.assert_allclose(three.predict_proba(X)[:, 1],
                               calibration.probabilities(three.decision_function(X)))
    chunked = OnlineClassifier("pa2")
    for start in range(0, X.shape[0], 70):
        chunked.partial_fit(X[start:start + 70], y[start:start + 70], classes=[-1, 1])
    np.testing.assert_array_equal(chunked.predict_proba(X), one.predict_proba(X))


def test_probit_is_for_gaussian_learners(files):
    X, y = load_svmlight(files["binary"])
    with pytest.raises(InvalidParameter, match="probit"):
        OnlineClassifier("pa2", calibration="probit").fit(X, y)
    with pytest.raises(InvalidParameter, match="unknown --calibration 'nope'"):
        OnlineClassifier("arow-p", calibration="nope").fit(X, y)


def test_columns_sharing_a_slot_are_summed(files):
    from scipy.sparse import csr_matrix

    X, y = load_svmlight(files["binary"])
    # 3 bits: column j at slot (j + 1) mod 8; the same model as the columns summed by hand
    # into 8 columns (column c holds slot c + 1 mod 8), learned at bits that fold nothing
    folded = np.zeros((X.shape[0], 8))
    np.add.at(folded, (np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.indices % 8),
              X.data)
    small = OnlineClassifier("arow-p", bits=3, fit_intercept=False, max_iter=2,
                             random_state=0).fit(X, y)
    by_hand = OnlineClassifier("arow-p", bits=4, fit_intercept=False, max_iter=2,
                               random_state=0).fit(folded, y)
    slots = (np.arange(8) + 1) % 8
    # (the sums' order differs: the merge adds in row order, np.add.at as it goes)
    np.testing.assert_allclose(small.coef_[0, :8], by_hand.coef_[0, (slots - 1) % 8],
                               rtol=1e-9)
    # a row that names a column twice (a non-canonical CSR) is the row with the two summed
    first = X.indptr[1]   # row 1's first entry, given again (value 0.5) before it
    twice = csr_matrix((np.insert(X.data, first, 0.5), np.insert(X.indices, first,
                                                                 X.indices[first]),
                        np.r_[X.indptr[:2], X.indptr[2:] + 1]), shape=X.shape)
    assert not twice.has_canonical_format
    summed = twice.copy()
    summed.sum_duplicates()
    assert summed.nnz == X.nnz
    np.testing.assert_allclose(
        OnlineClassifier("cw", random_state=0).fit(twice, y).coef_,
        OnlineClassifier("cw", random_state=0).fit(summed, y).coef_, rtol=1e-9)


def test_partial_fit_after_a_refused_first_call_starts_anew(files):
    X, y = load_svmlight(files["regression"])
    model = OnlineRegressor("arow-p", r=-1.0)
    with pytest.raises(InvalidParameter):
        model.partial_fit(X, y)
    model.set_params(r=2.0)
    model.partial_fit(X, y)
    np.testing.assert_array_equal(
        model.coef_, OnlineRegressor("arow-p", r=2.0, max_iter=1, shuffle=False).fit(X, y).coef_)


def _outcome(call):
    """What a call gives: ("ok", its result) or ("error", type, message), and its warnings."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", call())
        except Exception as e:   # the error itself is the outcome compared
            result = ("error", type(e), str(e))
    return result, [(w.category, str(w.message)) for w in caught]


def _same_outcome(ours, theirs):
    (result, warned), (expected, expected_warned) = ours, theirs
    assert warned == expected_warned
    assert result[0] == expected[0], (result, expected)
    if result[0] == "error":
        assert result[1:] == expected[1:]
        return
    got, want = result[1], expected[1]
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
        if hasattr(a, "tocsr"):
            assert a.format == "csr" and (a != b).nnz == 0
        else:
            np.testing.assert_array_equal(a, b)


def test_the_plain_input_fast_path_validates_as_validate_data():
    """partial_fit's and predict's validation of a fitted model skips validate_data for a
    float64 CSR or ndarray X of the model's columns (and a 1-D numeric ndarray y): its result,
    errors and warnings are validate_data's on every kind of input, plain or not."""
    from scipy.sparse import csr_array, csr_matrix
    from sklearn.utils.validation import validate_data

    from streamherd.sklearn import _SPARSE, _as_csr

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    dense = rng.normal(size=(12, 5))
    dense[dense < 0] = 0.0
    labels = np.array([1.0, -1.0] * 6)
    nan, inf = dense.copy(), dense.copy()
    nan[2, 3], inf[4, 1] = np.nan, np.inf
    wide = csr_matrix(np.hstack([dense, dense[:, :1]]))
    int64_indices = csr_matrix(dense)
    int64_indices.indices = int64_indices.indices.astype(np.int64)
    int64_indices.indptr = int64_indices.indptr.astype(np.int64)
    plain = [csr_matrix(dense), csr_array(dense), csr_matrix(nan), csr_matrix(inf), dense,
             np.asfortranarray(dense), nan, inf, int64_indices]
    other = [csr_matrix(dense, dtype=np.float32), dense.astype(np.float32), wide,
             csr_matrix((0, 5)), np.zeros((0, 5)), dense.tolist(), csr_matrix(dense).tocsc(),
             pd.DataFrame(dense, columns=list("abcde")), dense[:, :, None]]
    ys = [labels, labels.astype(np.int64), labels > 0, np.where(labels > 0, np.nan, 1.0),
          np.repeat(labels, 2)[::2], labels[:, None], labels[:5], labels.tolist(),
          np.where(labels > 0, "a", "b"), labels.astype(object)]
    named = pd.DataFrame(dense, columns=list("abcde"))

    def sklearn_validated(estimator, X):
        return _as_csr(validate_data(estimator, X, accept_sparse=_SPARSE, dtype=np.float64,
                                     reset=False))

    def sklearn_validated_pair(estimator, X, y, numeric):
        X_checked, y_checked = validate_data(estimator, X, y, accept_sparse=_SPARSE,
                                             dtype=np.float64, reset=False, y_numeric=numeric)
        return _as_csr(X_checked), y_checked

    for estimator, fit_X in ((OnlineClassifier(bits=8), dense), (OnlineRegressor(bits=8), dense),
                             (OnlineClassifier(bits=8), named)):
        estimator.fit(fit_X, labels)
        numeric = isinstance(estimator, OnlineRegressor)
        for X in plain:
            assert estimator._plain(X) == (not hasattr(estimator, "feature_names_in_"))
        for X in other:
            assert not estimator._plain(X)
        for X in plain + other:
            _same_outcome(_outcome(partial(estimator._validated, X)),
                          _outcome(partial(sklearn_validated, estimator, X)))
            for y in ys:
                _same_outcome(_outcome(partial(estimator._validated_pair, X, y, reset=False)),
                              _outcome(partial(sklearn_validated_pair, estimator, X, y, numeric)))


def test_the_default_estimators_are_train_with_no_flags(files, tmp_path, run_cli):
    """OnlineClassifier() and OnlineRegressor() learn what ``streamherd train`` with no flags
    learns: the task's default learner, its hyperparameter chosen by the same bank in one pass
    in order (so the same number twice), and save that model (the chosen member's)."""
    from streamherd.learners import DEFAULTS

    for kind, estimator in (("binary", OnlineClassifier), ("multiclass", OnlineClassifier),
                            ("regression", OnlineRegressor)):
        X, y = load_svmlight(files[kind])
        first, second = estimator().fit(X, y), estimator().fit(X, y)
        np.testing.assert_array_equal(first.coef_, second.coef_)
        assert first._model.algo == DEFAULTS[kind].algo
        ours = tmp_path / f"{kind}.npz"
        first.save_model(ours)
        theirs = tmp_path / f"{kind}-cli.npz"
        flags = ["--loss", "squared"] if kind == "regression" else []
        proc = run_cli("train", "--quiet", *flags, "-b", load_cli_model(ours)[0]["bits"],
                       files[kind], "-f", theirs)
        assert proc.returncode == 0, proc.stderr
        cli_meta, cli_arrays = load_cli_model(theirs)
        meta, arrays = load_cli_model(ours)
        assert meta["hyperparameters"] == cli_meta["hyperparameters"]
        assert meta["normalize"] == cli_meta["normalize"]
        for key, value in cli_arrays.items():
            np.testing.assert_allclose(arrays[key], value, rtol=0, atol=1e-12, err_msg=key)


def test_a_hyperparameter_without_algo_is_refused_as_on_the_command_line(files):
    X, y = load_svmlight(files["binary"])
    with pytest.raises(ValueError, match="name it with --algo"):
        OnlineClassifier(C=0.5).fit(X, y)
