"""The tasks (streamherd/tasks/): one object per task drives train's progressive step and loss and
predict's output, and holds the label rule of both. Checked against independent computations:
progressive predictions replayed row by row through fresh learners, outputs from dense matrix
products of the saved model, losses and label maps written out in numpy and Python."""
import numpy as np
import pytest

from streamherd import tasks
from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.io.csr import Chunk
from streamherd.io.reader import ChunkReader
from streamherd.labels import BinaryLabels, ClassLabels
from streamherd.learners.reductions.ova import OneVersusAll
from streamherd.model import ModelFlags, OnlineModel
from streamherd.tasks.binary import zero_one_loss

from helpers import one_line_error

BITS = 5
DIM = 1 << BITS


def read(path, features=None, **kwargs):
    """The file's examples as one chunk (a copy: the reader reuses its buffers)."""
    return Chunk.concatenate([chunk.copy() for chunk in ChunkReader(
        [str(path)], features=features or FeatureSpace(), workers=0, **kwargs)])


def write_rows(path, labels, seed=0, d=12):
    rng = np.random.default_rng(seed)
    lines = []
    for label in labels:
        slots = sorted(set(rng.integers(1, d, size=4).tolist()))
        lines.append(f"{label} " + " ".join(f"{j}:{rng.normal():.4f}" for j in slots))
    path.write_text("\n".join(lines) + "\n")
    return path


def dense(rows):
    x = np.zeros((rows.n_examples, DIM))
    for i in range(rows.n_examples):
        np.add.at(x[i], rows.indices[rows.indptr[i]:rows.indptr[i + 1]],
                  rows.values[rows.indptr[i]:rows.indptr[i + 1]])
    return x


def trained(path, algo, **choice):
    """An OnlineModel that has learned the file at BITS bits, and the chunk it learned from."""
    trainer = OnlineModel.new(ModelFlags(algo, bits=BITS, choice=tasks.choose(**choice)))
    chunk = read(path, features=trainer.space)
    step = trainer.learn(chunk)
    return trainer, step


def saved_task(trainer, skip_bad=False):
    """The task and learner predict makes of the trainer's model (its meta and arrays)."""
    meta = trainer.meta(0, 0.0)
    task = tasks.of_model(meta, skip_bad)
    learner = task.new_learner(meta["algo"], DIM, meta["hyperparameters"], trainer.arrays(),
                               meta["learner"])
    return task, learner


# ---------------------------------------------------------------- the progressive step

@pytest.mark.parametrize("labels, algo, choice", [
    (["1", "0"], "pa2", {}),
    (["1", "-1"], "arow", {}),
    (["a", "b", "c"], "perceptron", {"classes": "a,b,c"}),
    (["a", "b", "c"], "arow", {"classes": "c,a,b", "multiclass": "ova"}),
    (["0.5", "-1.25", "3"], "pa1", {"loss": "squared"}),
], ids=["binary-01", "binary-pm", "joint", "ova", "regression"])
def test_progressive_predictions_are_those_of_the_model_before_each_row(tmp_path, labels, algo,
                                                                      choice):
    """Row i's progressive prediction is what a model that learned rows 0..i-1 predicts for it,
    and its loss is the task's loss of that prediction against the row's label."""
    rng = np.random.default_rng(1)
    path = write_rows(tmp_path / "d.svm", rng.choice(labels, 40))
    trainer, step = trained(path, algo, **choice)
    task, rows = trainer.task, step.chunk
    for i in range(rows.n_examples):
        replay, _ = saved_task(trainer)   # the task as it ends, with a fresh learner
        fresh = replay.new_learner(trainer.algo, DIM, trainer.options)
        if i:
            _, targets = replay.targets(rows.take(np.arange(i)))
            replay.learn(fresh, targets, rows.take(np.arange(i)))
        before = replay.predict(fresh, rows.take([i]))
        _, target = replay.targets(rows.take([i]))
        assert step.loss[i] == pytest.approx(task.loss(target, before)[0], rel=1e-9, abs=1e-12)
        label, prediction = step.describe(i)   # the progress table's texts
        assert label == labels_of(path)[i]
        if task.kind == "regression":
            assert float(prediction) == pytest.approx(before[0], rel=1e-5, abs=1e-9)
        else:
            assert prediction == task.prediction_text(before, 0)


def labels_of(path):
    return [line.split()[0] for line in path.read_text().splitlines()]


def test_train_and_predict_share_the_binary_labels_of_the_data(tmp_path):
    """A 1/0 file: training learns the two values, predict prints them, and its report counts
    the sign mistakes of the saved model's margins (a dense product here)."""
    path = write_rows(tmp_path / "b.svm", np.random.default_rng(2).choice(["1", "0"], 60))
    trainer, step = trained(path, "pa2")
    assert trainer.task.kind == "binary" and trainer.task_from_labels
    assert (trainer.task.labels.negative, trainer.task.labels.positive) == (0.0, 1.0)
    task, learner = saved_task(trainer)
    scored = task.score(learner, step.chunk)
    margins = dense(step.chunk) @ learner.mean
    np.testing.assert_allclose(scored.scores, margins, rtol=1e-12, atol=1e-12)
    assert task.lines(learner, scored, tasks.LABEL) == \
        ["1" if m > 0 else "0" for m in scored.scores]
    assert task.lines(learner, scored, tasks.RAW) == [f"{m:.9g}" for m in scored.scores]
    mistakes = int(np.sum((scored.scores > 0) != (step.chunk.labels > 0)))
    assert (scored.loss, scored.labeled) == (mistakes, 60)
    assert task.report(mistakes, 60) == \
        f"error rate = {mistakes / 60:.6f} ({mistakes} mistakes in 60 labeled examples)"


@pytest.mark.parametrize("mode", ["joint", "ova"])
def test_multiclass_predict_outputs_from_the_saved_classes(tmp_path, mode):
    names = np.random.default_rng(3).choice(["sports", "politics", "arts"], 50)
    path = write_rows(tmp_path / "m.svm", names)
    trainer, _ = trained(path, "arow", multiclass=mode)
    task, learner = saved_task(trainer)
    assert task.labels.texts == list(dict.fromkeys(names))
    test = tmp_path / "test.svm"   # with a label no class has: a mistake, never predicted
    test.write_text(path.read_text() + "weather 1:1\n")
    chunk = read(test, features=trainer.space)
    scored = task.score(learner, chunk)
    if mode == "ova":
        assert isinstance(learner, OneVersusAll)
        means = np.stack([one.mean for one in learner.learners])
    else:
        means = learner.state()["mean"].reshape(len(task.labels), DIM)
    expected = dense(chunk) @ means.T
    np.testing.assert_allclose(scored.scores, expected, rtol=1e-12, atol=1e-12)
    texts = task.labels.texts
    assert task.lines(learner, scored, tasks.LABEL) == \
        [texts[z] for z in np.argmax(scored.scores, axis=1)]
    assert task.lines(learner, scored, tasks.SCORES) == task.lines(learner, scored, tasks.RAW) \
        == [" ".join(f"{n}:{v:.9g}" for n, v in zip(texts, row)) for row in scored.scores]
    truth = labels_of(test)
    predicted = [texts[z] for z in np.argmax(scored.scores, axis=1)]
    mistakes = sum(p != t for p, t in zip(predicted, truth))
    assert (scored.loss, scored.labeled) == (mistakes, len(truth))


def test_regression_predict_reports_the_squared_error(tmp_path):
    values = np.random.default_rng(4).normal(size=30).round(3)
    path = write_rows(tmp_path / "r.svm", [f"{v:g}" for v in values])
    trainer, _ = trained(path, "nherd-d", loss="squared")
    task, learner = saved_task(trainer)
    chunk = read(path, features=trainer.space)
    scored = task.score(learner, chunk)
    predictions = dense(chunk) @ learner.mean
    np.testing.assert_allclose(scored.predictions, predictions, rtol=1e-12, atol=1e-12)
    assert task.lines(learner, scored, tasks.LABEL) == [f"{p:.9g}" for p in scored.predictions]
    loss, labeled = scored.loss, scored.labeled
    assert labeled == 30 and loss == pytest.approx(np.sum((values - predictions) ** 2))


def test_zero_one_loss_against_numpy():
    rng = np.random.default_rng(3)
    y = rng.choice([1.0, -1.0, np.nan], 1000)
    margins = rng.normal(size=1000)
    margins[:50] = 0.0   # a zero margin predicts the negative class
    expected = np.where(np.isnan(y), np.nan, ((margins > 0) != (y > 0)).astype(float))
    np.testing.assert_array_equal(zero_one_loss(y, margins), expected)


# ---------------------------------------------------------------- the label rules

def test_a_text_label_is_a_bad_line_of_a_numeric_task(tmp_path):
    path = tmp_path / "t.svm"
    path.write_text("1 1:1\nx:1 2:2\nspam 1:1\n-1 1:1\n\nham 2:1\n1 2:2\n")
    chunk = read(path, skip_bad=True)   # 'x:1' is malformed for the parser already
    assert chunk.bad_line_numbers.tolist() == [2]
    message = (f"{path}:3: bad label 'spam'; expected {{}}. Fix the line, or pass --skip-bad "
               f"to skip such lines")
    for task, learning, expected in [
            (tasks.BinaryTask(), True, "a number such as 1, -1 or 0"),
            (tasks.BinaryTask(), False, "a number such as 1, -1 or 0"),
            (tasks.RegressionTask(), True, "a number such as 1, -1 or 0"),
            (tasks.RegressionTask(), False, "a real number (a regression model)")]:
        with pytest.raises(StreamherdError) as info:
            task.targets(chunk, learning)
        assert str(info.value) == message.format(expected)
    with pytest.raises(StreamherdError, match=r"t\.svm:3: bad label 'spam'"):
        tasks.BinaryTask().check_labels(chunk)
    tasks.MulticlassTask().check_labels(chunk)   # class names: nothing to refuse
    # --skip-bad: the rows dropped for their label join the bad lines, in line order
    kept, y = tasks.BinaryTask(skip_bad=True).targets(chunk)
    assert kept.line_numbers.tolist() == [1, 4, 7] and y.tolist() == [1.0, -1.0, 1.0]
    assert kept.bad_line_numbers.tolist() == [2, 3, 6] and kept.bad_lines == 3
    tasks.BinaryTask(skip_bad=True).check_labels(chunk)   # dropped later, not refused


@pytest.mark.parametrize("fmt, bad", [("svmlight", b"abc 1:1"), ("svmlight", b"nan 1:1"),
                                      ("vw", b"abc |f a"), ("vw", b"nan |f a")])
@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_a_numeric_task_names_or_skips_a_label_that_is_not_a_number(tmp_path, fmt, bad,
                                                                   block_size):
    good = b"1 1:1 2:2" if fmt == "svmlight" else b"1 |f a b:2"
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(b"\n".join([good, b"", bad, good]) + b"\n")
    for task in (tasks.BinaryTask(), tasks.RegressionTask()):
        with pytest.raises(StreamherdError) as info:
            for chunk in ChunkReader([str(path)], fmt=fmt, features=FeatureSpace(),
                                     block_size=block_size, process=task.check_labels):
                task.targets(chunk)
        assert str(info.value).startswith(f"{path}:3: bad label '{bad.split()[0].decode()}'")
    task = tasks.BinaryTask(skip_bad=True)
    kept = [task.targets(chunk)[0] for chunk in ChunkReader(
        [str(path)], fmt=fmt, features=FeatureSpace(), skip_bad=True, block_size=block_size,
        process=task.check_labels)]
    assert [line for chunk in kept for line in chunk.line_numbers.tolist()] == [1, 4]
    assert sum(chunk.bad_lines for chunk in kept) == 1
    assert [line for chunk in kept for line in chunk.bad_line_numbers.tolist()] == [3]


def test_predicting_maps_labels_by_sign_and_unknown_classes_to_mistakes(tmp_path):
    path = tmp_path / "p.svm"
    path.write_text("3 1:1\n0 1:1\n-2 1:1\n")
    binary = tasks.BinaryTask(BinaryLabels(-1.0, 1.0))
    _, y = binary.targets(read(path), learning=False)   # not the model's values: any value
    assert binary.loss(y, np.array([1.0, 1.0, 1.0])).tolist() == [0.0, 1.0, 1.0]
    assert binary.loss(y, np.array([-1.0, 0.0, -0.5])).tolist() == [1.0, 0.0, 0.0]
    task = tasks.MulticlassTask(ClassLabels(["0", "3"]))
    _, classes = task.targets(read(path), learning=False)
    assert classes.tolist() == [1, 0, -2] and task.labeled(classes).all()
    assert task.loss(classes, np.array([1, 1, 1])).tolist() == [0.0, 1.0, 1.0]


def test_choose_checks_the_flags():
    assert tasks.choose() == tasks.Choice()
    assert tasks.choose(loss="hinge", classes="a,b") == tasks.Choice("multiclass", None, "a,b")
    assert tasks.choose(loss="squared").kind == "regression"
    for flags, message in [({"loss": "cubic"}, "unknown --loss 'cubic'"),
                           ({"multiclass": "all"}, "unknown --multiclass 'all'"),
                           ({"loss": "squared", "multiclass": "ova"}, "drop --multiclass")]:
        with pytest.raises(StreamherdError, match=message):
            tasks.choose(**flags)
    with pytest.raises(StreamherdError, match="m.npz is a binary model; drop --multiclass"):
        tasks.choose(multiclass="joint").check_continues({}, "m.npz")
    tasks.choose(multiclass="ova").check_continues(
        {"task": "multiclass", "multiclass": "ova"}, "m.npz")


@pytest.mark.parametrize("labels, kind", [
    (["1", "0", "1"], "binary"), (["+1", "-1"], "binary"), (["-1", "3", "7"], "binary"),
    (["1", "2", "3"], "multiclass"), (["1", "7"], "multiclass"), (["a", "b"], "multiclass"),
    (["1", "-1", "1", "typo"], "binary"), (["1", "-1", "x", "y"], "multiclass"),
    (["nan", "1"], "binary"),
    (["0.5", "1.25", "3"], "regression"), (["12.99", "-3.5", "7", "x"], "regression"),
    ([str(v) for v in range(100, 160)], "regression"),     # whole numbers, each once: values
    ([str(v) for v in range(-30, 30)], "regression"),      # a negative one among many values
    ([str(v % 69) for v in range(3000)], "multiclass"),    # 69 whole numbers, repeated
])
def test_detect_chooses_from_the_first_chunk(tmp_path, labels, kind):
    path = tmp_path / "d.svm"
    path.write_text("".join(f"{label} 1:1\n" for label in labels))
    assert tasks.detect(read(path)).kind == kind


def test_labels_neither_classes_nor_values_are_one_error_naming_the_flags(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("".join(f"{v % 40} 1:1\n" for v in range(120)))   # 40 numbers, 3 rows each
    with pytest.raises(StreamherdError, match="d.svm: the labels of the first 120 examples are "
                                              "40 whole numbers, too many to be classes and too "
                                              "repeated to be values; pass --loss squared "
                                              "\\(values\\) or --multiclass joint / --classes"):
        tasks.detect(read(path))


def test_real_labels_train_a_regression_model_and_say_so(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 3))
    prices = 20 + 3 * x[:, 0] - 2 * x[:, 1] + rng.normal(scale=0.1, size=500)
    path = tmp_path / "prices.svm"
    path.write_text("".join(f"{y:.2f} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(row))
                            + "\n" for y, row in zip(prices, x)))
    proc = run_cli("train", path, "-f", tmp_path / "m.npz")
    assert proc.returncode == 0, proc.stderr
    assert "task = regression (squared loss), chosen from the labels" in proc.stderr


@pytest.mark.parametrize("algo", ["cw", "sop", "perceptron"])
def test_real_labels_for_a_learner_without_a_regression_form_are_one_line(run_cli, tmp_path,
                                                                          algo):
    """(it was a TypeError traceback: the fuzzer's find)"""
    path = tmp_path / "prices.svm"
    path.write_text("".join(f"{20 + k * 0.37:.2f} 1:{k % 7} 2:1\n" for k in range(200)))
    model = tmp_path / "m.npz"
    model.write_bytes(b"kept")
    line = one_line_error(run_cli("train", "--algo", algo, path, "-f", model))
    assert f"{path}: the labels are real values" in line
    assert f"{algo} has no squared-loss form" in line and "--multiclass" in line
    assert model.read_bytes() == b"kept"


def test_a_saved_model_gives_its_task():
    binary = tasks.of_model({"labels": {"negative": 0.0, "positive": 1.0}})   # format 1
    assert binary.kind == "binary" and binary.labels.text(False) == "0"
    multiclass = tasks.of_model({"task": "multiclass", "multiclass": "ova",
                                 "classes": ["b", "a"], "fixed_classes": True})
    assert (multiclass.mode, multiclass.labels.texts, multiclass.known) == ("ova", ["b", "a"], 2)
    assert multiclass.description() == "multiclass ova (2 fixed classes)"
    assert tasks.of_model({"task": "regression"}).kind == "regression"


def test_outputs_a_model_has_not_are_refused():
    pa2 = tasks.BinaryTask().new_learner("pa2", DIM, {})
    with pytest.raises(StreamherdError, match="--scores prints every class's score of a "
                                              "multiclass model; m.npz is a binary model"):
        tasks.BinaryTask().check_output(tasks.SCORES, pa2, "m.npz", "pa2")
    with pytest.raises(StreamherdError, match="m.npz is a pa2 binary model, which has no class "
                                              "probabilities: retrain it with train "
                                              "--calibration isotonic \\(the default\\), or "
                                              "use --raw$"):
        tasks.BinaryTask().check_output(tasks.PROBA, pa2, "m.npz", "pa2")
    task = tasks.MulticlassTask(ClassLabels(["a", "b"]))
    with pytest.raises(StreamherdError, match="use --raw or --scores$"):
        task.check_output(tasks.PROBA, task.new_learner("pa2", DIM, {}), "m.npz", "pa2")
    task.check_output(tasks.PROBA, task.new_learner("arow", DIM, {}), "m.npz", "arow")
    with pytest.raises(StreamherdError, match="regression model, which has no class"):
        tasks.RegressionTask().check_output(tasks.PROBA, pa2, "m.npz", "pa2")


# ---------------------------------------------------------------- the experiment's problems

def test_value_targets_of_given_label_values():
    labels = np.array([2.0, 5.0, -0.0, 7.0, 5.0, 0.0])
    pair = tasks.BinaryTask.of_values(positive=0.0, negative=5.0)   # the smaller one positive
    rows, y = pair.value_targets(labels)
    assert rows.tolist() == [1, 2, 4, 5] and y.tolist() == [-1.0, 1.0, -1.0, 1.0]
    classes = tasks.MulticlassTask.of_values([0.0, 2.0, 5.0])
    rows, ids = classes.value_targets(labels)
    assert rows.tolist() == [0, 1, 2, 4, 5] and ids.tolist() == [1.0, 2.0, 0.0, 2.0, 0.0]
    assert classes.target_values == (0.0, 1.0, 2.0) and classes.blocks == 3
