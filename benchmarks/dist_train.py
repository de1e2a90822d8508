"""dist-train (issue 22 §1): test error of iterative parameter mixing after P rounds against one
stream (``train --passes P``), and wall time.

    python benchmarks/dist_train.py [--rounds 5] [--workers 2] [--write-readme]

Data: a9a (train/test files of /work/shared/data), rcv1_small (train/test) and the 1M-line
generated svmlight benchmark file (its first 900,000 lines to train, the last 100,000 to
test, -b 20). The compressed train files are decompressed into a temporary folder first, so
that dist-train can cut them into byte ranges (a compressed file is one shard). Each learner
runs once as ``train --passes P --holdout_off`` (one stream, every example every pass) and as
``dist-train --workers W --shards N --passes P`` for N = 2, 4 and each mix; test error from
``streamherd predict``'s mistakes over the test file; wall time of the whole command
(dist-train's includes starting its local cluster of W processes, whose workers load the
cached kernels), after an untimed warm-up ``train`` of each learner. Run once (the figures
are one run each, not medians).
"""
import argparse
import datetime
import gzip
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_data  # noqa: E402
from throughput import machine, machine_line, replace_section, run_once  # noqa: E402

START, END = "<!-- dist-train:start -->", "<!-- dist-train:end -->"
SHARED = Path("/work/shared/data")
SYNTH_TRAIN_LINES = 900_000
# (learner, mix, weights): the Gaussian learners' rules, and the first-order learners' mean
RUNS = (("arow-p", "prec", "uniform"), ("arow-p", "mean", "uniform"),
        ("nherd-p", "prec", "uniform"), ("avg-perceptron", "mean", "uniform"),
        ("pa2", "mean", "uniform"), ("pa2", "mean", "mistakes"))


def plain(source, folder):
    """``source`` decompressed into ``folder`` (or itself when not compressed)."""
    if source.suffix != ".gz":
        return source
    target = folder / source.with_suffix("").name
    with gzip.open(source, "rb") as f, open(target, "wb") as out:
        shutil.copyfileobj(f, out, 1 << 20)
    return target


def split(source, folder, train_lines, test_from=None, name="synth"):
    """The first ``train_lines`` lines of ``source`` and its lines from ``test_from`` on
    (default: the rest), as NAME.train.svm and NAME.test.svm in ``folder``."""
    test_from = train_lines if test_from is None else test_from
    train, test = folder / f"{name}.train.svm", folder / f"{name}.test.svm"
    with open(source, "rb") as f, open(train, "wb") as a, open(test, "wb") as b:
        for number, line in enumerate(f):
            if number < train_lines:
                a.write(line)
            elif number >= test_from:
                b.write(line)
    return train, test


def datasets(folder):
    """name -> (train file, test file, extra flags)."""
    sets = {}
    if SHARED.is_dir():
        sets["a9a"] = (plain(SHARED / "a9a.svm.gz", folder), SHARED / "a9a.t.svm.gz", [])
        sets["rcv1_small"] = (plain(SHARED / "rcv1_small.train.vw.gz", folder),
                              SHARED / "rcv1_small.test.vw.gz", [])
    data = make_data.ensure(make_data.Spec(lines=1_000_000), gz=False)
    sets["synth 1M"] = (*split(data.svm, folder, SYNTH_TRAIN_LINES), ["-b", "20"])
    return sets


def _streamherd(*args):
    return [sys.executable, "-m", "streamherd", *map(str, args)]


def test_error(model, test):
    """Percent of the test file's labeled examples that the model predicts wrong (predict's
    summary line: "error rate = R (M mistakes in N labeled examples)")."""
    proc = subprocess.run(_streamherd("predict", "-m", model, test), capture_output=True,
                          text=True, check=True)
    found = re.search(r"error rate = ([0-9.]+)", proc.stderr)
    if found is None:
        raise SystemExit(f"no error rate in predict's output:\n{proc.stderr}")
    return 100.0 * float(found.group(1))


def measure(name, train, test, flags, rounds, workers, folder, log):
    rows = []
    # warm-up, untimed: the first run of a format or a learner in a fresh tree compiles kernels
    for algo in dict.fromkeys(run[0] for run in RUNS):
        _timed(_streamherd("train", train, "--algo", algo, "--quiet", *flags), log)
    for algo in dict.fromkeys(run[0] for run in RUNS):
        model = folder / "one.npz"
        one = _streamherd("train", train, "--algo", algo, "--passes", rounds, "--holdout_off",
                          "-f", model, "--quiet", *flags)
        seconds = _timed(one, log)
        baseline = (test_error(model, test), seconds)
        for _, mix, weights in (run for run in RUNS if run[0] == algo):
            for shards in (2, 4):
                cmd = _streamherd("dist-train", train, "--algo", algo, "--passes", rounds,
                                  "--workers", workers, "--shards", shards, "--mix", mix,
                                  "--mix-weights", weights, "-f", model, "--quiet", *flags)
                seconds = _timed(cmd, log)
                rows.append((name, algo, f"{mix} ({weights})", shards, test_error(model, test),
                             baseline[0], seconds, baseline[1]))
                log(_row(rows[-1]))
    return rows


def _timed(cmd, log):
    seconds, _, code, text, _ = run_once(cmd)
    if code != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({code}):\n{text}")
    return seconds


def _row(row):
    name, algo, mix, shards, error, one_error, seconds, one_seconds = row
    return (f"| {name} | {algo} | {mix} | {shards} | {error:.2f} | {one_error:.2f} | "
            f"{error - one_error:+.2f} | {seconds:.1f} | {one_seconds:.1f} | "
            f"{one_seconds / seconds:.2f}x |")


HEADER = ["| data | learner | mix | shards | test error % | one stream % | difference "
          "(points) | dist-train s | train s | speed vs train |",
          "|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, (train, test, flags) in datasets(Path(folder)).items():
            rows += measure(name, train, test, flags, args.rounds, args.workers, Path(folder),
                            log)
    lines = [*HEADER, *map(_row, rows)]
    print("\n".join(lines))
    if args.write_readme:
        replace_section(START, END, "\n".join([
            START, f"## Distributed training (`dist-train`, {args.rounds} rounds)", "",
            f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; one run "
            f"each (`python benchmarks/dist_train.py --write-readme`). dist-train: "
            f"`--workers {args.workers} --shards N --passes {args.rounds}` (a local cluster of "
            f"{args.workers} processes); one stream: `train --passes {args.rounds} "
            f"--holdout_off`. Test error of `predict` on the test file; difference: "
            f"dist-train's minus one stream's; speed: train's wall time over dist-train's.", "",
            *lines, END]))


if __name__ == "__main__":
    main()
