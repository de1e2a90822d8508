"""The grid: one run per (task, fold, noise level, algorithm).

A run searches the algorithm's hyperparameter grid and the number of passes together on a
validation split of the (noisy) training data: each grid value trains for ``max_passes`` passes
and is scored on the validation rows after every pass, so one training gives the validation
error of every pass count. The best (value, passes) is then trained afresh on the whole training
data and scored on the test data, once. As in both papers ("optimized using a single randomized
run"), every pass visits the training rows in a new random order; the orders are the same for
every algorithm and grid value, so configurations differ only in what they are.

Runs go to worker processes (``-j``); each worker loads the datasets once, at start, and keeps
the data a run prepares (rows, noisy labels, pass orders) for the next runs of the same task,
fold and noise level, which the job order puts next to each other.
"""
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from streamherd.experiment import adapter, splits
from streamherd.experiment.data import load_dataset


@dataclass(frozen=True)
class Grid:
    """The values searched for one algorithm (hyperparameter None: nothing to search)."""

    algo: str
    hyperparameter: "str | None"
    values: tuple


@dataclass(frozen=True)
class Settings:
    grids: tuple            # Grid per algorithm, in report order
    noise: tuple            # label-noise rates of the training data
    folds: int              # k of k-fold cross-validation for datasets without a test file
    max_passes: int
    validation: float       # fraction of the training rows held out to choose the configuration
    max_train: "int | None"  # at most this many (random, stratified) training rows per run
    seed: int
    curve_points: int = 200  # learning-curve samples kept per run

    @property
    def algos(self):
        return tuple(g.algo for g in self.grids)


@dataclass(frozen=True)
class Job:
    task: object   # data.Task
    fold: int
    noise: float
    algo: str


@dataclass
class RunResult:
    """One run. ``row``: the CSV row; ``validation``: (value, passes, error) of every grid
    point; ``correct``: per test row, whether the prediction was right (for McNemar's test);
    ``curve``: (examples, cumulative mistakes against the clean labels) of the first pass of
    the final training, in its order (AROW Fig. 2)."""

    job: Job
    row: dict
    validation: list = field(default_factory=list)
    correct: "np.ndarray | None" = None
    curve: "tuple | None" = None


class Prepared:
    """The rows of one (task, fold, noise level): training (with noisy targets), its
    fit/validation split, test, and the per-pass orders, built when first asked for."""

    def __init__(self, dataset, task, fold, noise, settings, fold_of):
        seed = settings.seed
        if dataset.test is None:
            rows, targets = task.problem.value_targets(dataset.train.labels)
            in_test = fold_of[rows] == fold
            train_rows, train_targets = rows[~in_test], targets[~in_test]
            test = dataset.train.take(rows[in_test])
            self.test_targets = targets[in_test]
        else:
            train_rows, train_targets = task.problem.value_targets(dataset.train.labels)
            test_rows, self.test_targets = task.problem.value_targets(dataset.test.labels)
            test = dataset.test.take(test_rows)
        if settings.max_train is not None and len(train_rows) > settings.max_train:
            keep = splits.stratified_pick(
                train_targets, settings.max_train / len(train_rows),
                splits.rng_for(seed, task.name, splits.SUBSAMPLE, fold))
            train_rows, train_targets = train_rows[keep], train_targets[keep]
        self.test = test
        self.train = dataset.train.take(train_rows)
        self.clean_targets = train_targets
        draws = splits.noise_draws(len(train_rows),
                                   splits.rng_for(seed, task.name, splits.NOISE, fold))
        self.targets = splits.inject_label_noise(train_targets, task.problem.target_values,
                                                  noise, draws)
        held_out = splits.stratified_pick(
            self.targets, settings.validation,
            splits.rng_for(seed, task.name, splits.VALIDATION, fold, round(noise * 1e6)))
        self.fit = self.train.take(np.flatnonzero(~held_out))
        self.fit_targets = self.targets[~held_out]
        self.validation = self.train.take(np.flatnonzero(held_out))
        self.validation_targets = self.targets[held_out]
        self._key = (seed, task.name, fold)
        self._fit_passes = {}
        self._train_passes = {}

    def _pass(self, cache, purpose, rows, targets, clean, number):
        if number not in cache:
            order = splits.rng_for(self._key[0], self._key[1], purpose, self._key[2],
                                   number).permutation(rows.n_examples)
            cache[number] = (targets[order], rows.take(order), clean[order])
        return cache[number]

    def fit_pass(self, number, shuffled=True):
        """(noisy targets, rows) of pass ``number`` over the fit rows (in their order when not
        ``shuffled``)."""
        if not shuffled:
            return self.fit_targets, self.fit
        targets, rows, _ = self._pass(self._fit_passes, splits.FIT_ORDER, self.fit,
                                      self.fit_targets, self.fit_targets, number)
        return targets, rows

    def train_pass(self, number, shuffled=True):
        """(noisy targets, rows, clean targets) of pass ``number`` over all training rows (in
        their order when not ``shuffled``)."""
        if not shuffled:
            return self.targets, self.train, self.clean_targets
        return self._pass(self._train_passes, splits.TRAIN_ORDER, self.train, self.targets,
                          self.clean_targets, number)


class Worker:
    """What a process needs to run jobs: the datasets (loaded once), their folds, and a small
    cache of prepared data."""

    CACHE_SIZE = 3

    def __init__(self, datasets, settings):
        self.datasets = datasets
        self.settings = settings
        self.grids = {g.algo: g for g in settings.grids}
        self.defaults = {g.algo: adapter.default_value(g.algo, g.hyperparameter)
                         if g.hyperparameter else None for g in settings.grids}
        self._folds = {}
        self._prepared = OrderedDict()

    def fold_of(self, dataset):
        if dataset.test is not None:
            return None
        if dataset.name not in self._folds:
            self._folds[dataset.name] = splits.stratified_folds(
                dataset.train.labels, self.settings.folds,
                splits.rng_for(self.settings.seed, dataset.name, splits.FOLDS))
        return self._folds[dataset.name]

    def prepared(self, job):
        key = (job.task.name, job.fold, job.noise)
        if key in self._prepared:
            self._prepared.move_to_end(key)
        else:
            dataset = self.datasets[job.task.dataset]
            self._prepared[key] = Prepared(dataset, job.task, job.fold, job.noise, self.settings,
                                           self.fold_of(dataset))
            while len(self._prepared) > self.CACHE_SIZE:
                self._prepared.popitem(last=False)
        return self._prepared[key]

    def run(self, job):
        started = time.perf_counter()
        settings = self.settings
        grid = self.grids[job.algo]
        problem = job.task.problem
        bits = self.datasets[job.task.dataset].bits
        data = self.prepared(job)
        errors = np.full((len(grid.values), settings.max_passes), np.nan)
        for v, value in enumerate(grid.values):
            model = adapter.new_model(problem, job.algo, bits, grid.hyperparameter, value,
                                      settings.seed)
            try:
                for p in range(adapter.passes(job.algo, settings.max_passes)):
                    targets, rows = data.fit_pass(p, adapter.shuffled(job.algo))
                    adapter.learn_pass(model, targets, rows)
                    errors[v, p] = np.mean(problem.loss(
                        data.validation_targets, model.predict(data.validation))) \
                        if data.validation.n_examples else 0.0
            except adapter.Diverged:
                pass  # the remaining passes of this value stay NaN: never chosen
        validation = [(value, p + 1, errors[v, p]) for v, value in enumerate(grid.values)
                      for p in range(settings.max_passes)]
        row = {
            "dataset": job.task.dataset, "task": job.task.name, "kind": problem.kind,
            "algo": job.algo,
            "noise": job.noise, "fold": job.fold,
            "hyperparameter": grid.hyperparameter or "", "value": "", "passes": "",
            "validation_error": "", "test_error": "", "train_examples": data.train.n_examples,
            "test_examples": data.test.n_examples, "updates": "", "status": "ok", "seconds": "",
        }
        result = RunResult(job, row, validation)
        if np.all(np.isnan(errors)):
            row["status"] = "diverged"
        else:
            p, v = choose(errors, grid.values, self.defaults[job.algo])
            row.update(value=grid.values[v] if grid.hyperparameter else "", passes=int(p) + 1,
                       validation_error=float(errors[v, p]))
            self._final(job, data, grid.values[v], int(p) + 1, result)
        row["seconds"] = round(time.perf_counter() - started, 3)
        return result

    def _final(self, job, data, value, passes, result):
        """Train the chosen configuration on all training rows; score it on the test rows."""
        grid = self.grids[job.algo]
        problem = job.task.problem
        model = adapter.new_model(problem, job.algo, self.datasets[job.task.dataset].bits,
                                  grid.hyperparameter, value, self.settings.seed)
        updates = 0
        try:
            for p in range(passes):
                targets, rows, clean = data.train_pass(p, adapter.shuffled(job.algo))
                count, progressive = adapter.learn_pass(model, targets, rows)
                updates += count
                if p == 0:   # mistakes against the clean labels
                    result.curve = self._curve(np.cumsum(problem.loss(clean, progressive) > 0))
        except adapter.Diverged:
            result.row["status"] = "diverged in the final training"
            return
        correct = problem.loss(data.test_targets, model.predict(data.test)) == 0
        result.correct = correct
        result.row.update(updates=updates,
                          test_error=float(1.0 - correct.mean()) if len(correct) else 0.0)

    def _curve(self, cumulative):
        n = len(cumulative)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        at = np.unique(np.linspace(1, n, self.settings.curve_points).round().astype(np.int64))
        return at, cumulative[at - 1]


def choose(errors, values, default):
    """(passes index, value index) of the lowest validation error in ``errors[value, pass]``
    (NaN: diverged, never chosen). Ties go to fewer passes, then to the value nearest the
    learner's default on a log scale: on easy tasks many configurations reach the same error,
    and the default is the neutral choice (not an end of the grid)."""
    filled = np.where(np.isnan(errors), np.inf, errors)
    if default is None:
        nearness = np.zeros(len(values))
    else:
        nearness = np.abs(np.log(np.asarray(values, float) / default))
    passes, value = np.nonzero(filled.T == filled.min())
    best = np.lexsort((nearness[value], passes))[0]
    return passes[best], value[best]


def load_datasets(specs, fmt, bits_cap, normalize):
    datasets = {}
    for spec in specs:
        dataset = load_dataset(spec, fmt=fmt, bits_cap=bits_cap, normalize=normalize)
        if dataset.name in datasets:
            from streamherd.errors import StreamherdError

            raise StreamherdError(f"two datasets are named '{dataset.name}' ({spec} and "
                                  f"{','.join(datasets[dataset.name].paths)}); rename a file")
        datasets[dataset.name] = dataset
    return datasets


def make_jobs(datasets, tasks, settings):
    """Every run, ordered so that runs sharing prepared data (task, fold, noise) are adjacent."""
    return [Job(task, fold, noise, algo)
            for task in tasks
            for fold in range(1 if datasets[task.dataset].test is not None else settings.folds)
            for noise in settings.noise
            for algo in settings.algos]


_WORKER = None


def _init_process(specs, load_options, settings):
    global _WORKER
    _WORKER = Worker(load_datasets(specs, **load_options), settings)


def _run_in_process(job):
    return _WORKER.run(job)


def run_grid(datasets, specs, load_options, jobs, settings, processes=1, on_done=None):
    """Run every job; returns the RunResults in job order. ``on_done(result)`` is called as each
    finishes (the progress bar). With ``processes`` > 1 the jobs go to that many worker
    processes, each of which loads the datasets itself."""
    if processes <= 1 or len(jobs) <= 1:
        worker = Worker(datasets, settings)
        results = []
        for job in jobs:
            results.append(worker.run(job))
            if on_done:
                on_done(results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a fresh interpreter per worker (no fork of a process that has threads); numba
    # loads the compiled kernels from its on-disk cache.
    context = multiprocessing.get_context("spawn")
    results = [None] * len(jobs)
    with ProcessPoolExecutor(max_workers=processes, mp_context=context,
                             initializer=_init_process,
                             initargs=(specs, load_options, settings)) as pool:
        futures = {pool.submit(_run_in_process, job): i for i, job in enumerate(jobs)}
        try:
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if on_done:
                    on_done(results[futures[future]])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results
