"""Multiclass MIRA (``--multiclass mira``, learners/kernels/mira.py): the per-example QP against
scipy's SLSQP on the primal over the whole weight matrix, the single-constraint case against the
joint PA update, a whole stream against a plain numpy loop over the scipy solver, and the command
line end to end (train, predict, the model, -i, refusals)."""
import json

import numpy as np
import pytest
from scipy.optimize import minimize

from streamherd import learners
from streamherd.learners.kernels.mira import mira_steps
from streamherd.learners.reductions.mira import Mira
from streamherd.model import load_model

from helpers import one_line_error

VARIANTS = {"pa": 0, "pa1": 1, "pa2": 2}


def scipy_projection(W, x, label, variant, C):
    """The new weights minus the old, K x d, by SLSQP on the primal over every entry of the
    weight matrix (and the slack xi): min 1/2 |dW|^2 (+ C xi for pa1, xi >= 0; + C xi^2 for pa2)
    s.t. (w_y + dW_y - w_r - dW_r) . x >= 1 - xi for every r != y."""
    K, d = W.shape
    scores = W @ x
    slack = variant != 0
    n = K * d + slack

    def objective(v):
        penalty = (C * v[-1] if variant == 1 else C * v[-1] ** 2) if slack else 0.0
        return 0.5 * v[:K * d] @ v[:K * d] + penalty

    def gradient(v):
        g = np.zeros(n)
        g[:K * d] = v[:K * d]
        if slack:
            g[-1] = C if variant == 1 else 2.0 * C * v[-1]
        return g

    constraints = []
    for r in range(K):
        if r == label:
            continue
        G = np.zeros(n)
        G[label * d:(label + 1) * d] = x
        G[r * d:(r + 1) * d] = -x
        if slack:
            G[-1] = 1.0
        constraints.append({"type": "ineq", "jac": lambda v, G=G: G,
                            "fun": lambda v, G=G, r=r: scores[label] - scores[r] + G @ v - 1.0})
    if variant == 1:
        unit = np.eye(n)[-1]
        constraints.append({"type": "ineq", "fun": lambda v: v[-1], "jac": lambda v: unit})
    result = minimize(objective, np.zeros(n), jac=gradient, constraints=constraints,
                      method="SLSQP", options={"ftol": 1e-16, "maxiter": 1000})
    # status 8 (no descent direction) is SLSQP at the end of float precision with ftol 1e-16
    assert result.status in (0, 8), result.message
    return result.x[:K * d].reshape(K, d)


def mira_projection(W, x, label, variant, C):
    """The kernel's update, K x d."""
    K = len(W)
    tau, active = np.zeros(K), np.zeros(K, np.bool_)
    mira_steps(W @ x, K, label, x @ x, variant, C, tau, active)
    return np.outer(tau, x)


@pytest.mark.parametrize("algo", list(VARIANTS))
def test_update_is_the_qp_solution(algo):
    rng = np.random.default_rng(VARIANTS[algo])
    cap_bound = 0
    for _ in range(40):
        K, d = int(rng.integers(2, 21)), 4
        W = rng.normal(size=(K, d)) * rng.uniform(0.05, 2.0)
        x = rng.normal(size=d) * rng.uniform(0.3, 3.0)
        label = int(rng.integers(K))
        C = float(rng.choice([0.01, 0.1, 1.0, 10.0])) if algo != "pa" else np.inf
        ours = mira_projection(W, x, label, VARIANTS[algo], C)
        np.testing.assert_allclose(ours, scipy_projection(W, x, label, VARIANTS[algo], C),
                                   rtol=0, atol=1e-8)
        cap_bound += algo == "pa1" and np.isclose(ours[label] @ x / (x @ x), C)
    assert algo != "pa1" or cap_bound >= 5   # the sum constraint was tested binding


def test_no_violated_constraint_no_update():
    W = np.array([[3.0, 0.0], [0.0, 0.0], [1.0, 0.5]])
    np.testing.assert_array_equal(mira_projection(W, np.array([1.0, 0.0]), 0, 1, 1.0), 0.0)


def fresh_pair(algo, K, dim, C):
    options = {"C": C} if algo != "pa" else {}
    return (Mira(algo, dim, options, blocks=K),
            learners.create(algo, dim, options, blocks=K, task="multiclass"))


@pytest.mark.parametrize("algo", list(VARIANTS))
def test_one_violated_constraint_is_the_joint_pa_update(algo):
    """Only class 2 violates the margin of an example of class 0: MIRA's update is the joint
    PA update on the best wrong class."""
    rng = np.random.default_rng(7)
    dim, K = 8, 4
    for C in (0.05, 1.0):
        mira, joint = fresh_pair(algo, K, dim, C)
        start = np.zeros(K * dim)
        start[0 * dim + 1], start[2 * dim + 1] = 1.0, 0.6   # scores: 1, 0, 0.6, -3 on x_1 = 1
        start[3 * dim + 1] = -3.0
        for learner in (mira, joint):   # class z's weight j where the learner keeps it
            class_stride, feature_stride = learner.layout
            learner.mean[np.add.outer(np.arange(K) * class_stride,
                                      np.arange(dim) * feature_stride).ravel()] = start
        indptr = np.array([0, 3], np.int64)
        indices = np.array([1, 4, 6], np.int32)
        values = np.array([1.0, rng.normal(), rng.normal()]) * 0.1
        values[0] = 1.0
        for learner in (mira, joint):
            updates, known = learner.learn_joint(np.array([0]), np.ones(1), indptr, indices,
                                                 values, K, np.empty(1, np.int64))
            assert (updates, known) == (1, K)
        np.testing.assert_allclose(mira.mean, joint.mean, rtol=0, atol=1e-15)
        assert not np.array_equal(mira.state()["mean"], start)


def class_stream(rng, n=160, d=10, K=5, max_nnz=5):
    """Sparse rows, class ids in order of first appearance (as training assigns them) from a
    random linear multiclass rule with 10% label noise, some unlabeled (-1), importance weights."""
    truth = rng.normal(size=(K, d))
    indptr, indices, values = [0], [], []
    X = np.zeros((n, d))
    for i in range(n):
        slots = rng.choice(d, size=int(rng.integers(1, max_nnz + 1)), replace=False)
        vals = rng.normal(size=len(slots))
        X[i, slots] = vals
        indices += slots.tolist()
        values += vals.tolist()
        indptr.append(len(indices))
    raw = np.argmax(X @ truth.T, axis=1)
    noisy = rng.random(n) < 0.1
    raw[noisy] = rng.integers(K, size=noisy.sum())
    order = {}
    cls = np.array([order.setdefault(c, len(order)) for c in raw], np.int64)
    cls[rng.random(n) < 0.05] = -1
    importance = rng.uniform(0.3, 2.0, size=n)
    return (cls, importance, np.array(indptr, np.int64), np.array(indices, np.int32),
            np.array(values), X, len(order))


def numpy_mira(cls, importance, X, K, variant, C):
    """Predict-then-update with the scipy solver, one example at a time: the prediction over the
    classes seen before, the constraints over those and the example's own class."""
    W = np.zeros((K, X.shape[1]))
    known, predicted = 0, []
    for label, s, x in zip(cls, importance, X):
        scores = W[:known] @ x
        predicted.append(int(np.argmax(scores)) if known else -1)
        if label < 0:
            continue
        known = max(known, label + 1)
        W[:known] += scipy_projection(W[:known], x, label, variant, C * s)
    return W, predicted


@pytest.mark.parametrize("algo", list(VARIANTS))
def test_stream_equals_numpy_loop_over_scipy(algo):
    rng = np.random.default_rng(11)
    cls, importance, indptr, indices, values, X, K = class_stream(rng)
    C = 0.5 if algo != "pa" else np.inf
    mira = Mira(algo, X.shape[1], {"C": C} if algo != "pa" else {})
    known, predicted = 0, []
    for a, b in ((0, 40), (40, 41), (41, len(cls))):   # chunks: known carries over
        lo, hi = indptr[a], indptr[b]
        mira.grow(max(mira.blocks, int(cls[:b].max()) + 1))
        out = np.empty(b - a, np.int64)
        _, known = mira.learn_joint(cls[a:b], importance[a:b], indptr[a:b + 1] - lo,
                                    indices[lo:hi], values[lo:hi], known, out)
        predicted += out.tolist()
    W, expected = numpy_mira(cls, importance, X, K, VARIANTS[algo], C)
    assert known == K
    assert predicted == expected
    np.testing.assert_allclose(mira.state()["mean"].reshape(K, -1), W, rtol=0, atol=1e-7)


# ---------------------------------------------------------------- the command line

@pytest.fixture
def three_classes(tmp_path):
    """A small three-class svmlight file with string labels, and the rows it parses to."""
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(3, 6)) * 2
    names = ["ham", "eggs", "spam"]
    lines = []
    for _ in range(300):
        z = int(rng.integers(3))
        x = centers[z] + rng.normal(size=6)
        lines.append(f"{names[z]} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    path = tmp_path / "three.svm"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def dense_rows(read_rows, path, bits):
    rows, _, _ = read_rows(path, bits=bits)
    X = np.zeros((len(rows), 1 << bits))
    for i, row in enumerate(rows):
        for slot, value in row["x"].items():
            X[i, slot] = value
    return X


def test_train_and_predict_end_to_end(run_cli, read_rows, three_classes, tmp_path):
    path, lines = three_classes
    model = tmp_path / "m.npz"
    proc = run_cli("train", path, "--algo", "pa1", "-C", "0.3", "--multiclass", "mira", "-b", "6",
                   "-f", model)
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(model)
    assert meta["multiclass"] == "mira" and sorted(meta["classes"]) == ["eggs", "ham", "spam"]
    # the model is the numpy loop's over the parsed rows (bias included)
    X = dense_rows(read_rows, path, 6)
    ids = {name: k for k, name in enumerate(meta["classes"])}
    cls = np.array([ids[line.split()[0]] for line in lines])
    W, _ = numpy_mira(cls, np.ones(len(cls)), X, 3, 1, 0.3)
    np.testing.assert_allclose(arrays["mean"].reshape(3, -1), W, rtol=0, atol=1e-7)
    pred = run_cli("predict", "-m", model, path, "-p", tmp_path / "p.txt")
    assert pred.returncode == 0, pred.stderr
    expected = np.array(meta["classes"])[np.argmax(X @ W.T, axis=1)]
    assert (tmp_path / "p.txt").read_text().split() == expected.tolist()
    assert np.mean(expected == [line.split()[0] for line in lines]) > 0.8


def test_continued_training_equals_one_run(run_cli, three_classes, tmp_path):
    path, lines = three_classes
    first, second = tmp_path / "a.svm", tmp_path / "b.svm"
    first.write_text("\n".join(lines[:120]) + "\n")
    second.write_text("\n".join(lines[120:]) + "\n")
    one, two = tmp_path / "one.npz", tmp_path / "two.npz"
    args = ("--algo", "pa2", "--multiclass", "mira", "-b", "6", "--quiet")
    assert run_cli("train", *args, first, second, "-f", one).returncode == 0
    assert run_cli("train", *args, first, "-f", two).returncode == 0
    proc = run_cli("train", "--quiet", "-i", two, second, "-f", two)
    assert proc.returncode == 0, proc.stderr
    (m1, a1), (m2, a2) = load_model(one), load_model(two)
    assert m2["multiclass"] == "mira" and m1["classes"] == m2["classes"]
    np.testing.assert_array_equal(a1["mean"], a2["mean"])
    joint = one_line_error(run_cli("train", "-i", one, "--multiclass", "joint", second))
    assert "--multiclass" in joint


@pytest.mark.parametrize("algo", ["arow", "perceptron", "scw1"])
def test_refused_outside_the_pa_family(run_cli, three_classes, tmp_path, algo):
    path, _ = three_classes
    model = tmp_path / "m.npz"
    model.write_bytes(b"kept")
    line = one_line_error(run_cli("train", path, "--algo", algo, "--multiclass", "mira",
                                  "-f", model))
    assert "--multiclass mira" in line and "pa1" in line
    assert model.read_bytes() == b"kept"


def test_unstable_update_names_the_line(run_cli, tmp_path):
    path = tmp_path / "huge.svm"
    path.write_text("a 1:1 2:1\nb 1:-1 3:1\nc 2:1e200 3:1e200\na 1:1\n")
    line = one_line_error(run_cli("train", path, "--algo", "pa1", "--multiclass", "mira",
                                  "-f", tmp_path / "m.npz"))
    assert f"{path}:3:" in line and "not finite" in line
    assert not (tmp_path / "m.npz").exists()


def test_a_mira_model_of_another_learner_is_damaged(run_cli, three_classes, tmp_path):
    """A model whose meta says mira for a learner outside the PA family is refused when loaded;
    the same file with its own learner predicts."""
    path, _ = three_classes
    model = tmp_path / "m.npz"
    assert run_cli("train", path, "--algo", "pa", "--multiclass", "mira", "-b", "4", "--quiet",
                   "-f", model).returncode == 0
    with np.load(model, allow_pickle=False) as archive:
        meta = json.loads(archive["meta"].item())
        members = {name: archive[name] for name in archive.files if name != "meta"}
    for algo, works in (("pa", True), ("perceptron", False)):   # both keep only "mean"
        edited = tmp_path / f"{algo}.npz"
        with open(edited, "wb") as f:
            np.savez(f, meta=np.array(json.dumps({**meta, "algo": algo})), **members)
        proc = run_cli("predict", "-m", edited, path, "--quiet")
        if works:
            assert proc.returncode == 0, proc.stderr
        else:
            line = one_line_error(proc)
            assert "mira" in line and "perceptron" in line
