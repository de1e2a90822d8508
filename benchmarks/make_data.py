"""Deterministic synthetic benchmark data: an svmlight file, its VW twin and a gzipped copy.

Each line has about ``features`` distinct, strictly increasing feature indices in
``1..max_index`` (half drawn uniformly, half log-uniformly so that low indices are frequent, as
with word ids in text), text-like values (small integers and short decimals), and a label of +1/-1
from a hidden random hyperplane plus Gaussian noise, so there is something to learn.

Generation is vectorised: per block of lines, each line is laid out as a fixed-width row of
pre-rendered, zero-padded tokens (label, ``" <index>"``, ``":<value>"``, newline) gathered from
tables as 8-byte words; dropping the zero bytes gives the text, so a million lines take
seconds. The svmlight line ``1 3:2 17:0.5`` has the twin ``1 |f 3:2 17:0.5``
(VW hashes an all-digit feature name as the integer plus the namespace seed).

Files are cached under ``benchmarks/data/`` with the parameters in their names and are reused when
present; a ``.json`` sidecar written last marks a complete set.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"
VALUES = [b"1", b"1", b"1", b"2", b"2", b"3", b"4", b"5", b"0.5", b"0.25", b"0.1", b"1.5",
          b"0.75", b"2.5"]
VERSION = 1  # bump when the generator changes, so stale caches are not reused


@dataclass(frozen=True)
class Spec:
    lines: int = 1_000_000
    features: int = 40
    max_index: int = 1_000_000
    noise: float = 0.25  # std of the label noise, relative to the std of the clean margin
    seed: int = 20240601

    @property
    def stem(self):
        return (f"synth-v{VERSION}-n{self.lines}-f{self.features}-m{self.max_index}"
                f"-s{self.seed}")


@dataclass
class DataSet:
    spec: Spec
    svm: Path
    vw: Path
    svm_gz: Path
    vw_gz: Path
    meta: dict


def _words(byte_rows):
    """A zero-padded (n, width) uint8 table as (n,) uint64 when width <= 8, else (n, words)."""
    n, width = byte_rows.shape
    words = -(-width // 8)
    padded = np.zeros((n, words * 8), np.uint8)
    padded[:, :width] = byte_rows
    table = padded.view(np.uint64)
    return table[:, 0].copy() if words == 1 else table


def _fixed_width(tokens):
    """Byte strings as zero-padded 8-byte words (see _words)."""
    width = max(len(t) for t in tokens)
    arr = np.frombuffer(b"".join(t.ljust(width, b"\0") for t in tokens), np.uint8)
    return _words(arr.reshape(len(tokens), width))


def _index_table(max_index):
    """Row i holds b" <i>" zero-padded; row 0 is all zeros (the "no feature" filler)."""
    digits = len(str(max_index))
    n = np.arange(max_index + 1, dtype=np.int64)
    n_digits = np.floor(np.log10(np.maximum(n, 1))).astype(np.int64) + 1
    table = np.zeros((max_index + 1, digits + 1), np.uint8)
    table[1:, 0] = ord(" ")
    for d in range(digits):  # the d-th digit from the right lands at column n_digits - d
        ok = (n_digits - d >= 1) & (n >= 1)
        table[n[ok], (n_digits - d)[ok]] = ord("0") + (n[ok] // 10 ** d) % 10
    return _words(table)


class _Tables:
    def __init__(self, max_index):
        self.index = _index_table(max_index)
        self.value = _fixed_width([b":" + v for v in VALUES])
        self.value_float = np.array([float(v) for v in VALUES])
        self.labels = {"svm": _fixed_width([b"-1", b"1"]), "vw": _fixed_width([b"-1 |f", b"1 |f"])}
        self.newline = _fixed_width([b"\n"])


def _block(rng, spec, n, hidden, t):
    """Text of n lines in both formats (bytes), their labels and feature counts.

    Each line is laid out as a fixed-width row of zero-padded 8-byte words (label, then
    " <idx>" and ":<val>" per feature, then the newline); dropping the zero bytes gives the text.
    """
    k = spec.features
    half = k // 2
    uniform = rng.integers(1, spec.max_index + 1, size=(n, k - half))
    loguni = np.exp(rng.random((n, half)) * np.log(spec.max_index + 1)).astype(np.int64)
    idx = np.sort(np.concatenate([uniform, np.clip(loguni, 1, spec.max_index)], axis=1), axis=1)
    keep = np.ones_like(idx, dtype=bool)
    keep[:, 1:] = idx[:, 1:] != idx[:, :-1]  # drop repeats: strictly increasing rows
    counts = keep.sum(axis=1)
    vals = rng.choice(len(VALUES), size=(n, k))
    margin = (hidden[idx] * t.value_float[vals] * keep).sum(axis=1)
    noisy = margin + rng.normal(0, spec.noise * margin.std(), size=n)
    labels = (noisy >= 0).astype(np.int64)  # 0: -1, 1: +1

    def words(table, i):  # (n, m, w) uint64 words of table rows i
        out = table[i]
        return out[..., None] if out.ndim == i.ndim else out

    fi = words(t.index, np.where(keep, idx, 0))
    fv = words(t.value, vals)
    fv[~keep] = 0
    feat = np.concatenate([fi, fv], axis=2).reshape(n, -1)
    out = {}
    for fmt, ltab in t.labels.items():
        lab = words(ltab, labels).reshape(n, -1)
        nl = np.broadcast_to(t.newline.reshape(1, -1), (n, t.newline.size))
        # bytes.translate deletes the padding at C speed
        out[fmt] = np.concatenate([lab, feat, nl], axis=1).tobytes().translate(None, b"\0")
    return out["svm"], out["vw"], np.where(labels > 0, 1, -1), counts


def binary_mnist(source, path):
    """mnist5k (svmlight, .gz) as the binary task digit >= 5 vs < 5, pixels scaled to [0, 1]."""
    with gzip.open(source, "rt") as f, open(path, "w") as g:
        for line in f:
            label, *features = line.split()
            pixels = " ".join(f"{k}:{int(v) / 255:.6g}" for k, v in
                              (feat.split(":") for feat in features))
            g.write(f"{'+1' if int(label) >= 5 else '-1'} {pixels}\n")


def gzip_file(src, dst):
    tmp = dst.with_suffix(dst.suffix + ".tmp")
    gz = shutil.which("pigz") or shutil.which("gzip")
    if gz:
        with open(tmp, "wb") as out:
            subprocess.run([gz, "-6", "-n", "-c", str(src)], stdout=out, check=True)
    else:
        with open(src, "rb") as f, gzip.open(tmp, "wb", compresslevel=6, mtime=0) as out:
            shutil.copyfileobj(f, out, 16 << 20)
    os.replace(tmp, dst)


def ensure(spec=Spec(), data_dir=DATA_DIR, gz=True, log=print):
    """Generate the data set for ``spec`` unless a complete cached copy exists."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    svm = data_dir / f"{spec.stem}.svm"
    vw = data_dir / f"{spec.stem}.vw"
    svm_gz = data_dir / f"{spec.stem}.svm.gz"
    vw_gz = data_dir / f"{spec.stem}.vw.gz"
    meta_path = data_dir / f"{spec.stem}.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if meta is None or meta.get("spec") != asdict(spec) or not (svm.exists() and vw.exists()):
        meta = _generate(spec, svm, vw, log)
        meta_path.write_text(json.dumps(meta, indent=1))
    todo = [(src, dst) for src, dst in ((svm, svm_gz), (vw, vw_gz)) if gz and not dst.exists()]
    if todo:
        from concurrent.futures import ThreadPoolExecutor
        t = time.perf_counter()
        with ThreadPoolExecutor(len(todo)) as pool:  # gzip runs as a subprocess: both cores
            list(pool.map(lambda job: gzip_file(*job), todo))
        log(f"gzipped {', '.join(src.name for src, _ in todo)} in {time.perf_counter() - t:.1f}s")
    return DataSet(spec, svm, vw, svm_gz, vw_gz, meta)


def _generate(spec, svm_path, vw_path, log, block_lines=100_000):
    t0 = time.perf_counter()
    rng = np.random.default_rng(spec.seed)
    hidden = rng.normal(size=spec.max_index + 1)
    tables = _Tables(spec.max_index)
    positives = 0
    nnz = 0
    tmp_svm = svm_path.with_suffix(".svm.tmp")
    tmp_vw = vw_path.with_suffix(".vw.tmp")
    with open(tmp_svm, "wb") as fs, open(tmp_vw, "wb") as fv:
        done = 0
        while done < spec.lines:
            n = min(block_lines, spec.lines - done)
            svm, vw, labels, counts = _block(rng, spec, n, hidden, tables)
            fs.write(svm)
            fv.write(vw)
            positives += int((labels > 0).sum())
            nnz += int(counts.sum())
            done += n
    os.replace(tmp_svm, svm_path)
    os.replace(tmp_vw, vw_path)
    seconds = time.perf_counter() - t0
    log(f"generated {spec.lines:,} lines ({svm_path.stat().st_size / 1e6:.0f} MB svmlight) "
        f"in {seconds:.1f}s")
    return {"spec": asdict(spec), "lines": spec.lines, "nnz": nnz, "positives": positives,
            "svm_bytes": svm_path.stat().st_size, "vw_bytes": vw_path.stat().st_size,
            "generate_seconds": round(seconds, 2)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=Spec.lines)
    ap.add_argument("--features", type=int, default=Spec.features)
    ap.add_argument("--max-index", type=int, default=Spec.max_index)
    ap.add_argument("--seed", type=int, default=Spec.seed)
    ap.add_argument("--out", default=str(DATA_DIR))
    args = ap.parse_args(argv)
    ds = ensure(Spec(args.lines, args.features, args.max_index, seed=args.seed), args.out)
    print(ds.svm, ds.vw, ds.svm_gz, ds.vw_gz, sep="\n")
    print(json.dumps(ds.meta))


if __name__ == "__main__":
    main()
