"""Kernel compilation, made visible: a run that needs a kernel numba's on-disk cache does not hold
compiles it (later runs load it from the cache). The install usually compiles the kernels of the
usual commands (setup.py runs streamherd.precompile), so that happens when the install did not
(a wheel built elsewhere, another numba, NUMBA_CACHE_DIR set at run time) or for a command
outside that set. Without a word, that run would look hung for its first seconds and then report
a throughput that is mostly compilation.

``watch`` listens to numba's public event API ("numba:compile" fires only when a kernel is not
in the cache): at the first compilation it prints a one-line notice, and it adds up the time
spent compiling, which the progress report takes out of its elapsed time and throughput.
"""
import contextlib
import sys
import threading
import time

from numba.core import event

# What the first run of `streamherd train` compiles when nothing is cached, on an idle machine
# (benchmarks/first_run.py, throughput.py's cold-cache row); the notice quotes it, and says that
# load lengthens it (a loaded two-core machine took several times as long).
TYPICAL_FIRST_RUN_SECONDS = 15


class CompileWatch(event.Listener):
    """Total seconds spent compiling kernels since ``watch`` (outermost compilations only: a
    kernel compiles the functions it calls inside its own compilation)."""

    def __init__(self, notice_stream):
        self.seconds = 0.0
        self.notice_stream = notice_stream
        self._lock = threading.Lock()
        self._depth = {}
        self._started = {}

    def on_start(self, compile_event):
        thread = threading.get_ident()
        with self._lock:
            depth = self._depth.get(thread, 0)
            self._depth[thread] = depth + 1
            if depth == 0:
                self._started[thread] = time.perf_counter()
            stream, self.notice_stream = self.notice_stream, None
        if stream is not None:   # stderr closed or its reader gone: training goes on
            with contextlib.suppress(OSError, ValueError):
                print(f"streamherd: compiling kernels, once per install (about "
                      f"{TYPICAL_FIRST_RUN_SECONDS} s on an idle machine, longer under load); "
                      f"later runs start at once", file=stream, flush=True)

    def on_end(self, compile_event):
        thread = threading.get_ident()
        with self._lock:
            depth = self._depth[thread] - 1
            self._depth[thread] = depth
            if depth == 0:
                self.seconds += time.perf_counter() - self._started.pop(thread)


_watch = None


def watch(quiet=False):
    """The process's CompileWatch (installed once); the notice goes to stderr unless quiet."""
    global _watch
    if _watch is None:
        _watch = CompileWatch(None if quiet else sys.stderr)
        event.register("numba:compile", _watch)
    return _watch
