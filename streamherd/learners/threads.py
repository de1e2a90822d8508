"""The threads a bank's members learn on: a bank's members are independent, so each group of
them (a PackedBank's MemberGroup, a TaskBank's member) learns on a core of its own."""
import os
from concurrent.futures import ThreadPoolExecutor, wait

from streamherd.io.reader import TRAINING_WORKERS


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cores_beside_parsers():
    """The cores training's parser threads (io/reader.py TRAINING_WORKERS) leave to the
    learner, at least one: a one-versus-all bank's groups on more threads than that took CPU
    from the parsers and trained slower (benchmarks/README.md, "Ten classes against VW")."""
    return max(1, usable_cores() - TRAINING_WORKERS)


class ThreadPool:
    """``workers`` threads beside the calling one (kernels that release the GIL run at once on
    them), started at the first ``map`` in the process that calls it (a fork copies no
    threads)."""

    def __init__(self, workers):
        self.workers = workers
        self.executor = None
        self.pid = None

    def map(self, function, items):
        """[function(item) for item in items], the first item's on the calling thread."""
        if self.workers == 0 or len(items) == 1:
            return [function(item) for item in items]
        if self.pid != os.getpid():
            self.executor = ThreadPoolExecutor(self.workers, thread_name_prefix="bank")
            self.pid = os.getpid()
        futures = [self.executor.submit(function, item) for item in items[1:]]
        try:
            first = function(items[0])
        finally:   # (an error on this thread: the others still end before the state is read)
            wait(futures)
        return [first] + [future.result() for future in futures]
