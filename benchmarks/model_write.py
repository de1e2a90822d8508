"""The time and size of writing a model at each deflate level (model/container.py).

Trains one model per case with ``streamherd train`` (default hyperparameters, one pass), reads
its members back, and writes them again with the model's own member writer at deflate levels 1
(what ``train -f`` uses), 6 (zlib's default, what ``numpy.savez_compressed`` used before) and 9,
the meta as UTF-8 and, for the level-6 row of "before", as the NumPy 4-byte string it was; best of
--repeat writes each. Writes a Markdown table into benchmarks/README.md between the markers.

    python benchmarks/model_write.py [--data /work/shared/data] [--repeat 3] [--write-readme]
"""
import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from throughput import replace_section  # noqa: E402
START, END = "<!-- model-write:start -->", "<!-- model-write:end -->"
# (name, train file in the shared data, extra train flags)
CASES = [
    ("rcv1_small, pa2 (binary)", "rcv1_small.train.vw.gz", ["--algo", "pa2"]),
    ("usps, no flags (10 classes, softmax sample)", "usps.train.svm.gz", []),
    ("mnist5k, arow-p (10 classes)", "mnist5k.svm.gz", ["--algo", "arow-p"]),
    ("rcv1_small, nherd-p -b 24 (binary)", "rcv1_small.train.vw.gz",
     ["--algo", "nherd-p", "-b", "24"]),
    ("r8, arow-p -b 20 (8 classes, text)", "r8.train.vw.gz", ["--algo", "arow-p", "-b", "20"]),
]
# (row, meta as UTF-8, deflate level)
WAYS = [("before: 4-byte meta, level 6", False, 6), ("UTF-8 meta, level 6", True, 6),
        ("UTF-8 meta, level 9", True, 9), ("now: UTF-8 meta, level 1", True, 1)]


def written(members, level):
    """(seconds, bytes) of one archive of ``members`` at deflate ``level``."""
    buffer = io.BytesIO()
    started = time.perf_counter()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for name, array in members.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return time.perf_counter() - started, len(buffer.getvalue())


def measure(model, repeat):
    with np.load(model, allow_pickle=False) as archive:
        members = {name: archive[name] for name in archive.files}
    text = members["meta"].item()
    text = text.decode("utf-8") if isinstance(text, bytes) else text
    out = []
    for way, utf8, level in WAYS:
        meta = np.array(text.encode("utf-8")) if utf8 else np.array(text)
        runs = [written({**members, "meta": meta}, level) for _ in range(repeat)]
        out.append((way, min(s for s, _ in runs), runs[0][1]))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args(argv)
    lines = ["| model | way | write seconds | file KiB |", "|:---|:---|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, train_file, flags in CASES:
            if not (args.data / train_file).exists():
                continue
            model = Path(tmp) / "model.npz"
            subprocess.run([sys.executable, "-m", "streamherd", "train",
                            str(args.data / train_file), *flags, "-f", str(model), "--quiet"],
                           check=True,
                           env={**os.environ, "PYTHONPATH": str(HERE.parent)})
            for way, seconds, size in measure(model, args.repeat):
                lines.append(f"| {name} | {way} | {seconds:.3f} | {size / 1024:,.0f} |")
                print(lines[-1], flush=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    block = "\n".join([
        START, "## Writing a model: deflate level and meta encoding", "",
        "Each model is trained once (default hyperparameters, one pass), then its members are "
        "written again in memory the way `train -f` writes them, at each deflate level; best of "
        f"{args.repeat} writes. Load average at the end: {load}.", "",
        "```", "python benchmarks/model_write.py --write-readme", "```", "", *lines, "", END])
    if args.write_readme:
        replace_section(START, END, block)
    else:
        print(block)


if __name__ == "__main__":
    main()
