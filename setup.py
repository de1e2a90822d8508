"""The wheel build compiles streamherd's numba kernels into the built package (numba's cache
files in its ``__pycache__`` folders), so that the first run after ``pip install`` loads them
instead of compiling them (20-45 s on two cores). Everything else about the package is in
pyproject.toml; this file only adds that step to setuptools' build_py.

It compiles them all (``python -m streamherd.precompile --all``: every learner on every task,
on one process per core): a first multiclass, regression or full-covariance run starts at
once too, and the test suite, which runs every learner on every task, compiles none of them.

numba keys each cache entry by its own version, the CPU it compiles for, the Python version and
a hash of the module's source (not its file time, which installing changes), so the entries
built here serve the machine that builds the wheel, which ``pip install`` of the source is.
Installed elsewhere (a wheel built on another CPU) or beside another numba, they are ignored and
the kernels compile on first use as without them. An editable install (``pip install -e``)
compiles them into the source tree's ``__pycache__`` folders.

The step never fails the build: on a failure it prints a warning (shown by ``pip install -v``)
and the package installs without its cache. STREAMHERD_NO_PRECOMPILE=1 skips it (wheels built
to be published: their cache would serve only the CPU and numba of the build machine).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# numba's cache files, and numba_runtime's (*.nrt); precompile's scratch folders
CACHE_FILES = ("*.nbi", "*.nbc", "*.nrt")
SCRATCH = "streamherd-precompile-*"


class build_py_with_kernel_cache(build_py):
    def run(self):
        super().run()
        editable = getattr(self, "editable_mode", False)
        if editable:
            write_bytecode(ROOT)
        precompile(ROOT if editable else Path(self.build_lib).resolve())


def write_bytecode(tree):
    """Write the bytecode of the package in the source tree ``tree``, as pip does for the
    files it installs from a wheel but not for an editable install's: where Python is told not
    to write it (PYTHONDONTWRITEBYTECODE), every command would otherwise compile each module it
    imports from source, a fixed cost of every run. Never raises: the package runs without it."""
    import compileall

    try:
        compileall.compile_dir(tree / "streamherd", quiet=2)
    except Exception as e:   # never the build's failure
        print(f"WARNING: streamherd's bytecode was not written ({e})", file=sys.stderr)


def precompile(tree):
    """Compile the kernels into the package in ``tree``; True when done. Never raises."""
    if os.environ.get("STREAMHERD_NO_PRECOMPILE", "") not in ("", "0"):
        return False
    try:
        _precompile(tree)
    except Exception as e:   # never the build's failure: the kernels compile on first use
        print(f"WARNING: streamherd's kernels were not precompiled ({e}); they compile on "
              f"first use (or run `python -m streamherd.precompile` after installing)",
              file=sys.stderr)
        return False
    return True


def _precompile(tree):
    """Compile the kernels of the package in ``tree`` (the built tree that goes into the wheel,
    or the source tree of an editable install) into its own __pycache__ folders."""
    package = tree / "streamherd"
    # Cache files left by an earlier build (or, in a source tree, by runs) may be stale: numba
    # checks a kernel's own module against its cache, not the modules of the helpers compiled
    # into it. The kernels are compiled afresh from the sources being installed.
    for pattern in CACHE_FILES:
        for path in package.rglob(pattern):
            path.unlink()
    for path in package.rglob(SCRATCH):
        shutil.rmtree(path, ignore_errors=True)
    # the package's own __pycache__ folders (NUMBA_CACHE_DIR would send the cache elsewhere),
    # and the package being built, not an installed one
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    try:
        subprocess.run([sys.executable, "-m", "streamherd.precompile", "--all", "--into",
                        str(package)], env=env, cwd=tree, check=True, timeout=1800)
    finally:
        for path in package.rglob(SCRATCH):   # a killed run's scratch folder
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":   # (setuptools runs this file as __main__; tests import it)
    setup(cmdclass={"build_py": build_py_with_kernel_cache})
