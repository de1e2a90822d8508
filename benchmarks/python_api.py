"""The Python API against its targets (issue 21): loading, fit and partial_fit.

    python benchmarks/python_api.py [--data ../shared/data] [--file PATH] [--repeat 3]
        [--algos pa2,arow-p,nherd-p] [--write-readme]

- Loading: ``streamherd.load_svmlight`` against ``sklearn.datasets.load_svmlight_file``, side by
  side in this process (alternating, each warm: one call on a small file first), on a9a and on
  the 1M-line benchmark file (make_data.py's, cached in benchmarks/data). Target: >= 5x faster.
- fit: ``OnlineClassifier(algo, max_iter=1, shuffle=False, bits=18).fit(X, y)`` on the file
  already in memory (CSR) against ``streamherd train FILE --algo algo --quiet`` (the CLI's
  default -b 18), a subprocess; rows/s of each. The CLI's time is given whole and less its
  start-up (the same command on a one-line file); the target, fit >= 70% of the CLI's rows/s,
  is checked against the CLI less its start-up (the stricter).
- partial_fit: the rows in 10,000-row chunks (sliced before timing), one partial_fit each,
  against one fit pass. Target: >= 90% of fit's rows/s.
Every figure is the median of ``--repeat`` rounds.
"""
import argparse
import datetime
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))   # this checkout's streamherd
import make_data  # noqa: E402
from throughput import machine, machine_line, replace_section  # noqa: E402

START, END = "<!-- python-api:start -->", "<!-- python-api:end -->"
CHUNK_ROWS = 10_000
BITS = 18
LOAD_TARGET, FIT_TARGET, PARTIAL_TARGET = 5.0, 0.70, 0.90


def median_seconds(run, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def loading(paths, repeat):
    """name -> (streamherd seconds, sklearn seconds, rows)."""
    from sklearn.datasets import load_svmlight_file

    from streamherd import load_svmlight

    rows = {}
    for path in paths:
        ours, theirs = [], []
        for _ in range(repeat):   # alternating, so that both see the same machine
            ours.append(median_seconds(lambda path=path: load_svmlight(path), 1))
            theirs.append(median_seconds(lambda path=path: load_svmlight_file(
                str(path), zero_based=False), 1))
        n = load_svmlight(path)[0].shape[0]
        rows[path.name] = (statistics.median(ours), statistics.median(theirs), n)
        print(path.name, rows[path.name], flush=True)
    return rows


def cli_seconds(path, algo, repeat):
    """(whole command, its start-up: the same command on a one-line file), median seconds."""
    def run(target):
        subprocess.run([sys.executable, "-m", "streamherd", "train", str(target), "--algo", algo,
                        "-b", str(BITS), "--quiet"], check=True, cwd=HERE.parent,
                       capture_output=True)
    with tempfile.NamedTemporaryFile("w", suffix=".svm") as one:
        one.write("1 1:1\n")
        one.flush()
        run(one.name)   # warm
        startup = median_seconds(lambda: run(one.name), repeat)
    return median_seconds(lambda: run(path), repeat), startup


def learning(path, algos, repeat):
    """algo -> (fit seconds, partial_fit seconds, CLI seconds, CLI start-up seconds, rows)."""
    from streamherd import load_svmlight
    from streamherd.sklearn import OnlineClassifier

    X, y = load_svmlight(path)
    n = X.shape[0]
    chunks = [(X[i:i + CHUNK_ROWS], y[i:i + CHUNK_ROWS]) for i in range(0, n, CHUNK_ROWS)]
    classes = sorted(set(y.tolist()))
    rows = {}
    for algo in algos:
        def fit(algo=algo):
            OnlineClassifier(algo, max_iter=1, shuffle=False, bits=BITS).fit(X, y)

        def partial_fit(algo=algo):
            model = OnlineClassifier(algo, bits=BITS)
            for X_part, y_part in chunks:
                model.partial_fit(X_part, y_part, classes=classes)
        OnlineClassifier(algo, bits=BITS).fit(X[:1000], y[:1000])   # the kernels loaded
        fit_time, partial_time = [], []
        for _ in range(repeat):
            fit_time.append(median_seconds(fit, 1))
            partial_time.append(median_seconds(partial_fit, 1))
        cli, startup = cli_seconds(path, algo, repeat)
        rows[algo] = (statistics.median(fit_time), statistics.median(partial_time), cli, startup,
                      n)
        print(algo, rows[algo], flush=True)
    return rows


def tables(loads, learns):
    lines = ["| file | rows | load_svmlight (s) | sklearn load_svmlight_file (s) | speed-up | "
             f">= {LOAD_TARGET:g}x? |", "|---|---|---|---|---|---|"]
    for name, (ours, theirs, n) in loads.items():
        lines.append(f"| {name} | {n:,} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.1f}x | "
                     f"{'yes' if theirs / ours >= LOAD_TARGET else 'no'} |")
    lines += ["", "| algo | fit rows/s | CLI train rows/s (whole / less start-up) | fit vs CLI | "
              f">= {FIT_TARGET:.0%}? | partial_fit rows/s | vs fit | >= {PARTIAL_TARGET:.0%}? |",
              "|---|---|---|---|---|---|---|---|"]
    for algo, (fit, partial, cli, startup, n) in learns.items():
        net = cli - startup
        fit_ratio, partial_ratio = net / fit, fit / partial
        lines.append(
            f"| {algo} | {n / fit:,.0f} | {n / cli:,.0f} / {n / net:,.0f} | {fit_ratio:.0%} | "
            f"{'yes' if fit_ratio >= FIT_TARGET else 'no'} | {n / partial:,.0f} | "
            f"{partial_ratio:.0%} | {'yes' if partial_ratio >= PARTIAL_TARGET else 'no'} |")
    return lines


def write_readme(lines, args, big):
    section = "\n".join([
        START, "## Python API (`load_svmlight`, `fit`, `partial_fit`)", "",
        f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; medians of "
        f"{args.repeat} rounds. Loading: both loaders in one process, alternating, warm. "
        f"Learning on `{big.name}`: `OnlineClassifier(algo, max_iter=1, shuffle=False, "
        f"bits={BITS}).fit(X, y)` on the CSR matrix in memory against `streamherd train FILE "
        f"--algo algo -b {BITS} --quiet` (a subprocess: the whole command, and less its start-up "
        f"on a one-line file, which the target uses); partial_fit: {CHUNK_ROWS:,}-row chunks, "
        f"one call each, against one fit pass. Targets (issue 21): loading >= {LOAD_TARGET:g}x "
        f"sklearn's, fit >= {FIT_TARGET:.0%} of the CLI's rows/s, partial_fit >= "
        f"{PARTIAL_TARGET:.0%} of fit's. Regenerate with "
        f"`python benchmarks/python_api.py --write-readme`.", "", *lines, END])
    replace_section(START, END, section)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    parser.add_argument("--file", type=Path, help="the large svmlight file (default: the 1M-line "
                                                  "benchmark file, generated if absent)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--algos", default="pa2,arow-p,nherd-p")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    big = args.file or make_data.ensure().svm
    loads = loading([args.data / "a9a.svm.gz", Path(big)], args.repeat)
    learns = learning(Path(big), args.algos.split(","), args.repeat)
    lines = tables(loads, learns)
    print("\n".join(lines))
    if args.write_readme:
        write_readme(lines, args, Path(big))


if __name__ == "__main__":
    main()
