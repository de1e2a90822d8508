"""One shard's epoch of a round: a pure function of (shard, model, settings), so that a task
Dask runs again (a retry, a lost worker) returns the same result.

It is ``train -i`` for one pass, in memory: the model's meta and arrays become an OnlineModel
(as ``OnlineModel.continued`` makes one from a file), which learns from the shard's chunks
(ChunkReader over the shard's Source) into a quiet ProgressiveValidation, and the learner's
arrays and counters come back instead of a file.
"""
import functools
from dataclasses import dataclass, fields

from streamherd import tasks
from streamherd.errors import StreamherdError
from streamherd.io.reader import DEFAULT_BLOCK_SIZE, TRAINING_WORKERS, ChunkReader
from streamherd.model import OnlineModel
from streamherd.passes import copied, mark_held_out
from streamherd.progress import ProgressiveValidation
from streamherd.training import learn_from

from streamherd.distributed.mixing import Counters, ShardResult
from streamherd.distributed.shards import owned_lines


@dataclass(frozen=True)
class Settings:
    """How a shard is read: --format, --skip-bad, the block size, and --holdout_period (0: no
    holdout set)."""

    fmt: str = "auto"
    skip_bad: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE
    holdout_period: int = 0


@dataclass(frozen=True)
class Calibrating:
    """A round whose progressive predictions the calibration learns from (the run's first, as
    train's first pass): its ``method``, and ``saved``, the model's statistics the shard
    continues (one shard: exactly train -i), or None (several shards: each observes from
    nothing, and the driver adds the model's statistics and every shard's)."""

    method: str
    saved: "dict | None" = None


def online_model_of(meta, state, skip_bad=False, calibrating=None):
    """The OnlineModel that continues the model (``meta``, ``state``), whose arrays are
    copied: the caller's (the driver's, in a threaded cluster) are left as they are;
    ``calibrating``: a Calibrating, or None (no calibration learned)."""
    meta = {**meta, "calibration": calibrating.saved if calibrating else None}
    return OnlineModel.from_meta(meta, copied(state), skip_bad,
                                 calibration=calibrating.method if calibrating else "none")


def reader_of(shard, space, settings, workers=TRAINING_WORKERS, process=None):
    """The ChunkReader of ``shard`` (shards.Shard) into the FeatureSpace ``space``."""
    return ChunkReader([shard.source()], fmt=settings.fmt, features=space,
                       skip_bad=settings.skip_bad, block_size=settings.block_size,
                       workers=workers, process=process)


@dataclass(frozen=True)
class UserError:
    """A user's error met in a shard task (a bad label, a bad feature, ...), as its one-line
    message and exit code. A task returns it instead of raising: Dask runs a failed task again
    (TASK_RETRIES), and a bad line would only fail again, with a traceback in the worker's log."""

    message: str
    exit_code: int = 2

    def raise_it(self):
        raise StreamherdError(self.message, self.exit_code)


def user_errors_returned(task):
    """``task`` returning a UserError for the StreamherdError it raises."""
    @functools.wraps(task)
    def returning(*args, **kwargs):
        try:
            return task(*args, **kwargs)
        except StreamherdError as e:
            return UserError(str(e), e.exit_code)
    return returning


@user_errors_returned
def train_shard(shard, model, settings=Settings(), calibrating=None):
    """One epoch over ``shard`` (shards.Shard) from ``model`` = (meta, state arrays); returns
    the shard's ShardResult, with the calibration's statistics of its progressive predictions
    when ``calibrating`` (a Calibrating) says so."""
    meta, state = model
    online = online_model_of(meta, state, settings.skip_bad, calibrating)
    online.calibrating = calibrating is not None
    progress = ProgressiveValidation(quiet=True)
    chunks = reader_of(shard, online.space, settings, process=online.task.check_labels)
    period = settings.holdout_period
    learn_from(held_out_lines(chunks, period) if period else chunks, online, progress,
               holdout=bool(period))
    return ShardResult(copied(online.arrays()), online.learner.meta(), online.task.meta(),
                       Counters(**{f.name: getattr(progress, f.name) for f in fields(Counters)}),
                       online.calibration if calibrating is not None else None)


def held_out_lines(chunks, period):
    """``chunks`` with the examples on every ``period``-th line of their file held out
    (passes.mark_held_out: predicted and scored, not learned from). By line number, not by
    example count as train's holdout: a shard knows the line numbers of its byte range without
    reading the shards before it, so the holdout set is the same for any shards and workers."""
    for chunk in chunks:
        yield mark_held_out(chunk, chunk.line_numbers % period == 0)


@user_errors_returned
def shard_classes(shard, space, settings=Settings()):
    """The classes of ``shard``'s labels as (key, name) pairs in order of first appearance,
    by the multiclass task's own label rule (the label scan before round 1)."""
    task = tasks.MulticlassTask(skip_bad=settings.skip_bad)
    for chunk in reader_of(shard, space, settings):
        task.targets(chunk)
    return list(zip(task.labels.ids, task.labels.texts))   # ids: key -> id, in id order


@user_errors_returned
def shard_lines(shard):
    """The lines a ranged shard owns (shards.owned_lines), counted once before round 1."""
    return owned_lines(shard)
