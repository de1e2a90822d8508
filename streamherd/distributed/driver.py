"""The rounds of ``dist-train`` on a Dask cluster (iterative parameter mixing).

What a user can get wrong is checked before the cluster starts (the inputs, the model's path,
the flags: model.OnlineModel, as ``train``; the mixing rule), but what depends on the shards. The
task is fixed before round 1 (_settled). Then each round scatters the model, maps
epoch.train_shard over the shards, gathers the results in shard order and mixes them
(mixing.py): the mixed model depends on the shards and the model, not on which worker ran
what, so a fixed --shards K gives the same model bits for any number of workers, and a task
run again after a lost worker returns the same result. The model is written after each round
(save_model: a temporary file renamed), so ``-i`` goes on from the last finished round. With a
holdout set (--holdout_period) the rounds are train --passes's passes (_run_rounds).
"""
import contextlib
import copy
import dataclasses
import logging
import signal
import sys
import time
import uuid

from streamherd import calibration as calibrations
from streamherd import selection, tasks
from streamherd.errors import StreamherdError, say
from streamherd.labels import ClassLabels
from streamherd.model import ModelFlags, OnlineModel, save_model
from streamherd.outputs import check_inputs, resolve_output
from streamherd.passes import DEFAULT_EARLY_TERMINATE, BestPass, copied

from streamherd.distributed import mixing
from streamherd.distributed.epoch import (Calibrating, Settings, UserError, reader_of,
                                         shard_classes, shard_lines, train_shard)
from streamherd.distributed.shards import numbered, plan_shards

# a task is run again this many times when it fails (its worker lost: the scheduler also
# reassigns the tasks of a worker that dies, see distributed.scheduler.allowed-failures)
TASK_RETRIES = 2
INSTALL_HINT = 'pip install "streamherd[dask]"'


@contextlib.contextmanager
def dask_client(scheduler=None, workers=None, command="dist-train"):
    """A dask.distributed Client of the cluster at ``scheduler``, or of a LocalCluster of
    ``workers`` processes (one thread each) started here and closed after; ``command`` names
    what needs it in the error when Dask is not installed."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise StreamherdError(f"{command} runs on Dask (dask.distributed), which is not "
                              f"installed: {INSTALL_HINT}") from None
    with _quiet_when_interrupted():
        if scheduler is not None:
            try:
                client = Client(scheduler, timeout="30s")
            except (OSError, TimeoutError) as e:
                raise StreamherdError(f"cannot reach the Dask scheduler at {scheduler}: {e}; "
                                      f"check the address (tcp://HOST:8786) and that it is "
                                      f"running") from None
            with client, _quiet_when_interrupted():
                yield client
            return
        _quiet_resource_tracker()
        # the HTTP server on a free local port (8787 may be another cluster's; bokeh's
        # dashboard is not a dependency). The workers log nothing: what fails in a task comes
        # back to this process, and a worker cut off by an interruption (its scheduler gone)
        # would log the lost connection as a traceback.
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL + 1,
                          preload=[__name__]) as cluster, \
                Client(cluster) as client, _quiet_when_interrupted():
            yield client


def dask_setup(worker):
    """Run in each worker process of a local cluster as it starts (its ``preload``): Ctrl-C
    at a terminal sends SIGINT to the whole process group, workers included, and each would end
    with a traceback; SIGINT is left to this command's process, which closes the cluster."""
    with contextlib.suppress(ValueError):   # (only a process's main thread sets handlers)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


# the loggers of what a cluster's shutdown cut short (its event loop's pending tasks, a lost
# connection): after an interruption, noise around the one line the command says
_SHUTDOWN_LOGGERS = ("asyncio", "distributed", "tornado")


@contextlib.contextmanager
def _quiet_when_interrupted():
    """An interruption (Ctrl-C, SIGTERM) silences the cluster's logs before the cluster closes:
    its client's cancelled gathers would be printed as tracebacks ("Task exception was never
    retrieved ... AllExit"), the run's one line lost among them."""
    try:
        yield
    except KeyboardInterrupt:
        for name in _SHUTDOWN_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        raise


def _quiet_resource_tracker():
    """multiprocessing's resource tracker (a process of its own, started with this process's
    -W options) warns of the semaphores of a local cluster that an interruption ended without
    closing; it removes them all the same: no warning for it (set before the tracker starts)."""
    option = "ignore:resource_tracker:UserWarning"
    if option not in sys.warnoptions:
        sys.warnoptions.append(option)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """Where the rounds run: --scheduler ADDRESS, or a LocalCluster of --workers N processes;
    --shards: "auto" (one per worker) or a count."""

    scheduler: "str | None" = None
    workers: "int | None" = None
    shards: str = "auto"


@dataclasses.dataclass(frozen=True)
class Mix:
    """--mix (None: prec for a Gaussian learner, else mean), --mix-weights, --force."""

    rule: "str | None" = None
    weights: str = "uniform"
    force: bool = False


def dist_train(paths, final_model, rounds=1, cluster=Cluster(), mix=Mix(), settings=Settings(),
               quiet=False, client=None, initial_model=None,
               early_terminate=DEFAULT_EARLY_TERMINATE, **flags):
    """Train ``rounds`` rounds of iterative parameter mixing over the shards of ``paths`` and
    write the model to ``final_model`` after each (with a holdout set: _run_rounds); returns the
    summary (a dict). ``flags``: model.ModelFlags' (algo, options, bits, bias, normalize,
    namespaces) and the task's (loss, multiclass, classes), as ``train`` takes them;
    ``initial_model``: -i, the model to go on from. ``client``: a dask.distributed Client to
    use instead of ``cluster``'s."""
    paths = list(paths or ["-"])
    check_inputs(paths)
    if final_model is None:
        raise StreamherdError("dist-train writes its model after each round: give its path "
                              "with -f MODEL.npz")
    model_path = resolve_output(final_model, paths, "model")
    if rounds < 1:
        raise StreamherdError(f"--passes {rounds}: give 1 or more rounds")
    if settings.holdout_period == 1 or settings.holdout_period < 0:
        raise StreamherdError(f"--holdout_period {settings.holdout_period} would hold out "
                              f"every line; give 2 or more")
    if early_terminate < 1:
        raise StreamherdError(f"--early_terminate {early_terminate}: give 1 or more rounds "
                              f"without improvement")
    shard_count = _shard_count(cluster.shards)
    if cluster.scheduler is None and cluster.workers is not None and cluster.workers < 1:
        raise StreamherdError(f"--workers {cluster.workers}: start at least 1 worker")
    _check_mix(mix)
    _refuse_auto(flags.get("algo"), flags.get("options") or {})
    task_flags = {k: flags.pop(k, None) for k in ("loss", "multiclass", "classes")}
    # no bank across shards: no --algo is the default learner at its default value
    flags = ModelFlags(choice=tasks.choose(**task_flags), tune=False,
                       **{k: v for k, v in flags.items() if v is not None})
    online = OnlineModel.continued(initial_model, flags, settings.skip_bad) \
        if initial_model is not None else OnlineModel.new(flags, settings.skip_bad)
    if online.algo == "voted-perceptron":
        raise StreamherdError("the voted perceptron keeps a list of updates, which shards "
                              "cannot average; use --algo avg-perceptron")
    # every check that needs no shard is made before a cluster starts
    _rule(mix, _checked_state(online), online.task.kind, shard_count)
    token = uuid.uuid4().hex   # the run's tasks' keys
    with (contextlib.nullcontext(client) if client is not None
          else dask_client(cluster.scheduler, cluster.workers)) as client:
        shards = _numbered(client, plan_shards(
            paths, shard_count or len(client.scheduler_info()["workers"])), token)
        online, model = starting_model(client, online, shards, settings, token)
        rule = _rule(mix, model[1], online.task.kind, len(shards))
        return _run_rounds(client, shards, model, rule, rounds, mix.weights, settings,
                           RoundTable(quiet, online.task.loss_name,
                                      settings.holdout_period > 0), model_path, token,
                           online.calibration, early_terminate)


def _refuse_auto(algo, options):
    """-C auto (any hyperparameter auto) and --algo auto train a bank of models in one stream
    and keep the best (streamherd.selection); dist-train has no bank across shards, and would write
    one default model under auto's name: refused before the cluster starts."""
    if algo == selection.AUTO:
        flag = "--algo"
    else:
        names = [name for name, value in options.items() if value == selection.AUTO]
        if not names:
            return
        from streamherd.learners.spec import flag_of

        flag = flag_of(names[0])
    raise StreamherdError(f"dist-train cannot choose {flag} auto (a bank of models is not "
                          f"mixed across shards); choose it with 'streamherd train {flag} auto' "
                          f"on the data or a sample, then pass the value it reports to "
                          f"dist-train ({flag} VALUE)")


def _checked_state(online):
    """The state arrays the mixing rule is checked against before the cluster starts. A new
    multiclass model without --classes has no class yet (its classes come from the label
    scan), and a one-vs-all learner of no class has no arrays: one stand-in class gives the
    arrays' names and kinds, which is what the rule reads."""
    task = online.task
    if task.kind == "multiclass" and not len(task.labels):
        online = online.with_task(tasks.MulticlassTask(ClassLabels(["stand-in"]), task.mode,
                                                       task.skip_bad))
    return online.arrays()


def starting_model(client, online, shards, settings, token):
    """(the OnlineModel ``online`` with its task settled (_settled), the model (meta, arrays)
    round 1 starts from)."""
    online = _settled(client, online, shards, settings, token)
    return online, (online.meta(0, float("nan")), copied(online.arrays()))


def _rule(mix, state, kind, shards):
    """The mixing rule (--mix, or the learner's default), refused when the learner's ``state``
    cannot take it or (``shards`` known) when it diverges there."""
    rule = mix.rule or ("prec" if mixing.gaussian_array(state) else "mean")
    mixing.Rule(rule, state)
    if shards:
        mixing.check_rule(rule, kind, shards, mix.force)
    return rule


def _run_rounds(client, shards, model, rule, rounds, weights, settings, table, model_path,
                token, calibration=None, early_terminate=DEFAULT_EARLY_TERMINATE):
    """The rounds from ``model``, each mixed by ``rule`` into the model written to
    ``model_path`` and a row of ``table``; returns the summary. ``calibration``: the model's
    calibration statistics at the start (None: it has none), which round 1's progressive
    predictions add to, as train's first pass does. With a holdout set, the rounds stop after
    ``early_terminate`` in a row without a lower holdout loss, and the best round's model
    replaces the last one's at the end (_keep_best)."""
    names = [s.describe() for s in shards]
    best = BestPass(early_terminate) if settings.holdout_period > 0 else None
    for number in range(1, rounds + 1):
        began = time.perf_counter()
        calibrating = _calibrating(calibration, len(shards)) if number == 1 else None
        results = run_round(client, shards, model, settings, f"{token}-{number}", calibrating)
        mixed_from = time.perf_counter()
        model, counters = mixed(model, results, rule, weights, names)
        if calibrating is not None:
            model = _with_calibration(model, calibration, results, calibrating)
        mix_seconds = time.perf_counter() - mixed_from
        if counters.labeled == 0:
            raise StreamherdError(f"no labeled example was read from {', '.join(names[:3])}"
                                  f"{' ...' if len(names) > 3 else ''}, so nothing was learned; "
                                  f"no model was written; check the input")
        save_model(model_path, *model)
        table.row(number, counters, time.perf_counter() - began, mix_seconds)
        if best is not None:
            best.record(counters.holdout_loss, lambda model=model: _kept(model))
            if best.stop:
                break
    summary = table.finish({"shards": len(shards), "mix": f"{rule} ({weights})",
                            "final_regressor": str(model_path)}, best)
    if best is not None:
        _keep_best(best, table, model_path)
    return summary


def _kept(model):
    """A copy of ``model`` (meta, arrays) that the later rounds leave as it is."""
    meta, state = model
    return copy.deepcopy(meta), copied(state)


def _keep_best(best, table, model_path):
    """With a holdout set: the model of the round with the lowest holdout loss written to
    ``model_path`` (already there when it is the last round's), said on stderr as train says
    the best pass."""
    table.note(best.note(table.loss_name, "round"))
    if best.model is not None and best.best_pass != len(best.losses):
        save_model(model_path, *best.model)


def _calibrating(calibration, shards):
    """Round 1's Calibrating: the statistics' method, and (one shard) the model's statistics
    for the shard to continue, so that one shard is exactly train -i; None: no calibration."""
    if calibration is None:
        return None
    return Calibrating(calibration.method,
                       calibration.to_meta() if shards == 1 and not calibration.empty else None)


def _with_calibration(model, calibration, results, calibrating):
    """``model`` with the calibration of round 1: the shard's statistics when it continued the
    model's (Calibrating.saved), else the model's and every shard's merged (calibration.merged:
    histograms added, reservoir samples merged uniformly), in shard order."""
    meta, state = model
    parts = [r.calibration for r in results]
    total = parts[0] if calibrating.saved is not None else \
        calibrations.merged([calibration, *parts])
    return {**meta, "calibration": total.to_meta()}, state


def _shard_count(text):
    """--shards: None for auto (one per worker), else the count."""
    if str(text) == "auto":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise StreamherdError(f"--shards {text}: give auto (one per worker) or a count of 1 "
                              f"or more")
    return count


def _check_mix(mix):
    if mix.rule is not None and mix.rule not in mixing.RULES:
        raise StreamherdError(f"unknown --mix '{mix.rule}'; use one of {', '.join(mixing.RULES)}")
    if mix.weights not in mixing.WEIGHTS:
        raise StreamherdError(f"unknown --mix-weights '{mix.weights}'; use uniform or mistakes")
    if mix.rule == "sum" and mix.weights != "uniform":
        raise StreamherdError("--mix sum adds every shard's change, unweighted; drop "
                              "--mix-weights (or use --mix prec or mean)")


def _numbered(client, shards, token):
    """``shards`` with the numbers of their first lines, counted once by a task per byte range
    (shards.numbered) instead of by every shard in every round (each would read the file up to
    its start)."""
    ranged = [i for i, shard in enumerate(shards) if shard.ranged]
    if not ranged:
        return shards
    futures = client.map(shard_lines, [shards[i] for i in ranged],
                         key=[f"dist-train-{token}-lines-{i}" for i in ranged],
                         retries=TASK_RETRIES)
    counts = dict(zip(ranged, gathered(client, futures)))
    return numbered(shards, [counts.get(i) for i in range(len(shards))])


def _settled(client, online, shards, settings, token):
    """The model with its task fixed before round 1: every shard must learn the same task.
    Without --multiclass, --classes or --loss the first chunk of the first shard decides, as
    train's first chunk does. A new multiclass model without --classes gets the classes of
    a label scan of every shard (their union in shard order: the order of first appearance),
    so that every shard's class blocks are the same classes in the same order."""
    task = online.task
    if online.undecided:
        first = next(iter(reader_of(shards[0], online.space, settings, workers=0).chunks()),
                     None)
        task = tasks.BinaryTask(skip_bad=settings.skip_bad) if first is None \
            else tasks.detect(first, settings.skip_bad)
    if task.kind == "multiclass" and not task.labels.fixed and not len(task.labels):
        futures = client.map(shard_classes, shards, space=online.space, settings=settings,
                             key=[f"dist-train-{token}-labels-{i}" for i in range(len(shards))],
                             retries=TASK_RETRIES)
        union = {}
        for classes in gathered(client, futures):
            for key, name in classes:
                union.setdefault(key, name)
        task = tasks.MulticlassTask(ClassLabels(list(union.values())), task.mode,
                                    settings.skip_bad)
    return online if task is online.task else online.with_task(task)


def run_round(client, shards, model, settings, name, calibrating=None):
    """Every shard's ShardResult of one round, in shard order (the model sent once to every
    worker); the tasks' keys: dist-train-NAME-shard-I. ``calibrating``: epoch.Calibrating in
    the round the calibration learns from."""
    key = f"dist-train-model-{name}"
    scattered = client.scatter({key: model}, broadcast=True)[key]
    futures = client.map(train_shard, shards, model=scattered, settings=settings,
                         calibrating=calibrating,
                         key=[f"dist-train-{name}-shard-{i}" for i in range(len(shards))],
                         retries=TASK_RETRIES)
    return gathered(client, futures)


def gathered(client, futures):
    """The results of ``futures``, in order; the first shard's user error (epoch.UserError) in
    shard order, raised as the one-line error ``train`` gives for the same line."""
    results = client.gather(futures)
    for result in results:
        if isinstance(result, UserError):
            result.raise_it()
    return results


def mixed(model, results, rule, weights, names):
    """(the model (meta, arrays) mixed from the shards' ``results`` by ``rule``, the round's
    Counters summed). Only the shards that learned (mixing.informative) are mixed: a shard
    that learned nothing returns the round's start, and mixing it in would pull the model back
    towards it (an empty shard halved every weight under mean). None learned: the model stays
    as it was."""
    meta, state = model
    counters = sum((r.counters for r in results), mixing.Counters())
    meta = {**meta, **mixing.mix_task_meta([r.task_meta for r in results], names)}
    learned = mixing.informative(results)
    if learned:
        state = mixing.mix_running_averages(
            state, meta.get("learner"), learned,
            mixing.mix_states(mixing.Rule(rule, state), learned, weights))
        meta["learner"] = mixing.mix_learner_meta(meta.get("learner", {}),
                                                  [r.learner_meta for r in learned])
    meta = {**meta,
            "examples": meta.get("examples", 0) + counters.labeled,
            "progressive_loss": counters.average_loss}
    return (meta, state), counters


class RoundTable:
    """One row per round on stderr: the round's progressive loss over every shard, with a
    holdout set its holdout loss, examples, seconds (the round, its mix included) and the
    mix's seconds."""

    def __init__(self, quiet, loss_name, holdout=False):
        self.quiet = quiet
        self.loss_name = loss_name
        self.holdout = holdout
        self.rounds = []

    def row(self, number, counters, seconds, mix_seconds):
        if not self.rounds and not self.quiet:
            holdout = f" {'holdout ' + self.loss_name:>18}" if self.holdout else ""
            say(f"{'round':>5} {'progressive ' + self.loss_name:>22}{holdout} "
                f"{'examples':>10} {'seconds':>9} {'mix seconds':>12}")
        self.rounds.append(counters)
        if not self.quiet:
            holdout = f" {counters.holdout_loss:>18.6f}" if self.holdout else ""
            say(f"{number:>5} {counters.average_loss:>22.6f}{holdout} "
                f"{counters.examples:>10} {seconds:>9.3f} {mix_seconds:>12.4f}")

    def finish(self, lines, best=None):
        """The summary (a dict), printed unless quiet: the rounds, with a holdout set each
        round's holdout loss and (``best``: the rounds' BestPass) the lowest and its round,
        then ``lines``."""
        last = self.rounds[-1]
        summary = {"rounds": len(self.rounds), "examples per round": last.examples,
                   f"last round's progressive {self.loss_name}": last.average_loss}
        if best is not None:
            summary.update(best.summary(self.loss_name, "round"))
        summary.update(lines)
        if not self.quiet:
            say("")
            for name, value in summary.items():
                say(f"{name} = {value:.6f}" if isinstance(value, float) else f"{name} = {value}")
        return summary

    def note(self, text):
        """A line of its own after the summary, unless quiet."""
        if not self.quiet:
            say(f"streamherd: {text}")
