"""The ``dist-train`` command line. The options it shares with ``train`` are the same
declarations (streamherd/option_groups.py), so the two commands spell and explain them alike;
its own are the cluster's, the shards' and the mix's. Importing this imports neither dask nor
numba."""
from streamherd import option_groups as shared
from streamherd.command_line import Command, Option

ROUNDS = [
    Option(("--passes",), "passes", "Rounds: each shard trains one epoch from the mixed model, "
           "then the shards' models are mixed (the model is written after each round; with "
           "--holdout_period, the best round's at the end).", int, "N", 1),
    Option(("--holdout_period", "--holdout-period"), "holdout_period",
           "A holdout set, as train --passes keeps one: the examples on every K-th line of each "
           "file are predicted and scored, not learned from; each round's row shows their "
           "loss, the rounds stop after --early_terminate without a lower one, and the model "
           "of the round with the lowest is written. Default: none (every round learns from "
           "every example, as train -i, and the last round's model is written).", int, "K", 0,
           show_default=False),
    shared.EARLY_TERMINATE,
    Option(("--mix",), "mix",
           "prec (default for Gaussian learners: precision-weighted means), mean (every array "
           "averaged; the default otherwise), sum (information filter; classification with "
           "more than 2 shards needs --force) or jubatus (mean, minimum variance).",
           metavar="RULE"),
    Option(("--mix-weights",), "mix_weights", "uniform, or mistakes (each shard weighted by its "
           "mistakes of the round, McDonald et al. 2010).", metavar="WEIGHTS",
           default="uniform"),
    Option(("--force",), "force", "Run --mix sum on classification with more than 2 shards, "
           "where it diverges.", bool),
]
CLUSTER = [
    Option(("--scheduler",), "scheduler", "A running Dask scheduler (tcp://HOST:8786); without "
           "it a local cluster of --workers processes is started.", metavar="ADDRESS"),
    Option(("--workers",), "workers", "Local cluster: worker processes (default: one per "
           "core).", int, "N"),
    Option(("--shards",), "shards", "auto (one per worker) or K: each file is a shard, large "
           "uncompressed files cut into byte ranges. A fixed K gives the same model for any "
           "worker count.", metavar="K", default="auto"),
]


def run(values):
    """dist-train with the command line's ``values``."""
    from streamherd import start_up

    shared.check_before_loading(values)
    start_up.imported("streamherd.training")
    from streamherd.distributed.driver import Cluster, Mix, dist_train
    from streamherd.distributed.epoch import Settings

    dist_train(shared.inputs(values), values.final_model, rounds=values.passes,
               cluster=Cluster(values.scheduler, values.workers, values.shards),
               mix=Mix(values.mix, values.mix_weights, values.force),
               settings=Settings(values.fmt, values.skip_bad,
                                 holdout_period=values.holdout_period),
               quiet=values.quiet, initial_model=values.initial_model,
               early_terminate=values.early_terminate, **shared.training_arguments(values))


COMMAND = Command(
    "dist-train", "Train on a Dask cluster: iterative parameter mixing over shards (McDonald "
                  "et al. 2010).", [
        ("Input", [shared.DATA, shared.FORMAT, shared.SKIP_BAD]),
        ("Learner", [*shared.LEARNER, *shared.hyperparameter_options(), shared.CALIBRATION]),
        ("Features", shared.feature_options()),
        ("Rounds", ROUNDS),
        ("Cluster", CLUSTER),
        ("Model and output", [shared.FINAL_MODEL, shared.INITIAL_MODEL, shared.QUIET,
                              *shared.VW_ACCEPTED]),
    ], run, positional=shared.FILES, hint=shared.vw_hint, clash=shared.vw_clash,
    interrupted="interrupted before its first round was written; no model was written")
