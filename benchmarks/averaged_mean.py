"""The averaged mean of the Gaussian learners against their last iterate, under label noise
(issue 34 §4).

    python benchmarks/averaged_mean.py [--data ../shared/data] [--datasets a,b] [--noise 0,0.1,0.3]
        [--chunk-rows 1] [--check] [--report-only] [--write-readme]

The averaged perceptron predicts with the average of its weight vectors over the stream; does the
same averaging help the Gaussian learners, whose mean mu_t is the weight vector they predict
with, when the labels are noisy? For the default learners (binary: ``--algo arow-p -r auto``;
multiclass: ``--algo scw1 -C auto --normalize --multiclass joint``), on every binary and
multiclass set of benchmarks/defaults.py (its data, its split, its seeded label noise: the test
labels clean), one pass in file order, three weight vectors are compared on the test set:

- last: the model ``python -m streamherd train FLAGS train -f model`` writes (the last iterate);
- average: (1/T) sum_t mu_t, mu_t the mean after example t of the T training examples (the
  variances are not averaged: they play no part in the predicted label);
- second half: the same average over t > T/2 only;
- average (own value): the average of the grid value auto's rule chooses for the averages: every
  value of auto's grid is driven, the average of the means before each row predicts it, and the
  bank's rule (streamherd.selection.scores: the later half of the rows, binary its 0/1 loss with
  the AUC within a standard error, multiclass its 0/1 loss) picks a value on those predictions,
  as auto picks one on the last iterates' - the average as a flag that tunes its own value;
- bank of both: the same rule choosing among the last iterates and the averages of every value
  together - the average as a bank member. (The rule applied to the last iterates alone is
  checked to choose what train's auto chose.)

The averages come from a learner driven here, from Python, with the hyperparameter the command's
``auto`` chose (the model's meta) over the rows the package's own reader parses, ``--chunk-rows``
rows at a time (1: exact, each row's mean counted; k > 1: the mean after each k rows counted k
times). A chunk changes the mean only on the slots of its rows' features (in every class block for
joint multiclass), so the sum of the means is kept lazily, as the averaged perceptron keeps its
own: sum_t mu_t = T mu_T - sum_c t_c delta_c, delta_c the change chunk c made and t_c the rows
before it. Each average is written as a copy of the command's model with its mean replaced, and
every figure is ``predict``'s error rate of a model file (streamherd.training.predict, the
command's code, in this process).

``--check`` first verifies, on spambase and dna at noise 0.1, that the driven learner's last
mean and variances equal the command's model (max abs difference), that the lazy sums (and the
progressive scores of the averages) equal those of the means summed after every row, and how
the test errors of ``--chunk-rows 1`` and 32 compare.

Results are cached per (dataset, noise, seed, chunk rows) in benchmarks/out/averaged_mean.json;
the tables give per task and noise level the mean test error of each, the wins/ties/losses of the
average against the last iterate (a tie: equal to 3 decimals) and Wilcoxon's signed-rank test on
the paired errors (two-sided p).
"""
import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import defaults  # noqa: E402
from throughput import machine, machine_line, replace_section  # noqa: E402

from streamherd import learners, tasks, training  # noqa: E402
from streamherd.learners.base import UnstableUpdate  # noqa: E402
from streamherd.io.reader import TRAINING_WORKERS, ChunkReader  # noqa: E402
from streamherd.model import (ModelFlags, OnlineModel, UpdateFailed, load_model,  # noqa: E402
                              save_model)
from streamherd.selection.scores import RECENT, loss_scores, margin_scores  # noqa: E402

START, END = "<!-- averaged-mean:start -->", "<!-- averaged-mean:end -->"
CACHE = HERE / "out" / "averaged_mean.json"
# the default learner of each task, as train's flags
FLAGS = {"b": ("--algo", "arow-p", "-r", "auto"),
         "m": ("--algo", "scw1", "-C", "auto", "--normalize", "--multiclass", "joint")}
DATASETS = (*defaults.BINARY, *defaults.MULTICLASS)
CHECK_DATASETS = ("spambase", "dna")
CHECK_NOISE = 0.1
CHECK_CHUNK_ROWS = 32
KINDS = ("last", "average", "second half", "average (own value)", "bank of both")


class Piece(NamedTuple):
    """Rows a..b of a parsed chunk, as the tasks' learn reads them (the chunk's own entry
    arrays, its row pointers sliced)."""

    importance: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_examples: int


class Progressive(NamedTuple):
    """Each training row's target, importance and progressive prediction (before the row is
    learned) by the last iterate and by the average of the means before it (binary: margins;
    multiclass: class ids)."""

    targets: list
    importance: list
    last: list
    average: list


class MeanSums:
    """sum_t mu_t over every row, and over the rows after ``half``, kept lazily: after each chunk
    only the slots it touched are read."""

    def __init__(self, half, brute_force=False):
        self.half = half
        self.rows = 0
        self.previous = np.zeros(0)    # the mean after the last chunk
        self.weighted = np.zeros(0)    # sum_c t_c delta_c over the touched slots
        self.at_half = None            # (rows, mean, weighted) when the half was reached
        self.brute_force = brute_force
        self.direct = np.zeros(0)      # brute force: the means summed after every chunk
        self.direct_half = None
        self.score_gap = 0.0           # brute force: the most a progressive score differs

    def grow(self, size):
        """A new class block starts with a zero mean: its sums are zeros."""
        for name in ("previous", "weighted", "direct"):
            array = getattr(self, name)
            if len(array) < size:
                setattr(self, name, np.concatenate([array, np.zeros(size - len(array))]))

    def add(self, mean, touched, rows):
        """A chunk of ``rows`` rows that changed ``mean`` only on the slots ``touched``."""
        self.grow(len(mean))
        change = mean[touched] - self.previous[touched]
        self.weighted[touched] += self.rows * change
        self.previous[touched] = mean[touched]
        self.rows += rows
        if self.brute_force:
            self.direct[:len(mean)] += rows * mean
        if self.at_half is None and self.rows >= self.half:
            self.at_half = (self.rows, mean.copy(), self.weighted.copy())
            self.direct_half = self.direct.copy()

    def sum_of_means(self, mean):
        return self.rows * mean - self.weighted[:len(mean)]

    def averages(self, mean):
        """(the average mean over every row, the average over the rows after the half)."""
        half_rows, half_mean, half_weighted = self.at_half
        before = np.zeros(len(mean))
        before[:len(half_mean)] = half_rows * half_mean - half_weighted[:len(half_mean)]
        total = self.sum_of_means(mean)
        return total / self.rows, (total - before) / (self.rows - half_rows)

    def brute_force_averages(self, mean):
        before = np.zeros(len(mean))
        before[:len(self.direct_half)] = self.direct_half
        total = self.direct[:len(mean)]
        return total / self.rows, (total - before) / (self.rows - self.at_half[0])


def drive(meta, task, train, train_lines, chunk_rows, brute_force=False, options=None,
          record=False):
    """A learner of the model ``meta``'s algorithm and hyperparameters (no auto; ``options``:
    values that replace them), fed the rows of ``train`` ``chunk_rows`` at a time: (its
    OnlineModel at the end, its MeanSums, and with ``record`` a Progressive of every row)."""
    assert chunk_rows == 1 or not record, "a Progressive holds one prediction per chunk of 1 row"
    flags = ModelFlags(meta["algo"], {**meta["hyperparameters"], **(options or {})},
                       meta["bits"], meta["bias"], task == "m",
                       choice=tasks.choose(None, "joint" if task == "m" else None),
                       calibration="none")
    model = OnlineModel.new(flags)
    dim = model.space.dim
    sums = MeanSums(train_lines // 2, brute_force)
    seen = Progressive([], [], [], []) if record else None
    reader = ChunkReader([train], features=model.space, workers=TRAINING_WORKERS)
    for chunk in reader:
        model.settle(chunk)
        chunk, targets = model.task.targets(chunk)
        learner = model.learner
        for a in range(0, chunk.n_examples, chunk_rows):
            b = min(a + chunk_rows, chunk.n_examples)
            piece = Piece(chunk.importance[a:b], chunk.indptr[a:b + 1], chunk.indices,
                          chunk.values, b - a)
            slots = chunk.indices[chunk.indptr[a]:chunk.indptr[b]].astype(np.int64)
            if record:
                seen.average.append(averaged_prediction(
                    model.task, learner, sums, slots, chunk.values[chunk.indptr[a]:
                                                                   chunk.indptr[b]]))
            _, predicted = model.task.learn(learner, targets[a:b], piece)
            if record:
                seen.last.append(predicted[0])
                seen.targets.append(targets[a])
                seen.importance.append(chunk.importance[a])
            if learner.blocks > 1:   # joint multiclass: the slots of every class block
                slots = (np.arange(learner.blocks)[:, None] * dim + slots[None, :]).ravel()
            sums.add(learner.mean, slots, b - a)
    assert sums.rows == train_lines, (sums.rows, train_lines)
    return model, sums, seen


def averaged_prediction(task, learner, sums, slots, values):
    """The prediction of one row (its ``slots`` and ``values``) by the average of the means
    before it: binary, its margin; multiclass, the class of largest score among the classes
    seen before the row (-1 before any)."""
    sums.grow(len(learner.mean))
    if sums.rows == 0 or (task.kind == "multiclass" and task.known == 0):
        return 0.0 if task.kind == "binary" else -1
    at = slots if task.kind == "binary" else \
        np.arange(task.known)[:, None] * learner.dim + slots[None, :]
    scores = (sums.rows * learner.mean[at] - sums.weighted[at]) @ values / sums.rows
    if sums.brute_force:   # the scores of the means summed after every chunk
        direct = sums.direct[at] @ values / sums.rows
        sums.score_gap = max(sums.score_gap, float(np.max(np.abs(scores - direct))))
    return float(scores) if task.kind == "binary" else int(np.argmax(scores))


def test_error(meta, arrays, test, folder, name):
    """predict's error rate of the model (meta, arrays) on ``test``."""
    path = folder / f"{name}.npz"
    save_model(path, meta, arrays)
    mistakes, labeled = training.predict(path, [test], output=folder / f"{name}.txt", quiet=True)
    return mistakes / labeled


def measure_one(name, data, noise, seed, chunk_rows, check=False, grid=False):
    """The test errors of the last iterate, the average and the second-half average of one
    (dataset, noise, seed); ``check``: also how the driven learner and the lazy sums agree."""
    task = defaults.task_of(name)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        prep = defaults.prepare(name, data, noise, seed, folder)
        command = (*FLAGS[task], str(prep.train), "-f", str(folder / "last.npz"), "--quiet")
        started = time.perf_counter()
        defaults.streamherd("train", *command)
        train_seconds = time.perf_counter() - started
        meta, arrays = load_model(folder / "last.npz")
        started = time.perf_counter()
        model, sums, _ = drive(meta, task, prep.train, prep.train_lines, chunk_rows, check)
        drive_seconds = time.perf_counter() - started
        driven = model.arrays()
        average, second_half = sums.averages(driven["mean"])
        hyperparameter = meta["auto"]["hyperparameter"]
        result = {
            "hyperparameter": hyperparameter,
            "value": meta["hyperparameters"][hyperparameter],
            "train_lines": prep.train_lines,
            "last": test_error(meta, arrays, prep.test, folder, "last-command"),
            "average": test_error(meta, {**arrays, "mean": average}, prep.test, folder,
                                  "average"),
            "second half": test_error(meta, {**arrays, "mean": second_half}, prep.test, folder,
                                      "second-half"),
            "train_seconds": train_seconds, "drive_seconds": drive_seconds,
        }
        if grid:
            started = time.perf_counter()
            result.update(own_value_errors(meta, task, prep, folder, result))
            result["grid_seconds"] = time.perf_counter() - started
        if check:
            result["driven last"] = test_error(meta, driven, prep.test, folder, "last-driven")
            result["max |driven - command|"] = {
                key: float(np.max(np.abs(driven[key] - arrays[key]))) if
                driven[key].shape == arrays[key].shape else f"shapes {driven[key].shape} / "
                f"{arrays[key].shape}" for key in arrays}
            direct, direct_half = sums.brute_force_averages(driven["mean"])
            _, recorded, _ = drive(meta, task, prep.train, prep.train_lines, 1,
                                   brute_force=True, record=True)
            result["max |lazy - summed|"] = {
                "average": float(np.max(np.abs(average - direct))),
                "second half": float(np.max(np.abs(second_half - direct_half))),
                "progressive scores": recorded.score_gap}
    return result


class GridRuns(NamedTuple):
    """The progressive predictions of every value of auto's grid, last iterate and average."""

    values: list
    default: float
    targets: np.ndarray
    importance: np.ndarray
    last: np.ndarray       # rows x values (binary: margins; multiclass: class ids)
    average: np.ndarray
    alive: np.ndarray      # the values whose learner did not fail


def grid_runs(meta, task, prep):
    """Each value of the grid auto searched, driven one row at a time, its progressive
    predictions recorded."""
    auto = meta["auto"]
    name = auto["hyperparameter"]
    default = next(h.default for h in learners.spec(meta["algo"]).hyperparameters
                   if h.name == name)
    rows, values = prep.train_lines, auto["grid"]
    kind = float if task == "b" else np.int64
    last = np.zeros((rows, len(values)), kind)
    average = np.zeros((rows, len(values)), kind)
    alive = np.ones(len(values), bool)
    targets = importance = None
    for k, value in enumerate(values):
        try:
            _, _, seen = drive(meta, task, prep.train, rows, 1, options={name: value},
                               record=True)
        except (UnstableUpdate, UpdateFailed):
            alive[k] = False
            continue
        last[:, k], average[:, k] = seen.last, seen.average
        targets, importance = np.asarray(seen.targets), np.asarray(seen.importance, float)
    return GridRuns(values, default, targets, importance, last, average, alive)


def bank_choice(runs, task, members):
    """The member the bank's rule chooses among ``members`` (("last" or "average", grid index)
    pairs): its Scores on the later half of the rows (at most RECENT), margin_scores' 0/1 loss
    and AUC for binary, loss_scores' 0/1 loss for multiclass; ties as Scores.ranking."""
    rows = len(runs.targets)
    window = slice(rows - min(RECENT, rows - rows // 2), rows)
    y, weight = runs.targets[window], runs.importance[window]
    columns = np.stack([getattr(runs, kind)[window, k] for kind, k in members], axis=1)
    alive = np.array([runs.alive[k] for _, k in members])
    if task == "b":
        scores = margin_scores(y, weight, columns, alive)
    else:
        scores = loss_scores(weight, (columns != y[:, None]).astype(float), alive)
    values = [runs.values[k] for _, k in members]
    return members[int(scores.ranking(values, [runs.default] * len(members))[0])]


def own_value_errors(meta, task, prep, folder, result):
    """The bank's rule applied to the averages (each value's average predicting every row from
    the rows before it) and to last iterates and averages together: the value each chooses and
    the test error of what it chooses; and whether the rule, applied to the last iterates alone,
    chooses what train's auto chose."""
    runs = grid_runs(meta, task, prep)
    indices = range(len(runs.values))
    chosen_last = bank_choice(runs, task, [("last", k) for k in indices])
    chosen_average = bank_choice(runs, task, [("average", k) for k in indices])
    chosen_both = bank_choice(runs, task, [(kind, k) for kind in ("last", "average")
                                           for k in indices])
    name = meta["auto"]["hyperparameter"]
    errors = {("last", meta["hyperparameters"][name]): result["last"],
              ("average", meta["hyperparameters"][name]): result["average"]}

    def error_of(kind, k):
        value = runs.values[k]
        if (kind, value) not in errors:
            model, sums, _ = drive(meta, task, prep.train, prep.train_lines, 1,
                                   options={name: value})
            arrays = model.arrays()
            mean = arrays["mean"] if kind == "last" else sums.averages(arrays["mean"])[0]
            errors[kind, value] = test_error(model.meta(), {**arrays, "mean": mean}, prep.test,
                                             folder, f"{kind}-{k}")
        return errors[kind, value]
    return {"rule reproduces auto": runs.values[chosen_last[1]] == meta["auto"]["chosen"],
            "average own value": runs.values[chosen_average[1]],
            "average (own value)": error_of(*chosen_average),
            "bank of both chose": f"{chosen_both[0]} {runs.values[chosen_both[1]]:g}",
            "bank of both": error_of(*chosen_both)}


# ---------------------------------------------------------------- cache

def key_of(name, noise, seed, chunk_rows):
    return f"{name}|{noise:g}|{seed}|{chunk_rows}"


def stamped(result):
    return {**result, "date": datetime.date.today().isoformat(), "load": os.getloadavg()[0],
            "streamherd": defaults.code_version()}


def shown(result):
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()
            if k not in ("date", "streamherd")}


def run_checks(args):
    """The driven learner against the command's model, the lazy sums against the direct ones,
    and chunks of 1 row against chunks of CHECK_CHUNK_ROWS: printed, returned as text lines."""
    lines = []
    for name in CHECK_DATASETS:
        exact = measure_one(name, args.data, CHECK_NOISE, 0, 1, check=True)
        print(name, "chunk rows 1:", shown(exact), flush=True)
        chunked = measure_one(name, args.data, CHECK_NOISE, 0, CHECK_CHUNK_ROWS)
        print(name, f"chunk rows {CHECK_CHUNK_ROWS}:", shown(chunked), flush=True)
        differences = exact["max |driven - command|"]
        lines.append(
            f"- {name}, noise {CHECK_NOISE:g} ({exact['hyperparameter']} = {exact['value']:g}): "
            f"the driven learner against the command's model, max |difference| "
            + ", ".join(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                        for key, value in differences.items())
            + f" (test error {exact['driven last']:.4f} / {exact['last']:.4f}); the lazy sums "
            f"against the means summed after every row, max |difference| "
            + ", ".join(f"{key} {value:.3g}" for key, value in
                        exact["max |lazy - summed|"].items())
            + f"; test error of the average / second half with chunks of 1 row "
            f"{exact['average']:.4f} / {exact['second half']:.4f}, of {CHECK_CHUNK_ROWS} rows "
            f"{chunked['average']:.4f} / {chunked['second half']:.4f}.")
    return lines


def measure(args, datasets, cache):
    todo = [(name, noise) for name in datasets for noise in args.noise
            if key_of(name, noise, 0, args.chunk_rows) not in cache]
    print(f"{len(todo)} runs to do ({len(cache)} cached)", flush=True)
    started = time.perf_counter()
    for k, (name, noise) in enumerate(todo, 1):
        result = stamped(measure_one(name, args.data, noise, 0, args.chunk_rows,
                                     grid=args.chunk_rows == 1))
        cache[key_of(name, noise, 0, args.chunk_rows)] = result
        defaults.save_cache(cache, CACHE)
        print(f"[{k}/{len(todo)}] {name} noise {noise:g}: {shown(result)}", flush=True)
    print(f"{len(todo)} runs in {time.perf_counter() - started:.0f} s", flush=True)


# ---------------------------------------------------------------- tables

def kinds_of(results):
    """The predictors every result has (the grid's two need --chunk-rows 1)."""
    return [kind for kind in KINDS if all(kind in r for r in results)]


def task_table(cache, names, noise, chunk_rows):
    """The markdown rows of one task and noise level: the data sets' errors, then the means."""
    results = {name: cache[key] for name in names
               if (key := key_of(name, noise, 0, chunk_rows)) in cache}
    if not results:
        return []
    kinds = kinds_of(results.values())
    header = ["data set", "auto chose", *kinds]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in results.items():
        cells = {kind: f"{r[kind]:.4f}" for kind in kinds}
        if "average (own value)" in cells:
            cells["average (own value)"] += f" ({r['average own value']:g})"
            cells["bank of both"] += f" ({r['bank of both chose']})"
        lines.append(f"| {name} | {r['hyperparameter']} = {r['value']:g} | "
                     + " | ".join(cells.values()) + " |")
    lines.append("| **mean** | | " + " | ".join(
        f"**{statistics.mean(r[kind] for r in results.values()):.4f}**" for kind in kinds)
        + " |")
    return lines


def summary_table(cache, datasets, noises, chunk_rows):
    """One row per task, noise level and predictor: its mean error, and the W/T/L and
    Wilcoxon's p of its errors against the last iterate's."""
    header = ["task", "noise", "sets", "predictor", "mean error", "vs last", "W/T/L vs last",
              "Wilcoxon p"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for task in "bm":
        names = [name for name in datasets if defaults.task_of(name) == task]
        for noise in noises:
            results = [cache[key] for name in names
                       if (key := key_of(name, noise, 0, chunk_rows)) in cache]
            if not results:
                continue
            last = [r["last"] for r in results]
            for kind in kinds_of(results):
                mine = [r[kind] for r in results]
                mean = statistics.mean(mine)
                cells = [defaults.TASK_NAMES[task], f"{noise:g}", str(len(results)), kind,
                         f"{mean:.4f}"]
                if kind == "last":
                    cells += ["", "(reference)", "-"]
                else:
                    wins = sum(round(a, 3) < round(b, 3) for a, b in zip(mine, last))
                    ties = sum(round(a, 3) == round(b, 3) for a, b in zip(mine, last))
                    cells += [f"{100 * (mean - statistics.mean(last)):+.2f} points",
                              f"{wins}/{ties}/{len(mine) - wins - ties}",
                              defaults.wilcoxon_p(mine, last)]
                lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(cache, datasets, noises, chunk_rows, stamp, checks):
    runs = [cache[key] for key in (key_of(name, noise, 0, chunk_rows) for name in datasets
                                   for noise in noises) if key in cache]
    agreeing = [r["rule reproduces auto"] for r in runs if "rule reproduces auto" in r]
    reproduced = f"{sum(agreeing)} of {len(agreeing)} runs"
    lines = [START, "## Averaged mean of the Gaussian learners (issue 34 §4)", "", stamp, "",
             "The default learners (binary: `--algo arow-p -r auto`; multiclass: `--algo scw1 -C "
             "auto --normalize --multiclass joint`), one pass in file order over the data sets "
             "and seeded label noise of benchmarks/defaults.py (test labels clean). Test error "
             "of the model `train` writes (last: the last iterate mu_T), of the averaged mean "
             "(1/T) sum_t mu_t (mu_t: the mean after training example t; the variances are not "
             "averaged) and of the average over the second half of the stream only (t > T/2), "
             "each as `predict` computes it from a model file. The averages come from a learner "
             "driven from Python with the value auto chose (the chosen column), fed "
             f"{chunk_rows} row{'s' if chunk_rows > 1 else ''} at a time"
             f"{' (exact: every mean counted)' if chunk_rows == 1 else ''}. Average (own value): "
             "the average of the value auto's rule (the later half of the rows; binary: 0/1 loss,"
             " AUC within a standard error; multiclass: 0/1 loss) chooses when each value's "
             "average predicts every training row from the means before it (the average as a "
             "flag that tunes its own value; the value in brackets); bank of both: the rule "
             "choosing among the last iterates and the averages of every grid value together "
             "(the average as a bank member; its choice in brackets). The rule applied to the "
             f"last iterates alone chose auto's own value in {reproduced}. W/T/L: the data sets "
             "where a predictor's error is lower than, equal to (to 3 decimals) or higher than "
             "the last iterate's; p: Wilcoxon's signed-rank test on the paired errors, "
             "two-sided."]
    if checks:
        lines += ["", "Checks (`--check`):", "", *checks]
    lines += ["", "### Summary", "", *summary_table(cache, datasets, noises, chunk_rows)]
    for task in "bm":
        names = [name for name in datasets if defaults.task_of(name) == task]
        for noise in noises:
            table = task_table(cache, names, noise, chunk_rows)
            if table:
                lines += ["", f"### {defaults.TASK_NAMES[task]}, noise {noise:g}", "", *table]
    return "\n".join([*lines, END])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    parser.add_argument("--datasets", help="comma-separated; a name matches if it contains one")
    parser.add_argument("--noise", default="0,0.1,0.3", help="comma-separated noise levels")
    parser.add_argument("--chunk-rows", type=int, default=1,
                        help="rows learned between two means counted (1: exact)")
    parser.add_argument("--check", action="store_true",
                        help="verify the driven learner and the sums first (see above)")
    parser.add_argument("--rerun", action="store_true", help="run again what is cached")
    parser.add_argument("--report-only", action="store_true", help="tables from the cache")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    args.noise = [float(n) for n in args.noise.split(",")]
    datasets = list(DATASETS)
    if args.datasets:
        wanted = args.datasets.split(",")
        datasets = [name for name in datasets if any(w in name for w in wanted)]
    cache = defaults.load_cache(CACHE)
    if args.rerun:   # the chosen data sets' runs dropped
        cache = {key: value for key, value in cache.items()
                 if key == "checks" or key.split("|")[0] not in datasets}
    checks = None
    if args.check:
        checks = run_checks(args)
        cache["checks"] = {"lines": checks, **stamped({})}
        defaults.save_cache(cache, CACHE)
    elif "checks" in cache:
        checks = cache["checks"]["lines"]
    if not args.report_only:
        measure(args, datasets, cache)
    entries = [cache[key] for key in (key_of(name, noise, 0, args.chunk_rows)
                                      for name in datasets for noise in args.noise)
               if key in cache]
    loads = [entry["load"] for entry in entries] or [os.getloadavg()[0]]
    dates = sorted({entry["date"] for entry in entries}) or [str(datetime.date.today())]
    versions = sorted({entry["streamherd"] for entry in entries}) or ["none"]
    seconds = sum(entry["train_seconds"] + entry["drive_seconds"] + entry.get("grid_seconds", 0)
                  for entry in entries)
    stamp = (f"`python benchmarks/averaged_mean.py --check --write-readme`, runs of "
             f"{' to '.join(dict.fromkeys([dates[0], dates[-1]]))}; {machine_line(machine())}; "
             f"load average (1 min) after each run: {min(loads):.1f} to {max(loads):.1f} "
             f"({os.cpu_count()} cores, shared with other jobs); streamherd at commit "
             f"{', '.join(versions)}; train, driven learners and grids {seconds:.0f} s in all.")
    block = report(cache, datasets, args.noise, args.chunk_rows, stamp, checks)
    print(block)
    if args.write_readme:
        replace_section(START, END, block)


if __name__ == "__main__":
    main()
