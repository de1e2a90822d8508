"""streamherd.river: river models over the learners. learn_one on dicts equals streamherd train
on the same examples written as VW lines in the default namespace (progressive loss and
weights), the block path equals the one-row path, probabilities are the Gaussian formula."""
import math
import pickle

import numpy as np
import pytest

river = pytest.importorskip("river")
pd = pytest.importorskip("pandas")
from river import evaluate, metrics  # noqa: E402

from streamherd import model  # noqa: E402
from streamherd.river import OnlineClassifier, OnlineRegressor  # noqa: E402


def _sms_dicts(data_dir, limit=1500):
    """sms_spam's messages as river dicts {word: count} and bool labels."""
    stream = []
    for line in (data_dir / "sms_spam.vw").read_text().splitlines()[:limit]:
        label, features = line.split("|", 1)
        x = {}
        for token in features.split()[1:]:   # the namespace's name first
            name, _, value = token.rpartition(":") if ":" in token else (token, "", "1")
            x[name] = x.get(name, 0.0) + float(value)
        stream.append((x, float(label) > 0))
    return stream


def _as_vw(stream, path, label=lambda y: "1" if y else "-1"):
    """The stream as VW lines in the default namespace: what learn_one says it learns."""
    path.write_text("".join(f"{label(y)} | " + " ".join(f"{name}:{value!r}" for name, value in
                                                        x.items()) + "\n" for x, y in stream))
    return path


def _cli_model(run_cli, data, tmp_path, *options):
    target = tmp_path / "cli.npz"
    proc = run_cli("train", str(data), "-f", str(target), "--calibration", "none", *options)
    assert proc.returncode == 0, proc.stderr
    return model.load_model(target)


@pytest.mark.parametrize("algo", ["pa1", "arow-p", "perceptron", "scw1", "nherd-full"])
def test_progressive_accuracy_equals_cli(algo, data_dir, run_cli, tmp_path):
    stream = _sms_dicts(data_dir, 600 if algo.endswith("full") else 1500)
    bits = ["-b", "10"] if algo.endswith("full") else []
    meta, arrays = _cli_model(run_cli, _as_vw(stream, tmp_path / "sms.vw"), tmp_path,
                              "--algo", algo, *bits)
    classifier = OnlineClassifier(algo, bits=10 if bits else 18)
    accuracy = evaluate.progressive_val_score(iter(stream), classifier, metrics.Accuracy())
    assert 1.0 - accuracy.get() == pytest.approx(meta["progressive_loss"], abs=1e-12)
    np.testing.assert_allclose(classifier._learner.state()["mean"], arrays["mean"], atol=1e-9)


def test_multiclass_progressive_accuracy_equals_cli(data_dir, run_cli, tmp_path):
    stream = []
    for line in (data_dir / "dna.scale.svm").read_text().splitlines()[:800]:
        label, *features = line.split()
        stream.append(({name: float(v) for name, v in (f.split(":") for f in features)},
                       int(label)))
    meta, arrays = _cli_model(run_cli, _as_vw(stream, tmp_path / "dna.vw", label=str), tmp_path,
                              "--algo", "arow-p", "--multiclass", "joint")
    classifier = OnlineClassifier("arow-p")
    accuracy = evaluate.progressive_val_score(iter(stream), classifier, metrics.Accuracy())
    assert 1.0 - accuracy.get() == pytest.approx(meta["progressive_loss"], abs=1e-12)
    assert sorted(classifier.predict_proba_one(stream[0][0])) == [1, 2, 3]
    # class blocks in the order the classes came, as the command line's
    assert [str(c) for c in classifier._classes] == meta["classes"]
    np.testing.assert_allclose(classifier._learner.state()["mean"], arrays["mean"], atol=1e-9)


def test_regression_equals_cli(data_dir, run_cli, tmp_path):
    stream = [(x, float(len(x)) / 10.0) for x, _ in _sms_dicts(data_dir, 500)]
    meta, arrays = _cli_model(run_cli, _as_vw(stream, tmp_path / "r.vw", label=repr), tmp_path,
                              "--algo", "arow-p", "--loss", "squared")
    regressor = OnlineRegressor("arow-p")
    for x, y in stream:
        regressor.learn_one(x, y)
    np.testing.assert_allclose(regressor._learner.state()["mean"], arrays["mean"], atol=1e-9)


def _frame(stream):
    return pd.DataFrame([x for x, _ in stream]).fillna(0.0), pd.Series([y for _, y in stream])


@pytest.mark.parametrize("make", [lambda: OnlineClassifier("arow-p"),
                                  lambda: OnlineClassifier("pa2", normalize=True),
                                  lambda: OnlineRegressor("pa1")])
def test_learn_many_equals_learn_one(make, data_dir):
    stream = _sms_dicts(data_dir, 400)
    if isinstance(make(), OnlineRegressor):
        stream = [(x, float(sum(x.values()))) for x, _ in stream]
    one, many = make(), make()
    for x, y in stream[:300]:
        one.learn_one(x, y)
    X, y = _frame(stream[:300])
    many.learn_many(X, y)
    np.testing.assert_allclose(many._learner.state()["mean"], one._learner.state()["mean"],
                               atol=1e-12)
    test, _ = _frame(stream[300:])
    singly = [one.predict_one(dict(row)) for _, row in test.iterrows()]
    assert many.predict_many(test).tolist() == pytest.approx(singly)


def test_proba_is_the_gaussian_formula_and_absent_for_others():
    stream = [({"a": 1.0, "b": 2.0}, True), ({"b": 1.0, "c": -1.0}, False),
              ({"a": 0.5, "c": 2.0}, True)]
    arow = OnlineClassifier("arow-p", bits=8)
    for x, y in stream:
        arow.learn_one(x, y)
    space, state = arow._space, arow._learner.state()
    x = {"a": 2.0, "c": 1.0}
    slots = arow._slots_of(x) + [space.bias_slot]
    values = [2.0, 1.0, 1.0]
    margin = sum(state["mean"][s] * v for s, v in zip(slots, values))
    spread = math.sqrt(sum(state["variance"][s] * v * v for s, v in zip(slots, values)))
    expected = 0.5 * (1.0 + math.erf(margin / spread / math.sqrt(2.0)))
    assert arow.predict_proba_one(x)[True] == pytest.approx(expected, rel=1e-12)
    assert arow.predict_one(x) == (margin > 0)
    with pytest.raises(NotImplementedError):
        OnlineClassifier("pa1").predict_proba_one(x)


def test_names_hash_as_vw_default_namespace():
    mmh3 = pytest.importorskip("mmh3")
    classifier = OnlineClassifier("pa", bits=12)
    classifier.learn_one({"word": 1.0, "37": 2.0}, True)
    mean = classifier._learner.state()["mean"]
    assert set(np.flatnonzero(mean)) == {mmh3.hash("word", 0, signed=False) & 4095, 37,
                                         classifier._space.bias_slot}


def test_colliding_names_are_summed():
    """Two names at one slot (2 bits: 4 slots) are one feature, as the parser sums them."""
    names = [f"f{i}" for i in range(6)]
    merged = OnlineClassifier("arow-p", bits=2)
    merged.learn_one({n: 1.0 for n in names}, True)
    summed = {}
    for slot in merged._slots_of(names):
        summed[slot] = summed.get(slot, 0.0) + 1.0
    variance = merged._learner.state()["variance"]
    # AROW's variance update is not linear in x: it shows whether the slots were summed
    # (an all-digit name is its number, VW's hash: name "s" is slot s; "0" the bias's slot,
    # summed with it)
    reference = OnlineClassifier("arow-p", bits=2)
    assert reference._slots_of(map(str, summed)) == list(summed)
    reference.learn_one({str(s): v for s, v in summed.items()}, True)
    np.testing.assert_allclose(variance, reference._learner.state()["variance"], rtol=1e-12)
    # a model that meets the names in another order hashes them to the same slots and sums
    # the same ones
    again = OnlineClassifier("arow-p", bits=2)
    again.learn_one({n: 1.0 for n in reversed(names)}, True)
    np.testing.assert_allclose(again._learner.state()["variance"], variance, rtol=1e-12)


def test_a_long_row_with_colliding_names_is_summed():
    """A row longer than the merge table's half (3000 names on 1024 slots) takes the sorted
    repeat check and merge: the same model as its names' values summed per slot beforehand."""
    names = [f"w{i}" for i in range(3000)]
    merged = OnlineClassifier("arow-p", bits=10)
    merged.learn_one({n: 0.01 for n in names}, True)
    summed = {}
    for slot in merged._slots_of(names):
        summed[slot] = summed.get(slot, 0.0) + 0.01
    reference = OnlineClassifier("arow-p", bits=10)
    reference.learn_one({str(s): v for s, v in summed.items()}, True)
    np.testing.assert_allclose(merged._learner.state()["variance"],
                               reference._learner.state()["variance"], rtol=1e-12)
    np.testing.assert_allclose(merged._learner.state()["mean"],
                               reference._learner.state()["mean"], rtol=1e-12)


def test_names_with_a_nul_or_not_str_hash_as_their_text():
    """A name is hashed as str(name)'s UTF-8 text, a NUL inside it (the joined names'
    separator) included; murmur3 (mmh3) computes the expected slots independently."""
    mmh3 = pytest.importorskip("mmh3")
    classifier = OnlineClassifier("pa", bits=12)
    classifier.learn_one({"a\0b": 1.0, 7: 2.0, ("t", 1): 1.0, "é": 1.0}, True)
    expected = {mmh3.hash(text.encode(), 0, signed=False) & 4095
                for text in ("a\0b", "('t', 1)", "é")} | {7, classifier._space.bias_slot}
    assert set(np.flatnonzero(classifier._learner.state()["mean"])) == expected
    assert classifier._slots_of(["a\0b", 7]) == [mmh3.hash(b"a\0b", 0, signed=False) & 4095, 7]


def test_without_intercept_no_bias_slot_is_learned():
    mmh3 = pytest.importorskip("mmh3")
    classifier = OnlineClassifier("pa", bits=12, fit_intercept=False)
    classifier.learn_one({"word": 1.0, "37": 2.0}, True)
    mean = classifier._learner.state()["mean"]
    assert set(np.flatnonzero(mean)) == {mmh3.hash("word", 0, signed=False) & 4095, 37}
    copy = pickle.loads(pickle.dumps(classifier))
    copy.learn_one({"other": 1.0}, False)
    assert set(np.flatnonzero(copy._learner.state()["mean"])) == {
        mmh3.hash("word", 0, signed=False) & 4095, 37, mmh3.hash("other", 0, signed=False) & 4095}


def test_pickle_and_labels():
    classifier = OnlineClassifier("cw")
    classifier.learn_one({"a": 1.0}, "spam")
    classifier.learn_one({"b": 1.0}, "ham")
    copy = pickle.loads(pickle.dumps(classifier))
    assert copy.predict_proba_one({"a": 1.0}) == classifier.predict_proba_one({"a": 1.0})
    copy.learn_one({"c": 1.0}, "eggs")
    assert set(copy.predict_proba_one({"c": 1.0})) == {"spam", "ham", "eggs"}
    binary = OnlineClassifier("pa")
    binary.learn_one({"a": 1.0}, True)
    with pytest.raises(ValueError, match="bool labels"):
        binary.learn_one({"a": 1.0}, "spam")
    with pytest.raises(ValueError, match="nope"):
        OnlineClassifier("nope").learn_one({"a": 1.0}, True)


def test_a_missing_label_is_refused_before_anything_is_learned():
    """learn_one(x, None) as the first call made a multiclass model whose first class was
    None; later it was a class like any other."""
    for first in (None, True):
        classifier = OnlineClassifier("pa")
        if first is not None:
            classifier.learn_one({"a": 1.0}, first)
        with pytest.raises(ValueError, match="needs the row's label"):
            classifier.learn_one({"a": 1.0}, None)
        with pytest.raises(ValueError, match="needs every row's label"):
            classifier.learn_many(pd.DataFrame({"a": [1.0, 2.0]}), pd.Series([True, None]))
        # nothing learned from the refused calls: the first label's prediction, or none learned
        assert classifier.predict_one({"a": 1.0}) is (first is True)
    fresh = OnlineClassifier("pa")
    with pytest.raises(ValueError):
        fresh.learn_one({"a": 1.0}, None)
    fresh.learn_one({"a": 1.0}, True)   # the model's first label decides: binary
    assert fresh.predict_one({"a": 1.0}) is True


@pytest.mark.parametrize("cls", [OnlineClassifier, OnlineRegressor])
def test_river_estimator_checks(cls):
    from river import checks

    for params in cls._unit_test_params():
        checks.check_estimator(cls(**params))


# ------------------------------------------------------------ values that are not finite

NAN, INF = float("nan"), float("inf")


def _snapshot(model):
    """What a failed learn must leave as it was: the learner's arrays and meta, the classes."""
    learner = model._learner
    arrays = {} if learner is None else {k: np.array(v) for k, v in learner.state().items()}
    return (arrays, None if learner is None else learner.meta(), model._task is None,
            list(getattr(model, "_classes", [])))


def _assert_unchanged(model, before):
    arrays, meta, fresh, classes = _snapshot(model)
    assert arrays.keys() == before[0].keys()
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, before[0][name])
    assert (meta, fresh, classes) == before[1:]


def _trained(kind, algo="arow-p", **options):
    if kind == "regression":
        model, labels = OnlineRegressor(algo, bits=8, **options), [1.0, -2.0, 0.5]
    elif kind == "binary":
        model, labels = OnlineClassifier(algo, bits=8, **options), [True, False, True]
    else:
        model = OnlineClassifier(algo, bits=8, multiclass=kind, **options)
        labels = ["x", "y", "z"]
    for i, y in enumerate(labels):
        model.learn_one({"a": 1.0 + i, "b": -1.0 * i}, y)
    return model, labels


# (the family of each kind of loop: first-order, diagonal and full Gaussian, a learner with
# its own learn (avg-perceptron: not the direct entry point), second-order perceptron)
_FAILING = [(kind, algo) for kind in ("binary", "joint", "ova")
            for algo in ("pa1", "arow-p", "cw-full", "avg-perceptron", "sop")] + \
    [("mira", "pa2"), ("regression", "pa"), ("regression", "arow-p"), ("regression", "nherd-full")]


@pytest.mark.parametrize("kind, algo", _FAILING)
def test_learn_one_names_the_value_that_is_not_finite_and_learns_nothing(kind, algo):
    """A nan or inf feature value made the update fail, and the message blamed the learner
    ("scale the features or use a gentler setting"); it names the feature, and the model is as
    it was, a new class included."""
    model, labels = _trained(kind, algo)
    cases = [({"a": NAN, "b": 1.0}, labels[0], "feature 'a' is nan"),
             ({"b": 1.0, "a": INF}, labels[1], "feature 'a' is inf"),
             ({"new": -INF}, labels[0], "feature 'new' is -inf")]
    if kind == "regression":
        cases += [({"a": 1.0}, INF, "the label y = inf"), ({"a": 1.0}, NAN, "the label y = nan")]
    elif kind != "binary":
        cases.append(({"a": NAN}, "a new class", "feature 'a' is nan"))
    probe = {"a": 1.0, "b": 0.5}
    for x, y, named in cases:
        before, predicted = _snapshot(model), model.predict_one(probe)
        with pytest.raises(ValueError) as raised:
            model.learn_one(x, y)
        message = str(raised.value)
        assert message.startswith(f"learn_one: {named}, not a finite number") or \
            message.startswith(f"learn_one: {named} is not a finite number"), message
        assert "drop" in message and "gentler" not in message and "scale" not in message
        _assert_unchanged(model, before)
        assert model.predict_one(probe) == predicted


def test_a_first_example_that_is_not_finite_chooses_no_task():
    """The first label chooses binary or multiclass: not when its row is refused."""
    classifier = OnlineClassifier("pa1")
    with pytest.raises(ValueError, match="feature 'a' is nan"):
        classifier.learn_one({"a": NAN}, "spam")
    assert classifier._task is None and classifier._classes == []
    classifier.learn_one({"a": 1.0}, True)   # binary after all
    assert classifier.predict_one({"a": 1.0}) is True
    regressor = OnlineRegressor()
    with pytest.raises(ValueError, match="the label y = inf"):
        regressor.learn_one({"a": 1.0}, INF)
    assert regressor.predict_one({"a": 1.0}) == 0.0


def test_an_infinite_value_in_a_shared_slot_is_named_too():
    """inf at a slot another feature of the row shares: the merge's sum overflows, which was
    "feature values of one slot sum to infinity; scale the features"."""
    probe = OnlineClassifier("arow-p", bits=2)
    slots = probe._slots_of(f"n{i}" for i in range(20))
    first = next(i for i in range(20) if slots.index(slots[i]) != i)
    pair = [f"n{slots.index(slots[first])}", f"n{first}"]
    for estimator in (OnlineClassifier("arow-p", bits=2), OnlineRegressor("pa", bits=2)):
        estimator.learn_one({"z": 1.0}, 1.0 if isinstance(estimator, OnlineRegressor) else True)
        before = _snapshot(estimator)
        with pytest.raises(ValueError, match=f"feature '{pair[0]}' is inf, not a finite"):
            estimator.learn_one({pair[0]: INF, pair[1]: 1.0}, True)
        _assert_unchanged(estimator, before)
        predicted = estimator.predict_proba_one({pair[0]: INF, pair[1]: 1.0}) \
            if isinstance(estimator, OnlineClassifier) else estimator.predict_one({pair[0]: INF})
        assert predicted == {False: pytest.approx(NAN, nan_ok=True),
                             True: pytest.approx(NAN, nan_ok=True)} \
            if isinstance(estimator, OnlineClassifier) else not math.isfinite(predicted)
    with pytest.raises(ValueError, match="sum to infinity; scale the features"):
        OnlineClassifier("arow-p", bits=2).learn_one({pair[0]: 1e308, pair[1]: 1e308}, True)


def test_an_update_that_overflows_on_finite_values_keeps_the_learners_message():
    """Finite values too large: the learner's failure, with a gentler setting only of a
    hyperparameter the learner takes (arow-p has r, no C; the perceptron neither)."""
    for algo, hint in (("arow-p", "or use a gentler setting (raise r)"), ("pa1", "(lower C)"),
                       ("perceptron", None)):
        model = OnlineClassifier(algo)
        with pytest.raises(ValueError) as raised:
            for power in range(50, 310, 50):
                model.learn_one({"a": 10.0 ** power, "b": -(10.0 ** power)}, power % 100 == 0)
        message = str(raised.value)
        assert message.startswith(f"learn_one: the {algo} update failed"), message
        assert "scale the features (normalize=True)" in message
        assert (hint in message) if hint else "gentler" not in message


@pytest.mark.parametrize("make", [lambda: OnlineClassifier("arow-p"),
                                  lambda: OnlineClassifier("cw", multiclass="ova"),
                                  lambda: OnlineRegressor("pa1")])
def test_learn_many_refuses_a_block_with_a_value_that_is_not_finite(make):
    """inf in X (or a regression label that is not finite): nothing of the block is learned,
    and the row and column are named; a DataFrame's NaN is a missing value, as before."""
    model = make()
    regression = isinstance(model, OnlineRegressor)
    labels = [1.0, 2.0, 3.0] if regression else \
        [True, False, True] if model.multiclass == "joint" else ["x", "y", "x"]
    model.learn_one({"a": 1.0}, labels[0])
    before = _snapshot(model)
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, -INF, 1.0]}, index=[10, 11, 12])
    with pytest.raises(ValueError, match=r"^learn_many: row 1 \(11\) of X, column 'b', is "
                                         r"-inf, not a finite number; drop the row or impute"):
        model.learn_many(X, pd.Series(labels, index=X.index))
    _assert_unchanged(model, before)
    if regression:
        for bad in (INF, NAN):
            with pytest.raises(ValueError, match=f"^learn_many: row 2 of y is {bad}, not a "
                                                 f"finite number"):
                model.learn_many(pd.DataFrame({"a": [1.0, 2.0, 3.0]}), [1.0, 2.0, bad])
            _assert_unchanged(model, before)
    model.learn_many(pd.DataFrame({"a": [1.0, NAN], "b": [NAN, 2.0]}), labels[:2])


def test_predicting_propagates_values_that_are_not_finite():
    """As river's own linear models: nan in, nan out. The Gaussian probabilities gave 0.5
    (binary), an even split (diagonal multiclass) or one class for sure (full covariance,
    Monte Carlo) for a nan value."""
    for kind, algo in (("binary", "arow-p"), ("joint", "arow-p"), ("ova", "cw"),
                       ("joint", "arow-full")):
        model, labels = _trained(kind, algo)
        for value in (NAN, INF):
            proba = model.predict_proba_one({"a": value, "b": 1.0})
            assert set(proba) == set(labels) and all(math.isnan(p) for p in proba.values())
            X = pd.DataFrame({"a": [1.0, value], "b": [1.0, 1.0]})
            many = model.predict_proba_many(X)   # (a frame's NaN: a missing value, 0)
            assert many.iloc[0].notna().all()
            assert many.iloc[1].isna().all() == (value == INF)
    binary, _ = _trained("binary")
    assert binary.predict_one({"a": NAN}) is False
    regressor, _ = _trained("regression")
    assert math.isnan(regressor.predict_one({"a": NAN}))
    assert not math.isfinite(regressor.predict_one({"a": INF}))
