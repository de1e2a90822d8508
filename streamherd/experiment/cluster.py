"""The experiment's runs on a Dask cluster (``--scheduler ADDRESS`` or ``--workers N``) instead
of -j's process pool: the same Worker.run on the same jobs, so the same results.

Each worker process loads the datasets itself, once, as -j's processes do (the first run of an
experiment there loads them; its next runs find them in _LOADED), and checks first that every
file is the one the driver read (same size and modification time). Not the driver's arrays
sent with ``client.scatter(broadcast=True)``: parsing and unpickling both cost little next to
the runs, but scattered data is lost when a worker dies (Dask's active memory manager drops
the extra copies of a broadcast), and every run still waiting would fail, where a worker that
loads from the files just loads again. So the workers must see the files at the same paths,
as dist-train's do.

A user error in a run comes back as a value (epoch.UserError), not as an exception: Dask
would log it with its traceback on the worker, and a run is a pure function of its job, the
settings and the data, so it must not be run again (no ``retries=`` either, for the same
reason). Dask runs again just the runs of a worker that died
(``distributed.scheduler.allowed-failures``), with the same result.
"""
import contextlib
import logging
import os
import signal
import threading
import uuid
from dataclasses import dataclass

from streamherd.distributed.epoch import UserError, user_errors_returned
from streamherd.errors import StreamherdError
from streamherd.experiment.runner import Worker, load_datasets


@dataclass(frozen=True)
class Cluster:
    """--scheduler ADDRESS (a running cluster) or --workers N (a LocalCluster started and
    closed here); neither: the local process pool of -j."""

    scheduler: "str | None" = None
    workers: "int | None" = None

    def check(self, processes):
        if self.scheduler is not None and self.workers is not None:
            raise StreamherdError("--scheduler runs on a running Dask cluster, --workers starts "
                                  "a local one: give one of them")
        if self.workers is not None and self.workers < 1:
            raise StreamherdError(f"--workers {self.workers}: start at least 1 worker")
        if self and processes > 1:
            raise StreamherdError(f"-j {processes} runs a local process pool, and --scheduler "
                                  f"or --workers a Dask cluster: drop -j (or them)")

    def __bool__(self):
        return self.scheduler is not None or self.workers is not None

    def describe(self):
        if self.scheduler is not None:
            return f"on the Dask cluster at {self.scheduler}"
        return f"on a local Dask cluster of {self.workers} workers"


@dataclass(frozen=True)
class Source:
    """What a worker loads the datasets from: the specs and load options of the command, and
    (path, size, modification time) of every file as the driver read it."""

    specs: tuple
    load_options: tuple   # sorted (name, value) pairs of load_datasets' options
    files: tuple

    @classmethod
    def of(cls, specs, load_options, datasets):
        files = tuple((path, os.stat(path).st_size, os.stat(path).st_mtime_ns)
                      for dataset in datasets.values() for path in dataset.paths)
        return cls(tuple(specs), tuple(sorted(load_options.items())), files)

    def load(self):
        for path, size, modified in self.files:
            try:
                info = os.stat(path)
            except OSError as e:
                raise StreamherdError(f"{path}: a Dask worker cannot read it ({e.strerror}); "
                                      f"the workers must see the files at the same paths "
                                      f"(a shared file system)") from None
            if (info.st_size, info.st_mtime_ns) != (size, modified):
                raise StreamherdError(f"{path} changed while the experiment ran; run it "
                                      f"again on a file that stays as it is")
        return load_datasets(self.specs, **dict(self.load_options))


@contextlib.contextmanager
def client_of(cluster):
    """A Dask client of ``cluster`` (None without one), closed, a LocalCluster with it, when
    the block ends, interrupted or not. Opened before the runs' progress bar, so that a missing
    dask or an unreachable scheduler is the only line printed."""
    if not cluster:
        yield None
        return
    from streamherd.distributed.driver import dask_client

    try:
        with contextlib.ExitStack() as stack:
            with _ctrl_c_held():
                client = stack.enter_context(dask_client(
                    cluster.scheduler, cluster.workers, "experiment --workers/--scheduler"))
            try:
                yield client
            except BaseException:
                _quiet_closing(client, local=cluster.workers is not None)
                raise
    finally:
        logging.disable(logging.NOTSET)


def _quiet_closing(client, local):
    """A cluster closed under running runs logs, here and in its workers, every comm it finds
    closed, with tracebacks: the interruption's or the error's line is the one to show. (The
    workers of a running cluster are not ours to silence, nor closed by us.)"""
    logging.disable(logging.CRITICAL)
    if local:
        with contextlib.suppress(Exception):
            client.run(logging.disable, logging.CRITICAL, on_error="ignore")


@contextlib.contextmanager
def _ctrl_c_held():
    """SIGINT blocked in this thread while the cluster starts. The threads and processes
    started meanwhile (Dask's event loop, the nannies' worker processes, those restarted later)
    inherit the mask: Ctrl-C at a terminal, sent to every process of the group, reaches only
    this process, which then closes the cluster in order (workers stopped by it print
    tracebacks and leak semaphores). A Ctrl-C pressed while blocked is delivered when this
    block ends. multiprocessing's resource tracker unblocks SIGINT in the thread that first
    starts it: it is started here, before the block."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def run_on_client(client, source, jobs, settings, on_done=None):
    """Every job run on ``client``'s workers, their datasets loaded from ``source``; returns
    the RunResults in job order and calls ``on_done(result)`` as each arrives (the progress
    bar)."""
    from dask.distributed import as_completed

    token = uuid.uuid4().hex   # this experiment's keys
    futures = [client.submit(run_job, source, settings, job, key=f"experiment-{token}-run-{i}")
               for i, job in enumerate(jobs)]
    position = {future.key: i for i, future in enumerate(futures)}
    results = [None] * len(jobs)
    try:
        for future in as_completed(futures):
            result = _result(future, jobs[position[future.key]])
            results[position[future.key]] = result
            if on_done:
                on_done(result)
    finally:
        # on an error or Ctrl-C the runs still queued are not started (a running scheduler
        # would otherwise run them for nobody)
        client.cancel(futures)
    return results


def _result(future, job):
    """The run's RunResult; its user error, or the workers it killed, as one line."""
    from dask.distributed import KilledWorker

    try:
        result = future.result()
    except KilledWorker:
        raise StreamherdError(
            f"the run of {job.algo} on {job.task.name} (fold {job.fold}, noise {job.noise:g}) "
            f"ended every Dask worker that ran it (out of memory?); see the workers' "
            f"logs") from None
    if isinstance(result, UserError):
        result.raise_it()
    return result


_LOADED = {}   # this worker process's datasets: Source -> {name: Dataset} (the last one)
_LOADING = threading.Lock()
_THREAD = threading.local()


@user_errors_returned
def run_job(source, settings, job):
    """One run in a worker process. Its thread's Worker (over the process's datasets) keeps
    the data a run prepares for the next runs of the same task, fold and noise level."""
    if getattr(_THREAD, "key", None) != (source, settings):
        _THREAD.key, _THREAD.worker = (source, settings), Worker(_datasets(source), settings)
    return _THREAD.worker.run(job)


def _datasets(source):
    with _LOADING:
        if source not in _LOADED:
            _LOADED.clear()
            _LOADED[source] = source.load()
        return _LOADED[source]
