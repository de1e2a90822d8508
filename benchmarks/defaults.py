"""The no-flag question (issue 34 §1): candidates for train's default against VW, noisy labels.

Which learner, with ``auto`` or not, with ``--normalize`` or not, should ``streamherd train`` be
when a user gives no flags? Every candidate against Vowpal Wabbit, on real data with noisy
training labels.

    python benchmarks/defaults.py [--data ../shared/data] [-j N] [--seeds 1]
        [--datasets a,b] [--candidates x,y] [--noise 0,0.1,0.3] [--quick] [--report-only]
        [--write-readme]

Data: the binary and multiclass sets of the shared data folder (train -> test, or a fixed 80/20
split of a seeded shuffle of a single file, as benchmarks/auto.py), and two regression sets: a
generated linear one and spambase's capital-letter run length (log1p of its feature 57) from its
54 word and character frequencies. Binary labels are written as +1/-1 (agaricus ships 1/0).
Each training label is corrupted with probability 0, 0.1 or 0.3 (seeded; the test labels are
clean): a binary label flipped, a class replaced by another class drawn uniformly, a real value
replaced by another training line's. One pass.

Every run is whole commands, as a user runs them: ``python -m streamherd train FLAGS train -f
model``, then ``predict -m model test`` (its summary's error rate or average squared loss) and,
for classification, ``predict --proba`` (log-loss and Brier score computed here); VW through
``python -m vowpalwabbit``: ``--loss_function logistic --link logistic`` (binary), ``--oaa K
--probabilities --loss_function logistic`` (multiclass), its default squared loss (regression).
"VW tuned" picks VW's learning rate on the test set among 2^-5..2^3 (every other power), as
auto.py does: an optimistic VW. Multiclass runs add ``--multiclass joint`` to every flagged
candidate (joint is also what no flags gives), regression runs add ``--loss squared``.

Results are cached per (dataset, candidate, noise, seed) in benchmarks/out/defaults.json, saved
after every run: an interrupted run resumes, a later session adds candidates or seeds without
rerunning the others (a run whose command changed is run again; each records the commit it ran,
and ``--rerun`` runs chosen candidates again after their code changed). The tables compare each
candidate with VW untuned per noise level: mean test error, wins/ties/losses over the data sets
(a tie: errors equal to 3 decimals), Wilcoxon's signed-rank test on the paired errors (scipy;
two-sided p), mean log-loss and Brier score of ``--proba``, and the mean wall time of ``train``.
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import auto  # noqa: E402
import calibration  # noqa: E402
from throughput import machine, machine_line, replace_section  # noqa: E402

START, END = "<!-- defaults:start -->", "<!-- defaults:end -->"
CACHE = HERE / "out" / "defaults.json"
NOISES = auto.NOISES
TASK_NAMES = {"b": "binary", "m": "multiclass", "r": "regression"}
BINARY = {**auto.TASKS, "agaricus": ("agaricus.train.svm", "agaricus.test.svm")}
MULTICLASS = auto.MULTICLASS_TASKS
REGRESSION = ("synthetic linear", "spambase capitals", "synthetic prices")
QUICK_DATASETS = ("agaricus", "spambase", "dna", "synthetic linear")
# the learners, one line each: (train's flags, the tasks it runs on: b binary, m multiclass,
# r regression); each runs as written and with --normalize. A learner with a hyperparameter
# runs with it auto (its default grid); the registry (streamherd/learners) names them.
LEARNERS = (
    ("--algo pa2 -C 1", "bmr"),                 # the default of earlier versions
    ("--algo pa2 -C 1 --multiclass ova", "m"),  # ... one binary learner per class
    ("--algo pa1 -C auto", "bmr"),
    ("--algo pa2 -C auto", "bmr"),
    ("--algo nherd-e -C auto", "bmr"),
    ("--algo nherd-p -C auto", "bmr"),
    ("--algo nherd-d -C auto", "bmr"),
    ("--algo arow-p -r auto", "bmr"),
    ("--algo arow-d -r auto", "bmr"),
    ("--algo arow-p -r auto --center", "r"),    # the constant starting at the mean label
    ("--algo arow-d -r auto --center", "r"),
    ("--algo nherd-p -C auto --center", "r"),
    ("--algo pa2 -C auto --center", "r"),
    ("--algo narow-p --narow-b auto", "bm"),
    ("--algo narow-d --narow-b auto", "bm"),
    ("--algo cw --eta auto", "bm"),
    ("--algo scw1 -C auto", "bm"),
    ("--algo scw2 -C auto", "bm"),
    ("--algo sop -a auto", "bm"),
    ("--algo perceptron", "bm"),                # no hyperparameter
    ("--algo avg-perceptron", "bm"),            # no hyperparameter
    ("--algo auto", "bmr"),                     # the learners with a form for the task
)
QUICK_LEARNERS = ("", "--race 0", "--algo pa2 -C 1", "--algo pa2 -C auto", "--algo nherd-p -C auto",
                  "--algo arow-p -r auto", "--algo scw1 -C auto", "--algo auto")
DEFAULT_LABEL = "(no flags)"
VW_UNTUNED, VW_TUNED = "VW", "VW tuned (optimistic)"
LEAST_SQUARES = "least squares (offline)"


@dataclass(frozen=True)
class Candidate:
    label: str
    tasks: str
    flags: tuple = ()
    vw: str = ""     # "untuned" or "tuned" for VW, "" for streamherd

    def command(self, task):
        """train's flags for a task (multiclass: joint named, regression: squared loss); VW's,
        with the learning rates it tries when tuned."""
        if self.vw:
            rates = [f"-l {rate:g}" for rate in auto.VW_RATES] if self.vw == "tuned" else []
            return [*vw_flags(task, "K"), *rates]
        extra = {"m": [] if not self.flags or "--multiclass" in self.flags
                 else ["--multiclass", "joint"], "r": ["--loss", "squared"], "b": []}[task]
        return [*self.flags, *extra]


def candidates():
    # the default (no flags: learners.DEFAULTS, raced), and its bank unraced beside it
    found = [Candidate(DEFAULT_LABEL, "bmr"),
             Candidate(f"{DEFAULT_LABEL} --race 0", "bmr", ("--race", "0"))]
    for flags, tasks in LEARNERS:
        for normalize in ((), ("--normalize",)):
            words = (*flags.split(), *normalize)
            found.append(Candidate(" ".join(words) or DEFAULT_LABEL, tasks, words))
    return found + [Candidate(VW_UNTUNED, "bmr", vw="untuned"),
                    Candidate(VW_TUNED, "bmr", vw="tuned"),
                    Candidate(LEAST_SQUARES, "r", vw=LEAST_SQUARES)]


# ---------------------------------------------------------------- data

@dataclass
class Prepared:
    """One (dataset, noise, seed): its files (native format and VW's), the test truth."""
    task: str
    train: Path
    test: Path
    train_vw: Path
    test_vw: Path
    truth: np.ndarray          # binary: +1/-1; multiclass: class index; regression: value
    classes: list
    train_lines: int


def first_token(line):
    return line.split(None, 1)[0].split("|")[0]


def relabel(line, label):
    token = first_token(line)
    return label + line[len(token):] if line.startswith(token) else f"{label} {line}"


def task_of(name):
    return "b" if name in BINARY else "m" if name in MULTICLASS else "r"


def regression_lines(name, data):
    """(train lines, test lines) of a regression set: generated, or derived from spambase."""
    if name == "synthetic prices":   # dense, unscaled, positive features and a large offset
        rng = np.random.default_rng(20261129)
        scales, weights = rng.uniform(1.0, 50.0, 8), rng.normal(0.0, 2.0, 8)
        lines = []
        for _ in range(4000):
            values = np.abs(rng.normal(0.0, 1.0, 8)) * scales
            y = 300.0 + values @ weights + rng.normal(0.0, 2.0)
            lines.append(f"{y:.2f} " + " ".join(f"{i + 1}:{v:.3f}" for i, v in enumerate(values)))
        return lines[:3000], lines[3000:]
    if name == "synthetic linear":
        rng = np.random.default_rng(20261128)
        weights = rng.normal(0.0, 2.0, 200)
        lines = []
        for _ in range(6000):
            index = np.sort(rng.choice(200, 12, replace=False))
            values = rng.normal(0.0, 1.0, 12)
            y = 20.0 + values @ weights[index] + rng.normal(0.0, 1.0)
            lines.append(f"{y:.4f} " + " ".join(f"{i + 1}:{v:.4f}"
                                                  for i, v in zip(index, values)))
        return lines[:4800], lines[4800:]
    parts = []
    for file in ("spambase.train.svm", "spambase.test.svm"):
        part = []
        for line in auto.read_lines(data / file):
            cells = dict(cell.split(":") for cell in line.split()[1:])
            y = np.log1p(float(cells.get("57", 0.0)))
            part.append(f"{y:.5f} " + " ".join(f"{i}:{v}" for i, v in cells.items()
                                                if int(i) <= 54))
        parts.append(part)
    return parts


def corrupt(lines, task, noise, seed):
    """The training lines with each label corrupted with probability ``noise`` (seeded)."""
    if task == "b":
        return auto.noisy(lines, noise, seed)
    rng = np.random.default_rng(seed)
    flips = rng.random(len(lines)) < noise
    labels = [first_token(line) for line in lines]
    if task == "m":
        classes = sorted(set(labels))
        return [relabel(line, rng.choice([c for c in classes if c != label])) if flip else line
                for line, label, flip in zip(lines, labels, flips)]
    return [relabel(line, labels[rng.integers(len(lines))]) if flip else line
            for line, flip in zip(lines, flips)]


def prepare(name, data, noise, seed, folder):
    task = task_of(name)
    if task == "r":
        train_lines, test_lines = regression_lines(name, data)
    else:
        train_lines, test_lines = auto.split(data, *(BINARY | MULTICLASS)[name])
    if task == "b":   # +1/-1 everywhere (agaricus ships 1/0; VW's logistic loss wants -1/1)
        train_lines, test_lines = ([auto.with_label(line, auto.label_of(line)) for line in part]
                                   for part in (train_lines, test_lines))
    train_lines = corrupt(train_lines, task, noise, 1000 * seed + round(100 * noise))
    classes = (calibration.sorted_classes(first_token(line) for line in train_lines)
               if task == "m" else [])
    ids = {c: str(k + 1) for k, c in enumerate(classes)} or None
    test_lines = [line for line in test_lines if task != "m" or first_token(line) in ids]
    suffix = ".vw" if "|" in train_lines[0] else ".svm"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [calibration.write(folder / file, lines) for file, lines in (
        (f"train{suffix}", train_lines), (f"test{suffix}", test_lines),
        ("vw-train.vw", [calibration.as_vw(line, ids) for line in train_lines]),
        ("vw-test.vw", [calibration.as_vw(line, ids) for line in test_lines]))]
    labels = [first_token(line) for line in test_lines]
    truth = (np.array([classes.index(c) for c in labels]) if task == "m"
             else np.array(labels, float))
    return Prepared(task, *paths, truth, classes, len(train_lines))


# ---------------------------------------------------------------- runs

def run(*command):
    """(stdout, stderr) of a command; a failure raises RuntimeError with its last words."""
    proc = subprocess.run([*map(str, command)], capture_output=True, text=True, cwd=HERE.parent)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))}: "
                           + (proc.stderr.strip().splitlines() or ["exit"])[-1])
    return proc.stdout, proc.stderr


def streamherd(*args):
    return run(sys.executable, "-m", "streamherd", *args)


def vowpal(*args):
    return run(sys.executable, "-m", "vowpalwabbit", "--quiet", *args)


def run_streamherd(flags, prep, folder):
    model = folder / "model.npz"
    started = time.perf_counter()
    streamherd("train", *flags, prep.train, "-f", model, "--quiet")
    result = {"train_seconds": time.perf_counter() - started}
    summary = streamherd("predict", "-m", model, prep.test, "-p", os.devnull)[1]
    if prep.task == "r":
        result["mse"] = float(summary.rsplit("average squared loss = ", 1)[1].split()[0])
        return result
    result["error"] = float(summary.rsplit("error rate = ", 1)[1].split()[0])
    proba = streamherd("predict", "-m", model, prep.test, "--proba", "--quiet")[0]
    if prep.task == "b":
        result.update(probability_metrics(np.array(proba.split(), float), prep))
    else:
        order = {c: k for k, c in enumerate(prep.classes)}
        result.update(probability_metrics(calibration.class_columns(proba, order), prep))
    return result


def probability_metrics(p, prep):
    """Log-loss and Brier score of probabilities against the test truth."""
    if prep.task == "b":
        metrics = calibration.binary_metrics(p, prep.truth > 0)
    else:
        metrics = calibration.multiclass_metrics(p, prep.truth)
    return {"logloss": metrics["log-loss"], "brier": metrics["Brier"]}


def vw_flags(task, classes):
    """VW's training flags for a task (``classes``: the K of --oaa K)."""
    return {"b": ["--loss_function", "logistic", "--link", "logistic"],
            "m": ["--oaa", str(classes), "--probabilities", "--loss_function", "logistic"],
            "r": []}[task]


def run_vw_once(prep, folder, rate):
    """VW's result at learning ``rate`` (None: its default)."""
    model, out = folder / "vw.model", folder / "vw.pred"
    learning = () if rate is None else ("-l", rate)
    started = time.perf_counter()
    vowpal("-d", prep.train_vw, *vw_flags(prep.task, len(prep.classes)), *learning, "-f", model)
    result = {"train_seconds": time.perf_counter() - started}
    vowpal("-d", prep.test_vw, "-t", "-i", model, "-p", out,
           *(("--probabilities",) if prep.task == "m" else ()))
    rows = out.read_text().splitlines()
    if prep.task == "r":
        predicted = np.array([float(row.split()[0]) for row in rows])
        return {**result, "mse": float(np.mean((predicted - prep.truth) ** 2))}
    if prep.task == "b":
        p = np.array([float(row.split()[0]) for row in rows])
        error = float(np.mean((p > 0.5) != (prep.truth > 0)))
    else:
        p = np.zeros((len(rows), len(prep.classes)))
        for i, row in enumerate(rows):
            for cell in row.split():
                k, value = cell.split(":")
                p[i, int(k) - 1] = float(value)
        error = float(np.mean(p.argmax(axis=1) != prep.truth))
    return {**result, "error": error, **probability_metrics(p, prep)}


def run_vw(kind, prep, folder):
    if kind == "untuned":
        return run_vw_once(prep, folder, None)
    key = "mse" if prep.task == "r" else "error"
    tried = [(run_vw_once(prep, folder, rate), rate) for rate in auto.VW_RATES]
    best, rate = min(tried, key=lambda pair: pair[0][key])
    return {**best, "rate": rate,
            "train_seconds": sum(result["train_seconds"] for result, _ in tried)}


def least_squares(prep):
    """The test MSE of ordinary least squares (with an intercept) fitted offline on the
    training file: the regression sets' floor for a linear model."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import LinearRegression

    started = time.perf_counter()
    X, y = load_svmlight_file(str(prep.train))
    X_test, _ = load_svmlight_file(str(prep.test), n_features=X.shape[1])
    fitted = LinearRegression().fit(X, y)
    return {"train_seconds": time.perf_counter() - started,
            "mse": float(np.mean((fitted.predict(X_test) - prep.truth) ** 2))}


def run_job(candidate, prep, command):
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        if candidate.vw == LEAST_SQUARES:
            return least_squares(prep)
        if candidate.vw:
            return run_vw(candidate.vw, prep, folder)
        return run_streamherd(command, prep, folder)


# ---------------------------------------------------------------- cache and schedule

def key_of(dataset, label, noise, seed):
    return f"{dataset}|{label}|{noise:g}|{seed}"


def load_cache(path=CACHE):
    return json.loads(path.read_text()) if path.exists() else {}


def save_cache(cache, path=CACHE):
    """Write the cache whole or not at all (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(cache, indent=1, sort_keys=True))
    partial.replace(path)


def measure(args, datasets, chosen, cache):
    """Run every (dataset, candidate, noise, seed) the cache lacks, ``args.jobs`` at a time,
    saving the cache after each."""
    rerun = [c for c in chosen if args.rerun and any(w in c.label for w in args.rerun.split(","))]
    pending = {}
    for name in datasets:
        task = task_of(name)
        for noise in args.noise:
            for seed in seeds_of(noise, args.seeds):
                for candidate in chosen:
                    key = key_of(name, candidate.label, noise, seed)
                    command = candidate.command(task)
                    stale = candidate in rerun or cache.get(key, {}).get("command") != command
                    if task in candidate.tasks and stale:
                        pending.setdefault((name, noise, seed), []).append((key, candidate,
                                                                            command))
    total = sum(map(len, pending.values()))
    print(f"{total} runs to do ({len(cache)} cached)", flush=True)
    version = code_version()
    groups = iter(pending.items())
    in_flight, unfinished = {}, {}   # future -> its run; a group's folder -> its runs left
    done, failed, started = 0, 0, time.perf_counter()
    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    with tempfile.TemporaryDirectory() as root:
        try:
            while True:
                # the next group's files are written only when the pool is about to run dry:
                # at most one or two groups on disk at a time
                while len(in_flight) < 2 * args.jobs and (group := next(groups, None)):
                    (name, noise, seed), jobs = group
                    folder = Path(root) / str(len(unfinished))
                    prep = prepare(name, args.data, noise, seed, folder)
                    unfinished[folder] = len(jobs)
                    for key, candidate, command in jobs:
                        future = pool.submit(timed, run_job, candidate, prep, command)
                        in_flight[future] = (key, command, prep.train_lines, folder)
                if not in_flight:
                    break
                finished, _ = concurrent.futures.wait(
                    in_flight, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in finished:
                    key, command, train_lines, folder = in_flight.pop(future)
                    unfinished[folder] -= 1
                    if not unfinished[folder]:
                        shutil.rmtree(folder)
                    done += 1
                    try:
                        result = future.result()
                    except RuntimeError as error:
                        failed += 1
                        print(f"[{done}/{total}] {key}: FAILED {error}", flush=True)
                        continue
                    cache[key] = {**result, "command": command, "train_lines": train_lines,
                                  "date": datetime.date.today().isoformat(),
                                  "load": os.getloadavg()[0], "streamherd": version}
                    save_cache(cache)
                    shown = {k: round(v, 4) for k, v in result.items() if isinstance(v, float)}
                    print(f"[{done}/{total}] {key} {shown}", flush=True)
        finally:   # Ctrl-C: the queued runs are dropped, the finished ones are in the cache
            pool.shutdown(wait=True, cancel_futures=True)
    print(f"{done - failed} runs in {time.perf_counter() - started:.0f} s, {failed} failed",
          flush=True)


def code_version():
    """The repository's commit, "+changes" when streamherd/ differs from it: a cached run
    is of the code it ran (--rerun to run it again after a change)."""
    def git(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              cwd=HERE.parent).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "streamherd") else "")


def seeds_of(noise, seeds):
    """The noise seeds of a noise level: one for clean labels (the seed flips nothing)."""
    return range(seeds if noise else 1)


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return {**result, "seconds": time.perf_counter() - started}


# ---------------------------------------------------------------- tables

def per_dataset(cache, datasets, label, noise, seeds, metric):
    """{dataset: the metric's mean over the cached seeds}, data sets with every seed cached."""
    found = {}
    for name in datasets:
        values = [cache.get(key_of(name, label, noise, seed), {}).get(metric)
                  for seed in seeds_of(noise, seeds)]
        if values and None not in values:
            found[name] = statistics.mean(values)
    return found


def wilcoxon_p(mine, theirs):
    from scipy.stats import wilcoxon

    differences = [a - b for a, b in zip(mine, theirs)]
    if not any(differences):
        return "- (all equal)"
    return f"{wilcoxon(mine, theirs).pvalue:.3f}"


def task_table(cache, datasets, chosen, task, noise, seeds):
    """The markdown rows of one task and noise level, sorted by the mean error (regression: by
    the mean of each set's MSE over VW's)."""
    names = [name for name in datasets if task_of(name) == task]
    metric = "mse" if task == "r" else "error"
    reference = per_dataset(cache, names, VW_UNTUNED, noise, seeds, metric)
    rows, absent = [], []
    for candidate in chosen:
        if task not in candidate.tasks:
            absent.append(candidate.label)
            continue
        mine = per_dataset(cache, names, candidate.label, noise, seeds, metric)
        if not mine:
            continue
        shared = [name for name in mine if name in reference]
        ours, vws = [mine[n] for n in shared], [reference[n] for n in shared]
        wins = sum(round(a, 3) < round(b, 3) for a, b in zip(ours, vws))
        ties = sum(round(a, 3) == round(b, 3) for a, b in zip(ours, vws))
        cells = {"candidate": f"`{candidate.label}`", "sets": str(len(mine)),
                 "W/T/L vs VW": f"{wins}/{ties}/{len(shared) - wins - ties}",
                 "Wilcoxon p": wilcoxon_p(ours, vws) if shared else "-"}
        if candidate.label == VW_UNTUNED:
            cells.update({"W/T/L vs VW": "(reference)", "Wilcoxon p": "-"})
        if task == "r":
            ratio = statistics.mean(a / b for a, b in zip(ours, vws)) if shared else np.inf
            cells["MSE / VW's"] = f"{ratio:.3f}"
            cells.update({name: f"{mine[name]:.4g}" if name in mine else "-" for name in names})
            order = ratio
        else:
            order = statistics.mean(mine.values())
            cells["mean error"] = f"{order:.4f}"
            for metric_name, title in (("logloss", "log-loss"), ("brier", "Brier")):
                values = per_dataset(cache, names, candidate.label, noise, seeds, metric_name)
                cells[title] = f"{statistics.mean(values.values()):.4f}" if values else "-"
        seconds = per_dataset(cache, names, candidate.label, noise, seeds, "train_seconds")
        cells["train s"] = f"{statistics.mean(seconds.values()):.2f}"
        rows.append((order, cells))
    rows.sort(key=lambda row: row[0])
    if not rows:
        return []
    header = list(rows[0][1])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells[h] for h in header) + " |" for _, cells in rows]
    if absent:
        lines += ["", "Not applicable to this task (not run): "
                  + ", ".join(f"`{label}`" for label in absent) + "."]
    return lines


def report(cache, datasets, chosen, noises, seeds, stamp):
    lines = [START, "## Defaults: the no-flag question (issue 34)", "", stamp, "",
             "`(no flags)`: the default (streamherd/learners' DEFAULTS: binary `--algo arow-p -r "
             "auto`, multiclass `--algo scw1 -C auto --normalize`, regression `--algo arow-p -r "
             "auto --normalize`; the bank raced, `--race 0`: every member to the end); `--algo "
             "pa2 -C 1`: the default of earlier versions (its runs made with no flags then). The "
             "race changes a bank only past 16,384 training lines (a9a and w8a here): the other "
             "auto rows there were run before it, as whole banks."
             " One pass; training labels corrupted with the given probability (seeded), test "
             "labels clean. Error: `predict`'s test error rate; log-loss and Brier: of `predict "
             "--proba` (binary: the probability of +1; multiclass: of every class, Brier summed "
             "over the classes). W/T/L: the data sets where the candidate's error is lower than, "
             "equal to (to 3 decimals) or higher than VW untuned's; p: Wilcoxon's signed-rank test"
             " on the paired errors, two-sided. VW: `--loss_function logistic --link logistic` "
             "(multiclass `--oaa K --probabilities --loss_function logistic`, regression its "
             "squared loss), its defaults otherwise; VW tuned: its learning rate chosen on the "
             "test set among 2^-5..2^3, every other power (optimistic). Multiclass runs add "
             "`--multiclass joint` to every flagged candidate (joint is what no flags gives); "
             "regression runs add `--loss squared` (as real-valued labels choose by default). "
             "train s: the mean wall time of the `train` command (VW tuned: its five runs). Each "
             "mean is over the data sets the row has results for (its sets column)."]
    for task in "bmr":
        names = [name for name in datasets if task_of(name) == task]
        if not names:
            continue
        lines += ["", f"### {TASK_NAMES[task]}: {', '.join(names)}"]
        for noise in noises:
            table = task_table(cache, datasets, chosen, task, noise, seeds)
            if table:
                lines += ["", f"Noise {noise:g}:", "", *table]
    lines += ["", "### The targets: no flags against VW untuned, and the race", "",
              *targets(cache, datasets, noises, seeds)]
    return "\n".join([*lines, END])


def targets(cache, datasets, noises, seeds):
    """The issue's targets, met or missed, from the cache: no flags' mean test error at most VW
    untuned's at every noise level; binary log-loss and Brier, multiclass log-loss, at most
    VW's at 0 and 10% noise; regression against least squares; the race's choices against the
    whole bank's (`--race 0`)."""
    lines, raced = [], f"{DEFAULT_LABEL} --race 0"

    def mean_of(label, names, noise, metric):
        values = per_dataset(cache, names, label, noise, seeds, metric)
        shared = [n for n in names if n in values]
        return statistics.mean(values[n] for n in shared) if shared else math.nan, shared

    for task in "bmr":
        names = [name for name in datasets if task_of(name) == task]
        metrics = {"b": ("error", "logloss", "brier"), "m": ("error", "logloss"),
                   "r": ("mse",)}[task]
        for noise in noises:
            for metric in metrics:
                if metric in ("logloss", "brier") and noise > 0.1 and task == "b":
                    continue   # (binary: the targets are at 0 and 10% noise)
                vw, shared = mean_of(VW_UNTUNED, names, noise, metric)
                ours = statistics.mean(per_dataset(cache, shared, DEFAULT_LABEL, noise, seeds,
                                                   metric).values() or [math.nan])
                verdict = "met" if ours <= vw else "missed"
                lines.append(f"- {TASK_NAMES[task]}, noise {noise:g}, mean {metric}: {ours:.4g} "
                             f"against VW's {vw:.4g}: {verdict}")
            if task == "r":
                floor = per_dataset(cache, names, LEAST_SQUARES, noise, seeds, "mse")
                ours = per_dataset(cache, names, DEFAULT_LABEL, noise, seeds, "mse")
                ratios = ", ".join(f"{name} {ours[name] / floor[name]:.2f}" for name in names
                                   if name in ours and name in floor)
                lines.append(f"- regression, noise {noise:g}, MSE over least squares': {ratios}")
    pairs = [(name, noise) for name in datasets for noise in noises]
    metric_of = {"b": "error", "m": "error", "r": "mse"}
    same = [pair for pair in pairs if per_dataset(cache, [pair[0]], DEFAULT_LABEL, pair[1], seeds,
                                                  metric_of[task_of(pair[0])])
            == per_dataset(cache, [pair[0]], raced, pair[1], seeds,
                           metric_of[task_of(pair[0])])]
    lines.append(f"- the race: no flags' test error or MSE equals the whole bank's (`{raced}`) on "
                 f"{len(same)} of {len(pairs)} (data set, noise) pairs" + (
                     ": " + ", ".join(f"{n} at {x:g}" for n, x in pairs if (n, x) not in same)
                     + " differ" if len(same) < len(pairs) else ""))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--seeds", type=int, default=1, help="noise seeds 0..N-1")
    parser.add_argument("--datasets", help="comma-separated; a name matches if it contains one")
    parser.add_argument("--candidates", help="comma-separated; a label matches if it contains "
                        "one (write --candidates='--algo auto' for a label with dashes)")
    parser.add_argument("--noise", default=",".join(f"{n:g}" for n in NOISES),
                        help="comma-separated noise levels")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {', '.join(QUICK_DATASETS)}, a few candidates")
    parser.add_argument("--rerun", help="comma-separated: the candidates (as --candidates) run "
                        "again though cached, e.g. after the code they run changed")
    parser.add_argument("--report-only", action="store_true", help="tables from the cache")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    args.noise = [float(n) for n in args.noise.split(",")]
    datasets = [*BINARY, *MULTICLASS, *REGRESSION]
    chosen = candidates()
    if args.quick:
        datasets = [name for name in datasets if name in QUICK_DATASETS]
        chosen = [c for c in chosen if c.vw or " ".join(w for w in c.flags
                                                          if w != "--normalize") in QUICK_LEARNERS]
    if args.datasets:
        wanted = args.datasets.split(",")
        datasets = [name for name in datasets if any(w in name for w in wanted)]
    if args.candidates:
        wanted = args.candidates.split(",")
        chosen = [c for c in chosen if any(w in c.label for w in wanted)
                  or c.label == VW_UNTUNED]   # the reference of every comparison
    cache = load_cache()
    if not args.report_only:
        try:
            measure(args, datasets, chosen, cache)
        except KeyboardInterrupt:
            raise SystemExit(f"interrupted: the finished runs are in {CACHE}; the same command "
                             "runs the others") from None
    # the options that choose what the tables show
    shown_options = [*(["--quick"] if args.quick else []),
                     *(f"--{name}={value}" for name, value in (
                         ("datasets", args.datasets), ("candidates", args.candidates),
                         ("noise", ",".join(f"{n:g}" for n in args.noise)),
                         ("seeds", args.seeds))
                       if value and value not in (1, ",".join(f"{n:g}" for n in NOISES)))]
    command = shlex.join(["python", "benchmarks/defaults.py", *shown_options])
    shown = [cache[key] for key in (key_of(name, c.label, noise, seed) for name in datasets
                                    for c in chosen for noise in args.noise
                                    for seed in seeds_of(noise, args.seeds)) if key in cache]
    loads = [entry["load"] for entry in shown if "load" in entry] or [os.getloadavg()[0]]
    dates = sorted({entry["date"] for entry in shown}) or [str(datetime.date.today())]
    versions = sorted({entry.get("streamherd", "unrecorded") for entry in shown})
    stamp = (f"`{command}`, runs of {' to '.join(dict.fromkeys([dates[0], dates[-1]]))}; "
             f"{machine_line(machine())}; load average (1 min) after each run: "
             f"{min(loads):.1f} to {max(loads):.1f} ({os.cpu_count()} cores); streamherd at "
             f"commit {', '.join(versions)}.")
    block = report(cache, datasets, chosen, args.noise, args.seeds, stamp)
    print(block)
    if args.write_readme:
        replace_section(START, END, block)


if __name__ == "__main__":
    main()
