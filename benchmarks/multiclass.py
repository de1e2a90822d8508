"""Multiclass and regression benchmark: progressive and test error of every learner.

Multiclass: usps, mnist5k, pendigits, dna and r8 from the shared data, joint multiclass (the
default), one pass, bias on, default hyperparameters (C = 1, r = 1, eta = 0.9, a = 1), every example
scaled to unit L2 norm (``--normalize``: raw 0-255 pixels and raw counts otherwise dominate the
confidence-weighted updates), the files in their stored order. mnist5k has no test file: its
first 4000 lines train and its last 1000 test (the file was shuffled once with seed 0, see the
data README). Diagonal and first-order learners use -b 18; the ``-full`` learners hold a
(K 2^b) x (K 2^b) matrix, so they run only where that is small: pendigits at -b 6, dna and usps at
-b 8 (usps then has a few hash collisions: 256 pixels and the bias in 256 slots); mnist5k and r8
would need -b 10 or more (a 10240 x 10240 matrix or larger) and are not run. A second table runs
one-versus-all (``--multiclass ova``) for the diagonal learners.

Regression: a generated stream (seed 0): 20000 train and 5000 test lines, 40 sparse features
(10 non-zero per line) of a random linear function plus an offset, Gaussian noise (sd 0.5) and
5% of targets replaced by outliers; ``--loss squared`` for each learner that has a squared-loss
form, -b 8 (full: the same), default hyperparameters, epsilon 0 and 0.5 for PA.

Writes both tables into benchmarks/README.md between the multiclass markers.

    python benchmarks/multiclass.py [--data /work/shared/data]
"""
import argparse
import gzip
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from streamherd import learners
from streamherd.training import predict, train

START = "<!-- multiclass:start -->"
END = "<!-- multiclass:end -->"
DATASETS = [  # (short name, train file, test file or None: split mnist5k)
    ("usps", "usps.train.svm.gz", "usps.test.svm.gz"),
    ("mnist5k", "mnist5k.svm.gz", None),
    ("pendigits", "pendigits.scale.svm", "pendigits.scale.t.svm"),
    ("dna", "dna.scale.svm", "dna.scale.t.svm"),
    ("r8", "r8.train.vw.gz", "r8.test.vw.gz"),
]
FULL_BITS = {"pendigits": 6, "dna": 8, "usps": 8}
MNIST_TRAIN = 4000
OVA = ["perceptron", "pa2", "nherd-p", "arow-p", "cw", "scw1", "sop"]
REGRESSION = ["arow-p", "arow-d", "arow-full", "nherd-e", "nherd-p", "nherd-d", "nherd-full",
              "pa", "pa1", "pa2"]


def prepare(data, tmp):
    """(name, train path, test path) of every dataset present; mnist5k split into two files."""
    out = []
    for name, train_file, test_file in DATASETS:
        if not (data / train_file).exists():
            continue
        if test_file is None:
            with gzip.open(data / train_file, "rt") as f:
                lines = f.readlines()
            train_path, test_path = Path(tmp) / f"{name}.train.svm", Path(tmp) / f"{name}.test.svm"
            train_path.write_text("".join(lines[:MNIST_TRAIN]))
            test_path.write_text("".join(lines[MNIST_TRAIN:]))
            out.append((name, train_path, test_path))
        else:
            out.append((name, data / train_file, data / test_file))
    return out


def run(algo, train_path, test_path, tmp, **kwargs):
    """(progressive loss, test loss, seconds of training) of one run."""
    model = Path(tmp) / "model.npz"
    summary = train([str(train_path)], algo=algo, quiet=True, final_model=model, **kwargs)
    loss, labeled = predict(model, [str(test_path)], output=os.devnull, quiet=True)
    key = next(k for k in summary if k.startswith("average progressive"))
    return summary[key], loss / labeled, summary["elapsed seconds"]


def multiclass_tables(datasets, tmp):
    joint, ova, seconds = {}, {}, 0.0
    for algo in learners.REGISTRY:
        for name, train_path, test_path in datasets:
            full = algo.endswith("-full")
            if full and name not in FULL_BITS:
                continue
            bits = FULL_BITS[name] if full else None
            joint[algo, name] = run(algo, train_path, test_path, tmp, bits=bits, normalize=True,
                                    multiclass="joint")
            seconds += joint[algo, name][2]
            print(f"joint {algo:>14} {name:>9} {joint[algo, name][0]:.4f} "
                  f"{joint[algo, name][1]:.4f}", file=sys.stderr)
            if algo in OVA:
                ova[algo, name] = run(algo, train_path, test_path, tmp, normalize=True,
                                      multiclass="ova")
                seconds += ova[algo, name][2]
    return joint, ova, seconds


def make_regression(tmp, seed=0, d=40, nnz=10, n_train=20000, n_test=5000):
    """(train path, test path, squared loss of the generating function on the test lines)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    paths = []
    floor = None
    for split, n in (("train", n_train), ("test", n_test)):
        cols = np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :nnz], axis=1)
        vals = rng.normal(size=(n, nnz))
        y = np.einsum("ij,ij->i", vals, w[cols]) + 1.0 + 0.5 * rng.normal(size=n)
        outliers = rng.random(n) < 0.05
        y[outliers] = rng.normal(scale=10.0, size=outliers.sum())
        truth = np.einsum("ij,ij->i", vals, w[cols]) + 1.0
        floor = float(np.mean((y - truth) ** 2))   # of the last split written: test
        path = Path(tmp) / f"regression.{split}.svm"
        with open(path, "w") as f:
            for i in range(n):
                f.write(f"{y[i]:.6f} " + " ".join(f"{c + 1}:{v:.6f}" for c, v in
                                                  zip(cols[i], vals[i])) + "\n")
        paths.append(path)
    return (*paths, floor)


def regression_table(tmp):
    train_path, test_path, floor = make_regression(tmp)
    rows = {}
    for algo in REGRESSION:
        rows[algo] = run(algo, train_path, test_path, tmp, bits=8, loss="squared")
    for epsilon in (0.5,):
        for algo in ("pa", "pa1", "pa2"):
            rows[f"{algo} --epsilon {epsilon}"] = run(algo, train_path, test_path, tmp, bits=8,
                                                      loss="squared",
                                                      options={"epsilon": epsilon})
    return rows, floor


def render(datasets, joint, ova, seconds, regression, floor):
    names = [name for name, _, _ in datasets]
    head = "| learner | " + " | ".join(names) + " |"
    rule = "|" + "---|" * (len(names) + 1)

    def table(results, algos):
        lines = [head, rule]
        for algo in algos:
            cells = []
            for name in names:
                value = results.get((algo, name))
                cells.append("–" if value is None else
                             f"{100 * value[0]:.2f} / {100 * value[1]:.2f}")
            lines.append(f"| {algo} | " + " | ".join(cells) + " |")
        return lines

    lines = [
        "Multiclass 0/1 error (%), progressive / test, one pass, bias on, default "
        "hyperparameters, `--normalize`. Generated by `python benchmarks/multiclass.py`; do not "
        "edit by hand. mnist5k: lines 1-4000 train, 4001-5000 test. `-full` learners: "
        f"{', '.join(f'{k} at -b {v}' for k, v in FULL_BITS.items())} (–: the K·2^b square "
        "matrix is too large to run here); others -b 18.",
        "",
        "Joint multiclass (`--multiclass joint`, the default):",
        "",
        *table(joint, list(learners.REGISTRY)),
        "",
        "One-versus-all (`--multiclass ova`), -b 18:",
        "",
        *table(ova, OVA),
        "",
        f"{len(joint) + len(ova)} runs, {seconds:.1f} s of training in total.",
        "",
        "Regression (`--loss squared`), generated data (20000 train / 5000 test lines, "
        "40 features, "
        "10 per line, noise sd 0.5, 5% outliers of sd 10; the test error includes the outliers), "
        "-b 8, default hyperparameters. Average squared loss, progressive / test:",
        "",
        "| learner | progressive | test |",
        "|---|---|---|",
        *(f"| {algo} | {value[0]:.4f} | {value[1]:.4f} |" for algo, value in regression.items()),
        "",
        f"The generating function itself has a test squared loss of {floor:.4f} (the noise and "
        "the outliers): the floor any learner can reach.",
    ]
    return "\n".join(lines)


def write_section(readme, text, start=START, end=END, heading="Multiclass and regression"):
    """Put ``text`` between the markers ``start`` and ``end`` of the README, or at its end under
    ``heading`` (benchmarks/mira.py writes its own section so)."""
    block = f"{start}\n{text}\n{end}"
    content = readme.read_text() if readme.exists() else "# Benchmarks\n"
    if start in content and end in content:
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
        content = pattern.sub(lambda _: block, content, count=1)
    else:
        content = content.rstrip("\n") + f"\n\n## {heading}\n\n" + block + "\n"
    readme.write_text(content)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--readme", type=Path, default=Path(__file__).parent / "README.md")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        datasets = prepare(args.data, tmp)
        joint, ova, seconds = multiclass_tables(datasets, tmp)
        regression, floor = regression_table(tmp)
    write_section(args.readme, render(datasets, joint, ova, seconds, regression, floor))
    print(f"wrote {args.readme} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
