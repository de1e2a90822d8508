"""The experiment's random choices: label noise (rate, nesting, test data untouched), folds,
stratified picks, and the prepared rows of a run."""
import numpy as np
import pytest
from scipy import stats

from streamherd.experiment import splits
from streamherd.experiment.data import Dataset, Task
from streamherd.experiment.runner import Grid, Prepared, Settings
from streamherd.tasks import BinaryTask

from helpers import chunk_of_rows


def binomial_interval(n, p, tail=1e-6):
    """Counts a Binomial(n, p) stays within except with probability 2 * tail."""
    return stats.binom.ppf(tail, n, p), stats.binom.isf(tail, n, p)


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.3])
def test_noise_flips_each_label_with_the_given_rate(rate):
    n = 40_000
    targets = np.where(np.random.default_rng(1).random(n) < 0.4, 1.0, -1.0)
    draws = splits.noise_draws(n, splits.rng_for(7, "task", splits.NOISE, 0))
    noisy = splits.inject_label_noise(targets, (-1.0, 1.0), rate, draws)
    assert set(np.unique(noisy)) <= {-1.0, 1.0}
    flipped = noisy != targets
    low, high = binomial_interval(n, rate)
    assert low <= flipped.sum() <= high
    # independently of the class: the rate holds within each class as well
    for label in (-1.0, 1.0):
        mine = targets == label
        low, high = binomial_interval(int(mine.sum()), rate)
        assert low <= flipped[mine].sum() <= high


def test_noise_levels_are_nested_and_zero_noise_changes_nothing():
    targets = np.where(np.arange(5000) % 3 == 0, 1.0, -1.0)
    draws = splits.noise_draws(len(targets), splits.rng_for(0, "t", splits.NOISE, 0))
    low = splits.inject_label_noise(targets, (-1.0, 1.0), 0.1, draws) != targets
    high = splits.inject_label_noise(targets, (-1.0, 1.0), 0.3, draws) != targets
    assert np.all(high[low]) and high.sum() > low.sum()
    assert np.array_equal(splits.inject_label_noise(targets, (-1.0, 1.0), 0.0, draws), targets)


def test_multiclass_noise_picks_another_class_uniformly():
    n, classes, rate = 60_000, np.array([0.0, 1.0, 2.0, 5.0]), 0.5
    targets = classes[np.random.default_rng(3).integers(0, 4, n)]
    draws = splits.noise_draws(n, splits.rng_for(1, "m", splits.NOISE, 0))
    noisy = splits.inject_label_noise(targets, classes, rate, draws)
    changed = noisy != targets
    low, high = binomial_interval(n, rate)
    assert low <= changed.sum() <= high
    assert set(np.unique(noisy)) <= set(classes.tolist())
    # from class 0, each of the three other classes gets a third of the replacements
    replaced_from_zero = noisy[changed & (targets == 0.0)]
    for other in (1.0, 2.0, 5.0):
        low, high = binomial_interval(len(replaced_from_zero), 1 / 3)
        assert low <= np.count_nonzero(replaced_from_zero == other) <= high


@pytest.mark.parametrize("k", [2, 3, 10])
def test_folds_are_disjoint_covering_and_stratified(k):
    labels = np.repeat([-1.0, 1.0, 4.0], [503, 211, 97])
    labels = labels[np.random.default_rng(0).permutation(len(labels))]
    fold = splits.stratified_folds(labels, k, splits.rng_for(5, "d", splits.FOLDS))
    assert fold.shape == labels.shape and fold.min() == 0 and fold.max() == k - 1
    sizes = np.bincount(fold, minlength=k)
    assert sizes.sum() == len(labels) and sizes.max() - sizes.min() <= 1
    for label in np.unique(labels):
        per_fold = np.bincount(fold[labels == label], minlength=k)
        assert per_fold.max() - per_fold.min() <= 1
    again = splits.stratified_folds(labels, k, splits.rng_for(5, "d", splits.FOLDS))
    other_seed = splits.stratified_folds(labels, k, splits.rng_for(6, "d", splits.FOLDS))
    assert np.array_equal(fold, again) and not np.array_equal(fold, other_seed)


def test_stratified_pick_takes_the_fraction_of_every_class():
    labels = np.repeat([0.0, 1.0], [1000, 250])
    mask = splits.stratified_pick(labels, 0.2, splits.rng_for(0, "x", splits.VALIDATION))
    assert np.count_nonzero(mask[labels == 0.0]) == 200
    assert np.count_nonzero(mask[labels == 1.0]) == 50


def _dataset(rng, n_train, n_test, d=12):
    def rows(n):
        dense = np.where(rng.random((n, d)) < 0.5, rng.normal(size=(n, d)), 0.0)
        indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int64)
        indices = np.nonzero(dense)[1].astype(np.int32)
        labels = np.where(dense @ np.arange(d) > 0, 1.0, -1.0)
        return chunk_of_rows(labels, np.ones(n), indptr, indices, dense[dense != 0])

    train = rows(n_train)
    return Dataset("toy", ("toy.svm",), train, rows(n_test) if n_test else None,
                   np.array([-1.0, 1.0]), 4)


def _settings(**kwargs):
    defaults = dict(grids=(Grid("perceptron", None, (None,)),), noise=(0.0, 0.3), folds=4,
                    max_passes=2, validation=0.25, max_train=None, seed=11)
    return Settings(**{**defaults, **kwargs})


TOY_TASK = Task("toy", "toy", BinaryTask.of_values(1.0, -1.0))


def test_noise_reaches_training_labels_only():
    dataset = _dataset(np.random.default_rng(0), 4000, 700)
    prepared = Prepared(dataset, TOY_TASK, 0, 0.3, _settings(), None)
    assert np.array_equal(prepared.test_targets, dataset.test.labels)
    assert np.array_equal(prepared.test.values, dataset.test.values)
    assert np.array_equal(prepared.clean_targets, dataset.train.labels)
    flipped = np.count_nonzero(prepared.targets != prepared.clean_targets)
    low, high = binomial_interval(4000, 0.3)
    assert low <= flipped <= high
    # the test data has no say in the training noise: other test rows, the same flips
    other = _dataset(np.random.default_rng(0), 4000, 0)
    other.test = _dataset(np.random.default_rng(9), 10, 300).test
    again = Prepared(other, TOY_TASK, 0, 0.3, _settings(), None)
    assert np.array_equal(again.targets, prepared.targets)


def test_prepared_folds_split_the_task_rows():
    dataset = _dataset(np.random.default_rng(1), 999, 0)
    settings = _settings()
    fold_of = splits.stratified_folds(dataset.train.labels, settings.folds,
                                      splits.rng_for(settings.seed, "toy", splits.FOLDS))
    seen = []
    for fold in range(settings.folds):
        prepared = Prepared(dataset, TOY_TASK, fold, 0.0, settings, fold_of)
        assert prepared.train.n_examples + prepared.test.n_examples == 999
        assert prepared.fit.n_examples + prepared.validation.n_examples == prepared.train.n_examples
        seen.append(prepared.test.values)
        # training rows are exactly the rows of the other folds, in file order
        expected = dataset.train.take(np.flatnonzero(fold_of != fold))
        assert np.array_equal(prepared.train.values, expected.values)
    assert sum(len(v) for v in seen) == len(dataset.train.values)


def test_max_train_keeps_a_stratified_subset_and_the_test_rows():
    dataset = _dataset(np.random.default_rng(2), 3000, 400)
    prepared = Prepared(dataset, TOY_TASK, 0, 0.1, _settings(max_train=500), None)
    assert prepared.train.n_examples == 500
    assert prepared.test.n_examples == 400
    share = np.mean(dataset.train.labels == 1.0)
    assert abs(np.mean(prepared.clean_targets == 1.0) - share) <= 1 / 500 + 1e-12
