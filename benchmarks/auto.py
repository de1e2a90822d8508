"""``-C auto`` (issue 20 §2): the bank's time against one learner, and its test error under label
noise against VW logistic and the best fixed value.

    python benchmarks/auto.py [--data ../shared/data] [--pairs 3] [--skip-speed]
        [--skip-quality] [--skip-multiclass] [--write-readme]

Speed: on the 1M-line benchmark file (make_data.py; benchmarks/data), the wall time of
``train --algo A -X auto`` (11 values) against ``train --algo A`` (one learner), whole commands,
run in alternating pairs; the figure is the ratio of the medians (target <= 3).

Quality: on the binary data sets of the real data folder (train -> test, or a fixed 80/20 split
of a seeded shuffle of a single file), each training label flipped with probability 0, 0.1 or
0.3 (seeded; the test labels clean), one pass, default flags (no ``--normalize``: it lowered
the accuracy of both learners on spambase and news20 here):
- ``nherd-p -C auto`` and ``arow-p -r auto`` (the default grid), their test error;
- ``--algo auto`` (banks of nherd-p, arow-p, scw1 and pa2 over their grids), its test error and
  the (learner, value) it chose;
- the best fixed value on the test set (an optimistic oracle): the test error of every value of
  the grid, from the bank's own members (``--save-bank``: each is the single run of its value,
  tests/test_auto.py), the lowest;
- VW 9 logistic (``--loss_function logistic``, its defaults otherwise, one pass) with its
  learning rate chosen on the test set among 2^-5..2^3 (every other power): an optimistic VW.
Targets: auto's error <= VW's on >= 70% of the tasks at noise 0.3, and within 0.5 point of the
best fixed value on average.

Multiclass: on usps, mnist5k (its first 4000 lines train, its last 1000 test), pendigits, dna and
r8, joint multiclass, one pass, default flags: nherd-p, arow-p and pa2 at their default value
and with their hyperparameter auto (a TaskBank), and the best grid value on the test set; the
time of the auto command over the single one.
"""
import argparse
import datetime
import gzip
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from throughput import machine, machine_line, replace_section, streamherd  # noqa: E402

# each part writes its own section (--skip-speed, --skip-quality, --skip-multiclass leave the
# others' as they are)
SPEED = ("<!-- auto-speed:start -->", "<!-- auto-speed:end -->")
QUALITY = ("<!-- auto-quality:start -->", "<!-- auto-quality:end -->")
MULTICLASS = ("<!-- auto-multiclass:start -->", "<!-- auto-multiclass:end -->")
# name -> (train file, test file or None: mnist5k's first 4000 lines train, its last 1000 test)
MULTICLASS_TASKS = {
    "usps": ("usps.train.svm.gz", "usps.test.svm.gz"),
    "mnist5k": ("mnist5k.svm.gz", None),
    "pendigits": ("pendigits.scale.svm", "pendigits.scale.t.svm"),
    "dna": ("dna.scale.svm", "dna.scale.t.svm"),
    "r8": ("r8.train.vw.gz", "r8.test.vw.gz"),
}
MULTICLASS_AUTOS = (("nherd-p", "-C"), ("arow-p", "-r"), ("pa2", "-C"))
SPEED_FILE = "synth-v1-n1000000-f40-m1000000-s20240601.svm"
SPEED_ALGOS = (("nherd-p", "-C"), ("arow-p", "-r"), ("pa2", "-C"))
# name -> (train file, test file or None: a fixed 80/20 split of the train file)
TASKS = {
    "a9a": ("a9a.svm.gz", "a9a.t.svm.gz"),
    "spambase": ("spambase.train.svm", "spambase.test.svm"),
    "rcv1_small": ("rcv1_small.train.vw.gz", "rcv1_small.test.vw.gz"),
    "news20 ibm/mac": ("news20_comp_ibm_vs_mac.train.svm.gz", "news20_comp_ibm_vs_mac.test.svm.gz"),
    "news20 elec/med": ("news20_sci_elec_vs_med.train.svm.gz",
                        "news20_sci_elec_vs_med.test.svm.gz"),
    "news20 guns/mideast": ("news20_talk_guns_vs_mideast.train.svm.gz",
                            "news20_talk_guns_vs_mideast.test.svm.gz"),
    "sms_spam": ("sms_spam.vw", None),
    "amazon books": ("amazon_books.vw.gz", None),
    "amazon dvd": ("amazon_dvd.vw.gz", None),
    "amazon electronics": ("amazon_electronics.vw.gz", None),
    "amazon kitchen": ("amazon_kitchen.vw.gz", None),
    "w8a": ("w8a.svm.gz", None),
}
NOISES = (0.0, 0.1, 0.3)
AUTOS = (("nherd-p", "-C"), ("arow-p", "-r"))
VW_RATES = tuple(2.0 ** e for e in range(-5, 4, 2))


def read_lines(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [line.rstrip("\n") for line in f]


def split(data, train, test):
    """(train lines, test lines): the given pair, or 80/20 of a seeded shuffle of one file."""
    lines = read_lines(data / train)
    if test is not None:
        return lines, read_lines(data / test)
    random.Random(0).shuffle(lines)
    cut = int(len(lines) * 0.8)
    return lines[:cut], lines[cut:]


def label_of(line):
    return 1.0 if float(line.split(None, 1)[0].split("|")[0]) > 0 else -1.0


def with_label(line, y):
    head, _, rest = line.partition(" ")
    return f"{'1' if y > 0 else '-1'} {rest}" if "|" not in head else \
        f"{'1' if y > 0 else '-1'}{head[head.index('|'):]} {rest}"


def noisy(lines, noise, seed):
    rng = np.random.default_rng(seed)
    flips = rng.random(len(lines)) < noise
    return [with_label(line, -label_of(line)) if flip else line
            for line, flip in zip(lines, flips)]


def as_vw(line):
    """An svmlight line as VW text (namespace f, the indices as names); a VW line as it is."""
    if "|" in line:
        return line
    label, _, features = line.partition(" ")
    return f"{label} |f {features.strip()}"


def test_errors(models, test_path):
    """Each model's test error rate (the sign of its margin), the test file parsed once."""
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader
    from streamherd.model import load_model

    metas = [load_model(m) for m in models]
    space = FeatureSpace.from_meta(metas[0][0])
    wrong, total = np.zeros(len(models)), 0
    for chunk in ChunkReader([str(test_path)], features=space):
        y = np.where(chunk.labels > 0, 1.0, -1.0)
        rows = np.repeat(np.arange(chunk.n_examples), np.diff(chunk.indptr))
        for k, (_, arrays) in enumerate(metas):
            margins = np.bincount(rows, arrays["mean"][chunk.indices] * chunk.values,
                                  minlength=chunk.n_examples)
            wrong[k] += np.sum((margins > 0) != (y > 0))
        total += chunk.n_examples
    return wrong / total


def auto_errors(algo, flag, train_path, test_path, folder):
    """(the auto model's test error, the best fixed value's, the value auto chose, the best)."""
    from streamherd.model import load_model

    model = Path(folder) / f"{algo}.npz"
    streamherd("train", "--algo", algo, flag, "auto", train_path, "-f", model,
               "--save-bank", "--quiet")
    meta, _ = load_model(model)
    grid = meta["auto"]["grid"]
    members = [Path(folder) / f"{algo}.bank{k}.npz" for k in range(1, len(grid) + 1)]
    errors = test_errors(members, test_path)
    chosen = grid.index(meta["auto"]["chosen"])
    best = int(np.argmin(errors))
    return errors[chosen], errors[best], grid[chosen], grid[best]


def algo_auto_error(train_path, test_path, folder):
    """(the --algo auto model's test error, the member it chose)."""
    from streamherd.model import load_model

    model = Path(folder) / "algo-auto.npz"
    streamherd("train", "--algo", "auto", train_path, "-f", model, "--quiet")
    meta, _ = load_model(model)
    return test_errors([model], test_path)[0], meta["auto"]["chosen_label"]


def vw_error(train_lines, test_lines):
    """(VW logistic's lowest test error over VW_RATES, that rate)."""
    from vowpalwabbit import Workspace

    y = np.array([label_of(line) for line in test_lines])
    best = (np.inf, None)
    for rate in VW_RATES:
        vw = Workspace(f"--loss_function logistic -l {rate} --quiet")
        for line in train_lines:
            vw.learn(as_vw(line))
        margins = np.array([vw.predict(as_vw(line)) for line in test_lines])
        vw.finish()
        best = min(best, (float(np.mean((margins > 0) != (y > 0))), rate))
    return best


def quality(data):
    rows = []
    for name, (train, test) in TASKS.items():
        train_lines, test_lines = split(data, train, test)
        suffix = ".vw" if "|" in train_lines[0] else ".svm"
        for noise in NOISES:
            lines = noisy(train_lines, noise, seed=int(noise * 100))
            with tempfile.TemporaryDirectory() as folder:
                train_path = Path(folder) / f"train{suffix}"
                test_path = Path(folder) / f"test{suffix}"
                train_path.write_text("\n".join(lines) + "\n")
                test_path.write_text("\n".join(test_lines) + "\n")
                row = {"task": name, "noise": noise, "vw": vw_error(lines, test_lines)}
                for algo, flag in AUTOS:
                    row[algo] = auto_errors(algo, flag, train_path, test_path, folder)
                row["algo auto"] = algo_auto_error(train_path, test_path, folder)
            rows.append(row)
            print(name, noise, {k: v for k, v in row.items() if k not in ("task", "noise")},
                  flush=True)
    return rows


def speed(data, pairs):
    """{algo: (median one-learner seconds, median auto seconds, flag)}, and "load": the load
    average at the start and the end."""
    path = data / SPEED_FILE
    if not path.exists():
        raise SystemExit(f"{path} is missing: run benchmarks/make_data.py")
    times = {"load": os.getloadavg()[0]}
    for cores in (None, {0}):   # every core; then one (both commands), as on a 1-core machine
        for algo, flag in SPEED_ALGOS:
            single, bank = [], []
            for _ in range(pairs + 1):   # the first pair warms the caches (numba's, the file's)
                for runs, extra in ((single, ()), (bank, (flag, "auto"))):
                    started = time.perf_counter()
                    streamherd("train", "--algo", algo, *extra, path, "--quiet", cores=cores)
                    runs.append(time.perf_counter() - started)
            times[algo, cores is not None] = (statistics.median(single[1:]),
                                              statistics.median(bank[1:]), flag)
            print(algo, "one core" if cores else "", times[algo, cores is not None],
                  flush=True)
    times["load"] = (times["load"], os.getloadavg()[0])
    return times


def error_rate(model, test):
    """The test error rate predict reports for ``model`` on ``test``."""
    out = streamherd("predict", "-m", model, test, "-p", os.devnull)
    return float(out.rsplit("error rate = ", 1)[1].split()[0])


def multiclass(data):
    """Rows (task, learner, default error, auto error, chosen value, best value's error and
    value, auto's time / one learner's): joint multiclass, one pass, default flags."""
    from streamherd.model import load_model

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for name, (train, test) in MULTICLASS_TASKS.items():
            if not (data / train).exists():
                print(f"{name}: {data / train} is absent, skipped", flush=True)
                continue
            if test is None:
                lines = read_lines(data / train)
                suffix = ".vw" if "|" in lines[0] else ".svm"
                train_path, test_path = folder / f"{name}.train{suffix}", \
                    folder / f"{name}.test{suffix}"
                train_path.write_text("\n".join(lines[:4000]) + "\n")
                test_path.write_text("\n".join(lines[4000:]) + "\n")
            else:
                train_path, test_path = data / train, data / test
            for algo, flag in MULTICLASS_AUTOS:
                one, bank = folder / "one.npz", folder / "auto.npz"
                started = time.perf_counter()
                streamherd("train", "--algo", algo, train_path, "-f", one, "--quiet")
                single_seconds = time.perf_counter() - started
                started = time.perf_counter()
                streamherd("train", "--algo", algo, flag, "auto", train_path, "-f", bank,
                           "--save-bank", "--quiet")
                bank_seconds = time.perf_counter() - started
                meta = load_model(bank)[0]
                grid = meta["auto"]["grid"]
                members = [error_rate(folder / f"auto.bank{k}.npz", test_path)
                           for k in range(1, len(grid) + 1)]
                best = int(np.argmin(members))
                row = {"task": name, "algo": f"{algo} {flag}",
                       "default": error_rate(one, test_path), "auto": error_rate(bank, test_path),
                       "chosen": meta["auto"]["chosen"], "best": members[best],
                       "best_value": grid[best], "ratio": bank_seconds / single_seconds}
                rows.append(row)
                print(row, flush=True)
    return rows


def multiclass_section(rows):
    lines = ["Test error (%) after one pass, joint multiclass, default flags (no "
             "`--normalize`): each learner at its default value, with its hyperparameter "
             "`auto` (the default grid, 11 values: a TaskBank, each member in turn over each "
             "chunk, chosen on the lowest 0/1 loss of the later half of the pass; "
             "streamherd/selection), and the best grid value on the test set (an oracle, from "
             "`--save-bank`'s members). Time: auto's whole command over one learner's (one "
             "run each: small files, where start-up counts).", "",
             "| task | learner | default | auto (value) | best (value) | time ratio |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['algo']} | {percent(r['default'])} | "
                     f"{percent(r['auto'])} ({r['chosen']:g}) | {percent(r['best'])} "
                     f"({r['best_value']:g}) | {r['ratio']:.1f}x |")
    return lines


def percent(x):
    return f"{100 * x:.1f}"


def speed_section(times, pairs):
    lines = [f"Whole `train` commands on `benchmarks/data/{SPEED_FILE}` (1M lines, -b 18), "
             f"medians of {pairs} alternating pairs after a warm-up pair; auto: the default "
             f"grid, 11 values. Target: auto <= 3x one learner.", "",
             f"Load average (1 min) at the start and the end: {times['load'][0]:.1f}, "
             f"{times['load'][1]:.1f} ({os.cpu_count()} cores; jobs beside the benchmark take "
             "cores from the parser thread of both commands and from the bank's threads).", "",
             "Every core: the bank runs its members in groups of whole cache lines, one thread "
             "each (learners/packing.py group_sizes; 11 members on two cores: 8 and 3), beside the "
             "parser thread both commands have. One core (both commands pinned to core 0, as on "
             "a 1-core machine): the bank's members on one thread, the parser on the same core.",
             "", "| learner | cores | one value (s) | auto, 11 values (s) | ratio |",
             "|---|---|---|---|---|"]
    for (algo, pinned), (single, bank, flag) in ((k, v) for k, v in times.items()
                                                 if k != "load"):
        cores = "one" if pinned else f"every ({os.cpu_count()})"
        lines.append(f"| {algo} {flag} auto | {cores} | {single:.2f} | {bank:.2f} | "
                     f"{bank / single:.2f}x |")
    return lines


def quality_section(rows):
    lines = ["Test error (%) after one pass on training labels flipped with the given "
             "probability (test labels clean), default flags. *auto*: the value the bank chose "
             "(on the later half of the pass: the highest AUC of the progressive margins among "
             "the values within one standard error of the lowest progressive 0/1 loss, "
             "streamherd/selection); *best*: the best grid value on the test set (an oracle); "
             "*algo auto*: `--algo auto` (nherd-p, arow-p, scw1 and pa2 over their grids), the "
             "learner and value it chose; VW: logistic, its learning rate chosen on the test "
             f"set among {', '.join(f'{r:g}' for r in VW_RATES)}.", "",
             "| task | noise | nherd-p auto (C) | nherd-p best (C) | arow-p auto (r) | "
             "arow-p best (r) | algo auto | VW best (l) |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [row["task"], f"{row['noise']:g}"]
        for algo, _ in AUTOS:
            auto, best, chosen, best_value = row[algo]
            cells += [f"{percent(auto)} ({chosen:g})", f"{percent(best)} ({best_value:g})"]
        error, label = row["algo auto"]
        cells.append(f"{percent(error)} ({label})")
        cells.append(f"{percent(row['vw'][0])} ({row['vw'][1]:g})")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| learner | noise | tasks with auto <= VW | mean auto - best (points) |",
              "|---|---|---|---|"]
    for algo, _ in AUTOS:
        for noise in NOISES:
            picked = [r for r in rows if r["noise"] == noise]
            wins = sum(r[algo][0] <= r["vw"][0] for r in picked)
            gap = statistics.mean(100 * (r[algo][0] - r[algo][1]) for r in picked)
            lines.append(f"| {algo} | {noise:g} | {wins} of {len(picked)} "
                         f"({100 * wins / len(picked):.0f}%) | {gap:.2f} |")
    for noise in NOISES:
        picked = [r for r in rows if r["noise"] == noise]
        wins = sum(r["algo auto"][0] <= r["vw"][0] for r in picked)
        lines.append(f"| algo auto | {noise:g} | {wins} of {len(picked)} "
                     f"({100 * wins / len(picked):.0f}%) | - |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-multiclass", action="store_true")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    if not args.data.is_dir():
        args.data = Path("/work/shared/data")
    stamp = (f"`python benchmarks/auto.py --write-readme`, {datetime.date.today()}; "
             f"{machine_line(machine())}.")
    sections = []
    if not args.skip_speed:
        sections.append((SPEED, ["## auto hyperparameters: time of the bank (issue 20 §2)", "",
                                 stamp, ""] + speed_section(speed(HERE / "data", args.pairs),
                                                            args.pairs)))
    if not args.skip_quality:
        sections.append((QUALITY, ["## auto hyperparameters: test error under label noise "
                                   "(issue 20 §2)", "", stamp, ""]
                         + quality_section(quality(args.data))))
    if not args.skip_multiclass:
        sections.append((MULTICLASS, ["## auto hyperparameters on multiclass data", "", stamp,
                                      ""] + multiclass_section(multiclass(args.data))))
    for (start, end), lines in sections:
        block = "\n".join([start, *lines, end])
        print(block)
        if args.write_readme:
            replace_section(start, end, block)

if __name__ == "__main__":
    main()
