"""streamherd.precompile (run by the wheel build and by ``pip install -e``, see setup.py): after
it, the README's commands compile nothing; it writes only into numba's cache folder; a failure
never fails the build; its processes' saves into the cache lose no entry. The precompile runs
once, into a NUMBA_CACHE_DIR of its own: it compiles every kernel of the usual commands (an
install compiles those and the rest, --all), so the tests that use it are marked slow (`pytest -m
slow`)."""
import importlib.util
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from helpers import COMPILE_NOTICE, REPO


@pytest.fixture(scope="module")
def precompiled(tmp_path_factory):
    """(environment whose NUMBA_CACHE_DIR holds the precompiled kernels, that folder, the
    precompile's working folder)."""
    cache = tmp_path_factory.mktemp("numba-cache")
    cwd = tmp_path_factory.mktemp("cwd")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, "-m", "streamherd.precompile"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(cache) in proc.stdout
    return env, cache, cwd


def _run(env, *args):
    proc = subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["train", "samples/sample.svm", "-f", "{tmp}/sample.npz"],          # the README's
    ["train", "samples/sample.vw", "-f", "{tmp}/sample.npz", "--format", "vw"],
    ["train", "--algo", "nherd-p", "samples/sample.svm"],
    ["train", "--algo", "arow", "-b", "20", "--no-bias", "--skip-bad", "samples/sample.svm"],
    ["train", "--algo", "nherd-p", "-C", "auto", "samples/sample.svm"],   # the README's auto
    ["train", "--algo", "pa2", "-C", "auto", "samples/sample.vw"],
    ["train", "-q", "ab", "--ignore", "c", "samples/sample.vw", "-f", "{tmp}/crossed.npz"],
    ["train", "--cubic", "abc", "samples/sample.vw"],    # VW's crosses: one parse kernel
], ids=["readme-train", "vw", "nherd-p", "arow-options", "nherd-p-auto", "pa2-auto",
        "vw-crosses", "vw-cubic"])
def test_the_usual_commands_compile_nothing_after_it(precompiled, tmp_path, command):
    env = precompiled[0]
    proc = _run(env, *(word.format(tmp=tmp_path) for word in command))
    assert COMPILE_NOTICE not in proc.stderr
    assert "kernel compilation seconds" not in proc.stderr


@pytest.mark.slow
def test_predict_compiles_nothing_after_it(precompiled, tmp_path):
    env = precompiled[0]
    _run(env, "train", "samples/sample.svm", "-f", tmp_path / "m.npz", "--quiet")
    for output in (["-p", tmp_path / "predictions.txt"], []):
        proc = _run(env, "predict", "-m", tmp_path / "m.npz", "samples/sample.svm", *output)
        assert COMPILE_NOTICE not in proc.stderr


def _cache_files(cache):
    return {path for path in cache.rglob("*") if path.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("commands", [
    [["train", "--algo", "pa2", "--multiclass", "mira", "{data}", "-f", "{tmp}/m.npz"],
     ["predict", "-m", "{tmp}/m.npz", "{data}", "-p", "{tmp}/p.txt"]],
    [["train", "--algo", "voted-perceptron", "{data}", "-f", "{tmp}/m.npz"],
     ["predict", "-m", "{tmp}/m.npz", "{data}", "--raw", "-p", "{tmp}/p.txt"]],
    [["herd", "{data}", "-f", "{tmp}/m.npz", "--test", "{data}", "-p", "{tmp}/t.txt",
      "--hidden", "10", "--burn-in", "5", "--max-epochs", "20"],
     ["herd", "{data}", "-f", "{tmp}/o.npz", "--multiclass", "ova", "--burn-in", "5",
      "--max-epochs", "20", "--ratio", "1"],
     ["predict", "-m", "{tmp}/m.npz", "{data}", "-p", "{tmp}/p.txt"]],
    [["train", "--algo", "arow-p", "--multiclass", "ova", "{data}", "-f", "{tmp}/m.npz"],
     ["train", "--algo", "pa2", "--multiclass", "ova", "{data}"],
     ["predict", "-m", "{tmp}/m.npz", "{data}", "-p", "{tmp}/p.txt"]],
], ids=["mira", "voted-multiclass", "herd", "ova-bank"])
def test_the_multiclass_learners_compile_nothing_after_it(precompiled, tmp_path, commands):
    """MIRA, the multiclass voted perceptron, herding and one-versus-all's bank: a fresh
    install's first run of each
    loads every kernel from the cache (no notice, and no cache file added)."""
    env, cache = precompiled[0], precompiled[1]
    data = tmp_path / "classes.svm"
    rng = np.random.default_rng(0)
    data.write_text("".join(f"{rng.integers(1, 4)} 1:{rng.normal():.3f} 4:{rng.normal():.3f} "
                            f"9:{rng.random():.3f}\n" for _ in range(40)))
    before = _cache_files(cache)
    for command in commands:
        proc = _run(env, *(word.format(tmp=tmp_path, data=data) for word in command))
        assert COMPILE_NOTICE not in proc.stderr, command
    assert _cache_files(cache) == before


@pytest.mark.slow
def test_it_writes_numba_cache_files_and_nothing_else(precompiled):
    env, cache, cwd = precompiled
    assert list(cwd.iterdir()) == []
    files = [path for path in cache.rglob("*") if path.is_file()]
    assert files
    assert {path.suffix for path in files} <= {".nbi", ".nbc", ".nrt"}, files
    # the scratch folder (generated lines, models, predictions) is gone
    assert not [path for path in cache.rglob("*") if "precompile" in path.name]


def test_it_compiles_nothing_when_the_cache_would_go_elsewhere(tmp_path):
    # setup.py passes --into (the package being built): a cache folder outside it (numba's
    # user-wide one, when the package's __pycache__ cannot be written) is never written
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "streamherd.precompile", "--into",
                           tmp_path / "package"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 1 and "nothing compiled" in proc.stderr, proc.stderr
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]


def _setup_module():
    spec = importlib.util.spec_from_file_location("streamherd_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)   # not __main__: defines, does not run setup()
    return module


def test_a_failing_precompile_does_not_fail_the_build(tmp_path, monkeypatch, capsys):
    setup = _setup_module()
    package = tmp_path / "streamherd" / "io" / "__pycache__"
    package.mkdir(parents=True)
    stale = [package / "block.parse_block-18.py311.nbi",
             package / "block.parse_block-18.py311.1.nbc"]
    for path in stale:
        path.write_bytes(b"from an earlier build")

    def fail(*args, **kwargs):
        raise subprocess.CalledProcessError(1, args[0])

    monkeypatch.setattr(setup.subprocess, "run", fail)
    assert setup.precompile(tmp_path) is False
    assert "WARNING: streamherd's kernels were not precompiled" in capsys.readouterr().err
    # the stale cache files of an earlier build are gone all the same (they could hold
    # kernels compiled from older helpers)
    assert not any(path.exists() for path in stale)


def test_the_build_step_can_be_skipped(tmp_path, monkeypatch):
    setup = _setup_module()
    monkeypatch.setenv("STREAMHERD_NO_PRECOMPILE", "1")
    monkeypatch.setattr(setup, "_precompile", lambda tree: pytest.fail("precompiled"))
    assert setup.precompile(tmp_path) is False


def test_an_editable_install_writes_the_packages_bytecode(tmp_path):
    """Python reads bytecode it is told not to write (PYTHONDONTWRITEBYTECODE): the install
    writes it, so that no command compiles the package's modules from source."""
    setup = _setup_module()
    package = tmp_path / "streamherd"
    (package / "io").mkdir(parents=True)
    sources = [package / "__init__.py", package / "io" / "reader.py"]
    for path in sources:
        path.write_text("VALUE = 1\n")
    setup.write_bytecode(tmp_path)
    for path in sources:
        assert os.path.exists(importlib.util.cache_from_source(str(path))), path


def test_bytecode_that_cannot_be_written_does_not_fail_the_build(tmp_path, monkeypatch, capsys):
    import compileall

    def fail(*args, **kwargs):
        raise OSError("read-only file system")

    monkeypatch.setattr(compileall, "compile_dir", fail)
    _setup_module().write_bytecode(tmp_path)
    assert "WARNING: streamherd's bytecode was not written (read-only file system)" in \
        capsys.readouterr().err


def test_the_build_runs_it_on_the_package_being_built(tmp_path, monkeypatch):
    setup = _setup_module()
    calls = []
    monkeypatch.delenv("STREAMHERD_NO_PRECOMPILE", raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(setup.subprocess, "run", lambda argv, **kw: calls.append((argv, kw)))
    assert setup.precompile(tmp_path) is True
    (argv, kw), = calls
    assert argv[1:] == ["-m", "streamherd.precompile", "--all", "--into",
                        str(tmp_path / "streamherd")]
    assert kw["cwd"] == tmp_path
    assert kw["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
    assert "NUMBA_CACHE_DIR" not in kw["env"]   # into the package's own __pycache__ folders


SAVER = """
import os, sys, time
from numba.core import caching
from streamherd import numba_runtime

lock, kind, folder = sys.argv[1], sys.argv[2], sys.argv[3]
write_index = caching.IndexDataCacheFile._save_index

def slow_write_index(cache_file, overloads):
    # the index read; without the lock, wait until the other process has read it too (with it,
    # the other waits for this save: a pause leaves it the time to try)
    open(os.path.join(folder, kind + '.read'), 'w').close()
    others = [os.path.join(folder, other + '.read') for other in ('int', 'float')]
    deadline = time.monotonic() + (1 if lock == 'locked' else 60)
    while time.monotonic() < deadline and not all(map(os.path.exists, others)):
        time.sleep(0.01)
    write_index(cache_file, overloads)

caching.IndexDataCacheFile._save_index = slow_write_index
if lock == "locked":
    numba_runtime.lock_cache_saves()
sys.path.insert(0, folder)
from twice import twice
twice(1) if kind == "int" else twice(1.5)
"""


@pytest.mark.parametrize("lock", [True, False], ids=["locked", "unlocked"])
def test_processes_saving_one_functions_entries_at_once_keep_them_all(tmp_path, lock):
    """Two processes compile one function for two argument types and save both into its cache
    at once: under the lock every command holds (numba_runtime.lock_cache_saves) its index keeps
    both entries. Unlocked, each process reads the index before the other writes it back, and
    one entry is lost (the race the lock is for, made certain)."""
    (tmp_path / "twice.py").write_text("from numba import njit\n\n\n"
                                       "@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    savers = [subprocess.Popen([sys.executable, "-c", SAVER,
                                "locked" if lock else "unlocked", kind, tmp_path],
                               env=env, cwd=tmp_path) for kind in ("int", "float")]
    assert [saver.wait(timeout=120) for saver in savers] == [0, 0]
    index, = (tmp_path / "cache").rglob("*.nbi")
    with open(index, "rb") as f:
        pickle.load(f)   # numba's version
        _, overloads = pickle.loads(f.read())
    assert len(overloads) == (2 if lock else 1)
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()) == sorted(
        [index.name, *overloads.values()])   # the lock is the folder's: no file of its own


@pytest.mark.parametrize("face", ["streamherd.model", "streamherd.sklearn", "streamherd.river"])
def test_a_process_holding_a_model_locks_its_saves_into_the_cache(face):
    """A Python process that trains through a face (not a command) locks its saves too."""
    probe = (f"import {face}\nfrom streamherd import numba_runtime\n"
             f"print(numba_runtime.cache_saves_locked())")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"]


def test_every_command_locks_its_saves_into_the_cache():
    from streamherd import numba_runtime

    numba_runtime.install()   # what every command runs before its kernels load
    assert numba_runtime.cache_saves_locked()
