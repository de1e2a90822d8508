"""Throughput of the streamherd CLI (parse, train per learner, predict, gzip input) against VW.

    python benchmarks/throughput.py [--lines 1000000] [--features 40] [--bits 20]
        [--algos pa2,perceptron,...] [--repeat 3] [--file PATH] [--write-readme]

Every figure is the wall time of a whole command (interpreter start, imports, numba cache load,
reading, parsing, learning, writing) run as a subprocess: a warm-up round, then ``--repeat``
rounds that each run every command once; a row gives the median of its runs. Peak RSS comes
from ``os.wait4`` on that child. Progress output stays on (stderr goes to a file, not a
terminal, as in a batch job); predictions go to /dev/null.

By default the input is a generated, cached data set (see ``make_data.py``): an svmlight file,
its VW-format twin, and gzipped copies of both. VW (``python -m vowpalwabbit``) runs with its
default learner on the VW twin, when the package is importable.

examples/s and MB/s count examples and uncompressed input bytes (also for .gz inputs). "vs VW" is
the matching VW run's time over this run's time: 0.5 means half VW's throughput.

Besides throughput it checks issue 6's other targets: peak memory against the budget (the
model's state arrays + 150 MiB) at 1M lines, 10M lines (the 1M file given ten times) and -b 24;
start-up (``--help``, ``train`` on a one-line file with a warm and a cold numba cache); the
full-covariance learners against the memory-bandwidth bound (``full_covariance.py``); and, on
the first ``--small-lines`` lines, scikit-learn's and river's online PA-II when importable.
"""
import argparse
import compileall
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))  # this checkout's streamherd, not an installed one
import make_data  # noqa: E402

README = HERE / "README.md"
OUT_DIR = HERE / "out"
START, END = "<!-- throughput:start -->", "<!-- throughput:end -->"
README_INTRO = """# Benchmarks

Scripts in this directory measure streamherd; each one owns a marked section below and rewrites
only that section. Generated data is cached under `benchmarks/data/` (not committed).
"""

PARSE_CODE = """\
import sys, tempfile, time
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader
path, fmt, bits = sys.argv[1], sys.argv[2], int(sys.argv[3])
space = FeatureSpace(bits)
# Load the kernels on a one-line input first: the timed loop is then reading and parsing only.
with tempfile.NamedTemporaryFile(suffix=".txt") as f:
    f.write(b"1 1:1\\n" if fmt == "svmlight" else b"1 |f 1:1\\n")
    f.flush()
    for c in ChunkReader([f.name], fmt=fmt, features=space):
        pass
started = time.perf_counter()
n = nnz = size = 0
for c in ChunkReader([path], fmt=fmt, features=space):
    n += c.n_examples
    nnz += int(c.indptr[-1])
    size += c.n_bytes
seconds = time.perf_counter() - started
print(n, nnz)
print(f"parse {size / 1e6 / seconds:.0f} MB/s after start-up", file=sys.stderr)
"""

# Other libraries' online PA-II, one pass, on the small file (run when importable).
SKLEARN_CODE = """\
import sys
from scipy.sparse import csr_matrix
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier
X, y = load_svmlight_file(sys.argv[1])
# SGDClassifier takes 32-bit sparse indices only
X = csr_matrix((X.data, X.indices.astype("int32"), X.indptr.astype("int32")), shape=X.shape)
SGDClassifier(loss="hinge", penalty=None, learning_rate="pa2", eta0=1.0,
              shuffle=False).partial_fit(X, y, classes=[-1.0, 1.0])
"""
RIVER_CODE = """\
import sys
from river import linear_model, stream
model = linear_model.PAClassifier(C=1.0, mode=2)
n = mistakes = 0
for x, y in stream.iter_libsvm(sys.argv[1]):
    y = y > 0
    mistakes += model.predict_one(x) != y
    model.learn_one(x, y)
    n += 1
print(f"progressive 0/1 loss {mistakes / n:.6f}", file=sys.stderr)
"""
SMALL_BASELINES = {"scikit-learn": ("sklearn", SKLEARN_CODE), "river": ("river", RIVER_CODE)}
MEMORY_ALLOWANCE_MB = 150  # issue 6: peak memory <= the model's state arrays + this


@dataclass
class Case:
    name: str
    cmd: list
    examples: int
    text_bytes: int  # uncompressed input size
    group: str  # "parse", "train", "predict", "vw-train", ...
    vw_match: str = None  # name of the VW case to compare with
    warmup_cmd: list = None  # defaults to cmd
    budget_mb: float = None  # peak memory allowed (issue 6: state arrays + 150 MiB)
    repeat: int = None  # timed runs; None: --repeat
    warmup: bool = True
    cold_numba_cache: bool = False  # each run gets an empty NUMBA_CACHE_DIR (compiles everything)
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


def run_once(cmd, cold_numba_cache=False):
    """Run cmd (stdout to /dev/null) from the repository root: (wall s, peak RSS kB, exit code,
    stderr, CPU s)."""
    env = dict(os.environ)
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as res, \
            tempfile.TemporaryDirectory() as cache:
        if cold_numba_cache:
            env["NUMBA_CACHE_DIR"] = cache
        launcher = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, res.name, *map(str, cmd)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                  cwd=ROOT, env=env)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
        fields = res.read().split()
        if launcher.returncode != 0 or len(fields) != 4:
            return None, None, launcher.returncode or -1, text, None
    return float(fields[0]), int(fields[1]), int(fields[2]), text, float(fields[3])


def measure_all(cases, repeat, log):
    """A warm-up round (every case once, in the given order: some warm-ups write the models
    later cases read), then ``repeat`` timed rounds, each running every case once. A case's runs
    thus spread over the whole benchmark, as do VW's: a slow minute of this (shared, virtual)
    machine weighs on every row alike instead of on the rows that happened to run then."""
    for case in filter(lambda case: case.warmup, cases):
        log(f"  warm-up {case.name}: {display_cmd(case.warmup_cmd or case.cmd)}")
        _, _, rc, text, _ = run_once(case.warmup_cmd or case.cmd)
        _fail_on(case, rc, text, log)
    rounds = max((case.repeat or repeat) for case in cases) if cases else 0
    for round_index in range(rounds):
        log(f"  round {round_index + 1} of {rounds}")
        for case in cases:
            if case.error or len(case.times) >= (case.repeat or repeat):
                continue
            seconds, rss, rc, text, cpu = run_once(case.cmd, case.cold_numba_cache)
            if _fail_on(case, rc, text, log):
                continue
            case.times.append(seconds)
            case.rss_kb.append(rss)
            case.cpu.append(cpu)
            case.summary = summarise(text)
            case.load = os.getloadavg()[0]
    for case in cases:
        if not case.error:
            log(f"  {case.name}: median {case.seconds:.2f}s  "
                f"({', '.join(f'{t:.2f}' for t in case.times)})  cpu {case.cpu_seconds:.2f}s  "
                f"load {case.load:.1f}  {case.examples / case.seconds:,.0f} ex/s  "
                f"peak {case.peak_rss_mb:.0f} MB"
                + (f" (budget {case.budget_mb:.0f})" if case.budget_mb else "")
                + (f"  [{case.summary}]" if case.summary else ""))


def _fail_on(case, rc, text, log):
    """Records a failed run (the case gets no more runs); True when it failed."""
    if rc == 0:
        return False
    case.error = f"exit {rc}: {text.strip()[-2000:]}"
    log(f"    {case.name} FAILED ({case.error})")
    return True


def summarise(stderr_text):
    """The progressive loss reported by streamherd or VW, if any."""
    m = re.search(r"average progressive ([^=]+?) = ([0-9.]+)", stderr_text)
    if m:
        return f"progressive {m.group(1)} {m.group(2)}"
    m = re.search(r"^average loss = ([0-9.]+)", stderr_text, re.M)
    if m:
        return f"VW average loss {m.group(1)}"
    m = re.search(r"^parse ([0-9]+) MB/s after start-up", stderr_text, re.M)  # PARSE_CODE
    if m:
        return f"{m.group(1)} MB/s after start-up"
    m = re.search(r"^progressive 0/1 loss ([0-9.]+)", stderr_text, re.M)  # SMALL_BASELINES
    if m:
        return f"progressive 0/1 loss {m.group(1)}"
    return ""


def versions():
    out = {"python": platform.python_version()}
    for mod in ("numba", "numpy", "streamherd", "vowpalwabbit", "scikit-learn", "river"):
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
            f"streamherd {v('streamherd')}, vowpalwabbit {v('vowpalwabbit')}, "
            f"scikit-learn {v('scikit-learn')}, river {v('river')}")


NO_FLAGS, WHOLE_BANK = "train, no flags", "train arow-p -r auto --race 0"


def budget_mb(algo, bits):
    """The model's state arrays (those it saves, float64[2^bits] each) plus
    MEMORY_ALLOWANCE_MB, in MiB (the unit of the peak RSS column)."""
    from streamherd import learners

    arrays = learners.learner_class(algo).saved_arrays(learners.spec(algo).covariance)
    return (1 << bits) * 8 * len(arrays) / 2 ** 20 + MEMORY_ALLOWANCE_MB


def importable(module):
    try:
        __import__(module)
        return True
    except Exception:
        return False


def head(src, dst, lines):
    """The first ``lines`` lines of src, cached as dst."""
    if not dst.exists():
        with open(src, "rb") as f, open(dst.with_suffix(".tmp"), "wb") as g:
            for _, line in zip(range(lines), f):
                g.write(line)
        os.replace(dst.with_suffix(".tmp"), dst)
    return dst


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
        gz = (make_data.DATA_DIR
              / f"{key}.{p.suffix.lstrip('.') or 'txt'}{'.vw' if p is vw else ''}.gz")
        if not gz.exists():
            make_data.gzip_file(p, gz)
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
                          "VW train", warm, budget_mb=budget_mb(algo, args.bits)))
    # the default (no flags: a raced -r auto bank of arow-p), and its bank of 11 unraced
    cases.append(Case(f"{NO_FLAGS} ({main_fmt})", sh + ["train", "-b", bits, str(main_svm)],
                      examples, size(main_svm), "train", "VW train"))
    cases.append(Case(f"{WHOLE_BANK} ({main_fmt})",
                      sh + ["train", "--algo", "arow-p", "-r", "auto", "--race", "0", "-b", bits,
                            str(main_svm)], examples, size(main_svm), "train", "VW train"))
    cases.append(Case(f"predict {model_algo} ({main_fmt})",
                      sh + ["predict", "-m", str(model_svm), str(main_svm)],
                      examples, size(main_svm), "predict", "VW predict -t",
                      budget_mb=budget_mb(model_algo, args.bits)))
    if svm:
        cmd = sh + ["train", "--algo", model_algo, "-b", bits, str(vw)]
        cases.append(Case(f"train {model_algo} (vw)", cmd, examples, size(vw), "train",
                          "VW train", cmd + ["-f", str(model_vw)],
                          budget_mb=budget_mb(model_algo, args.bits)))
        if "nherd-p" in algos and model_algo != "nherd-p":  # issue 6 names it in both formats
            cases.append(Case("train nherd-p (vw)",
                              sh + ["train", "--algo", "nherd-p", "-b", bits, str(vw)],
                              examples, size(vw), "train", "VW train",
                              budget_mb=budget_mb("nherd-p", args.bits)))
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
    # Memory: ten times the input (the file given ten times), and 2^24 slots.
    memory_algo = "nherd-p" if "nherd-p" in algos else model_algo
    cases.append(Case(f"train {memory_algo}, 10x input ({main_fmt} x10)",
                      sh + ["train", "--algo", memory_algo, "-b", bits] + [str(main_svm)] * 10,
                      10 * examples, 10 * size(main_svm), "memory",
                      budget_mb=budget_mb(memory_algo, args.bits), repeat=1))
    for algo in dict.fromkeys([memory_algo, model_algo]):
        cases.append(Case(f"train {algo} -b 24 ({main_fmt})",
                          sh + ["train", "--algo", algo, "-b", "24", str(main_svm)],
                          examples, size(main_svm), "memory", budget_mb=budget_mb(algo, 24)))
    # Start-up.
    one_line = OUT_DIR / "one-line.svm"
    one_line.write_bytes(b"1 1:1 2:0.5\n")
    cases.append(Case("--help", sh + ["--help"], 0, 0, "startup"))
    cases.append(Case("train one-line file (warm numba cache)", sh + ["train", str(one_line)],
                      1, size(one_line), "startup"))
    cases.append(Case("train one-line file (cold numba cache)", sh + ["train", str(one_line)],
                      1, size(one_line), "startup", warmup=False, repeat=1,
                      cold_numba_cache=True))
    # Other libraries, on the first --small-lines lines.
    if svm and args.small_lines and args.small_lines < examples:
        small = args.small_lines
        small_svm = head(svm, OUT_DIR / f"{svm.stem}-head{small}.svm", small)
        small_vw = head(vw, OUT_DIR / f"{vw.stem}-head{small}.vw", small)
        label = f"{small // 1000}k lines" if small % 1000 == 0 else f"{small} lines"
        vw_small = f"VW train ({label})"
        cases.append(Case(f"train {model_algo} ({label})",
                          sh + ["train", "--algo", model_algo, "-b", bits, str(small_svm)],
                          small, size(small_svm), "small", vw_small))
        for library, (module, code) in SMALL_BASELINES.items():
            if importable(module):
                cases.append(Case(f"{library} PA-II ({label})",
                                  [sys.executable, "-c", code, str(small_svm)],
                                  small, size(small_svm), "small", vw_small))
            else:
                log(f"{module} is not importable: its run is skipped")
        if args.vw and vw_available():
            cases.append(Case(vw_small, [sys.executable, "-m", "vowpalwabbit", "-d", str(small_vw),
                                         "-b", bits], small, size(small_vw), "small"))
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
            out.append([c.name, "FAILED", "", "", "", "", "", "", c.error.splitlines()[-1][:80]])
            continue
        vw = by_name.get(c.vw_match)
        ratio = (f"{vw.seconds / c.seconds:.2f}x" if vw is not None and vw.seconds else "")
        rates = (["", ""] if c.group == "startup" else
                 [f"{c.examples / c.seconds:,.0f}", f"{c.text_bytes / 1e6 / c.seconds:.1f}"])
        budget = f"{c.budget_mb:.0f}" if c.budget_mb else ""
        out.append([c.name, *rates, f"{c.seconds:.2f}", f"{c.cpu_seconds:.2f}",
                    f"{c.peak_rss_mb:.0f}", budget, ratio, c.summary])
    return out


HEADERS = ["command", "examples/s", "MB/s", "seconds", "CPU s", "peak RSS MB", "budget MB", "vs VW",
           "notes"]
DISPLAY_ORDER = ["parse", "train", "predict", "train-gz", "predict-gz", "vw", "memory", "startup",
                 "small"]


def ordered(cases):
    return sorted(cases, key=lambda c: DISPLAY_ORDER.index(c.group))


def print_table(cases):
    table_rows = rows(ordered(cases))
    try:
        from rich.console import Console
        from rich.table import Table
        t = Table(title="streamherd throughput")
        for i, h in enumerate(HEADERS):
            t.add_column(h, justify="left" if i in (0, len(HEADERS) - 1) else "right")
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
             "|" + "|".join([":---"] + ["---:"] * (len(HEADERS) - 2) + [":---"]) + "|"]
    for r in rows(ordered(cases)):
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
    return "\n".join(lines)


def measure_full_covariance(args, log):
    """full_covariance.py's results (one dict per learner), or [] when mnist5k is absent."""
    log("  full covariance: python benchmarks/full_covariance.py")
    proc = subprocess.run([sys.executable, str(HERE / "full_covariance.py"), "--data", args.data],
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        log(f"    skipped: {proc.stderr.strip()[-300:]}")
        return []
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for r in results:
        log(f"    {r['algo']}: {r['seconds']:.3f} s, bound {r['bound_seconds']:.3f} s "
            f"({r['ratio_to_bound']:.2f}x)")
    return results


def full_covariance_text(results):
    if not results:
        return ["Full covariance: not measured (`../shared/data/mnist5k.svm.gz` absent)."]
    r0 = results[0]
    lines = [f"Full covariance (`python benchmarks/full_covariance.py`): one pass over mnist5k "
             f"(pixels / 255, digit >= 5 vs < 5, `-b 10`: Sigma is 1024 x 1024, 8 MiB), learner "
             f"kernel only, best of 3. Bound = bytes of Sigma touched (one row per non-zero per "
             f"example for Sigma x, all rows read and written per update) / the bandwidth of a "
             f"numpy copy of an 8 MiB array ({r0['bandwidth'] / 1e9:.0f} GB/s, read + write).",
             "",
             "| learner | examples | updates | seconds | GB of Sigma touched | bound s "
             "| time / bound |",
             "|:---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['algo']} | {r['examples']} | {r['updates']} | {r['seconds']:.3f} | "
                     f"{r['bytes'] / 1e9:.1f} | {r['bound_seconds']:.3f} | "
                     f"{r['ratio_to_bound']:.2f}x |")
    return lines


def target_rows(cases, full_cov):
    """Issue 6's targets: (target, measured, met) for every row that measures one."""
    done = {c.name: c for c in cases if c.times and not c.error}
    out = []

    def vs_vw(c):
        vw = done.get(c.vw_match)
        return vw.seconds / c.seconds if vw else None

    for c in done.values():
        ratio = vs_vw(c)
        if c.name.startswith(WHOLE_BANK):   # (reported beside the default, not a target)
            continue
        if c.name.startswith(NO_FLAGS) and done.get(c.name.replace(NO_FLAGS, "train arow-p")):
            one = done[c.name.replace(NO_FLAGS, "train arow-p")]
            out.append((f"{c.name}: its bank of 11 <= 1.5x one learner's time (train arow-p)",
                        f"{c.seconds / one.seconds:.2f}x", c.seconds <= 1.5 * one.seconds))
        if c.group in ("train", "predict", "train-gz", "predict-gz") and ratio is not None:
            need = (2.0 if c.name.startswith("train nherd-p") or c.group == "predict" else 1.5)
            out.append((f"{c.name} >= {need:.1f}x VW", f"{ratio:.2f}x", ratio >= need))
        if c.group == "parse" and c.name == "parse svmlight":
            m = re.match(r"([0-9]+) MB/s after start-up", c.summary)
            rate = int(m.group(1)) if m else c.text_bytes / 1e6 / c.seconds
            out.append(("parse svmlight >= 250 MB/s (after start-up)", f"{rate:.0f} MB/s",
                        rate >= 250))
        if c.budget_mb:
            out.append((f"{c.name}: peak memory <= {c.budget_mb:.0f} MB",
                        f"{c.peak_rss_mb:.0f} MB", c.peak_rss_mb <= c.budget_mb))
        if c.name == "--help":
            out.append(("`streamherd --help` <= 0.2 s", f"{c.seconds:.2f} s", c.seconds <= 0.2))
        if c.name.startswith("train one-line file (warm"):
            out.append(("train, one-line file, warm cache <= 1 s", f"{c.seconds:.2f} s",
                        c.seconds <= 1.0))
        if c.name.startswith("train one-line file (cold"):
            out.append(("train, one-line file, cold cache (reported)", f"{c.seconds:.1f} s", None))
    for r in full_cov:
        out.append((f"{r['algo']} within 1.5x of the bandwidth bound",
                    f"{r['ratio_to_bound']:.2f}x", r["ratio_to_bound"] <= 1.5))
    return out


def targets_text(cases, full_cov):
    lines = ["| target (issue 6) | measured | met |", "|:---|---:|:---|"]
    for target, measured, met in target_rows(cases, full_cov):
        lines.append(f"| {target} | {measured} | {'' if met is None else 'yes' if met else 'NO'} |")
    return lines


def write_readme(cases, args, mach, data_desc, command, full_cov):
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
        f"numba cache load included): the median of {args.repeat} runs; the commands run in rounds "
        f"(a warm-up round, then {args.repeat} timed rounds of every command once), so that the "
        f"machine's slow and fast minutes spread over all rows, VW's included; "
        f"CPU s is the median user+system time (above the wall time when the parser thread and the "
        f"learner overlap); peak RSS from `os.wait4` in a small launcher process. Load average "
        f"during the run: {load_desc(cases)}. Progress output on, to a file; predictions to "
        f"/dev/null. "
        f"examples/s and MB/s use the uncompressed input size. \"vs VW\" is the matching VW "
        f"run's time divided by this run's (1.00x = as fast as VW; train rows compare with `VW "
        f"train`, predict with `VW predict -t`, .gz with the VW .gz run). Parse rows iterate "
        f"`streamherd.io.reader.ChunkReader` (read, parse, hash; no learning); their note is the "
        f"rate of the loop alone, timed in-process after the kernels are loaded. VW runs use its "
        f"default learner (squared loss, SGD) on the VW-format twin. streamherd's modules are "
        f"byte-compiled before the runs, as in an installed package (this machine sets "
        f"PYTHONDONTWRITEBYTECODE, so no run would write them).",
        "",
        "Regenerate with (the `bench` extra brings VW, scikit-learn and river):",
        "",
        "```",
        'pip install -e ".[bench]"',
        command,
        "```",
        "",
        markdown_table(cases),
        "",
        f"Memory rows: budget = the model's state arrays (2^b x 8 bytes x their count) + "
        f"{MEMORY_ALLOWANCE_MB} MiB; the 10x row reads the input file ten times over. "
        f"Start-up rows: the cold run has an empty `NUMBA_CACHE_DIR` (every kernel compiled, as "
        f"on the first run after install); one run, no warm-up. The last rows run on the first "
        f"{args.small_lines:,} lines: scikit-learn's `SGDClassifier(learning_rate='pa2')` "
        f"`partial_fit` after `load_svmlight_file` (one pass, no progressive validation) and "
        f"river's `PAClassifier(mode=2)` (`predict_one` then `learn_one` per line).",
        "",
        *full_covariance_text(full_cov),
        "",
        "Targets:",
        "",
        *targets_text(cases, full_cov),
        "",
        "Exact commands:",
        "",
        *[command_item(c.name, display_cmd(c.cmd)) for c in ordered(cases)],
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


def streamherd(*args, cores=None):
    """Run ``python -m streamherd ARGS`` from the repository (``cores``: on those cores only);
    returns its stderr (the summary), or exits with it when the command fails."""
    pin = None if cores is None else (lambda: os.sched_setaffinity(0, cores))
    proc = subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)],
                          capture_output=True, text=True, cwd=HERE.parent, preexec_fn=pin)
    if proc.returncode != 0:
        raise SystemExit(f"streamherd {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return proc.stderr


def replace_section(start, end, block, readme=README):
    """Put ``block`` (the section, from marker ``start`` to ``end``) where the README has those
    markers, or at its end: each benchmark script writes its own section so."""
    text = readme.read_text() if readme.exists() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text)


def load_desc(cases):
    loads = [c.load for c in cases if c.load is not None]
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else "n/a"


def command_item(name, command):
    """A list item of the exact commands: inline code, or a program of several lines as a shell
    block under the item (inline, its lines would read as Markdown: '# ...' as headings)."""
    if "\n" not in command:
        return f"- {name}: `{command}`"
    block = "\n".join(f"  {line}" if line else "" for line in command.split("\n"))
    return f"- {name}:\n\n  ```sh\n{block}\n  ```\n"


def display_cmd(cmd):
    """A command for humans: repo-relative paths, `python` and `streamherd` spelled plainly."""
    out = []
    root = HERE.parent
    for c in map(str, cmd):
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
    ap.add_argument("--small-lines", type=int, default=100_000,
                    help="lines for the scikit-learn / river comparison (0: skip it)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"),
                    help="the real data folder (mnist5k for the full-covariance check)")
    ap.add_argument("--no-full-cov", dest="full_cov", action="store_false",
                    help="skip the full-covariance bandwidth check")
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
                     f".gz {svm_gz.stat().st_size / 1e6:.0f} MB / "
                     f"{vw_gz.stat().st_size / 1e6:.0f} MB.")
    print(f"data: {data_desc}")

    cases = build_cases(args, svm, vw, svm_gz, vw_gz, examples, algos, log)
    # Byte-compiled modules, as a regular install has them (pip compiles a wheel's modules; an
    # editable install writes them on its first run) and as VW's Python package has them. Where
    # PYTHONDONTWRITEBYTECODE is set (this sandbox sets it) no run would ever write them and
    # every run would compile streamherd's source again: 25 ms of start-up.
    compileall.compile_dir(str(ROOT / "streamherd"), quiet=1)
    log(f"running {len(cases)} commands: a warm-up round and {args.repeat} timed rounds")
    measure_all(cases, args.repeat, log)
    full_cov = measure_full_covariance(args, log) if args.full_cov else []

    print_table(cases)
    for target, measured, met in target_rows(cases, full_cov):
        print(f"{'' if met is None else 'met    ' if met else 'NOT MET'}  {target}: {measured}")
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
                       "cpu": c.cpu, "load": c.load, "error": c.error, "summary": c.summary,
                       "budget_mb": c.budget_mb}
                      for c in cases],
            "full_covariance": full_cov,
            "targets": [{"target": t, "measured": m, "met": ok}
                        for t, m, ok in target_rows(cases, full_cov)]}, indent=1))
    if args.write_readme:
        write_readme(cases, args, mach, data_desc, command.strip(), full_cov)
        print(f"wrote the throughput section of {README}")


if __name__ == "__main__":
    main()
