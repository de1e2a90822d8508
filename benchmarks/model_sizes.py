"""Model file sizes before and after the sparse format 3 (issue 18, section 5).

For each case (data, algorithm, -b) it trains one model with each of two checkouts of streamherd
("before": one that writes format 2, e.g. /work/main before the change; "after": this one), as
``python -m streamherd train`` with that checkout first on PYTHONPATH, then predicts the test file
with each, and prints a Markdown table: the two file sizes and their ratio, whether the two
``predict`` outputs are byte-identical, and the peak resident memory of each ``predict`` process
(its maximum RSS, from wait4).

    python benchmarks/model_sizes.py --before /work/main [--after .] [--data /work/shared/data]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (data name, train file, test file, algorithm, bits); default learner: pa2
CASES = [
    ("a9a", "a9a.svm.gz", "a9a.t.svm.gz", "pa2", 18),
    ("a9a", "a9a.svm.gz", "a9a.t.svm.gz", "nherd-p", 18),
    ("usps (10 classes)", "usps.train.svm.gz", "usps.test.svm.gz", "pa2", 18),
    ("usps (10 classes)", "usps.train.svm.gz", "usps.test.svm.gz", "nherd-p", 18),
    ("rcv1_small", "rcv1_small.train.vw.gz", "rcv1_small.test.vw.gz", "pa2", 24),
    ("rcv1_small", "rcv1_small.train.vw.gz", "rcv1_small.test.vw.gz", "nherd-p", 24),
    ("a9a", "a9a.svm.gz", "a9a.t.svm.gz", "nherd-p", 24),
]


def run(checkout, args, folder):
    """``python -m streamherd ARGS`` with ``checkout`` first on the path, run in ``folder`` (the
    working directory would come before PYTHONPATH); its peak RSS in bytes. Fails loudly when
    the command fails."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    process = subprocess.Popen([sys.executable, "-m", "streamherd", *map(str, args)], env=env,
                               cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"streamherd {' '.join(map(str, args))} failed in {checkout}: {stderr}")
    return usage.ru_maxrss * 1024


def measure(checkout, folder, data, case):
    """(model size in bytes, predictions, predict's peak RSS) of one checkout on one case."""
    _, train, test, algo, bits = case
    model, out = folder / "model.npz", folder / "predictions.txt"
    run(checkout, ["train", "--quiet", "--algo", algo, "-b", bits, "-f", model, data / train],
        folder)
    rss = run(checkout, ["predict", "--quiet", "-m", model, "-p", out, data / test], folder)
    return model.stat().st_size, out.read_bytes(), rss


def size_text(size):
    return f"{size / 2 ** 20:.1f} MiB" if size >= 2 ** 20 else f"{size / 2 ** 10:.1f} KiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="checkout writing format 2")
    parser.add_argument("--after", default=HERE.parent, type=Path, help="this checkout")
    parser.add_argument("--data", default=Path("/work/shared/data"), type=Path)
    options = parser.parse_args()
    print("| data | algo | -b | before (format 2) | after (format 3) | before / after "
          "| predictions identical | predict peak RSS before | after |")
    print("|:---|:---|---:|---:|---:|---:|:---|---:|---:|")
    for case in CASES:
        results = []
        for checkout in (options.before, options.after):
            with tempfile.TemporaryDirectory() as folder:
                results.append(measure(checkout.resolve(), Path(folder), options.data.resolve(),
                                       case))
        (old_size, old_out, old_rss), (new_size, new_out, new_rss) = results
        print(f"| {case[0]} | {case[3]} | {case[4]} | {size_text(old_size)} | "
              f"{size_text(new_size)} | {old_size / new_size:,.0f} | "
              f"{'yes' if old_out == new_out else 'NO'} | {old_rss / 2 ** 20:.0f} MiB | "
              f"{new_rss / 2 ** 20:.0f} MiB |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
