"""The first run after a fresh install: how long the README's first ``train`` takes when every
numba kernel has yet to be compiled, against the runs after it.

    python benchmarks/first_run.py [--source HEAD|worktree|PATH] [--overlay FILE ...]
        [--repeat 3] [--profile] [--editable] [--no-precompile] [--venv DIR] [--json FILE]
        [--baseline FILE [--cache-miss FILE]] [--write-readme]

Each repeat installs streamherd afresh, as a user does: ``pip install SRC`` into a virtualenv
(non-editable: pip builds a wheel from a copy of the tree and installs it into site-packages),
then runs, in this order, from a folder holding a copy of ``samples/``:

    train samples/sample.svm -f M        first run (every kernel it needs is compiled)
    train samples/sample.svm -f M        second run (kernels from numba's cache)
    predict -m M samples/sample.svm      first predict, then a second one
    train --algo nherd-p samples/sample.svm
    train samples/sample.vw              (a VW-format sample, when samples/ has one)

Each command is the installed ``streamherd`` console script run as a subprocess: wall time,
CPU time and peak RSS (``os.wait4``), the "elapsed seconds" and "examples per second" the run
reports itself, and the machine's load average when it started (other processes compete for
the 2 cores; repeat and look at the spread). Before the first run the script counts numba's
cache files in the installed package (``.nbi`` index files): 0 means a cold cache; a build that
ships its cache shows them there.

``--source``: HEAD (``git archive HEAD`` of this checkout: what is committed), worktree (the
checkout's tracked and untracked files as they are now) or a folder (copied without
``__pycache__``, ``build`` and ``*.egg-info``). ``--overlay FILE ...`` copies those files of the
work tree over the source (to measure uncommitted changes of some files while others are being
edited). The dependencies are installed once per
invocation (or kept in ``--venv DIR`` between invocations); each repeat removes the installed
package, numba's cache files with it, and installs it again (``--no-deps``, with pip's build
isolation, so the wheel is built as a user's pip builds it). ``--editable`` installs with
``pip install -e`` instead (the README's developer install; the package then stays in the copied
tree, whose ``__pycache__`` folders are emptied before each repeat).

``--profile`` adds one more fresh install whose commands run under a small wrapper that
records numba's compile events (``numba.core.event``: "numba:compile" and "numba:run_pass")
and times LLVM's optimisation and code generation: which kernels each command compiles, with
which argument types, and where the time goes.

The machine sets PYTHONDONTWRITEBYTECODE; pip byte-compiles the package at install anyway, so
the runs do not pay for it. NUMBA_* variables are removed from the runs' environment.

``--no-precompile`` installs with STREAMHERD_NO_PRECOMPILE=1, which skips the kernel
precompile of the build (setup.py): the first run then compiles, as when the shipped cache does
not match (another numba, another CPU, NUMBA_CACHE_DIR set at run time).

``--baseline FILE``: the ``--json`` file of an earlier invocation (e.g. of the commit before a
change); the output (and ``--write-readme``) then adds a table of both, with the ratios;
``--cache-miss FILE`` adds the record of a ``--no-precompile`` invocation as a third column.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
README = HERE / "README.md"
START, END = "<!-- first-run:start -->", "<!-- first-run:end -->"
TARGET_SECONDS = 5.0

# Runs a streamherd command in-process under numba's event listeners; writes a JSON record.
PROBE = r'''
import json, os, sys, threading, time
from collections import defaultdict
t0 = time.perf_counter()
from numba.core import codegen, event

records, passes, llvm = [], defaultdict(float), defaultdict(float)
stacks = defaultdict(list)
lock = threading.Lock()


class Compiles(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        stacks[threading.get_ident()].append(
            [f"{f.__module__}.{f.__qualname__}", str(ev.data["args"]), time.thread_time(), 0.0,
             time.perf_counter()])

    def on_end(self, ev):
        stack = stacks[threading.get_ident()]
        name, args, start, inner, wall_start = stack.pop()
        total = time.thread_time() - start
        if stack:
            stack[-1][3] += total
        with lock:
            records.append({"function": name, "args": args, "total": total,
                            "self": total - inner, "depth": len(stack),
                            "wall": time.perf_counter() - wall_start,
                            "thread": threading.current_thread().name})


class Passes(event.Listener):
    def on_start(self, ev):
        stacks[("pass", threading.get_ident())].append([time.thread_time(), 0.0])

    def on_end(self, ev):
        stack = stacks[("pass", threading.get_ident())]
        start, inner = stack.pop()
        total = time.thread_time() - start
        if stack:
            stack[-1][1] += total
        with lock:
            passes[ev.data["name"].split(" [")[0]] += total - inner


event.register("numba:compile", Compiles())
event.register("numba:run_pass", Passes())


def timed(cls, attr, bucket):
    original = getattr(cls, attr)

    def wrapper(*args, **kwargs):
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                llvm[bucket] += time.thread_time() - started
    setattr(cls, attr, wrapper)


timed(codegen.CPUCodeLibrary, "_optimize_functions", "LLVM function passes")
timed(codegen.CPUCodeLibrary, "_optimize_final_module", "LLVM module passes")
timed(codegen.JITCodeLibrary, "_finalize_specific", "LLVM code generation")

code = 0
try:
    from streamherd import cli
    cli.run(sys.argv[1:])
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
with open(os.environ["FIRST_RUN_EVENTS"], "w") as f:
    json.dump({"wall": time.perf_counter() - t0, "compiles": records, "passes": passes,
               "llvm": llvm, "exit": code}, f)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code or 0)
'''


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def copy_source(source, dest, overlay=()):
    """The tree to install, in ``dest``; ``overlay``: work-tree files copied over it."""
    described = _copy_source(source, dest)
    for name in overlay:
        relative = Path(name).resolve().relative_to(ROOT)
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, dest / relative)
    if overlay:
        described += (" with the work tree's " +
                      ", ".join(str(Path(n).resolve().relative_to(ROOT)) for n in overlay))
    return described


def _copy_source(source, dest):
    if source == "HEAD":
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], check=True,
                                 capture_output=True).stdout
        dest.mkdir(parents=True)
        sh(["tar", "-x", "-C", str(dest)], input=archive)
        return f"git archive HEAD ({git_head()})"
    if source == "worktree":
        names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard",
                                "-z"], check=True, capture_output=True).stdout.split(b"\0")
        for name in filter(None, names):
            src = ROOT / name.decode()
            if src.is_file():
                (dest / name.decode()).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name.decode())
        return f"work tree of {ROOT} (HEAD {git_head()} plus uncommitted changes)"
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", ".git", "*.nbi", "*.nbc", "*.nrt"))
    return f"folder {Path(source).resolve()}"


def git_head():
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def venv_paths(venv):
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    return python, Path(purelib)


def make_venv(venv, src):
    """A virtualenv with streamherd's dependencies (installed with streamherd itself, once)."""
    started = time.perf_counter()
    sh([sys.executable, "-m", "venv", str(venv)])
    sh([str(venv / "bin" / "pip"), "install", "-q", str(src)], stdout=subprocess.DEVNULL,
       stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.pop("PYTHONPATH", None)
    return env


def reinstall(venv, src, site, editable=False, precompile=True):
    """Remove the installed package (and every cache file in it, in the tree too), then pip
    install the tree again; returns the seconds pip took (wheel build included)."""
    pip = str(venv / "bin" / "pip")
    subprocess.run([pip, "uninstall", "-y", "-q", "streamherd"], capture_output=True)
    shutil.rmtree(site / "streamherd", ignore_errors=True)
    shutil.rmtree(src / "build", ignore_errors=True)
    for cache in (src / "streamherd").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    env = clean_env()
    if not precompile:
        env["STREAMHERD_NO_PRECOMPILE"] = "1"
    started = time.perf_counter()
    sh([pip, "install", "-q", "--no-deps", *(["-e"] if editable else []), str(src)],
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - started
    shutil.rmtree(src / "build", ignore_errors=True)
    return seconds


def cache_files(package):
    """numba's cache files in the installed package: (.nbi index files, .nbc data files)."""
    return len(list(package.rglob("*.nbi"))), len(list(package.rglob("*.nbc")))


def user_cache_files(site):
    """Files numba's user-wide locator would use for this site-packages (it is chosen when
    __pycache__ is not writable); they must not exist for a cold first run."""
    try:
        from numba.misc.appdirs import AppDirs
    except ImportError:
        return 0
    base = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    if not base.exists():
        return 0
    return sum(1 for p in base.glob("*") if p.is_dir() and str(site) in str(p))


def commands(sample_dir, work):
    model = str(work / "model.npz")
    cmds = [
        ("train (first run)", ["train", "samples/sample.svm", "-f", model]),
        ("train (second run)", ["train", "samples/sample.svm", "-f", model]),
        ("predict (first run)", ["predict", "-m", model, "samples/sample.svm",
                                 "-p", str(work / "predictions.txt")]),
        ("predict (second run)", ["predict", "-m", model, "samples/sample.svm",
                                  "-p", str(work / "predictions.txt")]),
        ("train --algo nherd-p (first run)", ["train", "--algo", "nherd-p", "samples/sample.svm",
                                              "-f", str(work / "nherd.npz")]),
    ]
    if (sample_dir / "sample.vw").exists():
        cmds.append(("train sample.vw (first run)", ["train", "samples/sample.vw", "-f",
                                                     str(work / "vw.npz")]))
    return cmds


def run_one(argv, cwd, env, events=None):
    """One command as a subprocess: wall, CPU, peak RSS, and what the run says of itself."""
    env = dict(env)
    if events is not None:
        env["FIRST_RUN_EVENTS"] = str(events)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{stderr}")
    reported = {}
    for key in ("elapsed seconds", "examples per second"):
        m = re.search(rf"^{key} = ([0-9][0-9,]*(?:\.[0-9]+)?)", stderr, re.M)
        if m:
            reported[key] = float(m.group(1).replace(",", ""))
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024, "load": load, "reported": reported,
            "notice": next((line for line in stderr.splitlines() if "compil" in line.lower()),
                           None)}


def run_sequence(venv, site, src, work, probe=None):
    env = clean_env()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    results = {}
    for i, (label, args) in enumerate(commands(src / "samples", work)):
        if probe is None:
            argv = [str(venv / "bin" / "streamherd"), *args]
            results[label] = run_one(argv, src, env)
        else:
            events = work / f"events-{i}.json"
            argv = [str(venv / "bin" / "python"), str(probe), *args]
            results[label] = run_one(argv, src, env, events)
            results[label]["events"] = json.loads(events.read_text())
    return results


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as lines:
            for line in lines:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "python": platform.python_version(), "date": datetime.date.today().isoformat()}


def package_versions(python):
    code = ("import numba, llvmlite, numpy; "
            "print(numba.__version__, llvmlite.__version__, numpy.__version__)")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                         env=clean_env()).stdout.split()
    return dict(zip(("numba", "llvmlite", "numpy"), out))


def summarize(runs, installs):
    """Rows: label -> stats over the repeats."""
    rows = {}
    labels = list(runs[0])
    for label in labels:
        walls = [r[label]["wall"] for r in runs]
        rows[label] = {
            "n": len(walls), "median": statistics.median(walls), "min": min(walls),
            "max": max(walls), "cpu": statistics.median(r[label]["cpu"] for r in runs),
            "rss": max(r[label]["rss_mb"] for r in runs),
            "elapsed": [r[label]["reported"].get("elapsed seconds") for r in runs],
            "eps": [r[label]["reported"].get("examples per second") for r in runs],
            "load": [r[label]["load"] for r in runs],
            "notice": runs[0][label]["notice"],
        }
    return rows


def format_table(rows, installs, caches):
    lines = [
        "| command | runs | wall s (median) | min - max | CPU s | peak RSS MB | reported elapsed s "
        "| reported examples/s | load at start |",
        "|:---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, r in rows.items():
        elapsed = ", ".join(f"{e:.2f}" for e in r["elapsed"] if e is not None) or "-"
        eps = ", ".join(f"{e:,.0f}" for e in r["eps"] if e is not None) or "-"
        load = ", ".join(f"{x:.1f}" for x in r["load"])
        lines.append(f"| {label} | {r['n']} | {r['median']:.2f} | {r['min']:.2f} - "
                     f"{r['max']:.2f} | {r['cpu']:.2f} | {r['rss']:.0f} | {elapsed} | {eps} "
                     f"| {load} |")
    lines.append("")
    lines.append(f"pip install of streamherd alone (wheel build included, and with it the "
                 f"precompile of setup.py when the source has one), per repeat: "
                 f"{', '.join(f'{s:.1f}' for s in installs)} s. numba cache files in the "
                 f"installed package before the first run (index, data): "
                 f"{', '.join(f'{a}/{b}' for a, b in caches)}.")
    return "\n".join(lines)


def format_comparison(before, after, cache_miss=None):
    """Before (a --baseline record), after (this invocation) and, when given, after without the
    build's precompile (a --no-precompile record): medians, command by command, with ratios."""
    columns = [("before", before)] + ([("cache miss", cache_miss)] if cache_miss else []) + \
        [("after", after)]
    tables = {name: summarize(record["runs"], record["installs"]) for name, record in columns}
    head = ["command"]
    for name, _ in columns:
        head.append(f"wall s {name}")
        if name != "before":
            head.append(f"{name} / before")
    head += [f"CPU s {name}" for name, _ in columns]
    lines = ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * (len(head) - 1)]

    def row(label, walls, cpus):
        cells = [label]
        for (name, _), wall in zip(columns, walls):
            cells.append(f"{wall:.2f}")
            if name != "before":
                cells.append(f"{wall / walls[0]:.2f}")
        cells += [f"{cpu:.2f}" if cpu is not None else "-" for cpu in cpus]
        lines.append("| " + " | ".join(cells) + " |")

    row("pip install (wheel build included)",
        [statistics.median(record["installs"]) for _, record in columns], [None] * len(columns))
    for label in tables["after"]:
        if all(label in table for table in tables.values()):
            row(label, [tables[name][label]["median"] for name, _ in columns],
                [tables[name][label]["cpu"] for name, _ in columns])
    notes = []
    for name, record in columns:
        loads = [x for r in record["runs"] for x in (v["load"] for v in r.values())]
        notes.append(f"{name}: {record['source']}, measured {record['machine']['date']}, "
                     f"{len(record['runs'])} repeats, load average {min(loads):.1f} to "
                     f"{max(loads):.1f} at the commands' start")
    if cache_miss:
        notes.append("cache miss: the same source installed with STREAMHERD_NO_PRECOMPILE=1, so "
                     "that the first run compiles (as when the shipped cache does not match)")
    return ("\n".join(lines) + "\n\n" + "; ".join(notes) + ". Medians over the repeats; CPU is "
            "the user + system time of the command's process (the wall time of a loaded "
            "machine varies more).")


def invocation(args):
    """The command line that made the figures (without local paths)."""
    words = ["python", "benchmarks/first_run.py"]
    if args.source != "HEAD":
        words += ["--source", args.source if args.source == "worktree" else "DIR"]
    if args.overlay:
        words += ["--overlay", *(str(Path(n).resolve().relative_to(ROOT)) for n in args.overlay)]
    words += ["--repeat", str(args.repeat)]
    words += [flag for flag, on in (("--editable", args.editable), ("--profile", args.profile),
                                    ("--no-precompile", args.no_precompile)) if on]
    if args.baseline:
        words += ["--baseline", args.baseline.name]
    if args.cache_miss:
        words += ["--cache-miss", args.cache_miss.name]
    return " ".join(words + ["--write-readme"])


def format_profile(profile):
    """Per command: the kernels compiled (outermost and inner), their specialisations, and the
    CPU time of the compiling thread (``time.thread_time``: the machine's load does not count)
    spent in each, exclusive of the functions it compiled inside."""
    out = []
    for label, result in profile.items():
        ev = result["events"]
        compiles = ev["compiles"]
        if not compiles:
            out.append(f"{label}: nothing compiled ({result['wall']:.2f} s)")
            continue
        total = sum(c["total"] for c in compiles if c["depth"] == 0)
        wall = sum(c["wall"] for c in compiles if c["depth"] == 0)
        out.append(f"{label}: {result['wall']:.2f} s wall, compiling {wall:.2f} s wall and "
                   f"{total:.2f} s CPU, "
                   f"{len(compiles)} specialisations of "
                   f"{len({c['function'] for c in compiles})} functions")
        by_function = defaultdict(list)
        for c in compiles:
            by_function[c["function"]].append(c)
        for name, cs in sorted(by_function.items(), key=lambda kv: -sum(c["self"] for c in kv[1])):
            own = sum(c["self"] for c in cs)
            out.append(f"    {own:6.2f} s  x{len(cs)}  {name.replace('streamherd.', '')}"
                       f"  [{', '.join(sorted({c['thread'] for c in cs}))}]")
            if len(cs) > 1:
                for c in cs:
                    args = re.sub(r"Array\((\w+), 1, 'C', False, aligned=True\)", r"\1[:]",
                                  c["args"])
                    out.append(f"              {c['self']:5.2f} s {args}")
        passes = sorted(ev["passes"].items(), key=lambda kv: -kv[1])
        numba_total = sum(v for _, v in passes)
        llvm_total = sum(ev["llvm"].values())
        out.append(f"    numba passes {numba_total:.2f} s (top: " + ", ".join(
            f"{k} {v:.2f}" for k, v in passes[:6]) + ")")
        out.append(f"    of which LLVM {llvm_total:.2f} s (" + ", ".join(
            f"{k} {v:.2f}" for k, v in ev["llvm"].items()) + ")")
    return "\n".join(out)


def write_readme(text):
    from throughput import replace_section

    replace_section(START, END, f"{START}\n{text}\n{END}", README)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="HEAD",
                        help="HEAD, worktree, or a folder holding a streamherd tree")
    parser.add_argument("--overlay", nargs="+", default=[], metavar="FILE",
                        help="work-tree files copied over the source")
    parser.add_argument("--baseline", type=Path,
                        help="--json of an earlier invocation: a before/after table")
    parser.add_argument("--cache-miss", type=Path,
                        help="with --baseline: the --json of a --no-precompile invocation, a "
                             "column of its own")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="one more fresh install, run under numba's event listeners")
    parser.add_argument("--no-precompile", action="store_true",
                        help="install with STREAMHERD_NO_PRECOMPILE=1 (the kernels then "
                             "compile on first use: the cache-miss figure)")
    parser.add_argument("--editable", action="store_true",
                        help="pip install -e (the README's developer install) instead")
    parser.add_argument("--venv", type=Path,
                        help="keep the virtualenv (dependencies) here between invocations")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--write-readme", action="store_true",
                        help="write the table into benchmarks/README.md")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="first_run-"))
    try:
        src = tmp / "src"
        described = copy_source(args.source, src, args.overlay)
        venv = args.venv or tmp / "venv"
        fresh_venv = not (venv / "bin" / "python").exists()
        if fresh_venv:
            print(f"creating {venv} (dependencies from pip) ...", file=sys.stderr)
            seconds = make_venv(venv, src)
            print(f"  {seconds:.1f} s", file=sys.stderr)
        python, site = venv_paths(venv)
        versions = package_versions(python)
        runs, installs, caches = [], [], []
        for i in range(args.repeat):
            installs.append(reinstall(venv, src, site, args.editable, not args.no_precompile))
            caches.append(cache_files((src if args.editable else site) / "streamherd"))
            if user_cache_files(site):
                print("warning: numba's user-wide cache has entries for this venv",
                      file=sys.stderr)
            work = tmp / f"run{i}"
            work.mkdir()
            runs.append(run_sequence(venv, site, src, work))
            first = runs[-1]["train (first run)"]
            print(f"repeat {i + 1}/{args.repeat}: install {installs[-1]:.1f} s, cache files "
                  f"{caches[-1]}, first train {first['wall']:.2f} s (load {first['load']:.1f}), "
                  f"second {runs[-1]['train (second run)']['wall']:.2f} s", file=sys.stderr)
        rows = summarize(runs, installs)
        mach = machine()
        record = {"machine": mach, "versions": versions, "source": described,
                  "installs": installs, "caches": caches, "runs": runs}
        header = (f"Measured {mach['date']} on {mach['cores']} cores, {mach['cpu']}, Linux "
                  f"{mach['kernel']}; Python {mach['python']}, numba {versions.get('numba')}, "
                  f"llvmlite {versions.get('llvmlite')}, numpy {versions.get('numpy')}. "
                  f"Source: {described}.")
        table = format_table(rows, installs, caches)
        first = rows["train (first run)"]["median"]
        verdict = (f"Target: the README's first `train` in <= {TARGET_SECONDS:.0f} s on a fresh "
                   f"install: {first:.2f} s (median), "
                   f"{'met' if first <= TARGET_SECONDS else 'not met'}.")
        notice = rows["train (first run)"]["notice"]
        text = "\n\n".join([
            "## First run after install",
            header,
            f"Generated by `{invocation(args)}`; each repeat is a fresh "
            f"`pip install{' -e' if args.editable else ''}` "
            f"({'editable' if args.editable else 'non-editable'}) then the commands below in "
            f"order, each a subprocess of the installed `streamherd` script, from a copy of the "
            f"tree holding `samples/`.",
            table,
            verdict + (f" Notice printed: `{notice}`." if notice else
                       " No compile notice on stderr."),
        ])
        if args.baseline:
            text += ("\n\n### Before and after\n\n" +
                     format_comparison(
                         json.loads(args.baseline.read_text()), record,
                         json.loads(args.cache_miss.read_text()) if args.cache_miss else None))
        profile_text = None
        if args.profile:
            reinstall(venv, src, site, args.editable, not args.no_precompile)
            probe = tmp / "probe.py"
            probe.write_text(PROBE)
            work = tmp / "profile"
            work.mkdir()
            profile = run_sequence(venv, site, src, work, probe=probe)
            profile_text = format_profile(profile)
        if profile_text:
            text += "\n\n### What compiles (--profile)\n\n```\n" + profile_text + "\n```"
        print(text)
        if args.json:
            if args.profile:
                record["profile"] = {k: v for k, v in profile.items()}
            args.json.write_text(json.dumps(record, indent=1, default=str))
        if args.write_readme:
            write_readme(text)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
