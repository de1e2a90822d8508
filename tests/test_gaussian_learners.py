"""The confidence-weighted learners and the second-order perceptron against their families'
dense numpy transcriptions (references.py, written independently of streamherd's kernels): same
progressive margins, same mean and (co)variance to 1e-9 relative, in one run over chunks and when
continued from a saved model."""
import numpy as np
import pytest
from scipy.stats import norm

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.model import load_model, save_model

import references

D = 32
N = 300
CHUNKS = [(0, 90), (90, 200), (200, N)]


def make_data(seed, d=D, n=N, nnz=6, scale=1.0):
    """Sparse random rows, labels of a random linear rule with 15% flipped, a few unlabeled rows
    and rows with importance 0, 0.5 and 2."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=d)
    dense = np.zeros((n, d))
    indptr = [0]
    indices, values = [], []
    for i in range(n):
        k = rng.integers(0, nnz + 1) if i % 37 == 0 else nnz  # some short or empty rows
        cols = np.sort(rng.choice(d, size=k, replace=False))
        vals = rng.normal(size=k) * scale
        dense[i, cols] = vals
        indices.extend(cols.tolist())
        values.extend(vals.tolist())
        indptr.append(len(indices))
    y = np.where(dense @ truth > 0, 1.0, -1.0)
    flip = rng.random(n) < 0.15
    y[flip] = -y[flip]
    importance = np.ones(n)
    importance[rng.random(n) < 0.1] = 0.5
    importance[rng.random(n) < 0.1] = 2.0
    importance[rng.random(n) < 0.03] = 0.0
    y[rng.random(n) < 0.03] = np.nan
    return dict(X=dense, y=y, importance=importance, indptr=np.array(indptr, np.int64),
                indices=np.array(indices, np.int32), values=np.array(values, np.float64))


# ------------------------------------------------------------------ running streamherd

def run(name, data, options, chunks=CHUNKS, resume_after=None, tmp_path=None):
    learner = learners.create(name, D, options)
    margins = np.full(N, np.nan)
    updates = 0
    for number, (lo, hi) in enumerate(chunks):
        if resume_after is not None and number == resume_after:
            path = tmp_path / f"{name}.npz"
            save_model(path, {"algo": learner.name, "bits": 5, "bias": True,
                              "hyperparameters": learner.options, "learner": learner.meta()},
                       learner.state())
            meta, arrays = load_model(path, expected_arrays=type(learner).state_arrays)
            learner = learners.create(meta["algo"], D, meta["hyperparameters"], arrays,
                                      meta["learner"])
        out = np.empty(hi - lo)
        updates += learner.learn(data["y"][lo:hi], data["importance"][lo:hi],
                                 data["indptr"][lo:hi + 1], data["indices"], data["values"], out)
        margins[lo:hi] = out
    return learner, margins, updates


# every learner with a covariance (the registry's), each checked against its reference below
ALL = [name for name, spec in learners.REGISTRY.items() if spec.covariance != "none"]
DIAGONAL = [name for name, spec in learners.REGISTRY.items() if spec.covariance == "diagonal"]
OPTIONS = {  # non-default hyperparameters, to check that each one is used where it belongs
    "nherd": {"C": 0.3, "a": 0.7},
    "arow": {"r": 2.0, "a": 1.5},
    "cw": {"eta": 0.8, "a": 0.7},
    "scw1": {"C": 0.4, "eta": 0.85, "a": 1.2},
    "scw2": {"C": 0.4, "eta": 0.75, "a": 0.9},
    "narow": {"b": 2.0, "a": 1.5},
}


def options_for(name):
    return OPTIONS.get(name.split("-")[0], {"a": 0.8})


def reference_for(name, data):
    """(progressive margins, mean, the other arrays) of the family's dense reference."""
    margins, learner = references.binary_run(name, data["X"], data["y"], data["importance"],
                                             options_for(name), check_textbook_u=True)
    arrays = learner.arrays()
    return margins, arrays.pop("mean"), arrays


def assert_matches(learner, margins, ref):
    ref_margins, ref_mu, ref_arrays = ref
    np.testing.assert_allclose(margins, ref_margins, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(learner.mean, ref_mu, rtol=1e-9, atol=1e-12)
    state = learner.state()
    for key, value in ref_arrays.items():
        np.testing.assert_allclose(state[key], value, rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def data():
    return make_data(1)


@pytest.mark.parametrize("name", ALL)
def test_matches_dense_equations(name, data):
    learner, margins, updates = run(name, data, options_for(name))
    ref = reference_for(name, data)
    assert_matches(learner, margins, ref)
    assert updates > 20  # the noisy labels force many updates
    # the state really moved away from the prior
    assert np.abs(learner.mean).max() > 0.05
    for value in ref[2].values():
        assert not np.allclose(value, learner.options["a"] * np.eye(D) if value.ndim == 2
                               else learner.options["a"])


@pytest.mark.parametrize("name", ALL)
def test_resume_from_saved_model_equals_one_run(name, data, tmp_path):
    whole, margins_whole, _ = run(name, data, options_for(name))
    resumed, margins_resumed, _ = run(name, data, options_for(name), resume_after=2,
                                      tmp_path=tmp_path)
    np.testing.assert_array_equal(margins_resumed, margins_whole)
    for key, value in whole.state().items():
        np.testing.assert_array_equal(resumed.state()[key], value)


def test_aliases():
    assert learners.canonical_name("nherd") == "nherd-p"
    assert learners.canonical_name("arow") == "arow-p"


@pytest.mark.parametrize("name", ["arow-p", "nherd-full", "scw2"])
def test_predict_margins_after_training_use_mean(name, data):
    learner, _, _ = run(name, data, options_for(name))
    out = np.empty(N)
    learner.predict_margins(data["indptr"], data["indices"], data["values"], out)
    np.testing.assert_allclose(out, data["X"] @ learner.mean, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["arow-d", "arow-full"])
def test_probabilities(name, data):
    learner, _, _ = run(name, data, options_for(name))
    p = learner.probabilities(data["indptr"], data["indices"], data["values"])
    X = data["X"]
    mu = learner.mean
    state = learner.state()
    var = np.einsum("ij,jk,ik->i", X, state["covariance"], X) if "covariance" in state \
        else (X ** 2) @ state["variance"]
    expected = np.where(var > 0, norm.cdf(X @ mu / np.sqrt(np.where(var > 0, var, 1))), 0.5)
    np.testing.assert_allclose(p, expected, rtol=1e-9, atol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    assert np.any(p[var == 0] == 0.5) or not np.any(var == 0)


def test_bad_eta_is_rejected():
    with pytest.raises(StreamherdError, match="eta"):
        learners.create("cw", 16, {"eta": 0.4})


def test_full_covariance_that_does_not_fit_is_refused():
    with pytest.raises(StreamherdError, match=r"bytes.*arow-p"):
        learners.create("arow-full", 1 << 30, {})
    with pytest.raises(StreamherdError, match=r"bytes.*--algo sop"):
        learners.create("sop-full", 1 << 30, {})


@pytest.mark.parametrize("name", DIAGONAL)
def test_large_raw_values_stay_finite(name):
    """Raw counts / pixels (values up to 255): every variance stays finite and positive."""
    data = make_data(2, scale=100.0)
    data["values"] = np.abs(data["values"]).round() + 1
    learner, margins, _ = run(name, data, {})
    assert np.all(np.isfinite(margins))
    for value in learner.state().values():
        assert np.all(np.isfinite(value))
    if "variance" in learner.state():
        assert np.all(learner.state()["variance"] > 0)


@pytest.mark.parametrize("name", [name for name in learners.REGISTRY
                                  if learners.create(name, 4).interleaved])
def test_per_slot_arrays_sit_side_by_side(name, data, tmp_path):
    """``interleaved`` (learners/base.py): the arrays a kernel reads for each feature are the
    columns of one array (one cache line per feature), in a fresh learner, one loaded from a
    saved model and one grown by a class block, and the values are those of plain arrays."""
    def assert_side_by_side(learner):
        arrays = [getattr(learner, attr) for attr in learner.interleaved]
        assert len(arrays) == 2
        first, second = (array.__array_interface__["data"][0] for array in arrays)
        assert second - first == 8   # slot j of the second array just after the first's
        for array in arrays:
            assert len(array) >= learner.size and array.strides == (16,)
        assert arrays[0].base is not None and arrays[1].base is arrays[0].base   # one buffer

    learner, _, _ = run(name, data, {})
    assert_side_by_side(learner)
    path = tmp_path / "m.npz"
    save_model(path, {"algo": learner.name, "bits": 5, "bias": True,
                      "hyperparameters": learner.options, "learner": learner.meta()},
               learner.state())
    meta, arrays = load_model(path)
    loaded = learners.create(name, D, meta["hyperparameters"], arrays, meta["learner"])
    assert_side_by_side(loaded)
    for key, value in learner.state().items():
        np.testing.assert_array_equal(arrays[key], value)
        np.testing.assert_array_equal(loaded.state()[key], value)
    before = {key: value.copy() for key, value in loaded.state().items()}
    loaded.grow(3)
    if loaded.classes_side_by_side:   # the classes of a feature side by side: arrays apart
        for attr in loaded.interleaved:
            array = getattr(loaded, attr)
            assert array.flags.c_contiguous and len(array) == D * loaded.capacity
    else:
        assert_side_by_side(loaded)
    fresh = learners.create(name, D, {})
    update_list = loaded.list_lengths([loaded.meta()])   # the voted perceptron's: no slots
    for key, value in loaded.state().items():
        if key in update_list:
            continue
        np.testing.assert_array_equal(value[:D], before[key])
        np.testing.assert_array_equal(value[D:2 * D], fresh.state()[key])
