"""The joint multiclass kernel's memory layout, measured: streamherd's kernel against a plain
transcription of the same step in Vowpal Wabbit's layout (issue 33).

Model files hold class z's slot j at z 2^b + j (class blocks). In blocks, the K slots of one
feature lie 2^b slots apart, on K cache lines (and K pages); VW's ``--oaa`` keeps a feature's
classes side by side, and so do streamherd's joint diagonal and first-order learners while
they train (Learner.side_by_side, kernels/multiclass.py). This script runs arow-p's joint step
(AROW, Fig. 1, on Delta = f(x, y) - f(x, y')) over mnist5k (10 classes, about 152 features a
row) in one process, one thread, in-memory rows, a few passes:

* streamherd's own kernel (``Learner.learn_joint``, chunks of 1000 rows);
* a transcription of the same step with the state as ``state[j, 0, z]`` (mean) and
  ``state[j, 1, z]`` (variance): class scores over contiguous means, the same arithmetic in the
  same order, so its final state must equal the kernel's bit for bit (checked, on the saved
  class blocks);

on the file's numbered features as streamherd reads them (pixel i at slot i: a few hundred
adjacent slots) and on the same features hashed over the 2^18 slots (as any named feature is).
It prints microseconds per row; the figures are in benchmarks/README.md, "Design measurements".

    python benchmarks/joint_layout.py [--passes 8]
"""
import argparse
import gzip
import time
from pathlib import Path

import numpy as np
from numba import njit

from streamherd import learners

ROOT = Path(__file__).resolve().parent.parent
BITS = 18
R = 1.0   # arow-p's r


def mnist5k(data):
    """(classes 0..9, indptr, slots, values) of mnist5k, slot = the svmlight index."""
    classes, indptr, slots, values = [], [0], [], []
    with gzip.open(data / "mnist5k.svm.gz", "rt") as f:
        for line in f:
            label, *features = line.split()
            classes.append(int(float(label)))
            for feature in features:
                index, value = feature.split(":")
                slots.append(int(index))
                values.append(float(value))
            indptr.append(len(slots))
    return (np.array(classes, np.int64), np.array(indptr, np.int64),
            np.array(slots, np.int64), np.array(values))


@njit(nogil=True, error_model="numpy")
def interleaved_passes(state, K, classes, indptr, slots, values, r, scores, passes):
    """arow-p's joint step over the rows ``passes`` times, state[j, 0 | 1, z]; every class known
    from the start (as with --classes). Returns the number of updates."""
    updates = 0
    for _ in range(passes):
        for i in range(len(classes)):
            start, end = indptr[i], indptr[i + 1]
            for z in range(K):
                scores[z] = 0.0
            for k in range(start, end):
                means, x = state[slots[k], 0], values[k]
                for z in range(K):
                    scores[z] += means[z] * x
            label = classes[i]
            rival = -1
            for z in range(K):
                if z != label and (rival < 0 or scores[z] > scores[rival]):
                    rival = z
            m = v = 0.0
            for z, sign in ((label, 1.0), (rival, -1.0)):
                for k in range(start, end):
                    x = sign * values[k]
                    m += state[slots[k], 0, z] * x
                    v += state[slots[k], 1, z] * x * x
            if m >= 1.0:
                continue
            updates += 1
            beta = 1.0 / (v + r)
            alpha = (1.0 - m) * beta
            for z, sign in ((label, 1.0), (rival, -1.0)):
                for k in range(start, end):
                    x = sign * values[k]
                    s = state[slots[k], 1, z]
                    state[slots[k], 0, z] += alpha * s * x
                    state[slots[k], 1, z] = s / (1.0 + s * x * x / r)
    return updates


def kernel_passes(classes, indptr, slots, values, passes):
    """(seconds, learner) of streamherd's joint arow-p over the rows, chunks of 1000 rows."""
    K = int(classes.max()) + 1
    learner = learners.create("arow-p", 1 << BITS, {"r": R}, blocks=K)
    importance = np.ones(len(classes))
    predicted = np.empty(len(classes), np.int64)
    started = time.perf_counter()
    for _ in range(passes):
        for a in range(0, len(classes), 1000):
            b = min(len(classes), a + 1000)
            learner.learn_joint(classes[a:b], importance[a:b], indptr[a:b + 1], slots, values,
                                K, predicted[a:b])
    return time.perf_counter() - started, learner


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--passes", type=int, default=8)
    args = parser.parse_args(argv)
    classes, indptr, numbered, values = mnist5k(args.data)
    K, D, rows = int(classes.max()) + 1, 1 << BITS, len(classes) * args.passes
    hashed = np.random.default_rng(0).choice(D, size=int(numbered.max()) + 1,
                                             replace=False)[numbered]
    scores = np.zeros(K)
    print(f"mnist5k, {len(classes)} rows x {args.passes} passes, {K} classes, -b {BITS}")
    print("| slots | streamherd's kernel, us a row | interleaved, us a row | ratio | equal |")
    print("|:---|---:|---:|---:|:---|")
    for name, slots in (("numbered (as read)", numbered), ("hashed", hashed)):
        kernel_passes(classes[:10], indptr[:11], slots, values, 1)   # compile / load
        interleaved_passes(np.ones((D, 2, K)), K, classes[:10], indptr[:11], slots, values, R,
                           scores, 1)
        kernel_seconds, learner = kernel_passes(classes, indptr, slots, values, args.passes)
        state = np.zeros((D, 2, K))
        state[:, 1, :] = learners.create("arow-p", 1, {"r": R}).variance[0]   # its prior
        started = time.perf_counter()
        interleaved_passes(state, K, classes, indptr, slots, values, R, scores, args.passes)
        seconds = time.perf_counter() - started
        saved = learner.state()   # class blocks, as model files hold them
        equal = all(np.array_equal(saved["mean"][z * D:(z + 1) * D], state[:, 0, z]) and
                    np.array_equal(saved["variance"][z * D:(z + 1) * D], state[:, 1, z])
                    for z in range(K))
        print(f"| {name} | {kernel_seconds / rows * 1e6:.2f} | {seconds / rows * 1e6:.2f} | "
              f"{kernel_seconds / seconds:.2f}x | {'yes' if equal else 'NO'} |")


if __name__ == "__main__":
    main()
