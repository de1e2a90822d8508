"""Conditional herding: the kernels against a plain numpy transcription of
Gelfand et al.'s Eq. 7-12 and the algorithm box, the negative phase against brute force over
every (y, z), prediction averaging, the model round trip and the ``herd`` command end to end."""
import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from streamherd import herding
from streamherd.learners.kernels.herding import herd_predict, herd_step
from streamherd.model.herding import load as load_herding

from helpers import one_line_error

# ---------------------------------------------------------------- the plain transcription

def sign(a):
    return np.where(a >= 0, 1.0, -1.0)


def codes(n_classes):
    """The 1-of-K codes y_k = 2 e_k - 1, one per row."""
    return 2.0 * np.eye(n_classes) - 1.0


def reference_negative(x, W, B, theta, alpha):
    """Eq. 9 with x clamped: y* = argmax_k ||W'x + theta + B'y_k||_1 + alpha'y_k (first on
    ties), z* = sign of that class's hidden input."""
    Y = codes(len(alpha))
    inputs = [W.T @ x + theta + B.T @ y for y in Y]
    scores = [np.abs(a).sum() + alpha @ y for a, y in zip(inputs, Y)]
    k = int(np.argmax(scores))
    return k, sign(inputs[k])


def reference_step(X, classes, batch, params, steps, anneal):
    """One iteration of the box: z_i by Eq. 5/6, (y*, z*) by Eq. 9, then Eq. 8 with the
    hidden-bias rule theta += s [(1 - anneal) sum z - sum z*]. Returns (new params, y*)."""
    W, B, theta, alpha = (p.copy() for p in params)
    Y = codes(len(alpha))
    dW, dB, dz, dz_star, dalpha, predicted = 0 * W, 0 * B, 0 * theta, 0 * theta, 0 * alpha, []
    for r in batch:
        x, y = X[r], Y[classes[r]]
        z = sign(W.T @ x + B.T @ y + theta)
        k, z_star = reference_negative(x, W, B, theta, alpha)
        dW += np.outer(x, z - z_star)
        dB += np.outer(y, z) - np.outer(Y[k], z_star)
        dz, dz_star = dz + z, dz_star + z_star
        dalpha += y - Y[k]
        predicted.append(k)
    return (W + steps[0] * dW, B + steps[1] * dB, theta + steps[2] * ((1 - anneal) * dz - dz_star),
            alpha + steps[3] * dalpha), predicted


def dense(rows):
    X = np.zeros((rows.n_rows, rows.n_columns))
    for r in range(rows.n_rows):
        span = slice(rows.indptr[r], rows.indptr[r + 1])
        X[r, rows.indices[span]] = rows.values[span]
    return X


def csr(X):
    indptr = np.concatenate([[0], np.cumsum((X != 0).sum(1))]).astype(np.int64)
    rows, cols = np.nonzero(X)
    return herding.Rows(indptr, cols.astype(np.int64), X[rows, cols], np.zeros(len(X)), X.shape[1])


def dyadic(rng, shape, scale):
    """Random multiples of 2^-8 (sums of them stay exact in float64)."""
    return np.round(rng.normal(0, scale, shape) * 256) / 256


# ---------------------------------------------------------------- kernels

@pytest.mark.parametrize("n_classes, hidden", [(2, 3), (4, 5), (7, 8)])
def test_step_equals_the_transcription_exactly(n_classes, hidden):
    """Dyadic data, parameters and steps: every iterate of the kernel is bit for bit the plain
    transcription's, over 60 iterations of 4 rotating batches (sparse rows, some empty)."""
    rng = np.random.default_rng(n_classes)
    X = dyadic(rng, (40, 6), 0.5) * (rng.random((40, 6)) < 0.6)
    classes = rng.integers(0, n_classes, 40)
    rows = csr(X)
    params = [dyadic(rng, s, 0.3) for s in ((6, hidden), (n_classes, hidden), (hidden,),
                                              (n_classes,))]
    mine = [p.copy() for p in params]
    steps = np.array([2.0 ** -5, 2.0 ** -6, 2.0 ** -4, 2.0 ** -3])
    order = rng.permutation(40)
    for t in range(60):
        batch = order[(t % 4) * 10:(t % 4 + 1) * 10]
        anneal = [1.0, 0.5, 0.25, 0.0][t // 15]
        params, expected = reference_step(X, classes, batch, params, steps, anneal)
        predicted = np.empty(10, np.int64)
        errors = herd_step(rows.indptr, rows.indices, rows.values, batch, classes, *mine, steps,
                           anneal, predicted)
        assert predicted.tolist() == expected
        assert errors == sum(k != classes[r] for k, r in zip(expected, batch))
        for a, b in zip(mine, params):
            assert np.array_equal(a, b)


def test_negative_phase_is_the_exact_argmax_over_every_state():
    """herd_predict's class is the y of the best (y, z) over all K x 2^M states of Eq. 7."""
    rng = np.random.default_rng(5)
    n_classes, hidden = 5, 4
    X = rng.normal(size=(30, 3))
    W, B = rng.normal(size=(3, hidden)), rng.normal(size=(n_classes, hidden))
    theta, alpha = rng.normal(size=hidden), rng.normal(size=n_classes)
    predicted = np.empty(30, np.int64)
    rows = csr(X)
    herd_predict(rows.indptr, rows.indices, rows.values, W, B, theta, alpha, predicted)
    states = np.array(list(itertools.product([-1.0, 1.0], repeat=hidden)))
    for x, k in zip(X, predicted):
        energy = [[x @ W @ z + y @ B @ z + theta @ z + alpha @ y for z in states]
                  for y in codes(n_classes)]
        assert k == int(np.argmax(np.max(energy, axis=1)))


def test_ties_go_to_the_lowest_class():
    """All-zero parameters: every class scores the same; y* is class 0."""
    predicted = np.empty(3, np.int64)
    rows = csr(np.eye(3))
    herd_predict(rows.indptr, rows.indices, rows.values, np.zeros((3, 2)), np.zeros((4, 2)),
                 np.zeros(2), np.zeros(4), predicted)
    assert predicted.tolist() == [0, 0, 0]


# ---------------------------------------------------------------- the box, end to end

def blobs(seed, n=120, n_classes=3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, (n_classes, 4))
    labels = rng.integers(0, n_classes, n)
    return centres[labels] + rng.normal(0, 1.2, (n, 4)), labels


def reference_herd(X, classes, n_classes, options, test):
    """The algorithm box in numpy: phi0 appended, N(0, (rho/|P|)^2) start, steps 1/|P|, fixed
    shuffled batches, annealed hidden bias during burn-in, test votes after it."""
    rng = np.random.default_rng(options.seed)
    r_max = np.sqrt((X ** 2).sum(1).max())

    def with_phi0(A):
        return np.hstack([A, np.sqrt(np.maximum(r_max ** 2 - (A ** 2).sum(1), 0))[:, None]])

    X, test = with_phi0(X), with_phi0(test)
    shapes = ((X.shape[1], options.hidden), (n_classes, options.hidden), (options.hidden,),
              (n_classes,))
    params = [rng.normal(0, options.ratio / np.prod(s), s) for s in shapes]
    order = rng.permutation(len(X))
    batches = [order[s:s + options.batch] for s in range(0, len(X), options.batch)]
    votes, error_free = np.zeros((len(test), n_classes)), 0
    for t in range(options.max_epochs * len(batches)):
        batch = batches[t % len(batches)]
        steps = [1 / np.prod(s) / len(batch) for s in shapes]
        anneal = 0.5 ** (t // 500) if t < options.burn_in else 0.0
        params, predicted = reference_step(X, classes, batch, params, steps, anneal)
        error_free = error_free + 1 if np.array_equal(predicted, classes[batch]) else 0
        if t >= options.burn_in:
            for i, x in enumerate(test):
                votes[i, reference_negative(x, *params)[0]] += 1
            if error_free >= len(batches):
                break
    return votes, params, t + 1


def rows_of(X, labels):
    """A dense matrix as the reader's chunk (every column a slot), for herding.Features."""
    return SimpleNamespace(indptr=np.arange(0, X.size + 1, X.shape[1]),
                           indices=np.tile(np.arange(X.shape[1]), len(X)), values=X.ravel(),
                           labels=labels.astype(np.float64), n_examples=len(X))


@pytest.mark.parametrize("ratio, burn_in", [(1.0, 20), (10.0, 40)])
def test_training_equals_the_box(ratio, burn_in):
    X, labels = blobs(1)
    train, test = rows_of(X[:90], labels[:90]), rows_of(X[90:], labels[90:])
    features = herding.Features.of(train)
    options = herding.Options(hidden=6, batch=16, ratio=ratio, burn_in=burn_in, max_epochs=12,
                              snapshots=4, seed=3)
    run = herding.herd(features.rows(train), labels[:90], 3, options,
                       np.random.default_rng(3), features.rows(test))
    votes, params, iterations = reference_herd(X[:90], labels[:90], 3, options, X[90:])
    assert run.iterations == iterations
    assert np.array_equal(run.test_votes, votes)
    for a, b in zip(run.final.blocks(), params):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-13)


def test_snapshots_are_evenly_spaced():
    taken = herding.Snapshots(4)
    for s in range(37):
        taken.offer(s, herding.Herder(*(np.array([float(s)]),) * 4))
    spaced = [h.W[0] for h in taken.kept]
    # 8 kept thin to 4 at s = 7, 15 and 31 (the interval doubling each time)
    assert taken.interval == 8 and spaced == [7.0, 15.0, 23.0, 31.0]
    assert [h.W[0] for h in taken.chosen()] == spaced


def test_prediction_averages_the_snapshots_votes():
    """Joint: each class's share of the snapshots' y*; ova: each herder's share of 'this'."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 3))
    rows = csr(X)

    def random_herder(n_out):
        return herding.Herder(rng.normal(size=(3, 4)), rng.normal(size=(n_out, 4)),
                              rng.normal(size=4), rng.normal(size=n_out))

    joint = [random_herder(3) for _ in range(5)]
    expected = np.zeros((25, 3))
    for h in joint:
        for i, x in enumerate(X):
            expected[i, reference_negative(x, *h.blocks())[0]] += 1 / 5
    assert np.allclose(herding.snapshot_votes([joint], rows, "joint", 3), expected)
    ova = [[random_herder(2) for _ in range(5)] for _ in range(3)]
    expected = [[np.mean([reference_negative(x, *h.blocks())[0] for h in herders])
                 for herders in ova] for x in X]
    assert np.allclose(herding.snapshot_votes(ova, rows, "ova", 3), expected)


# ---------------------------------------------------------------- the command

def write_svm(path, X, labels):
    path.write_text("".join(f"{c} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(x))
                            + "\n" for x, c in zip(X, labels)))
    return path


@pytest.fixture
def blob_files(tmp_path):
    X, labels = blobs(4, n=200)
    return (write_svm(tmp_path / "train.svm", X[:150], labels[:150] * 2 + 1),
            write_svm(tmp_path / "test.svm", X[150:], labels[150:] * 2 + 1))


SMALL = ["--hidden", "8", "--batch", "25", "--burn-in", "30", "--max-epochs", "15",
         "--snapshots", "6", "--ratio", "3", "--quiet"]


@pytest.mark.parametrize("mode", ["joint", "ova"])
def test_cli_model_round_trip(run_cli, blob_files, tmp_path, mode):
    """herd -f then predict -m: the labels are the argmax of the saved snapshots' votes, the
    arrays have the mode's shapes, and the model refuses train -i in one line."""
    train, test = blob_files
    model = tmp_path / "m.npz"
    proc = run_cli("herd", str(train), "-f", str(model), "--multiclass", mode, *SMALL)
    assert proc.returncode == 0, proc.stderr
    meta, features, sets, classes = load_herding(model)
    assert classes.tolist() == [1.0, 3.0, 5.0]
    with np.load(model) as archive:
        herders, outputs = (3, 2) if mode == "ova" else (1, 3)
        assert archive["W"].shape == (herders, 6, 5, 8)   # 4 features + phi0
        assert archive["B"].shape == (herders, 6, outputs, 8)
        assert archive["alpha"].shape == (herders, 6, outputs)
    proc = run_cli("predict", "-m", str(model), str(test), "--quiet")
    assert proc.returncode == 0, proc.stderr
    chunk = herding.read_file(str(test))
    votes = herding.snapshot_votes(sets, features.rows(chunk), mode, 3)
    assert proc.stdout.split() == [f"{c:g}" for c in classes[np.argmax(votes, 1)]]
    assert np.mean(classes[np.argmax(votes, 1)] != chunk.labels) < 0.3
    scores = run_cli("predict", "-m", str(model), str(test), "--scores", "--quiet")
    first = dict(pair.split(":") for pair in scores.stdout.splitlines()[0].split())
    assert np.allclose([float(first[t]) for t in ("1", "3", "5")], votes[0])
    assert "herding model" in one_line_error(run_cli("train", str(train), "-i", str(model)))
    assert "--proba" in one_line_error(run_cli("predict", "-m", str(model), str(test),
                                               "--proba"))


def test_cli_transductive_predictions(run_cli, blob_files, tmp_path):
    """--test -p: one label per test line, the class of most votes over the iterations."""
    train, test = blob_files
    out = tmp_path / "pred.txt"
    proc = run_cli("herd", str(train), "--test", str(test), "-p", str(out), *SMALL[:-1])
    assert proc.returncode == 0, proc.stderr
    predicted = np.array([float(v) for v in out.read_text().split()])
    labels = herding.read_file(str(test)).labels
    assert len(predicted) == 50 and set(predicted) <= {1.0, 3.0, 5.0}
    error = np.mean(predicted != labels)
    assert f"test error rate = {error:.6f}" in proc.stderr


def test_cli_errors_are_one_line(run_cli, blob_files, tmp_path):
    train, test = blob_files
    model = tmp_path / "m.npz"
    cases = [
        (["herd", str(train)], "without -f"),
        (["herd", str(train), "-p", str(tmp_path / "p")], "--test"),
        (["herd", str(train), "-f", str(model), "--ratio", "x"], "--ratio"),
        (["herd", str(train), "-f", str(model), "--ratio", "1", "--max-epochs", "1"],
         "--burn-in"),
        (["herd", str(train), "-f", str(model), "--hidden", "0"], "--hidden"),
        (["herd", str(train), "-f", str(model), "--multiclass", "x"], "--multiclass"),
        (["herd", str(train), "-f", str(train)], "input"),
        (["herd", str(tmp_path / "absent.svm"), "-f", str(model)], "absent.svm"),
        (["herd", str(train), "-f", str(model), "--hidden", "100000000", "--ratio", "1"],
         "lower --hidden"),
    ]
    for args, words in cases:
        assert words in one_line_error(run_cli(*args)), args
    assert not model.exists()
    damaged = tmp_path / "damaged.npz"
    np.savez(damaged, meta=np.array('{"format": "streamherd-model", "format_version": 3, '
                                    '"kind": "herding", "classes": [1, 2], '
                                    '"multiclass": "joint", "r_max": 1}'),
             W=np.zeros((1, 2, 3, 4)), B=np.zeros((1, 2, 5, 4)), theta=np.zeros((1, 2, 4)),
             alpha=np.zeros((1, 2, 2)), slots=np.zeros(2))
    assert "damaged" in one_line_error(run_cli("predict", "-m", str(damaged), str(test)))


def test_pendigits_joint_beats_the_voted_perceptron(data_dir):
    """A short joint run on the paper's Pendigits split: below the paper's voted perceptron
    (6.78%) after 40 epochs (the full table is benchmarks/herding_table.py)."""
    train = herding.read_file(str(data_dir / "pendigits.scale.svm"))
    test = herding.read_file(str(data_dir / "pendigits.scale.t.svm"))
    features = herding.Features.of(train)
    rows, test_rows = features.rows(train), features.rows(test)
    classes = np.unique(rows.labels)
    options = herding.Options(hidden=100, ratio=3.0, max_epochs=40, snapshots=4)
    _, votes = herding.train(rows, classes, options, test_rows)
    assert np.mean(classes[np.argmax(votes, 1)] != test_rows.labels) < 0.0678


def test_input_scale_divides_every_value(run_cli, tmp_path):
    """--input-scale 4 on values x 4 herds exactly as the original values: the same transductive
    predictions, and predict applies the model's scale to new data."""
    X, labels = blobs(6, n=120)
    X = np.round(X * 16) / 16   # values that survive the text round trip times 4
    plain = write_svm(tmp_path / "plain.svm", X, labels)
    scaled = write_svm(tmp_path / "scaled.svm", 4 * X, labels)
    outputs = []
    for data, scale in ((plain, "1"), (scaled, "4")):
        out, model = tmp_path / f"p{scale}.txt", tmp_path / f"m{scale}.npz"
        proc = run_cli("herd", str(data), "--test", str(data), "-p", str(out), "-f", str(model),
                       "--input-scale", scale, *SMALL)
        assert proc.returncode == 0, proc.stderr
        predicted = run_cli("predict", "-m", str(model), str(data), "--quiet")
        outputs.append((out.read_text(), predicted.stdout))
    assert outputs[0] == outputs[1]
