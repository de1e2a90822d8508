"""Plain helpers the test files import (``from helpers import ...``; pyproject's pytest
``pythonpath`` puts tests/ on the path, so plain ``pytest`` finds them as ``python -m pytest``
does): the repository and real-data folders, a CLI runner and its one-line error check, a
reader of parsed rows, random CSR data cut into chunks, in-memory rows as a chunk, and an
independent (pure Python + mmh3) model of VW's feature hashing. conftest.py serves the same as
fixtures."""
import contextlib
import io
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# the real data sets: shared/data beside the checkout (CI lays a copy there), or the folder
# STREAMHERD_TEST_DATA names (a checkout elsewhere, a git worktree)
DATA_DIR = Path(os.environ.get("STREAMHERD_TEST_DATA") or REPO.parent / "shared" / "data")
VW_CONSTANT = 11650396

# The first run after an install (here: after a kernel's source changed) compiles kernels and
# says so in a line of its own; a test of what a command prints looks past that line.
COMPILE_NOTICE = "streamherd: compiling kernels"


def without_compile_notice(stderr):
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not line.startswith(COMPILE_NOTICE))


def one_line_error(proc, code=2):
    """The process failed with ``code`` and exactly one line on stderr, no traceback; returns it."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = without_compile_notice(proc.stderr).strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("streamherd: "), proc.stderr
    return lines[0]


def run_cli(*args, input=None, cwd=None, timeout=600):
    """Run ``python -m streamherd ARGS``; returns CompletedProcess with text stdout/stderr."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)], input=input,
                          capture_output=True, cwd=cwd or REPO, env=env, timeout=timeout)
    proc.stdout = proc.stdout.decode("utf-8", "replace")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    return proc


def run_cli_here(*args):
    """``streamherd ARGS`` run in this process (streamherd.cli.run, as the command runs it,
    without a process's start-up); returns a CompletedProcess as run_cli does."""
    from streamherd.cli import run

    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
                for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run([str(arg) for arg in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    return subprocess.CompletedProcess(args, code, out.buffer.getvalue().decode("utf-8", "replace"),
                                       err.buffer.getvalue().decode("utf-8", "replace"))


def read_rows(paths, **kwargs):
    """Parse with streamherd's ChunkReader; returns (rows, reader, chunks).

    Each row is a dict: label, importance, line, tag, x (dict slot -> value).
    """
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader

    if isinstance(paths, (str, Path)):
        paths = [paths]
    if "bits" in kwargs or "bias" in kwargs:
        kwargs["features"] = FeatureSpace(kwargs.pop("bits", 18), kwargs.pop("bias", True))
    kwargs.setdefault("features", FeatureSpace())
    reader = ChunkReader([str(p) for p in paths], **kwargs)
    rows = []
    chunks = []
    for chunk in reader:
        chunks.append(chunk)
        tags = chunk.tags()
        assert chunk.indptr[0] == 0
        assert len(chunk.indptr) == chunk.n_examples + 1
        for i in range(chunk.n_examples):
            s, e = int(chunk.indptr[i]), int(chunk.indptr[i + 1])
            slots = chunk.indices[s:e].tolist()
            assert len(set(slots)) == len(slots), "repeated slot within one row"
            rows.append({
                "label": float(chunk.labels[i]),
                "importance": float(chunk.importance[i]),
                "line": int(chunk.line_numbers[i]),
                "tag": tags[i],
                "x": dict(zip(slots, chunk.values[s:e].tolist())),
            })
    return rows, reader, chunks


# ---------------------------------------------------------------- VW's own view, and a model of it

def vw_audit_slots(path, flags, bias=False, ignore_linear="", bits=18):
    """Each example's {slot: value} as VW's --audit prints it (repeated slots summed). The
    audit lists the linear features of --ignore_linear namespaces too, which VW's learners
    skip: ``ignore_linear`` names those letters, whose uncrossed features are left out."""
    command = [sys.executable, "-m", "vowpalwabbit", "--audit", "-t", "--quiet", "-b", str(bits),
               "-d", str(path), *flags] + ([] if bias else ["--noconstant"])
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    rows = []
    for line in out.splitlines():
        if line and not line.startswith("\t"):
            rows.append(defaultdict(float))   # the prediction line opens an example
            continue
        for item in line.split("\t")[1:]:   # (an example without features: an empty line)
            name, slot, value, _ = item.rsplit(":", 3)
            letter = name.split("^")[0][:1] if "^" in name else " "
            if "*" in name or letter not in ignore_linear:
                rows[-1][int(slot)] += float(value)
    return [dict(row) for row in rows]



def py_hashstring(name: bytes, seed: int) -> int:
    """VW's hashstring written from its definition: bytes <= 0x20 trimmed from both ends, then
    all-digit (or empty) names are integers (size_t), the rest MurmurHash3 x86_32 (the mmh3
    package) with the seed truncated to 32 bits."""
    name = name.lstrip(bytes(range(33))).rstrip(bytes(range(33)))
    if all(48 <= c <= 57 for c in name):
        if not name:
            return seed % 2 ** 64
        return (int(name) + seed) % 2 ** 64
    import mmh3

    return mmh3.hash(name, seed % 2 ** 32, signed=False)


def py_vw_slot(namespace: bytes, feature: bytes, bits: int) -> int:
    seed = py_hashstring(namespace, 0) if namespace else 0
    return py_hashstring(feature, seed) & ((1 << bits) - 1)


# ---------------------------------------------------------------- random CSR data

def random_csr(rng, n=300, d=40, max_nnz=8, noise=0.1, importance=False, empty_rows=True,
               nan_labels=0.0):
    """Sparse rows with unique random slots, labels from a random hyperplane with label noise.

    Returns dict: y (float64, +1/-1 or NaN), s (importance), indptr (int64), indices (int32),
    values (float64), X (dense n x d).
    """
    w_true = rng.normal(size=d)
    indptr = [0]
    indices = []
    values = []
    low = 0 if empty_rows else 1
    for _ in range(n):
        k = int(rng.integers(low, max_nnz + 1))
        slots = rng.choice(d, size=k, replace=False)
        indices.extend(slots.tolist())
        values.extend(rng.normal(scale=rng.uniform(0.2, 3.0), size=k).tolist())
        indptr.append(len(indices))
    indptr = np.array(indptr, np.int64)
    indices = np.array(indices, np.int32)
    values = np.array(values, np.float64)
    X = np.zeros((n, d))
    for i in range(n):
        X[i, indices[indptr[i]:indptr[i + 1]]] = values[indptr[i]:indptr[i + 1]]
    y = np.where(X @ w_true >= 0, 1.0, -1.0)
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    if nan_labels:
        y[rng.random(n) < nan_labels] = np.nan
    s = rng.uniform(0.2, 3.0, size=n) if importance else np.ones(n)
    return {"y": y, "s": s, "indptr": indptr, "indices": indices, "values": values, "X": X, "d": d}


def split_csr(data, bounds):
    """Cut the rows [bounds[k], bounds[k+1]) into separate CSR chunks (indptr rebased to 0)."""
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        lo, hi = data["indptr"][a], data["indptr"][b]
        out.append((data["y"][a:b].copy(), data["s"][a:b].copy(),
                    (data["indptr"][a:b + 1] - lo).astype(np.int64),
                    data["indices"][lo:hi].copy(), data["values"][lo:hi].copy()))
    return out


def chunk_of_rows(labels, importance, indptr, indices, values, source="rows.svm"):
    """In-memory rows as a Chunk (io/csr.py), as if each were a line of a file: its label
    written as a token (none for NaN), so that the label rules read it as they read a file's."""
    from streamherd.io.csr import Chunk
    from streamherd.labels import label_text

    labels = np.asarray(labels, np.float64)
    n = len(labels)
    tokens = [b"" if np.isnan(v) else label_text(v).encode() for v in labels.tolist()]
    lengths = np.array([len(t) for t in tokens], np.int64)
    starts = np.cumsum(lengths + 1) - lengths - 1   # each token, then a newline
    absent = np.full(n, -1, np.int64)
    return Chunk(source, np.frombuffer(b"".join(t + b"\n" for t in tokens), np.uint8), labels,
                 np.asarray(importance, np.float64), np.arange(1, n + 1, dtype=np.int64),
                 np.asarray(indptr, np.int64), np.asarray(indices, np.int32),
                 np.asarray(values, np.float64), absent, absent,
                 np.where(lengths > 0, starts, -1), np.where(lengths > 0, starts + lengths, -1),
                 n, 0, int(lengths.sum()) + n)
