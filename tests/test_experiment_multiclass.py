"""A multiclass file without --all-pairs: one multiclass task, learned with the joint API.

The reference computations here map labels to class ids with a Python dict, drive the learner's
``learn_joint`` by hand, and score the test rows with a dense matrix product over the learner's
mean (not ``class_scores``), so they share neither the task's target mapping nor its learning.
"""
import numpy as np
import pytest

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.experiment import adapter
from streamherd.experiment.command import _check_full_covariance
from streamherd.experiment.data import load_dataset, tasks_of
from streamherd.experiment.runner import Grid, Job, Settings, Worker

LABELS = (2, 5, 7)   # not 0..K-1: the task maps them to class ids


def write_blobs(path, n, seed, width=30):
    """Three noisy clusters in ``width`` dense features, labels 2/5/7 in random order."""
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(100).normal(size=(len(LABELS), width))
    with open(path, "w") as f:
        for _ in range(n):
            z = rng.integers(len(LABELS))
            x = centers[z] + 1.5 * rng.normal(size=width)
            f.write(f"{LABELS[z]} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(x))
                    + "\n")
    return str(path)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("blobs")
    train = write_blobs(folder / "blobs.train.svm", 300, 1)
    test = write_blobs(folder / "blobs.test.svm", 120, 2)
    return load_dataset(f"{train},{test}")


def class_ids(labels):
    ids = {label: z for z, label in enumerate(sorted(set(labels.tolist())))}
    return np.array([ids[label] for label in labels.tolist()], np.int64)


def dense_predictions(learner, rows, k):
    """argmax_z of mean_z . x, from a dense matrix (first class on ties)."""
    x = np.zeros((rows.n_examples, learner.dim))
    for i in range(rows.n_examples):
        np.add.at(x[i], rows.indices[rows.indptr[i]:rows.indptr[i + 1]],
                  rows.values[rows.indptr[i]:rows.indptr[i + 1]])
    return np.argmax(x @ learner.state()["mean"].reshape(k, learner.dim).T, axis=1)


def by_hand(algo, options, bits, k, train, train_cls, passes=1):
    learner = learners.create(algo, 1 << bits, options, blocks=k)
    updates, progressive = 0, []
    for train_rows, cls in zip(train, train_cls):
        predicted = np.empty(train_rows.n_examples, np.int64)
        count, _ = learner.learn_joint(cls, train_rows.importance, train_rows.indptr,
                                       train_rows.indices, train_rows.values, k, predicted)
        updates += count
        progressive.append(predicted)
    return learner, updates, progressive


def test_a_multiclass_file_is_one_multiclass_task(blobs):
    (task,) = tasks_of(blobs)
    problem = task.problem
    assert problem.kind == "multiclass" and task.name == "blobs" and problem.blocks == 3
    assert problem.target_values == (0.0, 1.0, 2.0)
    rows, targets = problem.value_targets(np.array([7.0, 2.0, 3.0, 5.0, 7.0]))
    assert rows.tolist() == [0, 1, 3, 4] and targets.tolist() == [2.0, 0.0, 1.0, 2.0]
    assert all(t.problem.kind == "binary" for t in tasks_of(blobs, all_pairs=True))


@pytest.mark.parametrize("algo, options", [
    ("nherd-p", {"C": 1.0}), ("arow-d", {"r": 0.5}), ("perceptron", {}), ("pa2", {"C": 0.25}),
    ("cw", {"eta": 0.8}), ("arow-full", {"r": 1.0}),
])
def test_adapter_pass_and_predictions_equal_the_joint_api_by_hand(blobs, algo, options):
    (task,) = tasks_of(blobs)
    hyperparameter, value = next(iter(options.items()), (None, None))
    problem = task.problem
    model = adapter.new_model(problem, algo, blobs.bits, hyperparameter, value)
    rows, targets = problem.value_targets(blobs.train.labels)
    train = blobs.train.take(rows)
    updates, progressive = adapter.learn_pass(model, targets, train)
    predicted = model.predict(blobs.test)

    reference, ref_updates, (ref_progressive,) = by_hand(
        algo, options, blobs.bits, 3, [train], [class_ids(blobs.train.labels)])
    assert updates == ref_updates > 0
    assert np.array_equal(progressive, ref_progressive)
    assert np.array_equal(model.arrays()["mean"], reference.state()["mean"])
    test_cls = class_ids(blobs.test.labels)
    assert np.array_equal(predicted, dense_predictions(reference, blobs.test, 3))
    error = np.mean(predicted != problem.value_targets(blobs.test.labels)[1])
    assert error == np.mean(dense_predictions(reference, blobs.test, 3) != test_cls)
    assert error < 0.3   # the clusters are learnable: well below chance (2/3)


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_a_run_scores_the_test_rows_as_the_joint_api_does(blobs, noise):
    (task,) = tasks_of(blobs)
    settings = Settings(grids=(Grid("arow-p", "r", (2.0,)),), noise=(noise,), folds=2,
                        max_passes=2, validation=0.25, max_train=None, seed=5)
    worker = Worker({"blobs": blobs}, settings)
    job = Job(task, 0, noise, "arow-p")
    result = worker.run(job)
    assert result.row["status"] == "ok" and result.row["kind"] == "multiclass"
    passes = result.row["passes"]

    data = worker.prepared(job)
    clean = class_ids(blobs.train.labels)
    changed = data.targets != clean
    assert set(np.unique(data.targets).tolist()) <= {0.0, 1.0, 2.0}
    assert (changed.mean() == 0.0) if noise == 0 else (0.2 < changed.mean() < 0.4)
    chosen = [data.train_pass(p) for p in range(passes)]
    reference, updates, progressive = by_hand(
        "arow-p", {"r": 2.0}, blobs.bits, 3, [rows for _, rows, _ in chosen],
        [targets.astype(np.int64) for targets, _, _ in chosen])
    correct = dense_predictions(reference, blobs.test, 3) == class_ids(blobs.test.labels)
    assert np.array_equal(result.correct, correct)
    assert result.row["test_error"] == pytest.approx(1.0 - correct.mean())
    assert result.row["updates"] == updates
    # the learning curve counts progressive mistakes against the clean labels
    at, mistakes = result.curve
    first_clean = chosen[0][2]
    assert mistakes[-1] == np.count_nonzero(progressive[0] != first_clean)


def test_full_covariance_counts_every_class_block(tmp_path):
    """3 classes x 2^11 slots is over the 2^12-slot cap of a full matrix; the pairs are not."""
    path = tmp_path / "wide.svm"
    # 1500 distinct features cannot fit in fewer than 11 bits; -b 11 caps them there
    path.write_text("".join(f"{c} " + " ".join(f"{100 * i + j + 1}:1" for j in range(100)) + "\n"
                            for i, c in enumerate([0, 1, 2] * 5)))
    dataset = load_dataset(str(path), bits_cap=11)
    assert dataset.bits == 11
    with pytest.raises(StreamherdError, match="3 classes of 2\\^11 slots"):
        _check_full_covariance({"wide": dataset}, tasks_of(dataset), ["arow-p", "arow-full"])
    _check_full_covariance({"wide": dataset}, tasks_of(dataset, all_pairs=True), ["arow-full"])
    _check_full_covariance({"wide": dataset}, tasks_of(dataset), ["arow-p"])
