"""Throughput of the streamherd CLI (parse, train per learner, predict, gzip input) against VW.

    python benchmarks/throughput.py [--lines 1000000] [--features 40] [--bits 20]
        [--algos pa2,perceptron,...] [--repeat 3] [--file PATH] [--write-readme]

Every figure is the wall time of a whole command (interpreter start, imports, numba cache load,
reading, parsing, learning, writing) run as a subprocess: one warm-up run, then the median of
``--repeat`` runs. Peak RSS comes from ``os.wait4`` on that child. Progress output stays on
(stderr goes to a file, not a terminal, as in a batch job); predictions go to /dev/null.

By default the input is a generated, cached data set (see ``make_data.py``): an svmlight file,
its VW-format twin, and gzipped copies of both. VW (``python -m vowpalwabbit``) runs with its
default learner on the VW twin, when the package is importable.

examples/s and MB/s count examples and uncompressed input bytes (also for .gz inputs). "vs VW" is
the matching VW run's time over this run's time: 0.5 means half VW's throughput.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_data  # noqa: E402

README = HERE / "README.md"
OUT_DIR = HERE / "out"
START, END = "<!-- throughput:start -->", "<!-- throughput:end -->"
README_INTRO = """# Benchmarks

Scripts in this directory measure streamherd; each one owns a marked section below and rewrites
only that section. Generated data is cached under `benchmarks/data/` (not committed).
"""

PARSE_CODE = """\
import sys
from streamherd.io.reader import ChunkReader
n = nnz = 0
for c in ChunkReader([sys.argv[1]], fmt=sys.argv[2], bits=int(sys.argv[3])):
    n += c.n_examples
    nnz += int(c.indptr[-1])
print(n, nnz)
"""


@dataclass
class Case:
    name: str
    cmd: list
    examples: int
    text_bytes: int  # uncompressed input size
    group: str  # "parse", "train", "predict", "vw-train", ...
    vw_match: str = None  # name of the VW case to compare with
    warmup_cmd: list = None  # defaults to cmd
    times: list = field(default_factory=list)
    rss_kb: list = field(default_factory=list)
    cpu: list = field(default_factory=list)  # user + system seconds of each timed run
    error: str = None
    summary: str = ""
    load: float = None  # 1-minute load average after the runs

    @property
    def seconds(self):
        return statistics.median(self.times) if self.times else None

    @property
    def cpu_seconds(self):
        return statistics.median(self.cpu) if self.cpu else None

    @property
    def peak_rss_mb(self):
        return max(self.rss_kb) / 1024 if self.rss_kb else None


# Runs the command as its child and reports wall time and that child's rusage. A launcher is
# needed because the kernel folds the RSS of the process image *before* exec into ru_maxrss:
# spawned straight from this (large) interpreter, every command would report at least our RSS.
LAUNCHER = """\
import os, subprocess, sys, time
out = sys.argv[1]
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - t0
with open(out, "w") as f:
    f.write(f"{seconds!r} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} "
            f"{usage.ru_utime + usage.ru_stime!r}")
"""


def run_once(cmd):
    """Run cmd (stdout to /dev/null): (wall s, peak RSS kB, exit code, stderr, CPU s)."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as res:
        launcher = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, res.name, *map(str, cmd)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
        fields = res.read().split()
        if launcher.returncode != 0 or len(fields) != 4:
            return None, None, launcher.returncode or -1, text, None
    return float(fields[0]), int(fields[1]), int(fields[2]), text, float(fields[3])


def measure(case, repeat, log):
    log(f"  {case.name}: {' '.join(shlex.quote(str(c)) for c in case.cmd)}")
    seconds, rss, rc, text, cpu = run_once(case.warmup_cmd or case.cmd)
    if rc != 0:
        case.error = f"exit {rc}: {text.strip()[-2000:]}"
        log(f"    FAILED ({case.error})")
        return
    for _ in range(repeat):
        seconds, rss, rc, text, cpu = run_once(case.cmd)
        if rc != 0:
            case.error = f"exit {rc}: {text.strip()[-2000:]}"
            log(f"    FAILED ({case.error})")
            return
        case.times.append(seconds)
        case.rss_kb.append(rss)
        case.cpu.append(cpu)
    case.summary = summarise(text)
    case.load = os.getloadavg()[0]
    log(f"    median {case.seconds:.2f}s  ({', '.join(f'{t:.2f}' for t in case.times)})  "
        f"cpu {case.cpu_seconds:.2f}s  load {os.getloadavg()[0]:.1f}  "
        f"{case.examples / case.seconds:,.0f} ex/s  peak {case.peak_rss_mb:.0f} MB"
        + (f"  [{case.summary}]" if case.summary else ""))


def summarise(stderr_text):
    """The progressive loss reported by streamherd or VW, if any."""
    m = re.search(r"average progressive ([^=]+?) = ([0-9.]+)", stderr_text)
    if m:
        return f"progressive {m.group(1)} {m.group(2)}"
    m = re.search(r"^average loss = ([0-9.]+)", stderr_text, re.M)
    if m:
        return f"VW average loss {m.group(1)}"
    return ""


def versions():
    out = {"python": platform.python_version()}
    for mod in ("numba", "numpy", "streamherd", "vowpalwabbit"):
        try:
            from importlib.metadata import version
            out[mod] = version(mod)
        except Exception:
            out[mod] = None
    return out


def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu,
            "mem_gb": mem, "kernel": platform.release(), **versions()}


def machine_line(m):
    v = lambda k: m.get(k) or "n/a"  # noqa: E731
    mem = f", {m['mem_gb']:.0f} GB RAM" if m.get("mem_gb") else ""
    return (f"{m['nproc']} cores ({m['affinity']} usable), {m['cpu']}{mem}, Linux {m['kernel']}; "
            f"Python {v('python')}, numpy {v('numpy')}, numba {v('numba')}, "
            f"streamherd {v('streamherd')}, vowpalwabbit {v('vowpalwabbit')}")


def default_algos():
    from streamherd.learners import REGISTRY
    return [name for name in REGISTRY if not name.endswith("-full")]


def vw_available():
    try:
        import vowpalwabbit  # noqa: F401
        return True
    except Exception:
        return False


def sniff(path):
    """'svmlight' or 'vw', and whether the file is gzip-compressed."""
    import gzip
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        head = f.read(1 << 16)
    from streamherd.io.reader import detect_format
    return detect_format(head), magic == b"\x1f\x8b"


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        while block := f.read(16 << 20):
            n += block.count(b"\n")
    return n


def user_files(path, log):
    """Data set paths for --file: the file, a VW twin (converted if it is svmlight), gz copies."""
    path = Path(path).resolve()
    fmt, is_gz = sniff(path)
    if is_gz:
        raise SystemExit("--file: give the uncompressed file (the .gz copy is made and cached)")
    st = path.stat()
    key = f"user-{path.stem}-{st.st_size}-{int(st.st_mtime)}"
    make_data.DATA_DIR.mkdir(parents=True, exist_ok=True)
    if fmt == "vw":
        svm, vw = None, path
    else:
        svm = path
        vw = make_data.DATA_DIR / f"{key}.vw"
        if not vw.exists():
            log(f"writing the VW twin of {path.name} (label |f rest) ...")
            tmp = vw.with_suffix(".tmp")
            with open(path, "rb") as src, open(tmp, "wb") as dst:
                for line in src:
                    parts = line.split(None, 1)
                    if not parts or parts[0].startswith(b"#"):
                        continue
                    rest = parts[1] if len(parts) > 1 else b"\n"
                    if b"#" in rest:  # svmlight comment
                        rest = rest.split(b"#", 1)[0].rstrip() + b"\n"
                    dst.write(parts[0] + b" |f " + rest)
            os.replace(tmp, vw)
    gzs = {}
    for p in filter(None, (svm, vw)):
        gz = make_data.DATA_DIR / f"{key}.{p.suffix.lstrip('.') or 'txt'}{'.vw' if p is vw else ''}.gz"
        if not gz.exists():
            make_data._gzip(p, gz)
        gzs[p] = gz
    n = count_lines(vw)
    return svm, vw, gzs.get(svm), gzs[vw], n


def build_cases(args, svm, vw, svm_gz, vw_gz, examples, algos, log):
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    sh = [sys.executable, "-m", "streamherd"]  # the `streamherd` entry point, without the shim
    bits = str(args.bits)
    size = lambda p: p.stat().st_size  # noqa: E731
    cases = []
    main_svm = svm or vw  # streamherd's "svmlight-ish" runs use the VW file when there is no svm
    main_fmt = "svmlight" if svm else "vw"
    model_algo = "pa2" if "pa2" in algos else algos[0]
    model_svm = OUT_DIR / f"model-{model_algo}-svm.npz"
    model_vw = OUT_DIR / f"model-{model_algo}-vw.npz"
    vw_model = OUT_DIR / "vw.model"

    cases.append(Case(f"parse {main_fmt}", [sys.executable, "-c", PARSE_CODE, str(main_svm),
                                          main_fmt, bits], examples, size(main_svm), "parse"))
    if svm:
        cases.append(Case("parse vw", [sys.executable, "-c", PARSE_CODE, str(vw), "vw", bits],
                          examples, size(vw), "parse"))
    if svm_gz:
        cases.append(Case(f"parse {main_fmt}.gz", [sys.executable, "-c", PARSE_CODE, str(svm_gz),
                                                 main_fmt, bits], examples, size(svm), "parse"))
    for algo in algos:
        cmd = sh + ["train", "--algo", algo, "-b", bits, str(main_svm)]
        warm = cmd + ["-f", str(model_svm)] if algo == model_algo else None
        cases.append(Case(f"train {algo} ({main_fmt})", cmd, examples, size(main_svm), "train",
                          "VW train", warm))
    cases.append(Case(f"predict {model_algo} ({main_fmt})",
                      sh + ["predict", "-m", str(model_svm), str(main_svm)],
                      examples, size(main_svm), "predict", "VW predict -t"))
    if svm:
        cmd = sh + ["train", "--algo", model_algo, "-b", bits, str(vw)]
        cases.append(Case(f"train {model_algo} (vw)", cmd, examples, size(vw), "train",
                          "VW train", cmd + ["-f", str(model_vw)]))
        cases.append(Case(f"predict {model_algo} (vw)",
                          sh + ["predict", "-m", str(model_vw), str(vw)],
                          examples, size(vw), "predict", "VW predict -t"))
    if svm_gz:
        cases.append(Case(f"train {model_algo} ({main_fmt}.gz)",
                          sh + ["train", "--algo", model_algo, "-b", bits, str(svm_gz)],
                          examples, size(main_svm), "train-gz", "VW train .gz"))
        cases.append(Case(f"predict {model_algo} ({main_fmt}.gz)",
                          sh + ["predict", "-m", str(model_svm), str(svm_gz)],
                          examples, size(main_svm), "predict-gz", "VW predict -t .gz"))
    if not svm:  # the VW file is the main file: the .gz runs use vw_gz
        cases.append(Case(f"train {model_algo} (vw.gz)",
                          sh + ["train", "--algo", model_algo, "-b", bits, str(vw_gz)],
                          examples, size(vw), "train-gz", "VW train .gz"))
        cases.append(Case(f"predict {model_algo} (vw.gz)",
                          sh + ["predict", "-m", str(model_svm), str(vw_gz)],
                          examples, size(vw), "predict-gz", "VW predict -t .gz"))
    if args.vw and vw_available():
        vwc = [sys.executable, "-m", "vowpalwabbit"]
        train = vwc + ["-d", str(vw), "-b", bits]
        cases.append(Case("VW train", train, examples, size(vw), "vw",
                          warmup_cmd=train + ["-f", str(vw_model)]))
        cases.append(Case("VW predict -t", vwc + ["-d", str(vw), "-t", "-i", str(vw_model),
                                                  "-p", "/dev/null"],
                          examples, size(vw), "vw"))
        cases.append(Case("VW train .gz", vwc + ["-d", str(vw_gz), "-b", bits],
                          examples, size(vw), "vw"))
        cases.append(Case("VW predict -t .gz", vwc + ["-d", str(vw_gz), "-t", "-i", str(vw_model),
                                                      "-p", "/dev/null"],
                          examples, size(vw), "vw"))
    elif args.vw:
        log("vowpalwabbit is not importable: VW runs skipped")
    # models are made by warm-up runs: run those cases first
    order = {"VW train": 0}
    cases.sort(key=lambda c: 0 if c.warmup_cmd else 1 + order.get(c.name, 1))
    return cases


def rows(cases):
    by_name = {c.name: c for c in cases}
    out = []
    for c in cases:
        if c.error:
            out.append([c.name, "FAILED", "", "", "", "", "", c.error.splitlines()[-1][:80]])
            continue
        vw = by_name.get(c.vw_match)
        ratio = (f"{vw.seconds / c.seconds:.2f}x" if vw is not None and vw.seconds else "")
        out.append([c.name, f"{c.examples / c.seconds:,.0f}", f"{c.text_bytes / 1e6 / c.seconds:.1f}",
                    f"{c.seconds:.2f}", f"{c.cpu_seconds:.2f}", f"{c.peak_rss_mb:.0f}", ratio,
                    c.summary])
    return out


HEADERS = ["command", "examples/s", "MB/s", "seconds", "CPU s", "peak RSS MB", "vs VW", "notes"]
DISPLAY_ORDER = ["parse", "train", "predict", "train-gz", "predict-gz", "vw"]


def ordered(cases):
    return sorted(cases, key=lambda c: DISPLAY_ORDER.index(c.group))


def print_table(cases):
    table_rows = rows(ordered(cases))
    try:
        from rich.console import Console
        from rich.table import Table
        t = Table(title="streamherd throughput")
        for i, h in enumerate(HEADERS):
            t.add_column(h, justify="left" if i in (0, 7) else "right")
        for r in table_rows:
            t.add_row(*r)
        Console(width=160).print(t)
    except ImportError:
        widths = [max(len(h), *(len(r[i]) for r in table_rows)) for i, h in enumerate(HEADERS)]
        print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)))
        for r in table_rows:
            print("  ".join(x.ljust(w) for x, w in zip(r, widths)))


def markdown_table(cases):
    lines = ["| " + " | ".join(HEADERS) + " |",
             "|" + "|".join([":---"] + ["---:"] * 6 + [":---"]) + "|"]
    for r in rows(ordered(cases)):
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
    return "\n".join(lines)


def write_readme(cases, args, mach, data_desc, command):
    today = datetime.date.today().isoformat()
    section = "\n".join([
        START,
        "## Throughput",
        "",
        f"Measured {today} on {machine_line(mach)}.",
        "",
        f"Input: {data_desc}",
        "",
        f"Each row is one whole command run as a subprocess (Python start-up, imports and the "
        f"numba cache load included): the median of {args.repeat} runs after one warm-up run; "
        f"CPU s is the median user+system time (above the wall time when the parser thread and the "
        f"learner overlap); peak RSS from `os.wait4` in a small launcher process. Load average "
        f"during the run: {load_desc(cases)}. Progress output on, to a file; predictions to /dev/null. "
        f"examples/s and MB/s use the uncompressed input size. \"vs VW\" is the matching VW "
        f"run's time divided by this run's (1.00x = as fast as VW; train rows compare with `VW "
        f"train`, predict with `VW predict -t`, .gz with the VW .gz run). Parse rows iterate "
        f"`streamherd.io.reader.ChunkReader` (read, parse, hash; no learning). VW runs use its "
        f"default learner (squared loss, SGD) on the VW-format twin.",
        "",
        "Regenerate with:",
        "",
        "```",
        command,
        "```",
        "",
        markdown_table(cases),
        "",
        "Exact commands:",
        "",
        *[f"- {c.name}: `{display_cmd(c.cmd)}`" for c in ordered(cases)],
        END,
    ])
    text = README.read_text() if README.exists() else README_INTRO
    if START in text and END in text:
        before, rest = text.split(START, 1)
        _, after = rest.split(END, 1)
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    README.write_text(text)


def load_desc(cases):
    loads = [c.load for c in cases if c.load is not None]
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else "n/a"


def display_cmd(cmd):
    """A command for humans: repo-relative paths, `python` and `streamherd` spelled plainly."""
    out = []
    root = HERE.parent
    for i, c in enumerate(map(str, cmd)):
        if c == sys.executable:
            c = "python"
        elif c.startswith(str(root) + os.sep):
            c = os.path.relpath(c, root)
        if c.startswith("import sys\nfrom streamherd"):
            c = "<parse loop>"
        out.append(c)
    text = " ".join(shlex.quote(c) if c != "<parse loop>" else c for c in out)
    return text.replace("python -m streamherd ", "streamherd ")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=40)
    ap.add_argument("--bits", type=int, default=20)
    ap.add_argument("--algos", default=None,
                    help="comma-separated; default: every registered learner except *-full")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", default=None, help="benchmark this file instead of generated data")
    ap.add_argument("--no-vw", dest="vw", action="store_false", help="skip the VW runs")
    ap.add_argument("--write-readme", action="store_true")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731

    mach = machine()
    print(f"machine: {machine_line(mach)}")
    algos = args.algos.split(",") if args.algos else default_algos()

    if args.file:
        svm, vw, svm_gz, vw_gz, examples = user_files(args.file, log)
        data_desc = f"`{args.file}` ({examples:,} lines)"
    else:
        spec = make_data.Spec(lines=args.lines, features=args.features)
        ds = make_data.ensure(spec, log=log)
        svm, vw, svm_gz, vw_gz, examples = ds.svm, ds.vw, ds.svm_gz, ds.vw_gz, ds.meta["lines"]
        m = ds.meta
        data_desc = (f"generated by `benchmarks/make_data.py` (seed {spec.seed}): {m['lines']:,} "
                     f"lines, {m['nnz'] / m['lines']:.1f} features per line on average (indices "
                     f"in 1..{spec.max_index:,}, half uniform and half log-uniform), "
                     f"{m['positives'] / m['lines']:.1%} positive; svmlight "
                     f"{m['svm_bytes'] / 1e6:.0f} MB, VW twin {m['vw_bytes'] / 1e6:.0f} MB, "
                     f".gz {svm_gz.stat().st_size / 1e6:.0f} MB / {vw_gz.stat().st_size / 1e6:.0f} MB.")
    print(f"data: {data_desc}")

    cases = build_cases(args, svm, vw, svm_gz, vw_gz, examples, algos, log)
    log(f"running {len(cases)} commands, 1 warm-up + {args.repeat} timed runs each")
    for case in cases:
        measure(case, args.repeat, log)

    print_table(cases)
    for c in cases:
        if c.error:
            print(f"\n{c.name} FAILED: {display_cmd(c.cmd)}\n{c.error}")

    command = "python benchmarks/throughput.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "machine": mach, "command": command, "data": data_desc,
            "cases": [{"name": c.name, "cmd": display_cmd(c.cmd), "examples": c.examples,
                       "bytes": c.text_bytes, "times": c.times, "peak_rss_kb": c.rss_kb,
                       "cpu": c.cpu, "load": c.load, "error": c.error, "summary": c.summary}
                      for c in cases]}, indent=1))
    if args.write_readme:
        write_readme(cases, args, mach, data_desc, command.strip())
        print(f"wrote the throughput section of {README}")


if __name__ == "__main__":
    main()
