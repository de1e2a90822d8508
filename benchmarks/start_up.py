"""Where the start-up of ``streamherd train`` and ``predict`` on a one-line file goes, side by
side with VW (issue 33's start-up targets: within 2x VW's wall time; ``--help`` and
``--version`` under 0.15 s, an argument error under 0.2 s).

    python benchmarks/start_up.py [--repeat 20] [--aot] [--write-readme]

Every row is a whole process (``sys.executable``, this checkout's streamherd first on the
path), run ``--repeat`` times; the rounds alternate (each round runs every row once, in a
rotated order), so that a busy moment of the machine falls on every row alike. A row gives the
minimum (the machine at its quietest: the figure to compare) and the median of its runs, with
the load average before and after. The package is byte-compiled first (this environment sets
PYTHONDONTWRITEBYTECODE; an installed package has its bytecode).

The "stages" rows are cumulative: each does what the one before it does and a step more, in
the order ``streamherd train`` does it (cli.py, start_up.py), so that the difference of two
rows is the cost of that step: the interpreter; the command line's modules (``import
streamherd.cli``); numpy and numba (start_up.import_numba); the modules of training
(``streamherd.training``); numba's compiler target and runtime, and the first kernel loaded
from numba's cache (start_up.end); the whole command. The floor rows are the libraries alone.

The breakdown runs the train and predict commands in-process (``cli.run``) with timers around
the same steps, around each kernel numba loads from its cache (Dispatcher.compile: the cache
index read, the type check, the object code linked), around the model's save and load, and
counts the threads started and the modules imported that a one-line run might not need; the
minimum of each timer over ``--repeat`` runs.

``--aot`` measures the alternative issue 33 names, numba's ahead-of-time compilation
(numba.pycc, deprecated but still in numba): two of the kernels a one-line train loads
(progress._account_chunk and labels._signed_labels, each with the one signature train gives it)
built into an extension module, then, in fresh processes, that module imported without numba
and its functions called, against the same kernels' first calls from numba's cache (numba and
its target already loaded); their results compared bit for bit on random inputs; and a floor
row, the command line's modules, numpy and the extension module imported (what a start-up
without numba would import before its own work).
"""
import argparse
import compileall
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
README = HERE / "README.md"
START, END = "<!-- start-up:start -->", "<!-- start-up:end -->"
ONE_SVM = b"1 1:1 2:0.5\n"
ONE_VW = b"1 | 1:1 2:0.5\n"

# Each -c row ends the process as the command does (cli.main): without the interpreter's
# teardown, which is no start-up cost (and the longer, the more objects the collector, left
# off by start_up.begin, finds then).
EXIT = "; import os; os._exit(0)"
# The stages: Python source run with -c, each one step more than the one before.
STAGE_CLI = "import streamherd.cli as cli; cli.start_up.begin()"
STAGE_NUMBA = STAGE_CLI + "; cli.start_up.import_numba()"
STAGE_TRAINING = STAGE_NUMBA + "; import streamherd.training"
STAGE_END = STAGE_TRAINING + "; cli.start_up.end()"

# Run in-process by the breakdown: the command's steps timed (argv follows the code).
BREAKDOWN_CODE = r"""
import json, sys, threading, time
started = time.perf_counter()
steps, kernels, timers = {}, [], {}
threads = []
start_thread = threading.Thread.start
def counted_start(thread):
    threads.append(thread.name)
    return start_thread(thread)
threading.Thread.start = counted_start
def timed(name, function):
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timers[name] = timers.get(name, 0.0) + time.perf_counter() - t
    return run
import streamherd.cli as cli
steps["command line modules (import streamherd.cli)"] = time.perf_counter() - started
start_up = cli.start_up
def imported(name):
    t = time.perf_counter()
    numpy_first = "numpy" in sys.modules
    steps["the command's imports before numba" + (" (numpy among them)" if numpy_first
                                                   else "")] = t - run_started
    start_up.import_numba()
    steps["numba" if numpy_first else "numpy and numba"] = time.perf_counter() - t
    t = time.perf_counter()
    import importlib
    module = importlib.import_module(name)
    steps["training modules"] = time.perf_counter() - t
    t = time.perf_counter()
    start_up.end()
    steps["numba target and runtime (start_up.end)"] = time.perf_counter() - t
    from numba.core import dispatcher
    first_call = dispatcher.Dispatcher._compile_for_args
    def loading(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return first_call(self, *args, **kwargs)
        finally:
            kernels.append((self.py_func.__module__ + "." + self.py_func.__qualname__,
                            threading.current_thread().name, time.perf_counter() - t))
    dispatcher.Dispatcher._compile_for_args = loading
    training = sys.modules["streamherd.training"]
    training.save_model = timed("model written (save_model)", training.save_model)
    training.for_predicting = timed("model read (for_predicting)", training.for_predicting)
    import numpy as np
    from streamherd.learners import packing
    packing.populated_zeros = timed("a bank's memory mapped (learners.packing.populated_zeros)",
                                    packing.populated_zeros)
    np.unique = timed("np.unique (its first call imports numpy.ma)", np.unique)
    return module
start_up.imported = imported
run_started = time.perf_counter()
try:
    cli.run(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
done = time.perf_counter()
print(json.dumps({"steps": steps, "run": done - run_started, "total": done - started,
                  "timers": timers, "kernels": kernels, "threads": threads,
                  "modules": sorted(sys.modules)}))
"""
# Modules whose presence after a one-line run is worth a line: none is needed to learn from a
# svmlight line.
WATCHED = ("scipy", "yaml", "rich", "numpy.ma", "numpy.random", "json", "concurrent.futures",
           "email", "html", "logging", "socket", "isal", "zipfile", "multiprocessing",
           "inspect", "dataclasses")


AOT_MODULE = "streamherd_aot_probe"
AOT_SIGNATURES = {
    # name: (module, function, pycc signature: train's types)
    "account_chunk": ("streamherd.progress", "_account_chunk",
                      "Tuple((i8, f8, f8, i8, i8, f8))(f8[::1], f8[::1], f8, f8, f8, b1, i8[::1], "
                      "f8[::1], f8[::1], f8, f8)"),
    "signed_labels": ("streamherd.labels", "_signed_labels", "b1(f8[::1], f8, f8, f8[::1])"),
}
AOT_BUILD = """
import importlib, sys, time, warnings
warnings.simplefilter("ignore")
started = time.perf_counter()
from numba.pycc import CC
cc = CC(sys.argv[1])
cc.output_dir = sys.argv[2]
for name, (module, function, signature) in SIGNATURES.items():
    cc.export(name, signature)(getattr(importlib.import_module(module), function).py_func)
cc.compile()
print(time.perf_counter() - started)
"""
# The same calls through the extension module ("aot", numba not imported) or the cached kernels
# ("njit", after start-up as a command does it): seconds of the import and of each first call.
AOT_CALLS = """
import json, sys, time
import numpy as np
mode = sys.argv[1]
if mode == "njit":
    import streamherd.cli as cli
    cli.start_up.imported("streamherd.training")
started = time.perf_counter()
if mode == "aot":
    import AOT_MODULE as kernels
    account_chunk, signed_labels = kernels.account_chunk, kernels.signed_labels
else:
    from streamherd.labels import _signed_labels as signed_labels
    from streamherd.progress import _account_chunk as account_chunk
imported = time.perf_counter()
n = 3
first = account_chunk(np.ones(n), np.ones(n), 0.0, 0.0, 1.0, True, np.zeros(n, np.int64),
                      np.zeros(n), np.zeros(n), 0.0, 2.0)
called = time.perf_counter()
signed_labels(np.ones(n), -1.0, 1.0, np.empty(n))
second = time.perf_counter()
rng = np.random.default_rng(0)
results = []
for _ in range(200):
    n = int(rng.integers(1, 50))
    importance, loss = rng.random(n), rng.random(n)
    loss[rng.random(n) < 0.2] = np.nan
    loss[rng.random(n) < 0.3] = 0.0
    rows, weights, losses = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    out = account_chunk(importance, loss, 0.5, 0.25, 1.0, True, rows, weights, losses, 0.0, 1.5)
    labels, y = rng.choice([1.0, -1.0, np.nan, np.inf, 2.0], n), np.empty(n)
    known = signed_labels(labels, -1.0, 1.0, y)
    results.append([repr(out), rows.tobytes().hex(), weights.tobytes().hex(),
                    losses.tobytes().hex(), bool(known), y.tobytes().hex()])
print(json.dumps({"import": imported - started, "first": called - imported,
                  "second": second - called, "numba": "numba" in sys.modules,
                  "results": results}))
"""


def aot_measurement(folder, repeat, env):
    """The build's seconds and size, the import and first calls of each way (minimum over
    ``repeat`` processes), whether numba was loaded, whether the results agree, and the floor's
    argv."""
    build = AOT_BUILD.replace("SIGNATURES", repr(AOT_SIGNATURES))
    proc = subprocess.run([sys.executable, "-c", build, AOT_MODULE, str(folder)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"the AOT build failed:\n{proc.stderr}")
    built = float(proc.stdout.split()[-1])
    (library,) = folder.glob(f"{AOT_MODULE}*.so")
    aot_env = dict(env, PYTHONPATH=os.pathsep.join([str(folder), env["PYTHONPATH"]]))
    ways = {}
    for mode in ("aot", "njit"):
        runs = []
        for _ in range(repeat):
            proc = subprocess.run([sys.executable, "-c", AOT_CALLS.replace("AOT_MODULE",
                                                                           AOT_MODULE), mode],
                                  capture_output=True, text=True, env=aot_env, cwd=ROOT)
            if proc.returncode:
                raise SystemExit(f"the {mode} calls failed:\n{proc.stderr}")
            runs.append(json.loads(proc.stdout.splitlines()[-1]))
        ways[mode] = ({key: min(run[key] for run in runs) for key in ("import", "first",
                                                                      "second")},
                      runs[0]["numba"], runs[0]["results"])
    same = ways["aot"][2] == ways["njit"][2]
    floor = [sys.executable, "-c", f"import streamherd.cli, numpy, {AOT_MODULE}" + EXIT]
    return built, library.stat().st_size, ways, same, floor, aot_env


def aot_lines(result, floor_times, repeat):
    built, size, ways, same, _, _ = result
    lines = ["**Ahead of time (numba.pycc), measured, not adopted** (`--aot`): "
             f"progress._account_chunk and labels._signed_labels exported with train's "
             f"signatures, built in {built:.1f} s into a {size / 1e6:.1f} MB extension module; "
             f"each figure the minimum of {repeat} fresh processes.", "",
             "| way | import ms | first call ms (_account_chunk) | first call ms "
             "(_signed_labels) | numba imported |", "|---|---|---|---|---|"]
    for mode, label in (("aot", "extension module (pycc)"),
                        ("njit", "cached njit kernels (after start_up.imported)")):
        times, numba_loaded, _ = ways[mode]
        lines.append(f"| {label} | {times['import'] * 1e3:.2f} | {times['first'] * 1e3:.2f} | "
                     f"{times['second'] * 1e3:.2f} | {'yes' if numba_loaded else 'no'} |")
    lines += ["", f"Results on 200 random inputs: {'bit for bit the same' if same else 'DIFFER'}."
                  f" Floor without numba, `import streamherd.cli, numpy, {AOT_MODULE}`: "
                  f"{min(floor_times):.3f} s (min), {statistics.median(floor_times):.3f} s "
                  f"(median).", ""]
    return lines


def vowpalwabbit_importable():
    proc = subprocess.run([sys.executable, "-c", "import vowpalwabbit"], capture_output=True)
    return proc.returncode == 0


def rows(folder):
    """(group, label, argv, expected exit codes)."""
    py = sys.executable
    sh = [py, "-m", "streamherd"]
    one, one_vw, model = folder / "one.svm", folder / "one.vw", folder / "one.npz"
    out = [("floor", "python -c pass", [py, "-c", "pass" + EXIT], (0,)),
           ("floor", "import numpy", [py, "-c", "import numpy" + EXIT], (0,)),
           ("floor", "import numpy, numba", [py, "-c", "import numpy, numba" + EXIT], (0,))]
    if vowpalwabbit_importable():
        out.append(("vw", "VW: python -m vowpalwabbit -d one.vw", [py, "-m", "vowpalwabbit", "-d",
                                                                    str(one_vw)], (0,)))
        out.append(("vw", "VW: ... -d one.vw -f model", [py, "-m", "vowpalwabbit", "-d",
                                                         str(one_vw), "-f",
                                                         str(folder / "vw.model")], (0,)))
        out.append(("vw", "VW: ... -t -i model -d one.vw", [py, "-m", "vowpalwabbit", "-t", "-i",
                                                           str(folder / "vw.model"), "-d",
                                                           str(one_vw)], (0,)))
    out += [("flags", "--help", sh + ["--help"], (0,)),
            ("flags", "--version", sh + ["--version"], (0,)),
            ("flags", "argument error (train --no-such-flag)",
             sh + ["train", "--no-such-flag", str(one)], (2,)),
            ("flags", "bad value (train --algo no-such-learner)",
             sh + ["train", "--algo", "no-such-learner", str(one)], (2,)),
            ("flags", "missing input (train missing.svm)",
             sh + ["train", str(folder / "missing.svm")], (2,)),
            ("stages", "1 import streamherd.cli", [py, "-c", STAGE_CLI + EXIT], (0,)),
            ("stages", "2 + numpy and numba (start_up.import_numba)",
             [py, "-c", STAGE_NUMBA + EXIT], (0,)),
            ("stages", "3 + import streamherd.training", [py, "-c", STAGE_TRAINING + EXIT], (0,)),
            ("stages", "4 + numba target and runtime (start_up.end)", [py, "-c", STAGE_END + EXIT],
             (0,)),
            ("command", "train one.svm -f model", sh + ["train", str(one), "-f", str(model)],
             (0,)),
            ("command", "train one.svm", sh + ["train", str(one)], (0,)),
            ("command", "predict -m model one.svm", sh + ["predict", "-m", str(model), str(one)],
             (0,))]
    return out


def run_once(argv, codes, env):
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          cwd=ROOT)
    took = time.perf_counter() - started
    if proc.returncode not in codes:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr.decode()}")
    return took


def environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                       if env.get("PYTHONPATH") else []))
    return env


def measure(cases, repeat, env):
    times = {label: [] for _, label, _, _ in cases}
    for round_ in range(repeat + 1):
        shift = round_ % len(cases)
        for _, label, argv, codes in cases[shift:] + cases[:shift]:
            took = run_once(argv, codes, env)
            if round_:   # the first round warms the page cache
                times[label].append(took)
    return times


def breakdown(argv, repeat, env):
    """Over ``repeat`` in-process runs, the minimum of each step (in order), of each kernel's
    first call, and of the rest of the command; the threads started and the watched modules
    imported."""
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", BREAKDOWN_CODE, *argv], capture_output=True,
                              text=True, env=env, cwd=ROOT)
        if proc.returncode:
            raise SystemExit(f"breakdown of {argv}: exit {proc.returncode}\n{proc.stderr}")
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    steps = {name: min(run["steps"][name] for run in runs) for name in runs[0]["steps"]}
    kernels = {}   # name -> (thread, seconds, whether it waited for another thread's load)
    for run in runs:
        seen = set()
        for name, thread, seconds in run["kernels"]:
            key = name if name not in seen else f"{name}, again"
            seen.add(name)
            kernels[key] = (thread, min(kernels.get(key, (thread, seconds))[1], seconds))
    timers = {name: min(run["timers"].get(name, 0.0) for run in runs)
              for name in dict.fromkeys(name for run in runs for name in run["timers"])}
    # the rest: what the command does after start-up besides its kernels' first calls on the
    # main thread and the model's input and output
    rest = min(run["run"] - sum(run["steps"].values()) + run["steps"][next(iter(run["steps"]))]
               - sum(s for _, thread, s in run["kernels"] if thread == "MainThread")
               - sum(run["timers"].values()) for run in runs)
    total = min(run["total"] for run in runs)
    watched = [m for m in WATCHED if m in runs[0]["modules"]]
    return steps, kernels, timers, rest, total, runs[0]["threads"], watched


def table(times, cases, vw_label):
    vw = min(times[vw_label]) if vw_label in times else None
    lines = ["| run | min s | median s | min vs VW's |", "|---|---|---|---|"]
    for _, label, _, _ in cases:
        best = min(times[label])
        ratio = f"{best / vw:.1f}x" if vw else ""
        lines.append(f"| {label} | {best:.3f} | {statistics.median(times[label]):.3f} | "
                     f"{ratio} |")
    return lines


def floor_lines(times, vw_label):
    """What the libraries alone cost against the target (2x VW's wall time)."""
    if vw_label not in times:
        return []
    best = {label: min(seconds) for label, seconds in times.items()}
    interpreter = best["python -c pass"]
    libraries = (best["2 + numpy and numba (start_up.import_numba)"]
                 - best["1 import streamherd.cli"] + interpreter)
    return [f"Target, 2x VW's: {2 * best[vw_label]:.3f} s. The interpreter, numpy and numba as "
            f"start_up imports them (stage 2 less stage 1, plus `pass`): {libraries:.3f} s, "
            f"{libraries / best[vw_label]:.1f}x VW's before any of streamherd's own work; the "
            f"interpreter and numpy alone: {best['import numpy']:.3f} s."]


def breakdown_lines(title, result):
    steps, kernels, timers, rest, total, threads, watched = result
    main_thread = sum(s for thread, s in kernels.values() if thread == "MainThread")
    main_count = sum(1 for thread, _ in kernels.values() if thread == "MainThread")
    lines = [f"**{title}**: in-process, each figure the minimum over the runs (the interpreter's "
             f"own start, before the first of these, is `python -c pass`'s row).", "",
             "| step | ms |", "|---|---|"]
    lines += [f"| {name} | {seconds * 1e3:.1f} |" for name, seconds in steps.items()]
    lines.append(f"| first calls of the kernels on the main thread ({main_count}; each loaded "
                 f"from numba's cache) | {main_thread * 1e3:.1f} |")
    lines += [f"| {name} | {seconds * 1e3:.1f} |" for name, seconds in timers.items()]
    lines += [f"| the rest of the command (parsing options, reading, learning, the report) | "
              f"{rest * 1e3:.1f} |", f"| total (from the first import) | {total * 1e3:.1f} |",
              "", "| kernel's first call (thread) | ms |", "|---|---|"]
    lines += [f"| {name.removeprefix('streamherd.')} ({thread}) | {seconds * 1e3:.1f} |"
              for name, (thread, seconds) in kernels.items()]
    lines += ["", f"Threads started: {len(threads)} ({', '.join(threads) or 'none'}). Of the "
                  f"watched modules ({', '.join(WATCHED)}), imported: "
                  f"{', '.join(watched) or 'none'}.", ""]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--aot", action="store_true",
                        help="also measure the kernels built ahead of time (numba.pycc)")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "streamherd"), quiet=1)
    env = environment()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "one.svm").write_bytes(ONE_SVM)
        (folder / "one.vw").write_bytes(ONE_VW)
        cases = rows(folder)
        # the models the predict rows read, and numba's cache entries checked present
        for _, _, argv, codes in cases:
            if "-f" in argv:
                run_once(argv, codes, env)
        load_before = os.getloadavg()
        times = measure(cases, args.repeat, env)
        load_after = os.getloadavg()
        train_breakdown = breakdown(["train", str(folder / "one.svm"), "-f",
                                     str(folder / "one.npz"), "--quiet"], args.repeat, env)
        predict_breakdown = breakdown(["predict", "-m", str(folder / "one.npz"),
                                       str(folder / "one.svm"), "--quiet"], args.repeat, env)
        aot = []
        if args.aot:
            result = aot_measurement(folder, args.repeat, env)
            floor, aot_env = result[4], result[5]
            floor_times = [run_once(floor, (0,), aot_env) for _ in range(args.repeat)]
            aot = aot_lines(result, floor_times, args.repeat)
    vw_label = "VW: python -m vowpalwabbit -d one.vw"
    lines = [START, "## Start-up (one-line files)", "",
             f"`python benchmarks/start_up.py --repeat {args.repeat}"
             f"{' --aot' if args.aot else ''}`, "
             f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, load average "
             f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; Python "
             f"{sys.version.split()[0]} at {sys.executable}. Whole processes, the rounds "
             f"alternating; min: the quietest of {args.repeat} runs. Stages are cumulative "
             f"(see the script's docstring): the difference of two is that step's cost, when "
             f"the machine is quiet enough that a later stage's minimum is not below an "
             f"earlier one's (the in-process breakdowns below are steadier).", "",
             *table(times, cases, vw_label), "", *floor_lines(times, vw_label), "",
             *breakdown_lines("train one.svm -f model", train_breakdown),
             *breakdown_lines("predict -m model one.svm", predict_breakdown), *aot, END]
    block = "\n".join(lines)
    print(block)
    if args.write_readme:
        text = README.read_text()
        if START in text:
            before, rest = text.split(START, 1)
            text = before + block + rest.split(END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        README.write_text(text)


if __name__ == "__main__":
    main()
