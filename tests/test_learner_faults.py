"""Non-finite state is never learned silently, and multiclass growth refuses what does not fit.

Every learner, on every task it has (binary ``learn``, joint ``learn_joint``, ``learn_regression``,
one-versus-all), raises ``UnstableUpdate`` with the chunk's row when an example's margin, the step
of its update or the state it writes is not finite (values like VW's ``a:1e300``), instead of
writing NaN weights or making an update that learns nothing; a sane chunk raises nothing.
Growing a joint (or OVA) model to more classes than memory holds is refused in one line before
anything is allocated.
"""
import numpy as np
import pytest

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.learners import base
from streamherd.learners.base import UnstableUpdate
from streamherd.learners.reductions.ova import OneVersusAll

ALGOS = sorted(learners.REGISTRY)
REGRESSION = [a for a in ALGOS if learners.spec(a).regression is not None]
TASKS = ["binary", "joint", "ova"]
D = 8   # slots per class: tiny, for the full-covariance learners
# The perceptrons' step does not involve |x|^2: 1e200 makes a finite update (w = 1e200), and the
# next example's margin (1e200 * 1e200) overflows. Every other learner's update of a 1e200 row
# divides by |x|^2 or x' Sigma x = inf and fails there.
PERCEPTRONS = ("perceptron", "avg-perceptron", "voted-perceptron")


def csr(rows):
    """CSR arrays of rows given as lists of (slot, value)."""
    indptr, indices, values = [0], [], []
    for row in rows:
        for j, x in row:
            indices.append(j)
            values.append(x)
        indptr.append(len(indices))
    return np.array(indptr, np.int64), np.array(indices, np.int32), np.array(values)


def chunk(big):
    """Rows 0 and 1 sane; rows 2 and 3 carry ``big`` on slots no earlier row touched (so every
    learner updates on row 2: its margin there is 0)."""
    return csr([[(0, 1.0), (1, 0.5)], [(1, 1.0), (2, -0.5)], [(4, big), (5, big)],
                [(4, big), (5, big)]])


def run(name, task, rows, labels, importance=None, prepare=None):
    """Drive ``name`` over one chunk as ``task`` with 2 classes known up front; returns the
    number of updates."""
    indptr, indices, values = rows
    n = len(indptr) - 1
    importance = np.ones(n) if importance is None else importance
    if task == "ova":
        learner = OneVersusAll(name, D, {}, blocks=2)
    else:
        learner = learners.create(name, D, {}, blocks=2 if task == "joint" else 1)
    if prepare is not None:
        for one in (learner.learners if task == "ova" else [learner]):
            prepare(one)
    if task in ("joint", "ova"):
        updates, _ = learner.learn_joint(np.asarray(labels, np.int64), importance, indptr,
                                         indices, values, 2, np.empty(n, np.int64))
        return updates
    out = np.full(n, np.nan)
    if task == "regression":
        return learner.learn_regression(np.asarray(labels, float), importance, indptr, indices,
                                        values, out)
    updates = learner.learn(np.asarray(labels, float), importance, indptr, indices, values, out)
    assert np.all(np.isfinite(out))
    return updates


def labels_for(task):
    return {"binary": [1.0, -1.0, 1.0, 1.0], "joint": [0, 1, 0, 0], "ova": [0, 1, 0, 0],
            "regression": [1.0, -2.0, 1.5, 1.5]}[task]


def task_cases():
    for name in ALGOS:
        for task in TASKS:
            yield name, task
    for name in REGRESSION:
        yield name, "regression"


CASES = list(task_cases())
IDS = [f"{name}-{task}" for name, task in CASES]


# ---------------------------------------------------------------- overflow is reported

@pytest.mark.parametrize("big", [1e200, 1e300])
@pytest.mark.parametrize("name,task", CASES, ids=IDS)
def test_overflowing_update_names_its_example(name, task, big):
    expected = 3 if name in PERCEPTRONS and task != "regression" else 2
    with pytest.raises(UnstableUpdate) as info:
        run(name, task, chunk(big), labels_for(task))
    assert info.value.index == expected
    assert info.value.what.startswith(f"the {name} update failed: ")


@pytest.mark.parametrize("name,task", CASES, ids=IDS)
def test_sane_chunk_learns_without_error(name, task):
    assert run(name, task, chunk(2.0), labels_for(task)) > 0


def weights_of_1e200(learner):
    """Finite but large weights in every block: a 1e200 feature then overflows the margin."""
    if hasattr(learner, "label_sum"):   # sop predicts with v / D
        learner.label_sum[:] = 1e200
    else:
        learner.mean[:] = 1e200
    if hasattr(learner, "examples_seen"):   # the averaged perceptron predicts with w - u / T
        learner.examples_seen = 1


@pytest.mark.parametrize("name,task", CASES, ids=IDS)
def test_overflowing_margin_of_an_unlabeled_example_is_reported(name, task):
    """1e200 * 1e200: the prediction is garbage even though nothing is learned from it."""
    rows = csr([[(0, 1.0)], [(3, 1e200)], [(1, 1.0)]])
    unlabeled = {"binary": [np.nan] * 3, "regression": [np.nan] * 3}.get(task, [-1, -1, -1])
    with pytest.raises(UnstableUpdate) as info:
        run(name, task, rows, unlabeled, prepare=weights_of_1e200)
    assert info.value.index == 1


@pytest.mark.parametrize("name", ["perceptron", "pa2", "arow-d", "nherd-d", "scw1-full", "sop"])
def test_overflowing_margin_of_an_unweighted_example_is_reported(name):
    rows = csr([[(0, 1.0)], [(0, 1e200)]])
    with pytest.raises(UnstableUpdate) as info:
        run(name, "binary", rows, [1.0, 1.0], importance=np.array([1.0, 0.0]),
            prepare=weights_of_1e200)
    assert info.value.index == 1


# ---------------------------------------------------------------- memory of a grown state

def gib(monkeypatch, size):
    monkeypatch.setattr(base, "available_memory", lambda: size * 2 ** 30)


@pytest.mark.parametrize("name", ["nherd-p", "pa2", "avg-perceptron", "sop"])
def test_joint_growth_beyond_memory_is_refused_in_one_line(name, monkeypatch):
    gib(monkeypatch, 4)
    learner = learners.create(name, 1 << 18, {})
    with pytest.raises(StreamherdError) as info:
        learner.grow(10_000)
    message = str(info.value)
    assert "\n" not in message
    assert f"{name} with -b 18 and 10,000 classes needs" in message
    arrays = len(learner.live_arrays)
    assert f"{8 * arrays * 10_000 << 18:,} bytes" in message
    # which -b would hold 10,000 classes, and how many classes -b 18 holds
    fit_bits = int(np.log2(4 * 2 ** 30 / (8 * arrays * 10_000)))
    assert f"-b {fit_bits} fits 10,000 classes" in message
    assert f"-b 18 fits {4 * 2 ** 30 // (8 * arrays << 18):,}" in message
    assert learner.blocks == 1 and learner.size == 1 << 18


def test_fixed_classes_beyond_memory_are_refused(monkeypatch):
    gib(monkeypatch, 1)
    with pytest.raises(StreamherdError, match=r"arow-p with -b 18 and 10,000 classes needs"):
        learners.create("arow-p", 1 << 18, {}, blocks=10_000)


def test_growth_beyond_any_machine_is_refused_without_allocating():
    learner = learners.create("pa", 1 << 20, {})
    with pytest.raises(StreamherdError, match=r"-b 20 and 1,073,741,824 classes needs "
                                              r"9,007,199,254,740,992 bytes"):
        learner.grow(1 << 30)


@pytest.mark.parametrize("name", ["cw", "perceptron"])
def test_ova_growth_beyond_memory_is_refused(name, monkeypatch):
    gib(monkeypatch, 1)
    ova = OneVersusAll(name, 1 << 18, {}, blocks=1)
    with pytest.raises(StreamherdError, match=rf"{name} --multiclass ova with -b 18 and 10,000 "
                                              rf"classes needs"):
        ova.grow(10_000)
    assert ova.blocks == 1
    ova.grow(3)   # what fits still grows
    assert ova.blocks == 3


def test_full_matrix_growth_refusal_says_fewer_classes(monkeypatch):
    gib(monkeypatch, 1)
    learner = learners.create("arow-full", 1 << 10, {})
    with pytest.raises(StreamherdError, match=r"-b 10 and 200 classes needs a 204800x204800 "
                                              r"covariance matrix .* fewer classes"):
        learner.grow(200)


# ---------------------------------------------------------------- growth keeps results

@pytest.mark.parametrize("name", ["nherd-p", "pa", "avg-perceptron", "sop", "cw-full"])
def test_growing_one_class_at_a_time_equals_all_classes_from_the_start(name):
    """Classes discovered one chunk at a time grow into spare capacity (few reallocations) and
    learn exactly what a model with every class from the start learns."""
    K, dim = 30, 16
    rng = np.random.default_rng(5)
    grown = learners.create(name, dim, {})
    fixed = learners.create(name, dim, {}, blocks=K)
    reallocations = 0
    for k in range(1, K + 1):
        capacity = grown.capacity
        grown.grow(k)
        reallocations += grown.capacity != capacity
        assert grown.blocks == k and grown.size == k * dim
        rows = csr([[(int(j), rng.normal()) for j in rng.choice(dim, 3, replace=False)]
                    for _ in range(6)])
        cls = rng.integers(0, k, 6)
        cls[0] = k - 1
        for learner in (grown, fixed):
            learner.learn_joint(cls, np.ones(6), *rows, k - 1, np.empty(6, np.int64))
    assert reallocations <= (K if name == "cw-full" else 10)
    for key, value in fixed.state().items():
        np.testing.assert_array_equal(grown.state()[key], value, err_msg=key)
