"""Perceptron, averaged perceptron and the Passive-Aggressive family against their families' dense
numpy transcriptions of the papers' update rules (references.py, written independently of
streamherd's kernels)."""
import numpy as np
import pytest

from streamherd import learners

import references

ALGOS = ["perceptron", "avg-perceptron", "pa", "pa1", "pa2"]
RTOL = 1e-9


# ---------------------------------------------------------------- the reference transcription

def reference(algo, X, y, s, C=1.0):
    """The family's dense reference (references.py), one example at a time.

    Returns (w, average or None, progressive margins, number of updates). Unlabeled examples
    (NaN) are predicted but neither learned from nor counted in the average.
    """
    margins, learner = references.binary_run(algo, X, y, s, {"C": C})
    arrays = learner.arrays()
    average = arrays["average"] if algo == "avg-perceptron" else None
    return arrays["mean"], average, margins, learner.updates


def options_for(algo, C):
    return {"C": C} if algo in ("pa1", "pa2") else None


def run_streamherd(learner, chunks):
    margins = []
    updates = 0
    for y, s, indptr, indices, values in chunks:
        out = np.full(len(y), np.nan)
        updates += learner.learn(y, s, indptr, indices, values, out)
        margins.append(out)
    return np.concatenate(margins), updates


def assert_close(actual, expected, what):
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def _bounds(rng, n, pieces):
    cuts = sorted(rng.choice(np.arange(1, n), size=pieces - 1, replace=False).tolist())
    return [0, *cuts, n]


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("importance", [False, True], ids=["unit-weights", "importance"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_dense_transcription(algo, importance, seed, random_csr, csr_chunks):
    rng = np.random.default_rng(seed)
    data = random_csr(rng, n=int(rng.integers(250, 400)), d=int(rng.integers(20, 51)),
                      importance=importance)
    C = [0.05, 0.5, 3.0][seed]
    bounds = _bounds(rng, len(data["y"]), 2 + seed % 2)
    learner = learners.create(algo, data["d"], options_for(algo, C))
    margins, updates = run_streamherd(learner, csr_chunks(data, bounds))

    w, average, ref_margins, ref_updates = reference(algo, data["X"], data["y"], data["s"], C)
    assert updates == ref_updates
    assert 0 < updates < len(data["y"])
    assert_close(margins, ref_margins, "progressive margins")
    state = learner.state()
    assert_close(state["mean"], w, "mean")
    if algo == "avg-perceptron":
        assert_close(state["average"], average, "average")
        # Prediction after training uses the average, not the last weight vector.
        out = np.empty(len(data["y"]))
        learner.predict_margins(data["indptr"], data["indices"], data["values"], out)
        assert_close(out, data["X"] @ average, "predict_margins")
        assert not np.allclose(average, w)
    else:
        out = np.empty(len(data["y"]))
        learner.predict_margins(data["indptr"], data["indices"], data["values"], out)
        assert_close(out, data["X"] @ w, "predict_margins")


@pytest.mark.parametrize("algo", ALGOS)
def test_unlabeled_examples_are_predicted_not_learned(algo, random_csr, csr_chunks):
    rng = np.random.default_rng(11)
    data = random_csr(rng, n=300, d=30, importance=True, nan_labels=0.2)
    assert np.isnan(data["y"]).sum() > 20
    learner = learners.create(algo, data["d"], options_for(algo, 0.7))
    margins, updates = run_streamherd(learner, csr_chunks(data, [0, 123, 300]))
    w, average, ref_margins, ref_updates = reference(algo, data["X"], data["y"], data["s"], 0.7)
    assert updates == ref_updates
    assert_close(margins, ref_margins, "progressive margins")
    assert_close(learner.state()["mean"], w, "mean")
    if average is not None:
        assert_close(learner.state()["average"], average, "average")


@pytest.mark.parametrize("algo", ["pa", "pa1", "pa2"])
def test_pa_skips_empty_examples(algo):
    # |x|^2 == 0: the loss is 1 but there is no direction; nothing may change (and no NaN).
    learner = learners.create(algo, 8, options_for(algo, 1.0))
    y = np.array([1.0, -1.0, 1.0])
    s = np.ones(3)
    indptr = np.array([0, 0, 0, 0], np.int64)
    out = np.empty(3)
    assert learner.learn(y, s, indptr, np.zeros(0, np.int32), np.zeros(0), out) == 0
    assert np.all(out == 0.0)
    assert np.all(learner.state()["mean"] == 0.0)


def test_pa_after_an_update_the_margin_is_exactly_one():
    # PA's defining property: after a PA update on x, y w.x == 1 (the loss on x becomes 0).
    rng = np.random.default_rng(3)
    learner = learners.create("pa", 10)
    x_idx = np.array([1, 4, 7], np.int32)
    x_val = rng.normal(size=3)
    indptr = np.array([0, 3, 6], np.int64)
    out = np.empty(2)
    updates = learner.learn(np.array([-1.0, -1.0]), np.ones(2), indptr,
                            np.concatenate([x_idx, x_idx]), np.concatenate([x_val, x_val]), out)
    assert updates == 1
    assert out[0] == 0.0
    assert out[1] == pytest.approx(-1.0, rel=1e-12)


@pytest.mark.parametrize("algo", ["perceptron", "avg-perceptron"])
def test_perceptron_updates_on_zero_margin_and_scales_by_importance(algo):
    learner = learners.create(algo, 4)
    out = np.empty(1)
    n = learner.learn(np.array([-1.0]), np.array([2.5]), np.array([0, 2], np.int64),
                      np.array([0, 3], np.int32), np.array([1.0, -2.0]), out)
    assert n == 1
    assert out[0] == 0.0
    np.testing.assert_array_equal(learner.state()["mean"], [-2.5, 0.0, 0.0, 5.0])


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("cut", [1, 97, 199])
def test_save_and_load_mid_stream(algo, cut, random_csr, csr_chunks, tmp_path):
    from streamherd.model import load_model, save_model

    rng = np.random.default_rng(5)
    data = random_csr(rng, n=300, d=40, importance=True)
    bounds = [0, cut, 250, 300]
    chunks = csr_chunks(data, bounds)
    opts = options_for(algo, 0.3)

    whole = learners.create(algo, data["d"], opts)
    m_whole, u_whole = run_streamherd(whole, chunks)

    first = learners.create(algo, data["d"], opts)
    m1, u1 = run_streamherd(first, chunks[:1])
    state = {k: v.copy() for k, v in first.state().items()}
    meta = first.meta()
    # Through the model file too, as the CLI does it (-f then -i).
    path = tmp_path / "mid.npz"
    dim_bits = 6  # 64 >= d: the model format needs a power-of-two dimension
    padded = {k: np.concatenate([v, np.zeros((1 << dim_bits) - len(v))]) for k, v in state.items()}
    save_model(path, {"bits": dim_bits, "algo": algo, "bias": True,
                      "hyperparameters": first.options, "learner": meta}, padded)
    loaded_meta, arrays = load_model(path)
    arrays = {k: v[:data["d"]].copy() for k, v in arrays.items()}

    for resume_state, resume_meta in [(state, meta), (arrays, loaded_meta["learner"])]:
        resumed = learners.create(algo, data["d"], opts,
                                  state={k: v.copy() for k, v in resume_state.items()},
                                  learner_meta=resume_meta)
        m2, u2 = run_streamherd(resumed, chunks[1:])
        assert u1 + u2 == u_whole
        assert_close(np.concatenate([m1, m2]), m_whole, "margins")
        for name, array in whole.state().items():
            assert_close(resumed.state()[name], array, name)


def test_averaged_perceptron_meta_counts_examples(random_csr, csr_chunks):
    rng = np.random.default_rng(8)
    data = random_csr(rng, n=120, d=20, nan_labels=0.25)
    learner = learners.create("avg-perceptron", data["d"])
    run_streamherd(learner, csr_chunks(data, [0, 50, 120]))
    assert learner.meta()["examples_seen"] == int((~np.isnan(data["y"])).sum())


def test_registry_rejects_unknown_names_and_bad_hyperparameters():
    from streamherd.errors import StreamherdError

    with pytest.raises(StreamherdError, match="no-such-algo"):
        learners.create("no-such-algo", 8)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(StreamherdError, match="C"):
            learners.create("pa1", 8, {"C": bad})
