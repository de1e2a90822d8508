"""--calibration and predict --proba: the fitted maps against independent
fits (sklearn, scipy on the unbinned pairs), the statistics' round trip through the model, -i
continuing them as one run would, and the CLI end to end on real data."""
import json
import math
import zipfile

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_ndtr, ndtr

from streamherd import calibration
from streamherd.model import load_model

from helpers import one_line_error


def _pairs(n=20000, seed=0, scale=1.7, shift=-0.4):
    """Margins and labels drawn from a logistic model P(y = +1 | m) = sigma(scale m + shift)."""
    rng = np.random.default_rng(seed)
    m = rng.normal(0.0, 1.5, n)
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-(scale * m + shift))), 1.0, -1.0)
    return m, y


def _observed(method, m, y, v=None):
    fitted = calibration.BinaryCalibration(method)
    fitted.observe(m, y, np.ones(len(y)), v)
    return fitted


# ---------------------------------------------------------------- the fits

def test_platt_on_unbinned_points_equals_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    m, y = _pairs(3000)
    a, b = calibration.fit_platt(m, (y > 0) * 1.0, (y < 0) * 1.0, prior=False)
    reference = LogisticRegression(C=1e12, tol=1e-12, max_iter=10000).fit(m[:, None], y > 0)
    assert a == pytest.approx(reference.coef_[0, 0], rel=1e-5)
    assert b == pytest.approx(reference.intercept_[0], rel=1e-5, abs=1e-6)


def test_binned_platt_is_within_binning_and_prior_of_the_unbinned_fit():
    from sklearn.linear_model import LogisticRegression

    m, y = _pairs()
    params = _observed("platt", m, y).fit()
    reference = LogisticRegression(C=1e12, tol=1e-12, max_iter=10000).fit(m[:, None], y > 0)
    # bins 2.5% of the margin wide read at their centroids; Platt's targets move 1/N
    assert params["a"] == pytest.approx(reference.coef_[0, 0], rel=5e-3)
    assert params["b"] == pytest.approx(reference.intercept_[0], abs=5e-3)


def test_isotonic_pav_equals_sklearn_on_unbinned_points():
    from sklearn.isotonic import IsotonicRegression

    m, y = _pairs(500, seed=3)
    order = np.argsort(m)
    positive = (y[order] > 0) * 1.0
    starts, block_pos, block_tot = calibration.fit_isotonic(positive, 1.0 - positive)
    ours = np.repeat(block_pos / block_tot, np.diff(np.append(starts, len(m))))
    reference = IsotonicRegression().fit(m[order], positive).predict(m[order])
    np.testing.assert_allclose(ours, reference, atol=1e-12)


def test_binned_isotonic_map_is_close_to_sklearns_on_unbinned_points():
    from sklearn.isotonic import IsotonicRegression

    m, y = _pairs()
    fitted = _observed("isotonic", m, y)
    grid = np.linspace(-3, 3, 601)
    reference = IsotonicRegression(out_of_bounds="clip").fit(m, y > 0).predict(grid)
    ours = fitted.probabilities(grid)
    assert np.all(np.diff(ours) > 0) and ours.min() > 0 and ours.max() < 1   # no ties
    assert np.mean(np.abs(ours - reference)) < 0.01


def test_binned_probit_is_close_to_scipys_maximum_likelihood_on_unbinned_points():
    rng = np.random.default_rng(5)
    n = 20000
    m = rng.normal(0, 2, n)
    v = rng.uniform(0.1, 3.0, n)
    truth_a, truth_s2 = 1.3, 0.8
    y = np.where(rng.random(n) < ndtr(truth_a * m / np.sqrt(v + truth_s2)), 1.0, -1.0)

    def nll(theta):
        z = math.exp(theta[0]) * m / np.sqrt(v + math.exp(theta[1]))
        return -np.sum(np.where(y > 0, log_ndtr(z), log_ndtr(-z)))

    best = minimize(nll, np.zeros(2), method="BFGS").x
    params = _observed("probit", m, y, v).fit()
    assert params["a"] == pytest.approx(math.exp(best[0]), rel=0.03)
    assert params["s2"] == pytest.approx(math.exp(best[1]), rel=0.08)


def test_softmax_fit_equals_a_direct_minimisation_of_the_likelihood():
    scores, classes = _softmax_sample()
    K = scores.shape[1]
    rows = np.arange(len(classes))

    def nll(theta):
        """The penalised negative log-likelihood, a class not known in a row left out of its
        softmax (logit -inf)."""
        logits = np.where(np.isnan(scores), -np.inf, theta[0] * scores + theta[1:])
        return 0.5 * 1e-3 * np.sum(theta[1:] ** 2) - np.sum(
            logits[rows, classes] - np.logaddexp.reduce(logits, axis=1))

    reference = minimize(nll, np.concatenate([[1.0], np.zeros(K)]), method="Nelder-Mead",
                         options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 20000,
                                  "maxfev": 20000}).x
    beta, biases = calibration.fit_softmax(scores, classes)
    assert beta == pytest.approx(reference[0], abs=2e-3)
    # the likelihood is flat along a common shift of the biases (the ridge of 1e-3 makes the
    # minimum unique, but the simplex search stops anywhere along it): compare them centred
    np.testing.assert_allclose(biases - biases.mean(), reference[1:] - reference[1:].mean(),
                               atol=5e-3)


def _softmax_sample(n=3000, K=4, seed=7):
    """Scores and classes drawn from softmax(0.7 s + b), the fourth class unknown at first."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 2, (n, K))
    scores[:200, 3] = np.nan      # the fourth class was not known yet
    true_logits = np.where(np.isnan(scores), -np.inf, 0.7 * np.nan_to_num(scores) +
                           np.array([0.0, 0.5, -0.5, 1.0]))
    p = np.exp(true_logits - true_logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return scores, np.array([rng.choice(K, p=row) for row in p])


@pytest.mark.parametrize("unit", [1e-3, 1e4, 1e7])
def test_the_softmax_fit_does_not_depend_on_the_scores_units(unit):
    """Scores in other units (a perceptron's run to 1e7, a CW learner's to 1e4) give the same
    softmax: beta in the inverse units, the same biases (the maximum of the likelihood, not
    where an optimiser stopped)."""
    scores, classes = _softmax_sample()
    beta, biases = calibration.fit_softmax(scores, classes)
    scaled_beta, scaled_biases = calibration.fit_softmax(scores * unit, classes)
    assert scaled_beta * unit == pytest.approx(beta, rel=1e-7)
    np.testing.assert_allclose(scaled_biases, biases, rtol=0, atol=1e-7)


def test_the_reservoir_continued_keeps_the_sample_of_one_run():
    rng = np.random.default_rng(1)
    scores, classes = rng.normal(size=(30000, 3)), rng.integers(0, 3, 30000)
    weights = np.ones(30000)
    whole = calibration.MulticlassCalibration()
    whole.observe(scores, classes, weights)
    first = calibration.MulticlassCalibration()
    first.observe(scores[:12345], classes[:12345], weights[:12345])
    continued = calibration.MulticlassCalibration.from_meta(json.loads(json.dumps(
        first.to_meta())))
    continued.observe(scores[12345:], classes[12345:], weights[12345:])
    np.testing.assert_array_equal(continued.kept, whole.kept)
    np.testing.assert_array_equal(continued.kept_classes, whole.kept_classes)
    # a uniform sample: about as many rows of each half of the stream as of the other
    kept_rows = {tuple(row) for row in whole.kept}
    early = sum(tuple(row) in kept_rows for row in scores[:15000])
    assert abs(early - len(whole.kept) / 2) < 4 * math.sqrt(len(whole.kept))


def _splitmix64(t):
    """A pure-Python transcription of splitmix64 (calibration._mix)."""
    mask = (1 << 64) - 1
    z = (t + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_kept_rows_names_the_rows_algorithm_r_puts_in_the_sample():
    """kept_rows, asked before each observe, names the rows a pure-Python Algorithm R (slot
    mix(t) mod (t + 1)) writes into the sample; the rows it does not name may carry any
    score (NaN here), and the sample is the one of observing every row's scores."""
    rng = np.random.default_rng(2)
    n, K = 9000, 3
    classes, weights = rng.integers(-1, K, n), rng.choice([0.0, 1.0, 2.0], n)
    scores = np.column_stack([np.arange(n, dtype=float)] * K)   # a row's score: its index
    capacity = calibration.RESERVOIR_ROWS
    expected, t = {}, 0
    for i in range(n):
        if classes[i] >= 0 and weights[i] > 0:
            slot = t if t < capacity else _splitmix64(t) % (t + 1)
            t += 1
            if slot < capacity:
                expected.setdefault(i, []).append(slot)
    every, partial = calibration.MulticlassCalibration(), calibration.MulticlassCalibration()
    named = []
    for a in range(0, n, 1000):
        part = slice(a, a + 1000)
        rows = partial.kept_rows(classes[part], weights[part], K)
        named.extend(rows + a)
        hidden = np.full((1000, K), np.nan)
        hidden[rows] = scores[part][rows]
        partial.observe(hidden, classes[part], weights[part])
        every.observe(scores[part], classes[part], weights[part])
    assert named == sorted(expected)
    np.testing.assert_array_equal(partial.kept, every.kept)
    np.testing.assert_array_equal(partial.kept_classes, every.kept_classes)
    assert partial.seen == every.seen == t


@pytest.mark.parametrize("mode", ["joint", "ova"])
def test_a_multiclass_sample_holds_the_scores_before_each_piece(run_cli, tmp_path, data_dir,
                                                                mode):
    """The sample's row t: the class scores of example t by the model that has learned the
    pieces (training.PIECE rows) before example t's, as predict --scores gives them for a
    model trained on those rows only (fewer rows than the sample holds: every row is kept)."""
    model, lines = tmp_path / "m.npz", (data_dir / "dna.scale.svm").read_text().splitlines()
    data = tmp_path / "dna.svm"
    data.write_text("\n".join(lines[:700]) + "\n")
    # (one learner and value: the default would tune its value on each head)
    assert run_cli("train", "--algo", "pa2", "--multiclass", mode, data, "-f", model,
                   "--quiet").returncode == 0
    meta, _ = load_model(model)
    sample = meta["calibration"]["scores"]
    for t in (300, 600):
        before = tmp_path / f"before-{t}.npz"
        assert run_cli("train", "--algo", "pa2", "--multiclass", mode, data, "--examples",
                       str(t // 256 * 256), "-f", before, "--quiet").returncode == 0
        row = tmp_path / "row.svm"
        row.write_text(lines[t] + "\n")
        proc = run_cli("predict", row, "-m", before, "--scores", "--quiet")
        # predict --scores: the classes in id order, as the sample's columns (9 digits)
        scores = [float(cell.rsplit(":", 1)[1]) for cell in proc.stdout.split()]
        assert scores == pytest.approx(sample[t], rel=1e-8, abs=1e-9)


def _mixed_classes_file(path, rows=1500, seed=3):
    """VW lines of 4 named classes, the last two first seen at rows 700 and 1100 (inside a chunk,
    past its first pieces), with unlabeled lines and lines of weight 0 and 2."""
    rng = np.random.default_rng(seed)
    lines = []
    for t in range(rows):
        z = rng.integers(2 + (t >= 700) + (t >= 1100))
        features = " ".join(f"f{j}:{rng.normal() + (j == z):.3f}" for j in
                            sorted(set(rng.integers(0, 40, 12).tolist())))
        head = "" if t % 97 == 5 else f"c{z}" + (" 0" if t % 89 == 3 else " 2" if t % 7 == 0
                                                  else "")
        lines.append(f"{head} |x {features} z{z}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _sample_and_state(path, algo, mode, reading, fixed, reads):
    """A model trained on ``path`` in chunks: its calibration sample, progressive predictions
    and arrays; ``reading`` False makes its learner score each piece before learning it."""
    from streamherd import tasks
    from streamherd.io.reader import ChunkReader
    from streamherd.model.online import ModelFlags, OnlineModel

    classes = "c0,c1,c2,c3" if fixed else None
    model = OnlineModel.new(ModelFlags(algo, bits=7, choice=tasks.choose(multiclass=mode,
                                                                         classes=classes),
                                       calibration="platt"))
    if not reading:
        model.learner.scores_while_learning = lambda: False
    predictions = [model.learn(chunk).predictions for chunk in
                   ChunkReader([str(path)], fmt="vw", features=model.read_space,
                               block_size=1 << 15)]
    assert model.learner.scores_while_learning() == (reading and reads)
    return model.calibration, np.concatenate(predictions), model.arrays()


# (learner, mode, whether its kernel reads the sample's rows: the others score each piece)
READ_WHILE_LEARNING = [("arow-p", "joint", True), ("pa2", "joint", True),
                       ("nherd-p", "joint", True), ("scw1", "joint", True), ("sop", "joint", True),
                       ("cw-full", "joint", True), ("perceptron", "joint", True),
                       ("narow-d", "joint", True), ("avg-perceptron", "joint", False),
                       ("pa1", "mira", False), ("arow-p", "ova", True), ("pa2", "ova", True),
                       ("scw2", "ova", True), ("perceptron", "ova", False)]


@pytest.mark.parametrize("fixed", [False, True], ids=["classes-found", "classes-fixed"])
@pytest.mark.parametrize("algo,mode,reads", READ_WHILE_LEARNING)
def test_reading_the_sample_on_the_way_equals_scoring_each_piece_first(tmp_path, algo, mode,
                                                                       reads, fixed):
    """A kernel that reads the sample's class scores on its way through a chunk (at their
    pieces' starts: kernels/multiclass.Reads) makes the sample, predictions and model of
    scoring each piece before learning it, bit for bit, classes new inside a chunk NaN until
    their first row."""
    path = _mixed_classes_file(tmp_path / "mixed.vw")
    (read, read_predictions, read_arrays), (scored, predictions, arrays) = (
        _sample_and_state(path, algo, mode, reading, fixed, reads) for reading in (True, False))
    rows = min(read.seen, len(read.kept))
    assert read.seen == scored.seen and rows > 1000
    np.testing.assert_array_equal(read.kept[:rows], scored.kept[:rows])
    np.testing.assert_array_equal(read.kept_classes, scored.kept_classes)
    np.testing.assert_array_equal(read_predictions, predictions)
    assert read_arrays.keys() == arrays.keys()
    for name in arrays:
        np.testing.assert_array_equal(read_arrays[name], arrays[name], err_msg=name)
    if not fixed:   # the sample's rows before class c3's first row: its score NaN
        assert np.isnan(read.kept[:rows, 3]).sum() > 500


@pytest.mark.parametrize("algo,mode", [("avg-perceptron", "joint"), ("voted-perceptron", "joint"),
                                       ("pa1", "mira"), ("perceptron", "ova")])
def test_a_learner_whose_kernel_reads_no_rows_refuses_reads(algo, mode):
    """Reads given to a learner whose kernel would leave their scores unwritten: refused."""
    from streamherd import tasks
    from streamherd.learners.kernels.multiclass import Reads

    learner = tasks.choose(multiclass=mode).new_task().new_learner(algo, 8, {})
    learner.grow(2)
    assert not learner.scores_while_learning()
    reads = Reads(np.zeros(1, np.int64), np.zeros(1, np.int64), np.empty((1, 2)))
    with pytest.raises(ValueError, match="reads"):
        learner.learn_joint(np.array([0, 1]), np.ones(2), np.array([0, 1, 2]),
                            np.array([1, 2], np.int32), np.ones(2), 0, np.empty(2, np.int64),
                            reads)


# ---------------------------------------------------------------- the CLI

def _read_proba(text):
    return np.array(text.split(), float)


def _binary_metrics(p, positive):
    q = np.clip(p, 1e-15, 1 - 1e-15)
    log_loss = -np.mean(np.where(positive, np.log(q), np.log1p(-q)))
    which = np.minimum((p * 10).astype(int), 9)
    ece = sum((which == b).mean() * abs(positive[which == b].mean() - p[which == b].mean())
              for b in range(10) if (which == b).any())
    return log_loss, ece


def _labels(path):
    import gzip

    with gzip.open(path, "rt") as f:
        return np.array([float(line.split()[0]) > 0 for line in f])


def test_proba_on_a9a_is_calibrated_for_every_method_and_learner(run_cli, data_dir, tmp_path):
    train, test = data_dir / "a9a.svm.gz", data_dir / "a9a.t.svm.gz"
    positive = _labels(test)
    losses = {}
    for algo, method in (("nherd", "none"), ("nherd", "isotonic"), ("nherd", "platt"),
                         ("nherd", "probit"), ("avg-perceptron", "isotonic")):
        model = tmp_path / f"{algo}-{method}.npz"
        assert run_cli("train", train, "--algo", algo, "--calibration", method, "-f", model,
                       "--quiet").returncode == 0
        proc = run_cli("predict", test, "-m", model, "--proba", "--quiet")
        assert proc.returncode == 0, proc.stderr
        p = _read_proba(proc.stdout)
        assert len(p) == len(positive) and np.all((p >= 0) & (p <= 1))
        losses[algo, method], ece = _binary_metrics(p, positive)
        if method != "none":
            assert ece < 0.03, (algo, method, ece)
    uncalibrated = losses.pop(("nherd", "none"))
    assert uncalibrated > 1.0     # Phi(m / sqrt v) saturates
    for key, loss in losses.items():
        assert loss < 0.36, (key, loss)   # VW's logistic one pass: 0.325


def test_calibration_changes_no_weight(run_cli, tmp_path, data_dir):
    """The statistics are read from the progressive predictions; learning piece by piece
    (multiclass, probit) makes the same model as one chunk at a time."""
    cases = [("nherd", "binary", "probit"), ("arow", "binary", "isotonic"),
             ("voted-perceptron", "joint", "platt"), ("pa1", "ova", "platt"),
             ("pa2", "mira", "platt"), ("arow", "joint", "platt")]
    for algo, mode, method in cases:
        data = data_dir / ("a9a.t.svm.gz" if mode == "binary" else "dna.scale.svm")
        states = []
        for calibrated in (method, "none"):
            model = tmp_path / f"{calibrated}.npz"
            extra = [] if mode == "binary" else ["--multiclass", mode]
            proc = run_cli("train", data, "--algo", algo, "--calibration", calibrated,
                           "-f", model, "--quiet", "-b", "12", *extra)
            assert proc.returncode == 0, proc.stderr
            meta, arrays = load_model(model)
            assert ("calibration" in meta) == (calibrated != "none")
            states.append(arrays)
        assert states[0].keys() == states[1].keys()
        for name in states[0]:
            np.testing.assert_array_equal(states[0][name], states[1][name], err_msg=(algo, mode))


def test_continuing_a_model_continues_its_statistics_as_one_run(run_cli, tmp_path, data_dir):
    import gzip

    with gzip.open(data_dir / "a9a.t.svm.gz", "rt") as f:
        lines = f.read().splitlines(keepends=True)
    first, second, whole = tmp_path / "a.svm", tmp_path / "b.svm", tmp_path / "ab.svm"
    first.write_text("".join(lines[:512]))   # a whole number of pieces (training.PIECE)
    second.write_text("".join(lines[512:3000]))
    whole.write_text("".join(lines[:3000]))
    for method in ("isotonic", "probit"):
        one, two = tmp_path / f"one-{method}.npz", tmp_path / f"two-{method}.npz"
        assert run_cli("train", whole, "-f", one, "--algo", "nherd", "--calibration", method,
                       "--quiet").returncode == 0
        assert run_cli("train", first, "-f", two, "--algo", "nherd", "--calibration", method,
                       "--quiet").returncode == 0
        assert run_cli("train", second, "-i", two, "-f", two, "--quiet").returncode == 0
        assert load_model(one)[0]["calibration"] == load_model(two)[0]["calibration"]
        p_one = run_cli("predict", whole, "-m", one, "--proba", "--quiet").stdout
        assert p_one == run_cli("predict", whole, "-m", two, "--proba", "--quiet").stdout


def test_the_map_round_trips_through_the_model(run_cli, tmp_path, data_dir):
    model = tmp_path / "m.npz"
    test = data_dir / "spambase.test.svm"
    assert run_cli("train", data_dir / "spambase.train.svm", "--algo", "pa1", "--calibration",
                   "platt", "-f", model, "--quiet").returncode == 0
    meta, _ = load_model(model)
    refit = calibration.of_meta(meta)   # the statistics read back, fitted again
    refit.params = None
    assert refit.fit() == pytest.approx(meta["calibration"]["params"], rel=1e-12)
    raw = _read_proba(run_cli("predict", test, "-m", model, "--raw", "--quiet").stdout)
    proba = _read_proba(run_cli("predict", test, "-m", model, "--proba", "--quiet").stdout)
    a, b = meta["calibration"]["params"]["a"], meta["calibration"]["params"]["b"]
    platt = 1 / (1 + np.exp(-(a * raw + b)))
    # on predict's side of 0.5: above it where the margin is > 0 (calibration.DECISION_GAP)
    gap = calibration.DECISION_GAP * np.tanh(np.abs(a * raw))
    expected = np.where(raw > 0, np.maximum(platt, 0.5 + gap), np.minimum(platt, 0.5 - gap))
    assert np.any(expected != platt)   # the label's side moved some rows
    np.testing.assert_allclose(proba, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("algo, data, method", [("pa2", "a9a", "isotonic"),
                                                ("avg-perceptron", "spambase", "platt"),
                                                ("pa2", "pendigits", "isotonic")])
def test_the_label_is_the_most_probable_class(run_cli, tmp_path, data_dir, algo, data, method):
    """predict's label (the learner's decision) and the top --proba class agree on every row,
    on data where the fitted map alone puts its 0.5 away from the margin's 0 (a9a: 12% of the
    rows) and a multiclass softmax's biases reorder classes."""
    train, test = {"a9a": ("a9a.svm.gz", "a9a.t.svm.gz"),
                   "spambase": ("spambase.train.svm", "spambase.test.svm"),
                   "pendigits": ("pendigits.scale.svm", "pendigits.scale.t.svm")}[data]
    model = tmp_path / "m.npz"
    assert run_cli("train", data_dir / train, "--algo", algo, "--calibration", method, "-f",
                   model, "--quiet").returncode == 0
    labels = run_cli("predict", data_dir / test, "-m", model, "--quiet").stdout.split()
    proba = run_cli("predict", data_dir / test, "-m", model, "--proba", "--quiet").stdout
    if ":" not in proba:   # P(y = +1): the positive label above 0.5
        rows = _read_proba(proba)
        assert len(rows) == len(labels)
        assert all((p > 0.5) == (float(label) > 0) for p, label in zip(rows, labels))
    else:                  # class:probability cells
        top = [max(line.split(), key=lambda cell: float(cell.split(":")[1])).split(":")[0]
               for line in proba.splitlines()]
        assert len(top) == len(labels) and top == labels


def test_the_isotonic_tie_break_increases_when_platt_runs_against_the_labels():
    """Margins that run against their labels (a short, early stream): Platt's slope is
    negative, yet the isotonic map with its tie break is strictly increasing."""
    m = np.linspace(-3, 3, 400)
    y = np.where(m < 0, 1.0, -1.0)
    fitted = _observed("isotonic", m, y)
    assert calibration.fit_platt(m, (y > 0) * 1.0, (y < 0) * 1.0)[0] < 0
    p = fitted.probabilities(np.linspace(-5, 5, 2001))
    assert np.all(np.diff(p) > 0)


def test_multiclass_proba_columns_are_sorted_and_sum_to_one(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    labels = ["10", "2", "1"]   # first seen in this order
    data = tmp_path / "d.svm"
    rows = []
    for i in range(600):
        z = i % 3
        x = rng.normal(size=3) + 3 * np.eye(3)[z]
        rows.append(f"{labels[z]} " + " ".join(f"{k + 1}:{x[k]:.4f}" for k in range(3)))
    data.write_text("\n".join(rows) + "\n")
    model = tmp_path / "m.npz"
    assert run_cli("train", data, "--algo", "pa1", "-f", model, "--quiet").returncode == 0
    out = run_cli("predict", data, "-m", model, "--proba", "--quiet").stdout.splitlines()
    assert all([cell.split(":")[0] for cell in line.split()] == ["1", "2", "10"] for line in out)
    P = np.array([[float(cell.split(":")[1]) for cell in line.split()] for line in out])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    truth = np.array([[2, 1, 0][i % 3] for i in range(600)])   # 10 -> column 2, 2 -> 1, 1 -> 0
    assert np.mean(P.argmax(axis=1) == truth) > 0.9
    assert -np.mean(np.log(P[np.arange(600), truth])) < 0.3


def _without_calibration(model, path):
    """The model as streamherd wrote it before calibration existed: no "calibration" meta."""
    with zipfile.ZipFile(model) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "meta.npy":
                meta = json.loads(np.load(model)["meta"].item())
                meta.pop("calibration")
                buffer = __import__("io").BytesIO()
                np.save(buffer, np.array(json.dumps(meta, sort_keys=True)))
                data = buffer.getvalue()
            target.writestr(item, data)


def test_a_model_without_a_map_behaves_as_none(run_cli, tmp_path, data_dir):
    train, test = data_dir / "spambase.train.svm", data_dir / "spambase.test.svm"
    for algo in ("arow", "pa1"):
        calibrated, none, old = (tmp_path / f"{algo}-{k}.npz" for k in ("cal", "none", "old"))
        assert run_cli("train", train, "--algo", algo, "-f", calibrated, "--quiet").returncode == 0
        assert run_cli("train", train, "--algo", algo, "--calibration", "none", "-f", none,
                       "--quiet").returncode == 0
        _without_calibration(calibrated, old)
        outputs = [run_cli("predict", test, "-m", m, "--proba", "--quiet") for m in (none, old)]
        if algo == "pa1":   # no map and no Gaussian: --proba refused, in one line
            for proc in outputs:
                assert "--calibration" in one_line_error(proc)
        else:
            assert outputs[0].returncode == 0 and outputs[0].stdout == outputs[1].stdout
        # continuing the old model without --calibration keeps it without
        again = tmp_path / "again.npz"
        assert run_cli("train", test, "-i", old, "-f", again, "--quiet").returncode == 0
        assert "calibration" not in load_model(again)[0]


def test_bad_calibration_flags_are_one_line_errors(run_cli, tmp_path, data_dir):
    train = data_dir / "spambase.train.svm"
    model = tmp_path / "m.npz"
    assert "--calibration" in one_line_error(run_cli("train", train, "--calibration", "sigmoid",
                                                     "-f", model))
    assert "probit" in one_line_error(run_cli("train", train, "--algo", "pa1",
                                              "--calibration", "probit", "-f", model))
    assert not model.exists()
    assert run_cli("train", train, "--algo", "nherd", "-f", model,
                   "--quiet").returncode == 0   # isotonic's statistics
    assert "drop --calibration" in one_line_error(run_cli("train", train, "-i", model,
                                                          "--calibration", "probit", "-f", model))


def test_a_damaged_map_is_a_one_line_error(run_cli, tmp_path, data_dir):
    model, damaged = tmp_path / "m.npz", tmp_path / "d.npz"
    assert run_cli("train", data_dir / "spambase.train.svm", "-f", model,
                   "--quiet").returncode == 0
    meta, arrays = load_model(model)
    meta["calibration"]["cells"] = [10 ** 9] * len(meta["calibration"]["cells"])
    from streamherd.model import save_model

    save_model(damaged, {k: v for k, v in meta.items() if k not in (
        "format", "format_version", "streamherd_version", "fill")}, arrays)
    assert "calibration" in one_line_error(run_cli("predict", data_dir / "spambase.test.svm",
                                                   "-m", damaged, "--proba"))


def test_binary_statistics_merged_are_those_of_both_streams():
    """Merging two streams' histograms (dist-train's shards) is observing both: the same
    counts per cell, the margin sums up to rounding; an empty part merges as nothing."""
    rng = np.random.default_rng(3)
    margins, y = rng.normal(scale=2.0, size=5000), np.where(rng.random(5000) < 0.4, 1.0, -1.0)
    weights = np.ones(5000)
    for method in ("isotonic", "probit"):
        confidences = rng.uniform(0.01, 4.0, 5000) if method == "probit" else None
        whole, a, b = (calibration.BinaryCalibration(method) for _ in range(3))
        whole.observe(margins, y, weights, confidences)
        a.observe(margins[:1800], y[:1800], weights[:1800],
                  None if confidences is None else confidences[:1800])
        b.observe(margins[1800:], y[1800:], weights[1800:],
                  None if confidences is None else confidences[1800:])
        both = calibration.merged([calibration.BinaryCalibration(method), a, None, b])
        np.testing.assert_array_equal(both.positive, whole.positive)
        np.testing.assert_array_equal(both.negative, whole.negative)
        np.testing.assert_allclose(both.margin_sums, whole.margin_sums, rtol=1e-12, atol=1e-12)
        alone = calibration.merged([calibration.BinaryCalibration(method), a])
        assert json.dumps(alone.to_meta()) == json.dumps(a.to_meta())


def _stream(rng, n, K, offset):
    """Rows whose first score tells where they come from (offset + row number)."""
    scores = rng.normal(size=(n, K))
    scores[:, 0] = offset + np.arange(n)
    return scores, rng.integers(0, K, n)


def test_multiclass_samples_merge_into_a_uniform_sample_of_both():
    rng = np.random.default_rng(4)
    K, capacity = 3, calibration._capacity(3)
    (sa, ca), (sb, cb) = _stream(rng, 3000, K, 0), _stream(rng, 9000, K, 10 ** 6)
    a, b = calibration.MulticlassCalibration(), calibration.MulticlassCalibration()
    a.observe(sa, ca, np.ones(3000))
    b.observe(sb, cb, np.ones(9000))
    merged = a.merged(b)
    assert merged.seen == 12000 and len(merged.kept) == capacity
    # every row is one of the parts' sampled rows, once, with its class
    rows_a = {tuple(r): c for r, c in zip(a.kept[:a.seen], a.kept_classes)}
    rows_b = {tuple(r): c for r, c in zip(b.kept[:capacity], b.kept_classes)}
    keys = [tuple(r) for r in merged.kept]
    assert len(set(keys)) == capacity
    assert all(rows_a.get(k, rows_b.get(k)) == c for k, c in zip(keys, merged.kept_classes))
    # hypergeometric share of a: mean capacity * 3000 / 12000, sd about 23
    from_a = int(np.sum(merged.kept[:, 0] < 10 ** 6))
    sd = math.sqrt(capacity * 0.25 * 0.75 * (12000 - capacity) / 11999)
    assert abs(from_a - capacity / 4) < 4 * sd
    # deterministic: the same parts give the same bits; an empty part changes nothing
    again = a.merged(b)
    np.testing.assert_array_equal(again.kept, merged.kept)
    empty = calibration.MulticlassCalibration()
    for kept in (empty.merged(b), b.merged(empty)):
        assert kept.seen == b.seen
        np.testing.assert_array_equal(kept.kept, b.kept[:capacity])
    # small parts fit whole: the rows of a then b
    small = calibration.MulticlassCalibration()
    small.observe(sa[:50], ca[:50], np.ones(50))
    whole = small.merged(small)
    np.testing.assert_array_equal(whole.kept, np.concatenate([sa[:50], sa[:50]]))
    # over many seeds (other counts) the share of a stays unbiased
    shares = []
    for n_b in range(9000, 9040):
        part = calibration.MulticlassCalibration(seen=n_b, kept=b.kept, kept_classes=b.kept_classes)
        shares.append(np.sum(a.merged(part).kept[:, 0] < 10 ** 6) / capacity)
    assert abs(np.mean(shares) - np.mean([3000 / (3000 + n) for n in range(9000, 9040)])) < 0.01


def test_an_empty_multiclass_sample_loads_and_a_lost_one_is_refused(run_cli, tmp_path, data_dir):
    """A sample of no row (a model that learned from nothing) predicts uniform probabilities;
    a count of rows with fewer rows than any reservoir keeps is a damaged model."""
    empty = {"method": "softmax", "seen": 0, "scores": [], "classes": [], "params": {}}
    assert calibration.meta_ok(empty)
    loaded = calibration.MulticlassCalibration.from_meta(empty)
    np.testing.assert_array_equal(loaded.probabilities(np.zeros((2, 4))), np.full((2, 4), 0.25))
    assert not calibration.meta_ok({**empty, "seen": 2000})
    assert not calibration.meta_ok({**empty, "seen": 2000, "scores": [[0.5, 1.0]] * 99,
                                    "classes": [0] * 99})
    assert calibration.meta_ok({**empty, "seen": 2000, "scores": [[0.5, 1.0]] * 100,
                                "classes": [0] * 100})
    model, damaged = tmp_path / "m.npz", tmp_path / "d.npz"
    data = tmp_path / "c.svm"
    data.write_text("".join(f"{1 + i % 3} {1 + i % 5}:1 {6 + i % 7}:0.5\n" for i in range(300)))
    assert run_cli("train", data, "-f", model, "--quiet").returncode == 0
    meta, arrays = load_model(model)
    from streamherd.model import save_model

    def saved(calibration_meta):
        save_model(damaged, {**{k: v for k, v in meta.items() if k not in (
            "format", "format_version", "streamherd_version", "fill")},
            "calibration": calibration_meta}, arrays)
        return damaged

    assert "calibration" in one_line_error(run_cli("predict", data, "-m",
                                                   saved({**empty, "seen": 300}), "--proba"))
    proc = run_cli("predict", data, "-m", saved(empty), "--proba")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert len(rows) == 300 and all(len(r) == 3 for r in rows)
    assert all(abs(float(x.split(":")[1]) - 1 / 3) < 1e-6 for r in rows for x in r)
