"""Joint multiclass, one-versus-all and regression against the families' dense numpy
transcriptions (references.py, written independently of streamherd's kernels).

Joint: for each example, the class scores mu . f(x, z) over the classes seen so far, the best wrong
class y', Delta = f(x, y) - f(x, y') as a dense K*d vector, and the family's binary update on Delta
with label +1. One-versus-all: K independent binary runs of the same references. Regression: the
families' squared-loss forms (recursive least squares, NHERD squared loss, epsilon-insensitive PA).
"""
import numpy as np
import pytest

from streamherd import learners
from streamherd.learners.kernels.multiclass import (DISTINCT_FLAGS, all_class_scores,
                                                    chunk_spread, flag_slots, flagged_slots)
from streamherd.learners.packing import bank_entry_point
from streamherd.learners.reductions import ova as ova_module
from streamherd.learners.reductions.ova import OneVersusAll
from streamherd.model import load_model, save_model

import references

D = 16
K = 4
N = 300
CHUNKS = [(0, 70), (70, 180), (180, N)]
ALL = list(learners.REGISTRY)
OPTIONS = {
    "nherd": {"C": 0.3, "a": 0.7},
    "arow": {"r": 2.0, "a": 1.5},
    "narow": {"b": 2.0, "a": 1.5},
    "cw": {"eta": 0.8, "a": 0.7},
    "scw1": {"C": 0.4, "eta": 0.85, "a": 1.2},
    "scw2": {"C": 0.4, "eta": 0.75, "a": 0.9},
    "sop": {"a": 0.8},
    "pa1": {"C": 0.3},
    "pa2": {"C": 0.3},
}


def options_for(name):
    return dict(OPTIONS.get(name.split("-")[0], {}))


def make_data(seed, d=D, k=K, n=N, nnz=5, labels_late=True):
    """Sparse rows, classes of a random linear argmax rule with 15% relabelled at random; class
    k-1 first appears only after row 120 (class discovery mid-stream and mid-chunk), a few
    unlabeled rows (class -1) and importance weights 0, 0.5 and 2."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(k, d))
    X = np.zeros((n, d))
    indptr, indices, values = [0], [], []
    for i in range(n):
        size = rng.integers(0, nnz + 1) if i % 41 == 0 else nnz
        cols = np.sort(rng.choice(d, size=size, replace=False))
        vals = rng.normal(size=size)
        X[i, cols] = vals
        indices.extend(cols.tolist())
        values.extend(vals.tolist())
        indptr.append(len(indices))
    cls = np.argmax(X @ truth.T, axis=1)
    noise = rng.random(n) < 0.15
    cls[noise] = rng.integers(0, k, size=noise.sum())
    if labels_late:
        cls[:120][cls[:120] == k - 1] = 0
    importance = np.ones(n)
    importance[rng.random(n) < 0.1] = 0.5
    importance[rng.random(n) < 0.1] = 2.0
    importance[rng.random(n) < 0.03] = 0.0
    cls[rng.random(n) < 0.03] = -1
    first = {}
    for i in range(n):   # ids in order of first appearance, as ClassLabels numbers them
        if cls[i] >= 0 and cls[i] not in first:
            first[cls[i]] = len(first)
    cls = np.array([first[c] if c >= 0 else -1 for c in cls], np.int64)
    return dict(X=X, cls=cls, importance=importance, indptr=np.array(indptr, np.int64),
                indices=np.array(indices, np.int32), values=np.array(values, np.float64))


# ------------------------------------------------------------------ dense joint reference

def joint_reference(name, data, k, options, fixed=False):
    """Predictions and final arrays of the Delta construction, example by example."""
    predicted, learner = references.joint_run(name, data["X"], data["cls"], data["importance"],
                                              k, options, fixed)
    return predicted, learner.arrays()


# ------------------------------------------------------------------ running streamherd

def run_joint(name, data, k, options, fixed=False, resume_after=None, tmp_path=None):
    learner = learners.create(name, D, options, blocks=k if fixed else 0)
    known = k if fixed else 0
    predicted = np.full(N, -2)
    updates = 0
    for number, (lo, hi) in enumerate(CHUNKS):
        if resume_after is not None and number == resume_after:
            path = tmp_path / f"{name}.npz"
            save_model(path, {"algo": learner.name, "bits": 4, "hyperparameters": learner.options,
                              "learner": learner.meta(), "task": "multiclass", "bias": True,
                              "multiclass": "joint",
                              "classes": [str(z) for z in range(learner.blocks)]},
                       learner.state())
            meta, arrays = load_model(path, expected_arrays=type(learner).state_arrays)
            learner = learners.create(meta["algo"], D, meta["hyperparameters"], arrays,
                                      meta["learner"])
        chunk_classes = data["cls"][lo:hi]
        learner.grow(max(learner.blocks, int(chunk_classes.max()) + 1))
        out = np.empty(hi - lo, np.int64)
        u, known = learner.learn_joint(chunk_classes, data["importance"][lo:hi],
                                       data["indptr"][lo:hi + 1], data["indices"],
                                       data["values"], known, out)
        updates += u
        predicted[lo:hi] = out
    return learner, predicted, updates


@pytest.fixture(scope="module")
def data():
    return make_data(3)


def assert_state(learner, ref_arrays):
    state = learner.state()
    for key, value in ref_arrays.items():
        np.testing.assert_allclose(state[key], value, rtol=1e-9, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", ALL)
def test_joint_matches_dense_delta_construction(name, data):
    learner, predicted, updates = run_joint(name, data, K, options_for(name))
    ref_predicted, ref_arrays = joint_reference(name, data, K, options_for(name))
    assert learner.blocks == K
    np.testing.assert_array_equal(predicted, ref_predicted)
    assert_state(learner, ref_arrays)
    assert updates > 30
    labeled = data["cls"] >= 0
    error = np.mean(predicted[labeled][150:] != data["cls"][labeled][150:])
    assert error < 0.6   # learns something (chance is 0.75)
    assert np.all(predicted[:1] == -1)   # nothing to predict before the first class


@pytest.mark.parametrize("name", ["arow-p", "nherd-full", "cw", "scw2-full", "sop", "pa2",
                                  "avg-perceptron"])
def test_joint_with_fixed_classes(name, data):
    learner, predicted, _ = run_joint(name, data, K, options_for(name), fixed=True)
    ref_predicted, ref_arrays = joint_reference(name, data, K, options_for(name), fixed=True)
    np.testing.assert_array_equal(predicted, ref_predicted)
    assert_state(learner, ref_arrays)
    assert predicted[0] == 0   # all classes known from the start: ties go to the first


@pytest.mark.parametrize("name", ["arow-full", "nherd-d", "scw1", "sop-full", "avg-perceptron"])
def test_joint_resume_from_saved_model_equals_one_run(name, data, tmp_path):
    whole, predicted_whole, _ = run_joint(name, data, K, options_for(name))
    resumed, predicted_resumed, _ = run_joint(name, data, K, options_for(name), resume_after=2,
                                              tmp_path=tmp_path)
    np.testing.assert_array_equal(predicted_resumed, predicted_whole)
    for key, value in whole.state().items():   # the averaged perceptron saves the average and
        # recovers its running sum from it, exact up to rounding
        np.testing.assert_allclose(resumed.state()[key], value, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["arow-p", "pa2", "sop", "avg-perceptron", "nherd-d"])
def test_joint_with_eleven_classes_matches_dense_delta_construction(name):
    """Eleven classes: the class scores run eight, then two, then one class at a time."""
    many = make_data(5, k=11)
    learner, predicted, _ = run_joint(name, many, 11, options_for(name))
    ref_predicted, ref_arrays = joint_reference(name, many, 11, options_for(name))
    np.testing.assert_array_equal(predicted, ref_predicted)
    assert_state(learner, ref_arrays)


@pytest.mark.parametrize("classes", [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 19])
def test_class_scores_add_each_row_in_its_order(classes):
    """Whatever the grouping of classes, and with the classes in blocks or side by side, score
    z is the row's terms w_z,j x_j added one by one in the row's order: the same floats as a
    plain loop."""
    rng = np.random.default_rng(classes)
    dim = 64
    w = rng.normal(size=dim * classes) * 10.0 ** rng.integers(-8, 8, size=dim * classes)
    indptr = np.array([0, 0, 1, 9, 40, 41], np.int64)
    indices = rng.integers(0, dim, size=indptr[-1]).astype(np.int64)
    values = rng.normal(size=indptr[-1]) * 10.0 ** rng.integers(-8, 8, size=indptr[-1])
    expected = np.zeros((len(indptr) - 1, classes))
    for i in range(len(indptr) - 1):
        for z in range(classes):
            total = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                total += float(w[z * dim + indices[k]]) * float(values[k])
            expected[i, z] = total
    out = np.full_like(expected, np.nan)
    all_class_scores(w, (dim, 1), classes, indptr, indices, values, out)   # class blocks
    np.testing.assert_array_equal(out, expected)
    side_by_side = np.ascontiguousarray(w.reshape(classes, dim).T).reshape(-1)
    out[:] = np.nan
    all_class_scores(side_by_side, (1, classes), classes, indptr, indices, values, out)
    np.testing.assert_array_equal(out, expected)


def test_chunk_spread_tells_hashed_words_from_repeated_numbered_features():
    """Numbered features that come back row after row never overflow the cache; hashed words
    do in their first chunk, and the learner remembers them."""
    rng = np.random.default_rng(0)
    pixels = np.tile(np.arange(700, dtype=np.int64) * 373 % (1 << 18), 40)   # 40 rows of 700
    words = rng.integers(0, 1 << 18, size=28_000).astype(np.int64)
    rows = np.arange(0, 28_001, 700, dtype=np.int64)
    learner = learners.create("arow-p", 1 << 18, {}, blocks=10)
    assert not chunk_spread(learner, rows[:1], pixels[:0])   # an empty chunk
    for _ in range(20):
        assert not chunk_spread(learner, rows, pixels)
    assert chunk_spread(learner, rows, words)
    assert chunk_spread(learner, rows, pixels)
    assert chunk_spread(learners.create("arow-p", 1 << 18, {}, blocks=10), rows, words)


@pytest.mark.parametrize("distinct", [1, 50, 800, 3000, 20_000])
def test_flagged_slots_estimate_the_count_of_distinct_slots(distinct):
    rng = np.random.default_rng(distinct)
    slots = rng.choice(1 << 30, size=distinct, replace=False)
    indices = np.concatenate([slots, rng.choice(slots, size=4 * distinct)]).astype(np.int64)
    flags = np.zeros(DISTINCT_FLAGS, np.bool_)
    newly = flag_slots(indices, 0, len(indices), 1, flags)
    assert newly == np.count_nonzero(flags)
    assert abs(flagged_slots(newly, DISTINCT_FLAGS) - distinct) <= 0.03 * distinct + 1


def test_flag_slots_reads_every_step_th_entry_and_counts_the_flags_it_sets():
    flags = np.zeros(16, np.bool_)
    flags[105 % 16] = True
    newly = flag_slots(np.arange(100, 120, dtype=np.int64), 2, 14, 3, flags)   # 102, 105, 108, 111
    assert np.flatnonzero(flags).tolist() == sorted([102 % 16, 105 % 16, 108 % 16, 111 % 16])
    assert newly == 3


@pytest.mark.parametrize("name", ["arow-p", "pa2", "perceptron"])
def test_classes_side_by_side_are_saved_as_blocks_and_grow_in_place(name, tmp_path):
    """Class z's slot of feature j is j C + z in a learner with room for C classes; its saved
    arrays are class blocks (z D + j) whatever C, and a model loads back into the layout."""
    dim = 8
    learner = learners.create(name, dim, {}, blocks=2, task="multiclass")
    assert learner.layout == (1, 2)
    learner.mean[:] = np.arange(2 * dim)
    blocks = [[2 * j + z for j in range(dim)] for z in range(2)]
    np.testing.assert_array_equal(learner.state()["mean"], blocks[0] + blocks[1])
    prior = learners.create(name, dim, {}).state()
    learner.grow(5)
    assert learner.layout == (1, learner.capacity) and learner.capacity >= 5
    saved = learner.state()
    np.testing.assert_array_equal(saved["mean"], blocks[0] + blocks[1] + [0.0] * 3 * dim)
    for key, value in prior.items():   # the new classes start as a fresh model
        np.testing.assert_array_equal(saved[key][2 * dim:], np.tile(value, 3))
    path = tmp_path / "m.npz"
    save_model(path, {"algo": learner.name, "bits": 3, "hyperparameters": learner.options,
                      "learner": learner.meta(), "task": "multiclass", "bias": True,
                      "multiclass": "joint", "classes": [str(z) for z in range(5)]}, saved)
    _, arrays = load_model(path, expected_arrays=type(learner).state_arrays)
    again = learners.create(name, dim, learner.options, arrays, task="multiclass")
    assert again.layout == (1, 5)
    for key, value in saved.items():
        np.testing.assert_array_equal(again.state()[key], value)
    x_slots, x_values = np.array([1, 6], np.int64), np.array([0.5, -2.0])
    scores = np.empty((1, 5))
    again.class_scores(np.array([0, 2], np.int64), x_slots, x_values, scores)
    np.testing.assert_array_equal(scores[0], saved["mean"].reshape(5, dim)[:, x_slots] @ x_values)


@pytest.mark.parametrize("name", ["arow-p", "pa2"])
def test_a_model_loaded_without_room_to_rearrange_keeps_its_blocks_and_learns_alike(
        name, data, monkeypatch):
    """Where a second copy of its arrays does not fit in memory, a loaded joint learner keeps
    the class blocks as loaded and learns on in them, to the same state."""
    from streamherd.learners import base

    trained, _, _ = run_joint(name, data, K, options_for(name))
    saved = {key: np.array(value) for key, value in trained.state().items()}
    rearranged = learners.create(name, D, trained.options, dict(saved), trained.meta())
    monkeypatch.setattr(base, "available_memory", lambda: 1)
    in_blocks = learners.create(name, D, trained.options, dict(saved), trained.meta())
    monkeypatch.undo()
    assert rearranged.layout == (1, K) and in_blocks.layout == (D, 1)
    for learner in (rearranged, in_blocks):
        predicted = np.empty(N, np.int64)
        learner.learn_joint(data["cls"], data["importance"], data["indptr"], data["indices"],
                            data["values"], K, predicted)
    for key, value in rearranged.state().items():
        np.testing.assert_array_equal(in_blocks.state()[key], value)


def test_grow_keeps_old_blocks_and_adds_fresh_ones():
    learner = learners.create("arow-full", 4, {"a": 2.0}, blocks=1)
    learner.covariance[0, 1] = learner.covariance[1, 0] = 0.5
    learner.mean[:] = 1.0
    learner.grow(3)
    assert learner.mean.shape == (12,) and learner.covariance.shape == (12, 12)
    np.testing.assert_array_equal(learner.mean, [1.0] * 4 + [0.0] * 8)
    expected = 2.0 * np.eye(12)
    expected[0, 1] = expected[1, 0] = 0.5
    np.testing.assert_array_equal(learner.covariance, expected)


def test_joint_full_covariance_over_k_blocks_is_refused_when_too_large():
    from streamherd.errors import StreamherdError

    learner = learners.create("arow-full", 1 << 14, {}, blocks=1)
    with pytest.raises(StreamherdError, match=r"-b 14 and 64 classes needs a 1048576x1048576"):
        learner.grow(64)


# ------------------------------------------------------------------ one-versus-all

@pytest.mark.parametrize("fixed", [True, False], ids=["fixed", "discovered"])
@pytest.mark.parametrize("name", ALL)
def test_ova_is_k_independent_binary_runs(name, data, fixed):
    options = options_for(name)
    ova, predicted, _, _ = run_ova(name, data, fixed=fixed)
    X, cls, s = data["X"], data["cls"], data["importance"]
    scores = np.full((N, K), -np.inf)
    state = ova.state()
    for z in range(K):
        first = 0 if fixed else int(np.argmax(cls == z))
        y = np.where(cls[first:] < 0, np.nan, np.where(cls[first:] == z, 1.0, -1.0))
        margins, learner = references.binary_run(name, X[first:], y, s[first:], options)
        arrays = learner.arrays()
        scores[first + (not fixed):, z] = margins[(not fixed):]
        for key, value in arrays.items():
            np.testing.assert_allclose(state[key][z * D:(z + 1) * D], value, rtol=1e-9,
                                       atol=1e-12, err_msg=f"class {z} {key}")
    expected = np.where(np.isfinite(scores).any(axis=1), np.argmax(scores, axis=1), -1)
    np.testing.assert_array_equal(predicted, expected)


def run_ova(name, data, packed=True, k=K, fixed=False):
    """One-versus-all over CHUNKS, its classes ``fixed`` from the start or discovered as they
    come: (the learner, its predictions, its updates, its class scores of every row after
    training); ``packed`` False: the classes learn apart, in K binary runs, whatever the
    family."""
    ova = OneVersusAll(name, D, options_for(name), blocks=k if fixed else 0)
    if not packed:
        ova._packed_groups = lambda: None
    known, updates = (k if fixed else 0), 0
    predicted = np.empty(N, np.int64)
    for lo, hi in CHUNKS:
        ova.grow(max(ova.blocks, int(data["cls"][lo:hi].max()) + 1))
        out = np.empty(hi - lo, np.int64)
        u, known = ova.learn_joint(data["cls"][lo:hi], data["importance"][lo:hi],
                                   data["indptr"][lo:hi + 1], data["indices"], data["values"],
                                   known, out)
        updates += u
        predicted[lo:hi] = out
    assert ova.blocks == k and (packed or ova.groups is None)
    scores = np.empty((N, k))
    ova.class_scores(data["indptr"], data["indices"], data["values"], scores)
    return ova, predicted, updates, scores


BANKED = [name for name in ALL if bank_entry_point(name) is not None]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", BANKED)
def test_ova_bank_equals_its_classes_learning_apart(name, threads, monkeypatch):
    """A family with a bank kernel learns its classes as one bank, on ``threads`` groups of
    classes (11 classes: two groups of whole cache lines), bit for bit as in K binary runs:
    state, predictions, updates and the scores after training."""
    monkeypatch.setattr(ova_module, "cores_beside_parsers", lambda: threads)
    data = make_data(8, k=11)
    banked = run_ova(name, data, packed=True, k=11)
    apart = run_ova(name, data, packed=False, k=11)
    assert banked[0].groups is not None and len(banked[0].groups) == threads
    for key, value in apart[0].state().items():
        np.testing.assert_array_equal(banked[0].state()[key], value, err_msg=key)
    for got, expected in zip(banked[1:], apart[1:]):
        np.testing.assert_array_equal(got, expected)


def test_ova_bank_scores_a_margin_past_a_float_as_its_learner_does():
    """Scores from the bank while the classes are packed: a margin that overflows is the
    learner's own (inf), and the bank is left whole (its classes all learning on)."""
    data = make_data(8)
    ova = run_ova("arow-p", data, packed=True)[0]
    ova.learners[2].mean[3] = 1e308
    indptr, indices, values = np.array([0, 1, 2]), np.array([3, 4], np.int32), np.array([10.0, 1])
    scores = np.empty((2, K))
    ova.class_scores(indptr, indices, values, scores)
    assert scores[0, 2] == np.inf and np.isfinite(np.delete(scores, [2], axis=1)).all()
    assert ova.alive.all()
    expected = np.empty(2)
    ova.learners[0].predict_margins(indptr, indices, values, expected)
    np.testing.assert_array_equal(scores[:, 0], expected)


@pytest.mark.parametrize("name", BANKED)
def test_ova_bank_reports_the_row_its_runs_apart_report(name):
    """The first class whose update fails names the chunk's row, as the runs apart do (a class
    new in the chunk counts its rows from its first example there)."""
    from streamherd.learners.base import UnstableUpdate

    big = 1e200
    rows = [[(0, 1.0)], [(1, 1.0)], [(2, 1.0), (3, 0.5)], [(4, big), (5, big)],
            [(6, big), (7, big)]]
    indptr = np.array([0, *np.cumsum([len(r) for r in rows])], np.int64)
    indices = np.array([j for r in rows for j, _ in r], np.int32)
    values = np.array([x for r in rows for _, x in r])
    cls = np.array([0, 0, 1, 1, 1], np.int64)
    raised = []
    for packed in (True, False):
        ova = OneVersusAll(name, 8, {}, blocks=2)
        if not packed:
            ova._packed_groups = lambda: None
        with pytest.raises(UnstableUpdate) as info:
            ova.learn_joint(cls, np.ones(5), indptr, indices, values, 1, np.empty(5, np.int64))
        raised.append((info.value.index, info.value.what))
    assert raised[0] == raised[1] and raised[0][0] in (3, 4)


def test_ova_save_and_load_round_trip(data, tmp_path):
    ova = OneVersusAll("arow-full", D, {"r": 0.5}, blocks=K)
    out = np.empty(N, np.int64)
    ova.learn_joint(data["cls"], data["importance"], data["indptr"], data["indices"],
                    data["values"], K, out)
    state = ova.state()
    assert state["covariance"].shape == (K * D, D)
    again = OneVersusAll("arow-full", D, ova.options, state, ova.meta())
    assert again.options == {"r": 0.5, "a": 1.0} and again.blocks == K
    scores, scores_again = np.empty((N, K)), np.empty((N, K))
    ova.class_scores(data["indptr"], data["indices"], data["values"], scores)
    again.class_scores(data["indptr"], data["indices"], data["values"], scores_again)
    np.testing.assert_array_equal(scores, scores_again)
    np.testing.assert_allclose(scores, data["X"] @ state["mean"].reshape(K, D).T, rtol=1e-12,
                               atol=1e-12)


# ------------------------------------------------------------------ regression

REGRESSION = ["arow-p", "arow-d", "arow-full", "nherd-e", "nherd-p", "nherd-d", "nherd-full",
              "pa", "pa1", "pa2"]


def make_regression(seed, d=D, n=N):
    """Sparse rows, targets of a random linear function plus an offset and Gaussian noise."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = np.zeros((n, d))
    indptr, indices, values = [0], [], []
    for i in range(n):
        cols = np.sort(rng.choice(d, size=int(rng.integers(0 if i % 29 == 0 else 1, 6)),
                                  replace=False))
        vals = rng.normal(size=len(cols))
        X[i, cols] = vals
        indices.extend(cols.tolist())
        values.extend(vals.tolist())
        indptr.append(len(indices))
    y = X @ w + 0.3 * rng.normal(size=n)
    s = np.ones(n)
    s[rng.random(n) < 0.1] = 0.5
    s[rng.random(n) < 0.1] = 2.0
    s[rng.random(n) < 0.03] = 0.0
    y[rng.random(n) < 0.03] = np.nan
    return dict(X=X, y=y, importance=s, indptr=np.array(indptr, np.int64),
                indices=np.array(indices, np.int32), values=np.array(values), w=w)


REGRESSION_OPTIONS = {"arow": {"r": 0.5, "a": 1.5}, "nherd": {"C": 2.0, "a": 0.7},
                      "pa": {"epsilon": 0.2}, "pa1": {"C": 0.3, "epsilon": 0.1},
                      "pa2": {"C": 0.3, "epsilon": 0.0}}


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_matches_dense_equations(name):
    data = make_regression(5)
    options = REGRESSION_OPTIONS[name.split("-")[0]]
    learner = learners.create(name, D, options)
    predictions = np.empty(N)
    for lo, hi in CHUNKS:
        out = np.empty(hi - lo)
        learner.learn_regression(data["y"][lo:hi], data["importance"][lo:hi],
                                 data["indptr"][lo:hi + 1], data["indices"], data["values"], out)
        predictions[lo:hi] = out
    ref_predictions, ref_arrays = references.regression_run(name, data["X"], data["y"],
                                                            data["importance"], options)
    np.testing.assert_allclose(predictions, ref_predictions, rtol=1e-9, atol=1e-12)
    assert_state(learner, ref_arrays)
    labeled = ~np.isnan(data["y"])
    late = np.mean((data["y"][labeled][200:] - predictions[labeled][200:]) ** 2)
    if name != "pa":   # plain PA fits every noisy example exactly, and stays noisy
        assert late < 0.5 * np.var(data["y"][labeled])   # it learned the linear function


def test_regression_epsilon_zone_makes_no_update():
    """With epsilon larger than every residual, PA regression never moves."""
    data = make_regression(6)
    learner = learners.create("pa", D, {"epsilon": 1e6})
    out = np.empty(N)
    assert learner.learn_regression(data["y"], data["importance"], data["indptr"],
                                    data["indices"], data["values"], out) == 0
    assert not learner.mean.any()


# ------------------------------------------------------------------ class probabilities

def test_diagonal_class_probabilities_match_monte_carlo(data):
    learner, _, _ = run_joint("arow-d", data, K, options_for("arow-d"))
    rows = slice(0, 6)
    indptr = data["indptr"][:7]
    p = learner.class_probabilities(indptr, data["indices"], data["values"])
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    rng = np.random.default_rng(0)
    X = data["X"][rows]
    mu = learner.state()["mean"].reshape(K, D)
    sd = np.sqrt(learner.state()["variance"].reshape(K, D))
    for i in range(len(X)):
        draws = mu[None] + sd[None] * rng.standard_normal((200000, K, D))   # weights ~ N(mu, Sigma)
        winners = np.argmax(draws @ X[i], axis=1)
        empirical = np.bincount(winners, minlength=K) / len(winners)
        np.testing.assert_allclose(p[i], empirical, atol=0.006)


def test_full_class_probabilities_match_sampling_the_weights(data):
    learner, _, _ = run_joint("arow-full", data, K, options_for("arow-full"))
    indptr = data["indptr"][:5]
    p = learner.class_probabilities(indptr, data["indices"], data["values"])
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    rng = np.random.default_rng(1)
    weights = rng.multivariate_normal(learner.mean, learner.covariance, size=100000)
    for i in range(4):
        x = data["X"][i]
        scores = weights.reshape(-1, K, D) @ x
        empirical = np.bincount(np.argmax(scores, axis=1), minlength=K) / len(scores)
        np.testing.assert_allclose(p[i], empirical, atol=0.03)
    assert np.array_equal(p, learner.class_probabilities(indptr, data["indices"], data["values"]))


def test_ova_full_matrices_that_do_not_fit_are_refused_together():
    from streamherd.errors import StreamherdError

    ova = OneVersusAll("sop-full", 1 << 14, {}, blocks=1)
    with pytest.raises(StreamherdError, match=r"-b 14 and 1000 classes needs 1000 16384x16384"):
        ova.grow(1000)
    assert ova.blocks == 1


def test_ova_unstable_update_names_the_chunk_row():
    """A class first seen mid-chunk learns from a slice of the chunk; a failure in its slice
    must name the chunk's row (the slice's index + the class's first row)."""
    from streamherd.learners.base import UnstableUpdate

    class FailsOnItsSecondExample:
        def learn(self, y, importance, indptr, indices, values, margins):
            assert len(y) == 2   # class 1 first appears at row 2 of 4
            raise UnstableUpdate(1, "boom")

    ova = OneVersusAll("cw-full", 4, {}, blocks=2)   # (its classes learn apart: no bank)
    ova.learners[1] = FailsOnItsSecondExample()
    cls = np.array([0, 0, 1, 1], np.int64)
    with pytest.raises(UnstableUpdate) as info:
        ova.learn_joint(cls, np.ones(4), np.arange(5, dtype=np.int64), np.zeros(4, np.int32),
                        np.ones(4), 1, np.empty(4, np.int64))
    assert info.value.index == 3
