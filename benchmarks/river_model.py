"""streamherd.river's learn_one against river's own PAClassifier on the same stream of dicts
(sms_spam's messages as {word: count}, bool labels): microseconds per learn_one, best of
``--repeats`` rounds, each a pass over the stream by a fresh model of every contender in turn
(numba's cache warmed first). Two columns:
"names met" — the models of a process share their name -> slot tables (streamherd.river's
_name_table), so a fresh model reads the names an earlier one hashed, as a notebook's second
model does; and "names new" — the tables emptied before each model, so its pass hashes every
name, as the first model of a process does. Writes its own section of benchmarks/README.md
with ``--write-readme``.

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


def one_pass(make, stream, forget=None):
    """Microseconds per learn_one of a fresh model over the stream (``forget()`` first, when
    given)."""
    if forget is not None:
        forget()
    model = make()
    start = time.perf_counter()
    for x, y in stream:
        model.learn_one(x, y)
    return (time.perf_counter() - start) / len(stream) * 1e6


def best_passes(contenders, stream, repeats):
    """name -> best microseconds per learn_one over ``repeats`` rounds, each round one pass of
    every contender (name, make, forget) in turn, so that all see the same machine."""
    best = {name: float("inf") for name, _, _ in contenders}
    for _ in range(repeats):
        for name, make, forget in contenders:
            best[name] = min(best[name], one_pass(make, stream, forget))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    from river import linear_model

    from streamherd import river as streamherd_river
    from streamherd.river import OnlineClassifier

    stream = sms_stream(args.data)
    OnlineClassifier("pa1").learn_one(*stream[0])   # numba's cache loaded
    load = os.getloadavg()[0]
    algos = ("pa1", "arow-p", "scw1")
    contenders = [("river", lambda: linear_model.PAClassifier(C=1.0, mode=1), None)]
    for algo in algos:
        def make(algo=algo):
            return OnlineClassifier(algo)
        contenders += [((algo, "met"), make, None),
                       ((algo, "new"), make, streamherd_river._NAME_TABLES.clear)]
    best = best_passes(contenders, stream, args.repeats)
    river_us = best["river"]
    rows = [f"| river PAClassifier (PA-I, C=1) | {river_us:.2f} | 1.00x | {river_us:.2f} | "
            f"1.00x |"]
    for algo in algos:
        met, new = best[algo, "met"], best[algo, "new"]
        rows.append(f"| streamherd.river OnlineClassifier({algo!r}) | {met:.2f} | "
                    f"{river_us / met:.2f}x | {new:.2f} | {river_us / new:.2f}x |")
    block = "\n".join([
        START, "## river models: learn_one", "",
        f"`python benchmarks/river_model.py --write-readme` ({datetime.date.today()}, load "
        f"average {load:.1f} on {os.cpu_count()} cores at the start): "
        f"{len(stream)} sms_spam messages as dicts, microseconds per learn_one (best of "
        f"{args.repeats} rounds, each a pass of a fresh model of every row in turn); the "
        f"ratio is river's PAClassifier time over the model's (higher is faster; target >= 2x). Names met: the process's name -> slot "
        f"tables hold the stream's names (an earlier model met them); names new: the tables "
        f"emptied before each model, whose pass then hashes every name.", "",
        "| model | us / learn_one (names met) | vs river PA | us / learn_one (names new) | "
        "vs river PA |", "|---|---:|---:|---:|---:|", *rows, END])
    print(block)
    if args.write_readme:
        replace_section(START, END, block)


if __name__ == "__main__":
    main()
