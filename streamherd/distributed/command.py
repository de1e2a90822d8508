"""The ``dist-train`` command line. The flags it shares with ``train`` are train's own
definitions (with_train_flags), so the two commands spell and explain them alike; its own are
the cluster's, the shards' and the mix's. Importing this imports neither dask nor numba."""
import inspect
from typing import List, Optional

import typer

TRAIN = object()   # a parameter whose flag is train's (with_train_flags)


def with_train_flags(command, train):
    """``command`` with each parameter defaulting to TRAIN given train's flag (its typer
    Option or Argument) and annotation."""
    shared = inspect.signature(train).parameters
    signature = inspect.signature(command)
    parameters = [p.replace(default=shared[p.name].default,
                            annotation=shared[p.name].annotation)
                  if p.default is TRAIN else p for p in signature.parameters.values()]
    command.__signature__ = signature.replace(parameters=parameters)
    command.__annotations__ = {**command.__annotations__,
                               **{p.name: p.annotation for p in parameters
                                  if p.name in shared}}
    return command


def dist_train(
    files: Optional[List[str]] = TRAIN, data: Optional[List[str]] = TRAIN, algo=TRAIN,
    multiclass=TRAIN, classes=TRAIN, loss=TRAIN, normalize=TRAIN, bits=TRAIN, no_bias=TRAIN,
    quadratic=TRAIN, cubic=TRAIN, interactions=TRAIN, ignore=TRAIN, keep=TRAIN,
    ignore_linear=TRAIN, hash_mode=TRAIN, final_model=TRAIN, initial_model=TRAIN, fmt=TRAIN,
    quiet=TRAIN, skip_bad=TRAIN, calibration=TRAIN, early_terminate=TRAIN,
    passes: int = typer.Option(1, "--passes", help="Rounds: each shard trains one epoch from "
                               "the mixed model, then the shards' models are mixed (the model "
                               "is written after each round; with --holdout_period, the best "
                               "round's at the end)."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", show_default=False,
        help="A running Dask scheduler (tcp://HOST:8786); without it a local cluster of "
             "--workers processes is started."),
    workers: Optional[int] = typer.Option(None, "--workers", show_default=False,
                                          help="Local cluster: worker processes (default: "
                                               "one per core)."),
    shards: str = typer.Option("auto", "--shards", help="auto (one per worker) or K: each "
                               "file is a shard, large uncompressed files cut into byte "
                               "ranges. A fixed K gives the same model for any worker count."),
    mix: Optional[str] = typer.Option(
        None, "--mix", show_default=False,
        help="prec (default for Gaussian learners: precision-weighted means), mean (every "
             "array averaged; the default otherwise), sum (information filter; classification "
             "with more than 2 shards needs --force) or jubatus (mean, minimum variance)."),
    mix_weights: str = typer.Option("uniform", "--mix-weights",
                                    help="uniform, or mistakes (each shard weighted by its "
                                         "mistakes of the round, McDonald et al. 2010)."),
    holdout_period: int = typer.Option(
        0, "--holdout_period", "--holdout-period", show_default=False,
        help="A holdout set, as train --passes keeps one: the examples on every K-th line of "
             "each file are predicted and scored, not learned from; each round's row shows "
             "their loss, the rounds stop after --early_terminate without a lower one, and the "
             "model of the round with the lowest is written. Default: none (every round "
             "learns from every example, as train -i, and the last round's model is written)."),
    force: bool = typer.Option(False, "--force", help="Run --mix sum on classification with "
                               "more than 2 shards, where it diverges."),
    **hyperparameters,
):
    """Train on a Dask cluster: iterative parameter mixing over shards (McDonald et al. 2010)."""
    from streamherd import cli

    cli._training()
    from streamherd.distributed.driver import Cluster, Mix, dist_train as run
    from streamherd.distributed.epoch import Settings

    run(cli._inputs(files, data), final_model, rounds=passes,
        cluster=Cluster(scheduler, workers, shards), mix=Mix(mix, mix_weights, force),
        settings=Settings(fmt, skip_bad, holdout_period=holdout_period), quiet=quiet, initial_model=initial_model,
        early_terminate=early_terminate,
        algo=algo, options=hyperparameters, bits=bits, bias=False if no_bias else None,
        normalize=True if normalize else None, multiclass=multiclass, classes=classes,
        loss=loss, calibration=calibration, namespaces=cli._namespaces(quadratic, cubic, interactions, ignore, keep,
                                              ignore_linear, hash_mode))


INTERRUPTED = "interrupted; the model holds the last finished round (-i goes on from it)"
