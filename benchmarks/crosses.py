"""Training with crosses of namespaces against VW with the same crosses (issues 18 and 33).

    python benchmarks/crosses.py [--lines 200000 500000] [--ff-lines 100000] [--repeat 5]
        [--write-readme]

Two inputs, each trained on once by whole commands in subprocesses, with ``-b 20``:

* ``-q ab``: a generated VW file of each ``--lines`` lines with two namespaces, ``a`` and ``b``, of
  20 features each (400 crosses a line; written once under the temporary folder, seeded, see
  two_namespace_file), by ``streamherd train --algo nherd-p`` and ``--algo pa2`` and by
  ``python -m vowpalwabbit`` (its default learner);
* ``-q ff``: the first ``--ff-lines`` lines of make_data.py's VW file (one namespace ``f``,
  about 40 features, so about 820 crosses a line), by nherd-p and VW (0 lines: skipped).

Each input's commands run after a warm-up round, alternating, ``--repeat`` rounds; a row gives
the shortest of its runs (min-of-N: the machine is shared) of the wall clock and of the CPU time
(user + system, all threads), and the load average before and after the input's runs.

Where the time goes (the first ``--lines`` file): each command on its first line alone (its
start-up), and, in one process on one thread, the parse of each block (reading, hashing, the
crosses) and each learner's learning from it, timed apart, per crossed feature.
"""
import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import make_data  # noqa: E402

README = HERE / "README.md"
START, END = "<!-- crosses:start -->", "<!-- crosses:end -->"
BITS = "20"
FEATURES_PER_NAMESPACE = 20
MAX_INDEX = 100_000
VALUES = np.array(["1", "1", "2", "3", "0.5", "0.25", "1.5"])
SEED = 33
_LINES_AT_ONCE = 10_000


def two_namespace_file(lines):
    """A VW file of ``lines`` lines ``label |a i:v ... |b i:v ...``, 20 distinct rising indices
    below 100,000 in each namespace; the label is the sign of a hidden weight of each a-b pair
    of the line, summed (what -q ab can learn), plus noise. Written once per line count."""
    path = Path(tempfile.gettempdir()) / "streamherd-bench" / f"crosses-ab-{lines}-s{SEED}.vw"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    hidden_a, hidden_b = rng.normal(size=(2, MAX_INDEX))
    index_text = np.array([str(i) for i in range(MAX_INDEX)])
    partial = path.with_suffix(".partial")
    with open(partial, "w") as out:
        for first in range(0, lines, _LINES_AT_ONCE):
            m = min(_LINES_AT_ONCE, lines - first)
            # rising gaps of 1 to MAX_INDEX / 20 - 1: distinct indices below MAX_INDEX
            a, b = (np.cumsum(rng.integers(1, MAX_INDEX // FEATURES_PER_NAMESPACE,
                                           (m, FEATURES_PER_NAMESPACE)), axis=1)
                    for _ in range(2))
            va, vb = (rng.integers(0, len(VALUES), (m, FEATURES_PER_NAMESPACE))
                      for _ in range(2))
            margin = hidden_a[a].sum(axis=1) * hidden_b[b].sum(axis=1)
            labels = np.where(margin + rng.normal(scale=margin.std() / 4, size=m) > 0, "1", "-1")
            text_a = np.char.add(np.char.add(index_text[a], ":"), VALUES[va])
            text_b = np.char.add(np.char.add(index_text[b], ":"), VALUES[vb])
            out.write("".join(f"{label} |a {' '.join(ra)} |b {' '.join(rb)}\n"
                              for label, ra, rb in zip(labels, text_a.tolist(),
                                                       text_b.tolist())))
    partial.replace(path)
    return path


def ff_file(lines):
    """The first ``lines`` lines of make_data.py's VW file (cached beside it)."""
    path = HERE / "data" / f"crosses-{lines}.vw"
    if not path.exists():
        with open(make_data.ensure().vw, "rb") as f, open(path, "wb") as out:
            for _, line in zip(range(lines), f):
                out.write(line)
    return path


def commands(path, cross, algos):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {f"streamherd {algo}": ([sys.executable, "-m", "streamherd", "train", str(path),
                                    "--algo", algo, *cross, "-b", BITS, "--quiet"], env)
            for algo in algos}
    runs["VW"] = ([sys.executable, "-m", "vowpalwabbit", "-d", str(path), *cross, "-b", BITS,
                   "--quiet"], os.environ)
    return runs


def timed(cmd, env):
    """(wall seconds, CPU seconds: user + system of every thread) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(runs, repeat):
    """{name: (shortest wall, shortest CPU)}, and the 1-minute load average before and after."""
    for cmd, env in runs.values():   # warm-up: numba's cache, the page cache
        timed(cmd, env)
    load_before = os.getloadavg()[0]
    times = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (cmd, env) in runs.items():
            times[name].append(timed(cmd, env))
    shortest = {name: (min(w for w, _ in t), min(c for _, c in t)) for name, t in times.items()}
    return shortest, (load_before, os.getloadavg()[0])


BREAKDOWN_CODE = """\
import sys, time
import numpy as np
from streamherd.io.reader import ChunkReader
from streamherd.model import ModelFlags, OnlineModel
path, algos = sys.argv[1], sys.argv[2:]
models = {a: OnlineModel.new(ModelFlags(algo=a, bits=int(BITS),
                                        namespaces={"quadratic": ("ab",)})) for a in algos}
space = models[algos[0]].read_space
for repeat in range(2):   # the first round loads the kernels
    parse, learn, features = 0.0, dict.fromkeys(algos, 0.0), 0
    started = time.perf_counter()
    for chunk in ChunkReader([path], fmt="vw", features=space, workers=0):
        parse += time.perf_counter() - started
        features += int(chunk.indptr[-1])
        for algo, model in models.items():
            began = time.perf_counter()
            model.learn(chunk)
            learn[algo] += time.perf_counter() - began
        started = time.perf_counter()
print(features, parse, *(learn[a] for a in algos))
""".replace("BITS", repr(BITS))


def breakdown(path, algos, repeat):
    """(start-up seconds of each command on the file's first line, shortest of ``repeat``
    runs; crossed features, seconds of parsing, seconds of each learner's learning)."""
    first_line = path.with_name(path.stem + "-first.vw")
    with open(path) as f:
        first_line.write_text(f.readline())
    runs = commands(first_line, ["-q", "ab"], algos)
    startup = {name: min(timed(cmd, env)[0] for _ in range(repeat))
               for name, (cmd, env) in runs.items()}
    out = subprocess.run([sys.executable, "-c", BREAKDOWN_CODE, str(path), *algos],
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
                         capture_output=True, text=True).stdout.split()
    features, parse, *learn = float(out[0]), *map(float, out[1:])
    return startup, (features, parse, dict(zip(algos, learn)))


def breakdown_lines(count, startup, split, whole):
    """The rows of breakdown's figures; ``whole``: the shortest whole runs (measure)."""
    features, parse, learn = split
    lines = [f"Where the time goes, `-q ab` on {count:,} lines ({features:,.0f} features with "
             f"the crosses): each command on the file's first line alone (start-up: imports, "
             f"numba's cache load), shortest of its runs, and its whole run above less that; "
             f"and, in one "
             f"process on one thread after a first round that loads the kernels, the parse of "
             f"each block (reading, hashing, the crosses, the repeated slots summed) and each "
             f"learner's learning from it, timed apart.", "",
             "| step | seconds | ns per feature |", "|:---|---:|---:|"]
    lines += [f"| start-up: {name} -q ab on one line | {seconds:.2f} | |"
              for name, seconds in startup.items()]
    lines += [f"| {name} -q ab less its start-up (wall) | {whole[name][0] - seconds:.2f} | "
              f"{(whole[name][0] - seconds) / features * 1e9:.1f} |"
              for name, seconds in startup.items()]
    lines.append(f"| parse with the crosses | {parse:.2f} | {parse / features * 1e9:.1f} |")
    lines += [f"| learn: {algo} | {seconds:.2f} | {seconds / features * 1e9:.1f} |"
              for algo, seconds in learn.items()]
    return lines


def table(title, cross, runs, times, load):
    vw_wall, vw_cpu = times["VW"]
    lines = [f"{title}; load average (1 min) {load[0]:.2f} before its runs, {load[1]:.2f} "
             f"after.", "", "| command | seconds | VW / this | CPU seconds | VW / this (CPU) |",
             "|:---|---:|---:|---:|---:|"]
    for name, (wall, cpu) in times.items():
        lines.append(f"| {name} {cross} | {wall:.2f} | {vw_wall / wall:.2f}x | {cpu:.2f} | "
                     f"{vw_cpu / cpu:.2f}x |")
    shown = {name: " ".join(shlex.quote(Path(a).name if a == sys.executable
                                        else a.replace(f"{ROOT}/", "")) for a in cmd)
             for name, (cmd, _) in runs.items()}
    lines += ["", "Commands:", "", "```", *shown.values(), "```"]
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[200_000, 500_000])
    ap.add_argument("--ff-lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write-readme", action="store_true")
    args = ap.parse_args(argv)
    given = " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    lines = [f"Generated by `python benchmarks/crosses.py {given}`.".replace(" `.", "`."), "",
             f"Whole commands in subprocesses (start-up, imports and numba's cache load "
             f"included), `-b {BITS}`, one pass; for each input a warm-up round, then "
             f"{args.repeat} round{'s' * (args.repeat > 1)} of every command once, "
             f"alternating; a row gives the shortest of its runs, of the wall clock and of "
             f"the CPU time (user and system time of all its threads: less swayed than the "
             f"wall clock by other work on the machine, {os.cpu_count()} cores, shared). "
             f"VW / this above 1: streamherd is faster. VW's times vary with the machine's "
             f"load more than streamherd's: compare the ratios with the load beside them.", ""]
    wholes = []   # each file's shortest runs
    for count in args.lines:
        runs = commands(two_namespace_file(count), ["-q", "ab"], ["nherd-p", "pa2"])
        times, load = measure(runs, args.repeat)
        wholes.append(times)
        lines += table(f"`-q ab` on {count:,} generated lines of two namespaces, `a` and `b`, "
                       f"of {FEATURES_PER_NAMESPACE} features each "
                       f"({FEATURES_PER_NAMESPACE ** 2} crosses a line; `two_namespace_file`)",
                       "-q ab", runs, times, load) + [""]
    startup, split = breakdown(two_namespace_file(args.lines[0]), ["nherd-p", "pa2"],
                               args.repeat)
    lines += breakdown_lines(args.lines[0], startup, split, wholes[0]) + [""]
    if args.ff_lines:
        runs = commands(ff_file(args.ff_lines), ["-q", "ff"], ["nherd-p"])
        times, load = measure(runs, args.repeat)
        lines += table(f"`-q ff` on the first {args.ff_lines:,} lines of the generated VW "
                       f"file of make_data.py (one namespace, about 40 features and 820 "
                       f"crosses a line)", "-q ff", runs, times, load)
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        readme = README.read_text()
        section = f"{START}\n## Crosses of namespaces\n\n{text}\n{END}"
        if START in readme:
            head, rest = readme.split(START, 1)
            readme = head + section + rest.split(END, 1)[1]
        else:
            readme = readme.rstrip("\n") + "\n\n" + section + "\n"
        README.write_text(readme)


if __name__ == "__main__":
    main()
