"""streamherd.river's learn_one against river's own PAClassifier on the same stream of dicts
(sms_spam's messages as {word: count}, bool labels): microseconds per learn_one, best of
``--repeats`` rounds, each a pass over the stream by a fresh model of every contender in turn
(numba's cache warmed first). streamherd.river keeps no name table: every row's names are
hashed (in machine code) at every learn_one, so a model whose names are new to the process
costs what a later one does, and one column serves both. Writes its own section of
benchmarks/README.md with ``--write-readme``.

    python benchmarks/river_model.py --write-readme
"""
import argparse
import datetime
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))   # this checkout's streamherd

from throughput import replace_section  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data" / "sms_spam.vw"
START, END = "<!-- river_model: start -->", "<!-- river_model: end -->"


def sms_stream(path):
    stream = []
    for line in Path(path).read_text().splitlines():
        label, features = line.split("|", 1)
        x = {}
        for token in features.split()[1:]:
            name, _, value = token.rpartition(":") if ":" in token else (token, "", "1")
            x[name] = x.get(name, 0.0) + float(value)
        stream.append((x, float(label) > 0))
    return stream


def one_pass(make, stream):
    """Microseconds per learn_one of a fresh model over the stream."""
    model = make()
    start = time.perf_counter()
    for x, y in stream:
        model.learn_one(x, y)
    return (time.perf_counter() - start) / len(stream) * 1e6


def best_passes(contenders, stream, repeats):
    """name -> best microseconds per learn_one over ``repeats`` rounds, each round one pass of
    every contender (name, make) in turn, so that all see the same machine."""
    best = {name: float("inf") for name, _ in contenders}
    for _ in range(repeats):
        for name, make in contenders:
            best[name] = min(best[name], one_pass(make, stream))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    from river import linear_model

    from streamherd.river import OnlineClassifier

    stream = sms_stream(args.data)
    OnlineClassifier("pa1").learn_one(*stream[0])   # numba's cache loaded
    load = os.getloadavg()[0]
    algos = ("pa1", "arow-p", "scw1")
    contenders = [("river", lambda: linear_model.PAClassifier(C=1.0, mode=1))]
    for algo in algos:
        contenders.append((algo, lambda algo=algo: OnlineClassifier(algo)))
    best = best_passes(contenders, stream, args.repeats)
    river_us = best["river"]
    rows = [f"| river PAClassifier (PA-I, C=1) | {river_us:.2f} | 1.00x |"]
    for algo in algos:
        rows.append(f"| streamherd.river OnlineClassifier({algo!r}) | {best[algo]:.2f} | "
                    f"{river_us / best[algo]:.2f}x |")
    block = "\n".join([
        START, "## river models: learn_one", "",
        f"`python benchmarks/river_model.py --write-readme` ({datetime.date.today()}, load "
        f"average {load:.1f} on {os.cpu_count()} cores at the start): "
        f"{len(stream)} sms_spam messages as dicts, microseconds per learn_one (best of "
        f"{args.repeats} rounds, each a pass of a fresh model of every row in turn); the "
        f"ratio is river's PAClassifier time over the model's (higher is faster; target >= 2x). "
        f"Every model's pass hashes every name of every row (streamherd.river keeps no name "
        f"table), so names new to the process cost what names met do.", "",
        "| model | us / learn_one | vs river PA |", "|---|---:|---:|", *rows, END])
    print(block)
    if args.write_readme:
        replace_section(START, END, block)


if __name__ == "__main__":
    main()
