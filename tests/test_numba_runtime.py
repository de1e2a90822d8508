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



# A numba extension (an entry point of the "numba_extensions" group, as numba finds them in
# every installed distribution) that writes a line each time numba initialises it.
EXTENSION = {
    "streamherd_probe_extension.py": "import os\n\ndef init():\n"
                                     "    with open(os.environ['EXTENSION_LOG'], 'a') as f:\n"
                                     "        f.write('init\\n')\n",
    "streamherd_probe_extension-1.0.dist-info/METADATA": "Metadata-Version: 2.1\n"
                                                         "Name: streamherd-probe-extension\n"
                                                         "Version: 1.0\n",
    "streamherd_probe_extension-1.0.dist-info/entry_points.txt": "[numba_extensions]\n"
                                                                 "init = streamherd_probe_"
                                                                 "extension:init\n",
}

# Which of the program's steps find the extension initialised: after a streamherd kernel's first
# call, then after a function of another module's first call.
EXTENSION_PROGRAM = """
import json, os
from streamherd import numba_runtime
numba_runtime.install()
import numpy as np
from numba import njit
from streamherd.io.block import count_newlines

def initialised():
    return os.path.exists(os.environ["EXTENSION_LOG"])

lines = count_newlines(np.frombuffer(b"a\\nb\\n", np.uint8), 4)
after_kernel = initialised()

@njit
def other(n):
    return n + 1

other(1)
print(json.dumps({"lines": lines, "after_kernel": after_kernel, "after_other": initialised()}))
"""


def run_with_extension(cache_dir, tmp_path):
    folder = tmp_path / "site"
    for name, text in EXTENSION.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    log = tmp_path / "extension.log"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), EXTENSION_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(folder), *filter(None, [os.environ.get(
                   "PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-c", EXTENSION_PROGRAM], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["lines"] == 2
    return result, log.read_text().splitlines() if log.exists() else []


def test_a_cached_kernel_loads_without_numbas_extensions_and_other_functions_still_get_them(
        warm, tmp_path):
    cache_dir, _ = warm
    result, log = run_with_extension(cache_dir, tmp_path)
    assert result == {"lines": 2, "after_kernel": False, "after_other": True}
    assert log == ["init"]


def test_a_kernel_compiled_for_want_of_a_cache_entry_has_the_extensions_initialised_first(
        tmp_path):
    result, log = run_with_extension(tmp_path / "empty-cache", tmp_path)
    assert result["after_kernel"] is True
    assert log == ["init"]


# numba's type of each array, printed one per line
TYPES_PROGRAM = """
import sys
if sys.argv[1] == "installed":
    from streamherd import numba_runtime
    numba_runtime.install()
import numpy as np
from numba import typeof
base = np.arange(24, dtype=np.float64).reshape(4, 6)
readonly = np.zeros(3)
readonly.flags.writeable = False
class Sub(np.ndarray):
    pass
arrays = [base, base.T, base[:, ::2], base[1], base[:, 1], np.zeros(0), np.zeros((2, 0, 3)),
          readonly, np.zeros(5, np.uint8), np.zeros(3, np.int32)[::-1], np.zeros(2, np.bool_),
          np.zeros(2, np.complex128), np.zeros(2, "M8[s]"), np.zeros(2, [("a", "f8"), ("b", "i4")]),
          np.zeros(()), np.frombuffer(b"abcd", np.uint8)]
for array in arrays:
    print(repr(typeof(array)))
print("numpy.ma" in sys.modules)
print(repr(typeof(np.zeros(4).view(Sub))))
try:
    print(repr(typeof(np.zeros(2, object))))
except Exception as e:
    print(type(e).__name__, e)
"""


def test_arrays_are_typed_as_numba_types_them_without_importing_numpy_ma():
    outputs = {}
    for mode in ("installed", "numba's own"):
        proc = subprocess.run([sys.executable, "-c", TYPES_PROGRAM, mode], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        outputs[mode] = proc.stdout.splitlines()
    # the last lines: an ndarray subclass and an object array (untyped), typed by numba's own
    # code once installed too, after the line that says whether numpy.ma was imported
    flag = len(outputs["installed"]) - 3
    assert outputs["installed"][flag] == "False" and outputs["numba's own"][flag] == "True"
    del outputs["installed"][flag], outputs["numba's own"][flag]
    assert outputs["installed"] == outputs["numba's own"]


# A cached streamherd kernel loads (its LLVM module left unparsed once its symbols are known),
# then a function compiled in this process calls it: numba links the kernel's module into the
# new code. The LLVM modules parsed along the way are counted.
LINKING_PROGRAM = """
import json
import llvmlite.binding as llvm
from numba.core import codegen
parsed = []
parse_bitcode = llvm.parse_bitcode
def counted(data, *args):
    parsed.append(len(data))
    return parse_bitcode(data, *args)
codegen.ll.parse_bitcode = counted
llvm.parse_bitcode = counted
from streamherd import numba_runtime
numba_runtime.install()
import numpy as np
from numba import njit
from streamherd.io.block import count_newlines

text = np.frombuffer(b"a\\nb\\nc\\n", np.uint8)
lines = count_newlines(text, 6)
parsed_loading = len(parsed)

@njit
def twice(buf, n):
    return count_newlines(buf, n) * 2

print(json.dumps({"lines": lines, "twice": twice(text, 6), "parsed_loading": parsed_loading,
                  "parsed_linking": len(parsed) - parsed_loading}))
"""


def run_linking(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", LINKING_PROGRAM], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (result["lines"], result["twice"]) == (3, 6)
    return result


def symbols_files(cache_dir):
    return [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs
            if f.startswith("symbols-")]


def test_a_cached_kernel_loads_without_parsing_its_module_until_new_code_links_it(warm):
    cache_dir, _ = warm
    run_linking(cache_dir)   # the kernel's and the runtime's symbols known from here on
    result = run_linking(cache_dir)
    assert result["parsed_loading"] == 0
    assert result["parsed_linking"] >= 1


@pytest.mark.parametrize("content", [b"", b"not a pickle"])
def test_a_damaged_symbols_file_is_parsed_for_and_rewritten(warm, content):
    cache_dir, _ = warm
    run_linking(cache_dir)
    files = symbols_files(cache_dir)
    assert files
    for path in files:
        with open(path, "wb") as f:
            f.write(content)
    assert run_linking(cache_dir)["parsed_loading"] >= 1
    assert run_linking(cache_dir)["parsed_loading"] == 0


# Three cached functions of one module, defined after numba_runtime.install; then the cache
# folder removed and one more defined and called (its entry saved).
FOLDER_MODULE = """
from numba import njit

@njit(cache=True)
def one(x):
    return x + 1

@njit(cache=True)
def two(x):
    return x + 2

@njit(cache=True)
def three(x):
    return x + 3
"""
FOLDER_PROGRAM = """
import json, os, shutil, sys, tempfile
from streamherd import numba_runtime
numba_runtime.install()
checks = []
temporary_file = tempfile.TemporaryFile
def counted(*args, **kwargs):
    checks.append(kwargs.get("dir"))
    return temporary_file(*args, **kwargs)
tempfile.TemporaryFile = counted
sys.path.insert(0, sys.argv[1])
import three_kernels
defined = len(checks)
folder = os.path.join(sys.argv[1], "__pycache__")
shutil.rmtree(folder)
from numba import njit
exec(compile("@njit(cache=True)\\ndef four(x):\\n    return x + 4\\n",
             os.path.join(sys.argv[1], "three_kernels.py"), "exec"), vars(three_kernels))
result = three_kernels.four(1)
print(json.dumps({"defined": defined, "after_removal": len(checks) - defined, "result": result,
                  "saved": sorted(os.listdir(folder))}))
"""


def test_a_cache_folder_is_checked_writable_once_while_it_exists(tmp_path):
    (tmp_path / "three_kernels.py").write_text(FOLDER_MODULE)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-c", FOLDER_PROGRAM, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["defined"] == 1   # numba's own check: one per function, 3
    assert result["after_removal"] >= 1   # the folder made again, and checked
    assert result["result"] == 5
    assert any(name.endswith(".nbi") for name in result["saved"])
