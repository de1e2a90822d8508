"""The voted perceptron against its family's dense transcription (references.py), which keeps
every snapshot v_i with its count c_i (plain numpy, written from the paper's algorithm): binary
and joint multiclass votes, the progressive (averaged) margins, the folding of --max-support K,
K = 0 against avg-perceptron, the model round trip, and train/predict end to end."""
import numpy as np
import pytest

from streamherd import learners
from streamherd.model import load_model, save_model

import references
from helpers import one_line_error

D = 16
N = 200
CHUNKS = [(0, 60), (60, 150), (150, N)]


def make_rows(seed, classes=2):
    """200 sparse rows (some empty) labelled by a noisy linear rule: +1/-1, or class ids in order
    of first appearance; a few unlabeled rows (NaN / -1) and importance weights 0, 0.5 and 2."""
    rng = np.random.default_rng(seed)
    X = np.zeros((N, D))
    indptr, indices, values = [0], [], []
    for i in range(N):
        cols = np.sort(rng.choice(D, size=0 if i % 37 == 5 else 5, replace=False))
        vals = rng.normal(size=len(cols))
        X[i, cols] = vals
        indices += cols.tolist()
        values += vals.tolist()
        indptr.append(len(indices))
    truth = rng.normal(size=(max(classes, 2), D))
    cls = np.argmax(X @ truth.T, axis=1)
    noisy = rng.random(N) < 0.15
    cls[noisy] = rng.integers(0, max(classes, 2), size=noisy.sum())
    importance = np.ones(N)
    importance[rng.random(N) < 0.1] = 0.5
    importance[rng.random(N) < 0.1] = 2.0
    importance[rng.random(N) < 0.03] = 0.0
    unlabeled = rng.random(N) < 0.03
    if classes == 2:
        target = np.where(cls == 1, 1.0, -1.0)
        target[unlabeled] = np.nan
    else:
        order = {}
        for z in cls[~unlabeled]:
            order.setdefault(z, len(order))
        target = np.array([-1 if u else order[z] for z, u in zip(cls, unlabeled)], np.int64)
    return dict(X=X, target=target, importance=importance, indptr=np.array(indptr, np.int64),
                indices=np.array(indices, np.int32), values=np.array(values))


# ------------------------------------------------------------------ the naive transcription

def naive_train(data, classes=None):
    """Every snapshot kept (references.py): (progressive predictions, snapshots V[i] (K x D;
    binary: 1 x D), counts c[i]). Binary: the progressive margin is the averaged one,
    sum c_i v_i . x / sum c_i. Joint: the averaged class scores predict (among the classes
    known), an update adds s x to block y and -s x to the best wrong class's (among those known
    and y), as Collins."""
    X, target, s = data["X"], data["target"], data["importance"]
    if classes is None:
        out, learner = references.binary_run("voted-perceptron", X, target, s)
    else:
        out, learner = references.joint_run("voted-perceptron", X, target, s, classes)
    blocks = classes or 1
    return out, [v.reshape(blocks, D) for v in learner.snapshots], list(learner.counts)


def naive_votes(V, c, X, limit=None):
    """The votes for each row of X: binary, sum_i c_i sign(v_i . x); joint, per class, the c_i of
    the snapshots whose argmax it is. With ``limit`` K: the snapshots made by the last K updates
    vote on their own, all earlier ones together, with their summed count, for their averaged
    vector (--max-support's folding rule)."""
    updates = len(V) - 1
    alone = updates if limit is None else min(updates, limit)
    prefix = len(V) - alone
    voters = list(zip(c[prefix:], V[prefix:]))
    folded = sum(c[:prefix])
    if folded > 0:
        voters.append((folded, sum(ci * vi for ci, vi in zip(c[:prefix], V[:prefix])) / folded))
    binary = V[0].shape[0] == 1
    votes = np.zeros(len(X)) if binary else np.zeros((len(X), V[0].shape[0]))
    for count, v in voters:
        scores = X @ v.T
        if binary:
            votes += count * np.sign(scores[:, 0])
        else:
            votes[np.arange(len(X)), np.argmax(scores, axis=1)] += count
    return votes


# ------------------------------------------------------------------ streamherd's learner

def learn_chunk(learner, data, lo, hi, out, known):
    """Rows [lo, hi) through the learner (binary, or joint when the targets are class ids),
    their progressive predictions into out[lo:hi]; returns the classes known after them."""
    args = (data["importance"][lo:hi], data["indptr"][lo:hi + 1], data["indices"],
            data["values"])
    if data["target"].dtype != np.int64:
        learner.learn(data["target"][lo:hi], *args, out[lo:hi])
        return known
    return learner.learn_joint(data["target"][lo:hi], *args, known, out[lo:hi])[1]


def run_learner(data, classes=None, limit=100000):
    learner = learners.create("voted-perceptron", D, {"max_support": limit},
                              blocks=classes or 1)
    out = np.empty(N) if classes is None else np.empty(N, np.int64)
    known = 0
    for lo, hi in CHUNKS:
        known = learn_chunk(learner, data, lo, hi, out, known)
    return learner, out


def votes_of(learner, data, classes=None):
    rows = (data["indptr"], data["indices"], data["values"])
    if classes is None:
        out = np.empty(N)
        learner.predict_margins(*rows, out)
    else:
        out = np.empty((N, classes))
        learner.class_scores(*rows, out)
    return out


@pytest.mark.parametrize("limit", [100000, 3, 1], ids=["all-kept", "K=3", "K=1"])
def test_binary_votes_equal_the_naive_ones(limit):
    data = make_rows(1)
    learner, progressive = run_learner(data, limit=limit)
    expected_progressive, V, c = naive_train(data)
    np.testing.assert_allclose(progressive, expected_progressive, rtol=1e-9, atol=1e-12)
    assert len(V) > 30   # many snapshots: the folding cases fold most of them
    np.testing.assert_array_equal(votes_of(learner, data), naive_votes(V, c, data["X"], limit))
    assert learner.meta()["support"] == min(len(V) - 1, limit)


@pytest.mark.parametrize("limit", [100000, 4, 0], ids=["all-kept", "K=4", "K=0"])
def test_joint_votes_equal_the_naive_ones(limit):
    data = make_rows(2, classes=4)
    learner, progressive = run_learner(data, classes=4, limit=limit)
    expected_progressive, V, c = naive_train(data, classes=4)
    np.testing.assert_array_equal(progressive, expected_progressive)
    assert len(V) > 30
    np.testing.assert_array_equal(votes_of(learner, data, 4),
                                  naive_votes(V, c, data["X"], limit))


def integer_rows(seed, classes=2):
    """make_rows with small whole values, none 0 (every dot product exact: margins tie at
    exactly 0) and, in every third row, its first slot given a second entry of the same sign (a
    slot twice in one row)."""
    data = make_rows(seed, classes)
    values = np.sign(data["values"]) * np.maximum(1.0, np.round(np.abs(data["values"]) * 1.5))
    indptr, indices, out_values, X = [0], [], [], np.zeros((N, D))
    for i in range(N):
        lo, hi = data["indptr"][i], data["indptr"][i + 1]
        row, row_values = data["indices"][lo:hi].tolist(), values[lo:hi].tolist()
        if i % 3 == 0 and row:
            row.append(row[0])
            row_values.append(np.sign(row_values[0]))
        for j, v in zip(row, row_values):
            X[i, j] += v
        indices += row
        out_values += row_values
        indptr.append(len(indices))
    return dict(data, X=X, indptr=np.array(indptr, np.int64),
                indices=np.array(indices, np.int32), values=np.array(out_values))


@pytest.mark.parametrize("blocking,dense_share", [((3, 5), 0.0), ((1, 1), 0.3), ((7, 64), 2.0),
                                                  ((64, 2048), 0.25)])
@pytest.mark.parametrize("classes", [None, 4], ids=["binary", "joint"])
def test_blocks_tiles_and_dense_columns_give_the_same_votes_ties_included(blocking, dense_share,
                                                                          classes):
    """Prediction's blocking of test rows, tiling of the update list and dense columns (every
    slot, some, none) change no vote: equal to the naive ones on whole-valued data where many
    snapshot margins are exactly 0 (sign 0: no vote), and with --max-support folding."""
    data = integer_rows(6, classes or 2)
    _, V, c = naive_train(data, classes)
    margins = np.stack([data["X"] @ v.T for v in V])
    if classes is None:
        assert np.sum(margins[1:] == 0.0) > 100   # ties: a snapshot with margin exactly 0
    else:   # ties between the top classes
        top = np.sort(margins, axis=2)
        assert np.sum(top[1:, np.abs(data["X"]).sum(1) > 0, -1] ==
                      top[1:, np.abs(data["X"]).sum(1) > 0, -2]) > 100
    for limit in (100000, 5):
        learner, _ = run_learner(data, classes=classes, limit=limit)
        learner.blocking, learner.dense_share = blocking, dense_share
        np.testing.assert_array_equal(votes_of(learner, data, classes),
                                      naive_votes(V, c, data["X"], limit))


def test_the_vote_is_not_the_averaged_prediction():
    """The data of the tests above tells the vote from the averaged perceptron's sign (else the
    naive comparison could not fail on a learner that averaged)."""
    data = make_rows(1)
    _, V, c = naive_train(data)
    average = sum(ci * vi for ci, vi in zip(c, V))[0]
    assert np.any(np.sign(naive_votes(V, c, data["X"])) != np.sign(data["X"] @ average))


def test_max_support_0_predicts_as_the_averaged_perceptron(tmp_path, run_cli):
    rng = np.random.default_rng(5)
    w = rng.normal(size=30)
    lines = []
    for _ in range(400):
        cols = np.sort(rng.choice(30, size=6, replace=False))
        vals = rng.normal(size=6)
        label = 1 if vals @ w[cols] + 0.5 * rng.normal() > 0 else -1
        lines.append(f"{label} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in zip(cols, vals)))
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_text("\n".join(lines[:300]) + "\n")
    test.write_text("\n".join(lines[300:]) + "\n")
    predictions = {}
    for algo, extra in (("avg-perceptron", []), ("voted-perceptron", ["--max-support", "0"]),
                        ("voted-perceptron", [])):
        model = tmp_path / f"{algo}{len(extra)}.npz"
        out = tmp_path / f"{algo}{len(extra)}.txt"
        assert run_cli("train", train, "--algo", algo, *extra, "--passes", "3", "--holdout_off",
                       "-f", model, "--quiet").returncode == 0
        assert run_cli("predict", test, "-m", model, "-p", out, "--quiet").returncode == 0
        predictions[algo, len(extra)] = out.read_text().split()
    assert predictions["voted-perceptron", 2] == predictions["avg-perceptron", 0]
    assert predictions["voted-perceptron", 0] != predictions["avg-perceptron", 0]


@pytest.mark.parametrize("classes", [None, 4], ids=["binary", "joint"])
def test_model_round_trip_predicts_and_resumes_as_one_run(classes, tmp_path):
    data = make_rows(3, classes=classes or 2)
    whole, progressive = run_learner(data, classes, limit=7)
    learner = learners.create("voted-perceptron", D, {"max_support": 7}, blocks=classes or 1)
    known = 0
    out = np.empty_like(progressive)
    for number, (lo, hi) in enumerate(CHUNKS):
        if number == 2:   # save after two chunks, load, and go on
            meta = {"algo": "voted-perceptron", "bits": 4, "hyperparameters": learner.options,
                    "learner": learner.meta(), "bias": True}
            if classes:
                meta.update(task="multiclass", multiclass="joint",
                            classes=[str(z) for z in range(classes)])
            save_model(tmp_path / "m.npz", meta, learner.state())
            meta, arrays = load_model(tmp_path / "m.npz")
            learner = learners.create("voted-perceptron", D, meta["hyperparameters"], arrays,
                                      meta["learner"])
        known = learn_chunk(learner, data, lo, hi, out, known)
    np.testing.assert_array_equal(out, progressive)
    np.testing.assert_array_equal(votes_of(learner, data, classes), votes_of(whole, data, classes))


def test_train_and_predict_raw_end_to_end(tmp_path, run_cli, read_rows):
    """predict --raw prints the vote sum of the naive transcription of the trained stream."""
    data = make_rows(4)
    lines = []
    for i in range(N):
        row = data["indices"][data["indptr"][i]:data["indptr"][i + 1]]
        value = data["values"][data["indptr"][i]:data["indptr"][i + 1]]
        label = "" if np.isnan(data["target"][i]) else f"{data['target'][i]:g}"
        weight = "" if np.isnan(data["target"][i]) else f" {data['importance'][i]:g}"
        features = " ".join(f"f{j}:{float(v)!r}" for j, v in zip(row, value))
        lines.append(f"{label}{weight} | {features}")
    path = tmp_path / "data.vw"
    path.write_text("\n".join(lines) + "\n")
    model, raw = tmp_path / "m.npz", tmp_path / "raw.txt"
    trained = run_cli("train", path, "--algo", "voted-perceptron", "--max-support", "9", "-b",
                      "12", "--noconstant", "-f", model)
    assert trained.returncode == 0, trained.stderr
    assert "fold into one collective vote" in trained.stderr
    assert run_cli("predict", path, "-m", model, "--raw", "-p", raw).returncode == 0
    rows, _, _ = read_rows(path, bits=12, bias=False)
    slots = sorted({slot for row in rows for slot in row["x"]})
    X = np.zeros((N, len(slots)))
    for i, row in enumerate(rows):
        for slot, value in row["x"].items():
            X[i, slots.index(slot)] = value
    parsed = dict(data, X=X, target=np.array([row["label"] for row in rows]),
                  importance=np.array([row["importance"] for row in rows]))
    _, V, c = naive_train(parsed)
    np.testing.assert_array_equal(np.array(raw.read_text().split(), float),
                                  naive_votes(V, c, X, 9))


def test_the_folding_notice_is_silent_with_quiet(tmp_path, run_cli):
    """--max-support's notice is a remark on the run: --quiet drops it, the model stays the
    same."""
    path = tmp_path / "d.svm"
    rng = np.random.default_rng(3)
    path.write_text("".join(f"{rng.choice([-1, 1])} 1:{rng.normal():.3f} 2:{rng.normal():.3f}\n"
                            for _ in range(60)))
    models = {}
    for quiet in (False, True):
        models[quiet] = tmp_path / f"m{quiet}.npz"
        trained = run_cli("train", path, "--algo", "voted-perceptron", "--max-support", "3",
                          "-f", models[quiet], *(["--quiet"] if quiet else []))
        assert trained.returncode == 0, trained.stderr
        assert ("fold into one collective vote" in trained.stderr) is not quiet
        if quiet:
            assert trained.stderr == ""
    with np.load(models[False]) as loud, np.load(models[True]) as silent:
        for name in loud.files:
            np.testing.assert_array_equal(loud[name], silent[name])


def test_a_damaged_update_list_is_a_one_line_error(tmp_path, run_cli):
    import json
    import zipfile

    data = tmp_path / "d.svm"
    data.write_text("1 1:1 2:1\n-1 1:1 3:1\n1 2:1 3:-1\n-1 3:2\n")
    model = tmp_path / "m.npz"
    assert run_cli("train", data, "--algo", "voted-perceptron", "-f", model,
                   "--quiet").returncode == 0
    with np.load(model) as archive:
        members = {name: archive[name] for name in archive.files}
    meta = json.loads(members["meta"].item())
    meta["learner"]["support_nonzeros"] += 1   # one entry more than the rows say
    members["meta"] = np.array(json.dumps(meta))
    members["support_indices.indices"] = np.append(members["support_indices.indices"],
                                                   meta["learner"]["support_nonzeros"] - 1)
    members["support_indices.values"] = np.append(members["support_indices.values"], 1.0)
    damaged = tmp_path / "damaged.npz"
    np.savez(damaged, **members)
    assert zipfile.is_zipfile(damaged)
    line = one_line_error(run_cli("predict", data, "-m", damaged))
    assert "is damaged: its 'support_indptr' is not the row offsets" in line, line


# the voted perceptron's target (benchmarks/voted_perceptron.py reports it): after 10 passes,
# the voted perceptron's test error within 2 points of the averaged perceptron's
REAL_PAIRS = ["news20_comp_ibm_vs_mac.{}.svm.gz", "news20_sci_elec_vs_med.{}.svm.gz",
              "news20_talk_guns_vs_mideast.{}.svm.gz", "rcv1_small.{}.vw.gz"]


@pytest.mark.parametrize("pattern", REAL_PAIRS, ids=lambda p: p.split(".")[0])
def test_ten_passes_test_error_within_two_points_of_avg_perceptron(pattern, data_dir, run_cli,
                                                                   tmp_path):
    import re

    errors = {}
    for algo in ("avg-perceptron", "voted-perceptron"):
        model = tmp_path / f"{algo}.npz"
        trained = run_cli("train", data_dir / pattern.format("train"), "--algo", algo,
                          "--passes", "10", "--holdout_off", "-f", model, "--quiet")
        assert trained.returncode == 0, trained.stderr
        predicted = run_cli("predict", data_dir / pattern.format("test"), "-m", model,
                            "-p", tmp_path / "p.txt")
        assert predicted.returncode == 0, predicted.stderr
        errors[algo] = float(re.search(r"error rate = ([0-9.]+)", predicted.stderr).group(1))
    assert abs(errors["voted-perceptron"] - errors["avg-perceptron"]) <= 0.02, errors
