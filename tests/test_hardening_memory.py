"""Models whose meta promises more state than the process may hold are refused in one line
before anything is allocated, under the memory the process actually has: an address-space
limit (RLIMIT_AS, set here for the child process) or a control group's limit."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, one_line_error, run_cli

from streamherd.learners import base

# the address space each child gets: a plain predict with a small model needs far less
LIMIT = 1 << 30


def write_data(path, labels):
    rng = np.random.default_rng(3)
    with open(path, "w") as f:
        for k in range(120):
            slots = sorted(rng.choice(np.arange(1, 40), 4, replace=False))
            f.write(f"{labels[k % len(labels)]} "
                    + " ".join(f"{j}:{rng.random():.3f}" for j in slots) + "\n")


def rewritten(model, target, **changes):
    """A copy of ``model`` (its arrays as they are) whose meta says ``changes``."""
    with np.load(model) as archive:
        meta = json.loads(archive["meta"].item())
        arrays = {name: archive[name] for name in archive.files if name != "meta"}
    meta.update(changes)
    meta.pop("calibration", None)   # its statistics are per class
    np.savez_compressed(target, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    return target


# A small launcher forks the command and reports its exit code and peak (os.wait4's rusage).
# The command is not forked from the test process itself: the kernel keeps, across exec, the
# resident high-water mark of the process that forked, so a child of a large test worker would
# report the worker's size, not its own.
LAUNCHER = """
import json, os, resource, sys
limit, report = int(sys.argv[1]), sys.argv[2]
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execv(sys.executable, [sys.executable, "-m", "streamherd", *sys.argv[3:]])
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024], f)
"""


def run_limited(*args, cwd):
    """``streamherd ARGS`` with RLIMIT_AS = LIMIT; returns (CompletedProcess, peak resident
    bytes of that command: its own rusage)."""
    report = Path(cwd) / "launcher-report.json"
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, str(LIMIT), str(report),
                           *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.environ.get(
                              "PYTHONPATH", str(REPO))})
    assert proc.returncode == 0, proc.stderr
    proc.returncode, peak = json.loads(report.read_text())
    report.unlink()
    return proc, peak


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    write_data(folder / "binary.svm", [1, -1])
    write_data(folder / "classes.svm", [1, 2, 3])
    assert run_cli("train", folder / "binary.svm", "--algo", "arow", "-b", "12", "-f",
                   folder / "binary.npz", "--quiet").returncode == 0
    assert run_cli("train", folder / "classes.svm", "--algo", "arow", "-b", "12", "-f",
                   folder / "classes.npz", "--quiet").returncode == 0
    return folder


BOMBS = {
    # a Gaussian learner's mean and variance: 2 x 8 bytes x 2^bits
    "bits27": (dict(bits=27), 16 << 27),
    "bits30": (dict(bits=30), 16 << 30),
    # 2,000 classes at -b 18: 2,000 blocks of 2^18 slots of both arrays
    "classes2000": (dict(bits=18, classes=[str(k) for k in range(2000)]), 16 * 2000 << 18),
}
COMMANDS = {
    "predict": lambda model, data: ["predict", "-m", model, data, "-p", "p.txt"],
    "train -i": lambda model, data: ["train", "-i", model, data, "-f", "out.npz"],
}


@pytest.mark.parametrize("bomb", BOMBS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_model_promising_more_memory_than_the_process_has_is_refused_in_one_line(
        models, tmp_path, bomb, command):
    changes, state = BOMBS[bomb]
    source = models / ("classes.npz" if "classes" in changes else "binary.npz")
    model = rewritten(source, tmp_path / "bomb.npz", **changes)
    data = models / ("classes.svm" if "classes" in changes else "binary.svm")
    proc, peak = run_limited(*COMMANDS[command](model, data), cwd=tmp_path)
    line = one_line_error(proc)
    assert f"model {model}" in line and f"{state:,} bytes" in line, line
    assert "of available memory" in line and "smaller -b" in line, line
    # refused before the state was allocated: the child never came near its limit
    assert peak < LIMIT // 2, peak
    assert not (tmp_path / "out.npz").exists() and not (tmp_path / "p.txt").exists()
    assert sorted(os.listdir(tmp_path)) == ["bomb.npz"]


def weights(inspect_json):
    """inspect --json's rows as (slot, weight, variance): the feature names (the bias's slot)
    depend on -b."""
    rows = [json.loads(line) for line in inspect_json.splitlines()]
    return [(row["slot"], row["weight"], row["variance"]) for row in rows]


@pytest.mark.parametrize("bomb", BOMBS)
def test_inspect_lists_a_model_too_large_to_build_from_what_it_stores(models, tmp_path, bomb):
    """inspect does not build the state: the rows of a model too large for memory are those of
    the slots it stores (here, the -b 12 model it was made from), read without allocating."""
    changes, _ = BOMBS[bomb]
    source = models / ("classes.npz" if "classes" in changes else "binary.npz")
    model = rewritten(source, tmp_path / "bomb.npz", **changes)
    proc, peak = run_limited("inspect", model, "--json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert peak < LIMIT // 2, peak
    source_rows = run_cli("inspect", source, "--json").stdout
    if "classes" in changes:
        # the -b 12 model's slot s of class block z is slot z 2^12 + s of block 0 at -b 18
        with np.load(source) as archive:
            classes = json.loads(archive["meta"].item())["classes"]
        rows = [json.loads(line) for line in source_rows.splitlines()]
        expected = sorted(((classes.index(row["class"]) << 12) + row["slot"], row["weight"],
                           row["variance"]) for row in rows)
        assert sorted(weights(proc.stdout)) == expected != []
    else:
        assert weights(proc.stdout) == weights(source_rows) != []


@pytest.mark.parametrize("command", [*COMMANDS, "inspect"])
def test_a_model_that_fits_still_works_under_the_same_limit(models, tmp_path, command):
    data = models / "binary.svm"
    args = ["inspect", models / "binary.npz"] if command == "inspect" else \
        COMMANDS[command](models / "binary.npz", data)
    proc, _ = run_limited(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_zero_filled_vector_counts_only_against_the_address_space(models, tmp_path):
    """A perceptron's mean at -b 27 (1 GiB of zero pages, written only where used) is more
    than the child's whole address space: refused; the same model needs no physical memory
    beyond what it holds, so without the limit it predicts."""
    assert run_cli("train", models / "binary.svm", "--algo", "perceptron", "-b", "12", "-f",
                   tmp_path / "perceptron.npz", "--quiet").returncode == 0
    model = rewritten(tmp_path / "perceptron.npz", tmp_path / "wide.npz", bits=27)
    proc, _ = run_limited("predict", "-m", model, models / "binary.svm", "-p", "p.txt",
                          cwd=tmp_path)
    assert f"{8 << 27:,} bytes" in one_line_error(proc)
    proc = run_cli("predict", "-m", model, models / "binary.svm", "-p", tmp_path / "p.txt",
                   "--quiet")
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- where the room comes from

def write_files(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cgroup_v2_room_is_the_tightest_limit_less_usage_of_the_group_and_its_ancestors(
        tmp_path):
    write_files(tmp_path, {
        "proc": "0::/outer/inner\n",
        "root/outer/memory.max": f"{3 << 30}\n",
        "root/outer/memory.current": f"{1 << 30}\n",
        "root/outer/inner/memory.max": "max\n",
        "root/outer/inner/memory.current": f"{1 << 29}\n",
        # reclaimable page cache is not held memory
        "root/outer/memory.stat": f"anon 1\ninactive_file {1 << 28}\nactive_file 5\n",
    })
    room = base.cgroup_room(tmp_path / "proc", tmp_path / "root")
    assert room == (3 << 30) - ((1 << 30) - (1 << 28))


def test_cgroup_v1_room_reads_the_memory_hierarchy(tmp_path):
    write_files(tmp_path, {
        "proc": "4:memory:/job\n3:cpu,cpuacct:/job\n",
        "root/memory/job/memory.limit_in_bytes": f"{2 << 30}\n",
        "root/memory/job/memory.usage_in_bytes": f"{1 << 30}\n",
        "root/memory/job/memory.stat": f"cache 9\ntotal_inactive_file {1 << 20}\n",
        # the root group's "no limit" (a page-rounded 2^63 - 1)
        "root/memory/memory.limit_in_bytes": "9223372036854771712\n",
        "root/memory/memory.usage_in_bytes": "12345\n",
    })
    assert base.cgroup_room(tmp_path / "proc", tmp_path / "root") == \
        (2 << 30) - (1 << 30) + (1 << 20)


def test_no_cgroup_limit_leaves_the_host_figure(tmp_path):
    write_files(tmp_path, {"proc": "0::/\n", "root/memory.max": "max\n",
                           "root/memory.current": "100\n"})
    assert base.cgroup_room(tmp_path / "proc", tmp_path / "root") is None
    assert base.cgroup_room(tmp_path / "missing", tmp_path / "root") is None


def test_available_memory_honours_an_address_space_limit():
    """In a child under RLIMIT_AS, what is available is at most the limit less its VmSize."""
    code = ("import resource; from streamherd.learners import base;"
            f"resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}));"
            "size = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') "
            "if l.startswith('VmSize:')][0];"
            f"print(base.available_memory(), {LIMIT} - size)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    available, expected = map(int, out)
    assert 0 < available <= expected + (1 << 20) and available > expected - (64 << 20)
