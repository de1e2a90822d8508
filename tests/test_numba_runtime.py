"""streamherd.numba_runtime: numba's runtime library cached as object code (the second process
loads it instead of compiling; code compiled afterwards and streamherd's cached kernels still
count references and free memory through it), and streamherd's cached kernels loaded without
numba's compiler registries. (Every CLI test runs with both installed.)"""
import json
import os
import subprocess
import sys

import pytest

# A fresh function (compiled in this process, linked against the runtime library) allocates and
# frees arrays; a cached streamherd kernel runs; numba's allocation counters must balance.
PROGRAM = """
import json
from streamherd import numba_runtime
numba_runtime.install()
import numpy as np
from numba import njit
from numba.core.runtime import rtsys

@njit
def fresh(n):
    total = 0.0
    for i in range(n):
        total += np.arange(i + 1).sum()
    return total

from streamherd.io.block import count_newlines
lines = count_newlines(np.frombuffer(b"a\\nb\\nc\\n", np.uint8), 6)
import sys
compiler_registries = "numba.typed.dictimpl" in sys.modules
total = fresh(50)
stats = rtsys.get_allocation_stats()
print(json.dumps({"loaded": numba_runtime.loaded_from_cache(), "total": total, "lines": lines,
                  "compiler_registries": compiler_registries,
                  "alloc": stats.alloc, "free": stats.free}))
"""


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), NUMBA_NRT_STATS="1")
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cache_files(cache_dir):
    return [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs
            if f.startswith("numba_runtime-")]


def check_runtime_works(result):
    assert result["total"] == sum(i * (i + 1) / 2 for i in range(50))
    assert result["lines"] == 3
    assert result["alloc"] >= 50 and result["alloc"] == result["free"]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache directory after one run (which compiled the runtime and wrote it)."""
    cache_dir = tmp_path_factory.mktemp("numba-cache")
    first = run(cache_dir)
    return cache_dir, first


def test_first_run_compiles_and_writes_the_cache(warm):
    cache_dir, first = warm
    assert first["loaded"] is False
    check_runtime_works(first)
    assert first["compiler_registries"] is True
    assert len(cache_files(cache_dir)) == 1


def test_next_run_loads_it_and_the_runtime_still_counts_references(warm):
    cache_dir, _ = warm
    second = run(cache_dir)
    assert second["loaded"] is True
    check_runtime_works(second)
    # The cached kernel loaded without numba importing what only compiling needs; the first
    # run compiled it, with all of that.
    assert second["compiler_registries"] is False


@pytest.mark.parametrize("content", [b"", b"not a pickle", None])
def test_a_damaged_or_foreign_cache_file_is_compiled_again_and_rewritten(warm, content):
    cache_dir, _ = warm
    (path,) = cache_files(cache_dir)
    if content is None:  # a well-formed file for another key (another numba, another CPU)
        import pickle
        with open(path, "rb") as f:
            _, state = pickle.load(f)
        content = pickle.dumps(("another key", state))
    with open(path, "wb") as f:
        f.write(content)
    result = run(cache_dir)
    assert result["loaded"] is False
    check_runtime_works(result)
    assert run(cache_dir)["loaded"] is True

