"""Full-covariance learners against the memory-bandwidth bound, one pass over mnist5k.

    python benchmarks/full_covariance.py [--data ../shared/data] [--algos nherd-full,arow-full]

mnist5k with pixels / 255 and the binary task digit >= 5 vs < 5, at ``-b 10`` (Sigma is
1024 x 1024 float64, 8 MiB). Only the learner kernel is timed (the file is parsed once, before),
best of ``--passes`` passes, each from a fresh model.

The bound: every example reads one row of Sigma per non-zero feature to form Sigma x
(8 d bytes each), and every update reads and writes the rows j with (Sigma x)_j != 0, which is
all d rows once Sigma is dense (counted as d: 16 d^2 bytes). Those bytes divided by the
bandwidth of a numpy copy between two arrays of Sigma's size (bytes read + written per second,
best of 20) is the time the pass would take if it were limited by memory traffic alone.
Prints one JSON object per learner.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's streamherd, not an installed one
sys.path.insert(0, str(ROOT / "benchmarks"))
from make_data import binary_mnist  # noqa: E402
BITS = 10
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def load(path):
    """The whole file as one CSR chunk (copied: the reader reuses its buffers)."""
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader

    parts = [(c.labels.copy(), c.indptr.copy(), c.indices.copy(), c.values.copy())
             for c in ChunkReader([str(path)], features=FeatureSpace(BITS))]
    labels = np.concatenate([p[0] for p in parts])
    offsets = np.cumsum([0] + [p[1][-1] for p in parts])
    indptr = np.concatenate([[0]] + [p[1][1:] + o for p, o in zip(parts, offsets)])
    return (np.where(labels > 0, 1.0, -1.0), np.ones(len(labels)), indptr.astype(np.int64),
            np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts]))


def copy_bandwidth(nbytes, repeat=20):
    """Bytes read + written per second by a numpy copy of an array of nbytes."""
    src = np.random.default_rng(0).random(nbytes // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - started)
    return 2 * nbytes / best


def measure(algo, data, passes):
    from streamherd import learners

    y, importance, indptr, indices, values = data
    dim = 1 << BITS
    best = float("inf")
    updates = 0
    for _ in range(passes + 1):  # the first pass loads the kernel
        learner = learners.create(algo, dim, {}, None, {})
        margins = np.empty(len(y))
        started = time.perf_counter()
        updates = learner.learn(y, importance, indptr, indices, values, margins)
        best = min(best, time.perf_counter() - started)
    nnz = int(indptr[-1])
    row_bytes = 8 * dim
    traffic = nnz * row_bytes + updates * 2 * dim * row_bytes
    bandwidth = copy_bandwidth(dim * row_bytes)
    bound = traffic / bandwidth
    return {"algo": algo, "examples": len(y), "updates": int(updates), "seconds": best,
            "bytes": traffic, "bandwidth": bandwidth, "bound_seconds": bound,
            "ratio_to_bound": best / bound}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--algos", default="nherd-full,arow-full")
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args(argv)
    source = Path(args.data) / "mnist5k.svm.gz"
    if not source.exists():
        raise SystemExit(f"{source} is absent")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mnist5k_binary.svm"
        binary_mnist(source, path)
        data = load(path)
    for algo in args.algos.split(","):
        print(json.dumps(measure(algo, data, args.passes)), flush=True)


if __name__ == "__main__":
    main()
