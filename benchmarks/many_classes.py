"""Training with ten classes against Vowpal Wabbit's one-against-all (``--oaa 10``), side by side.

The input is mnist5k (shared data: 5000 digits, 784 raw pixel features, about 152 non-zero a
line) repeated to each length of ``--lines`` (the copies in the stored order), as svmlight for
streamherd and as its VW twin (labels 1..10, one namespace) for VW. Every command is a whole
process (Python start-up, imports and the numba cache load included) that writes its model
(``-f``), run in rounds: a warm-up round, then ``--repeat`` rounds of every command once, so that
the machine's slow and fast minutes spread over all rows; a row gives the median and the shortest
wall time, the median CPU time (user + system, all threads) and the peak RSS (wait4). "vs VW" is
VW's median wall time divided by the row's (above 1: faster than VW). The load average is read
before and after each length.

    python benchmarks/many_classes.py [--lines 200000 1000000] [--repeat 5] [--write-readme]
"""
import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from throughput import replace_section  # noqa: E402
ROOT = HERE.parent
START, END = "<!-- many-classes:start -->", "<!-- many-classes:end -->"
VW = "VW --oaa 10"


def inputs(data, lines, folder):
    """(svmlight path, VW path) of mnist5k repeated to ``lines`` lines."""
    with gzip.open(data / "mnist5k.svm.gz", "rt") as f:
        rows = [line for line in f.read().splitlines() if line.strip()]
    svm, vw = Path(folder) / "digits.svm", Path(folder) / "digits.vw"
    with open(svm, "w") as s, open(vw, "w") as v:
        for i in range(lines):
            label, features = rows[i % len(rows)].split(" ", 1)
            s.write(f"{label} {features}\n")
            v.write(f"{int(float(label)) + 1} | {features}\n")
    return svm, vw


def commands(svm, vw, model):
    sh = [sys.executable, "-m", "streamherd", "train", str(svm), "-f", str(model), "--quiet"]
    return {
        "streamherd --algo arow-p (joint)": sh + ["--algo", "arow-p"],
        "streamherd --algo pa2 (joint)": sh + ["--algo", "pa2"],
        "streamherd --algo arow-p --multiclass ova": sh + ["--algo", "arow-p", "--multiclass",
                                                           "ova"],
        "streamherd --algo pa2 --multiclass ova": sh + ["--algo", "pa2", "--multiclass", "ova"],
        "streamherd, no flags (scw1 -C auto --normalize)": sh,
        VW: [sys.executable, "-m", "vowpalwabbit", "--oaa", "10", "-d", str(vw), "-f",
             str(model) + ".vw", "--quiet"],
    }


def timed(cmd):
    """(wall s, CPU s, peak RSS MiB) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(runs, repeat):
    for cmd in runs.values():   # warm-up: numba's cache, the page cache
        timed(cmd)
    times = {name: [] for name in runs}
    for _ in range(repeat):
        for name, cmd in runs.items():
            times[name].append(timed(cmd))
    return times


def table(times):
    vw = statistics.median(w for w, _, _ in times[VW])
    lines = ["| command | median s | best s | CPU s | peak RSS MiB | vs VW |",
             "|:---|---:|---:|---:|---:|---:|"]
    for name, runs in times.items():
        wall = statistics.median(w for w, _, _ in runs)
        lines.append(f"| {name} | {wall:.2f} | {min(w for w, _, _ in runs):.2f} | "
                     f"{statistics.median(c for _, c, _ in runs):.2f} | "
                     f"{max(m for _, _, m in runs):.0f} | {vw / wall:.2f}x |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--lines", type=int, nargs="+", default=[200_000, 1_000_000],
                        help="one table for each input length")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args(argv)
    lines = " ".join(map(str, args.lines))
    parts = [START, "## Ten classes against VW --oaa 10", "",
             "mnist5k repeated to each length, svmlight for streamherd and its VW twin for VW; "
             "each command a whole process writing its model, a warm-up round then "
             f"{args.repeat} rounds of every command once; median and best wall time, median "
             "CPU time, peak RSS; vs VW = VW's median wall time / the row's (above 1: faster "
             f"than VW). {os.cpu_count()} cores.", "",
             "```", f"python benchmarks/many_classes.py --lines {lines} --repeat {args.repeat} "
             "--write-readme", "```"]
    for count in args.lines:
        load_before = os.getloadavg()
        with tempfile.TemporaryDirectory() as folder:
            svm, vw = inputs(args.data, count, folder)
            times = measure(commands(svm, vw, Path(folder) / "model.npz"), args.repeat)
        load = ", ".join(f"{x:.1f}" for x in (*load_before, *os.getloadavg()))
        rows = table(times)
        parts += ["", f"{count:,} lines; load average (1, 5, 15 min) before, then after: "
                      f"{load}.", "", *rows]
        print(f"{count:,} lines", *rows, sep="\n", flush=True)
    block = "\n".join([*parts, "", END])
    if args.write_readme:
        replace_section(START, END, block)
    else:
        print(block)


if __name__ == "__main__":
    main()
