"""Every random choice of an experiment: folds, subsamples, the validation split, label noise and
the order of each online pass.

Each choice draws from its own stream, ``numpy.random.SeedSequence(seed, spawn_key=...)`` keyed
by what it is for (dataset or task name, fold, purpose, pass), so a result does not depend on
which worker ran it, in which order, or on which other runs are in the grid.
"""
import zlib

import numpy as np

FOLDS, SUBSAMPLE, VALIDATION, NOISE, FIT_ORDER, TRAIN_ORDER = range(6)


def rng_for(seed, name, *key):
    """A generator for one purpose; ``name`` (a dataset or task) enters as its CRC-32, which,
    unlike hash(), is the same in every process."""
    return np.random.default_rng(np.random.SeedSequence(
        seed, spawn_key=(zlib.crc32(name.encode("utf-8")), *key)))


def stratified_order(labels, rng):
    """A random order of the rows, grouped by label: within a class the rows are shuffled."""
    shuffled = rng.permutation(len(labels))
    return shuffled[np.argsort(labels[shuffled], kind="stable")]


def stratified_folds(labels, k, rng):
    """fold[i] in 0..k-1 for every row: dealing the class-grouped random order out in turn puts
    each class's rows into the folds as evenly as possible (counts differ by at most one), and
    the fold sizes too."""
    fold = np.empty(len(labels), np.int64)
    fold[stratified_order(labels, rng)] = np.arange(len(labels)) % k
    return fold


def stratified_pick(labels, fraction, rng):
    """A boolean mask choosing about ``fraction`` of the rows of every class at random (row j of
    the class-grouped order is picked when floor((j+1) f) > floor(j f): evenly spread)."""
    positions = np.arange(len(labels))
    picked_in_order = np.floor((positions + 1) * fraction) > np.floor(positions * fraction)
    mask = np.zeros(len(labels), bool)
    mask[stratified_order(labels, rng)] = picked_in_order
    return mask


def noise_draws(n, rng):
    """Per row: a uniform u in [0, 1) and a uniform offset r >= 1 (for the replacement class).

    Drawn once per task and fold for all noise levels, so that the rows flipped at noise 0.1 are
    among those flipped at 0.3: the levels differ only by the added noise.
    """
    return rng.random(n), rng.integers(1, 1 << 30, size=n)


def inject_label_noise(targets, classes, rate, draws):
    """Targets with each row, independently with probability ``rate``, replaced by a uniformly
    random other class of ``classes`` (binary: the label flipped)."""
    uniforms, offsets = draws
    classes = np.asarray(classes)
    current = np.searchsorted(classes, targets)
    replaced = classes[(current + 1 + (offsets - 1) % (len(classes) - 1)) % len(classes)]
    return np.where(uniforms < rate, replaced, targets)
