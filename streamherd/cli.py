"""The ``streamherd`` command line. Thin: each command is its options, declared as data
(command_line.py; train's and dist-train's shared ones in option_groups.py, generated from the
learner registry and the feature options), and a function that calls the module doing the work.

Nothing heavy is imported at module level, so ``--help`` and ``--version`` answer without
importing numpy or numba; each command imports what it needs (start_up.py).
"""
import gc
import os
import sys
import threading
import warnings
from pathlib import Path

from streamherd import __version__, outputs, start_up
from streamherd import option_groups as shared
from streamherd.command_line import (HELP_FLAGS, SHELLS, Command, HelpAsked, Option,
                                     Positional, UsageError, completion_script, laid_out)
from streamherd.distributed import command as dist_train
from streamherd.errors import StreamherdError, say
from streamherd.learners import REGISTRY, hyperparameters
from streamherd.serve import command as serve

# ---------------------------------------------------------------- train


def _vw_flag(name, help, type=int, metavar="N", default=0):
    """An option spelled as VW spells it (--holdout_period) and with dashes (--holdout-period)."""
    return Option((f"--{name}", f"--{name.replace('_', '-')}"), name, help, type, metavar,
                  default)


PASSES = [
    Option(("--passes",), "passes", "Read the inputs N times (stdin is copied to a temporary "
           "file first). With N > 1 a holdout set is scored, not learned from, and the best "
           "pass's model written.", int, "N", 1),
    _vw_flag("holdout_period", "With --passes > 1: hold out the K-th, 2K-th, ... example of "
             "each pass.", metavar="K", default=10),
    _vw_flag("holdout_after", "With --passes > 1: hold out every example after the N-th of "
             "each pass instead (0: by period)."),
    _vw_flag("holdout_off", "No holdout set: learn from every example of every pass, and "
             "write the last pass's model.", bool),
    shared.EARLY_TERMINATE,
    _vw_flag("save_per_pass", "Also write each pass's model, STEM.passK.npz beside -f "
             "STEM.npz.", bool),
    Option(("--shuffle",), "shuffle", "Each pass in its own random order: exact when the input "
           "fits --shuffle_memory, else block-wise (blocks and the rows of each window "
           "permuted).", bool),
    _vw_flag("random_seed", "Seed of --shuffle.", metavar="SEED"),
    _vw_flag("shuffle_memory", "MiB of parsed rows --shuffle holds at once.", metavar="MIB",
             default=1024),
]
AUTO = [
    Option(("--grid",), "grid",
           "The values a hyperparameter given 'auto' tries: 'v1,v2,...' or '2^LO..2^HI[:STEP]' "
           "(default 2^-10..2^10:2, eta 0.55..0.95). Binary tasks: every value learns from "
           "every example in the same pass; chosen on the later half of the first pass: among "
           "the values within one standard error of the lowest progressive 0/1 loss, the "
           "highest AUC of the progressive margins (with --passes and a holdout set: the "
           "lowest holdout loss); ties go to the value nearest the default, then the smaller.",
           metavar="VALUES"),
    Option(("--race",), "race", "With auto, successive halving: after N examples of the first "
           "pass, then 2N, 3N, ..., the worse half of the values still learning stop (ranked "
           "as the final choice ranks them), so that a long stream costs about one learner's "
           "time; the last one left learns on alone. 0: every value learns to the end (as "
           "--save-bank does).", int, "N", None),
    Option(("--save-bank",), "save_bank", "With auto: also write every value's model as the run "
           "left it, STEM.bankK.npz beside -f STEM.npz (K: its rank in the grid, ascending; "
           "--algo auto: in the order of its learners). With --passes and a holdout set, -f's "
           "model is the best pass's and these the last pass's.", bool),
]
TRAIN_OUTPUT = [
    shared.FINAL_MODEL, shared.INITIAL_MODEL,
    Option(("-t", "--testonly"), "test_only", "Predict every example without learning (with "
           "-i: the model's test loss in the table); writes no model.", bool),
    Option(("-p", "--predictions"), "predictions", "Write the progressive predictions here "
           "(each made before its example's update), one line per example as predict writes "
           "them.", Path, "FILE"),
    Option(("--audit",), "audit", "On standard output, each example's prediction line, then its "
           "features as VW's --audit (name:slot:value:weight, the weight before its update; a "
           "line per class, class:score first, for a multiclass model).", bool),
    Option(("--allow-empty",), "allow_empty", "Write the model even when no labeled example was "
           "read (without it, such a run fails and writes nothing).", bool),
    shared.QUIET,
    Option(("-P", "--progress"), "progress", "A table row every N examples (an integer), or "
           "each time the count grows F times (a number with a point); default: doubling, as "
           "VW.", metavar="N|F"),
]


def train(values):
    shared.check_before_loading(values)
    from streamherd.passes import Passes   # (numpy's import: after the checks that need none)

    passes = Passes(values.passes, values.holdout_period, values.holdout_after,
                    values.holdout_off, values.early_terminate, values.save_per_pass,
                    values.shuffle, values.random_seed,
                    values.shuffle_memory).check(values.final_model)
    training = start_up.imported("streamherd.training")
    training.train(
        shared.inputs(values), fmt=values.fmt, final_model=values.final_model,
        initial_model=values.initial_model, quiet=values.quiet, skip_bad=values.skip_bad,
        allow_empty=values.allow_empty, passes=passes,
        progress_every=values.progress, predictions=values.predictions,
        examples=values.examples, test_only=values.test_only, audit=values.audit,
        grid=values.grid, race=values.race, save_bank=values.save_bank,
        max_line_bytes=values.max_line_bytes,
        **shared.training_arguments(values))


TRAIN = Command("train", "Train a model, one online update per line, reporting progressive "
                "validation loss.", [
                    ("Input", [shared.DATA, shared.FORMAT, shared.SKIP_BAD, shared.MAX_LINE_BYTES,
                               Option(("--examples",), "examples", "Stop after N examples "
                                      "(over all passes).", int, "N")]),
                    ("Learner", [*shared.LEARNER, *shared.hyperparameter_options(), *AUTO,
                                 shared.CALIBRATION]),
                    ("Features", shared.feature_options()),
                    ("Passes", PASSES),
                    ("Model and output", [*TRAIN_OUTPUT, *shared.VW_ACCEPTED]),
                ], train, positional=shared.FILES, hint=shared.vw_hint, clash=shared.vw_clash,
                interrupted="interrupted; no model was written")


# ---------------------------------------------------------------- predict

def predict(values):
    outputs.check_inputs(shared.inputs(values))   # (before numba loads: check_before_loading)
    outputs.check_model_exists(values.model)
    start_up.imported("streamherd.training").predict(
        values.model, shared.inputs(values), output=values.predictions, raw=values.raw,
        fmt=values.fmt, quiet=values.quiet, skip_bad=values.skip_bad, proba=values.proba,
        scores=values.scores, audit=values.audit, max_line_bytes=values.max_line_bytes)


PREDICT = Command(
    "predict", "Predict one line per example (label, or margin with --raw; VW tags follow the "
               "value).", [
        ("Input", [shared.DATA, shared.FORMAT, Option(
            ("--skip-bad",), "skip_bad", "Skip malformed lines instead of stopping at the first "
            "one; each skipped line gets an empty output line, so that output line k is still "
            "example k.", bool), shared.MAX_LINE_BYTES]),
        ("Model and output", [
            Option(("-m", "--model"), "model", "The model (.npz).", Path, "MODEL",
                   required=True),
            Option(("-p", "--predictions"), "predictions", "Write predictions here instead of "
                   "stdout.", Path, "FILE"),
            Option(("--raw",), "raw", "Print the margin w.x instead of the label (multiclass: "
                   "every class's score, as --scores).", bool),
            Option(("--proba",), "proba", "Print P(y=+1|x) instead of the label, by the model's "
                   "calibration map (train --calibration); multiclass: class:P(class|x) for "
                   "every class, classes sorted. A model without a map (--calibration none, or "
                   "older): Gaussian models only, Phi(mu.x / sqrt(x'Sigma x)).", bool),
            Option(("--scores",), "scores", "Multiclass: print class:score for every class "
                   "instead of the label.", bool),
            Option(("--audit",), "audit", "After each prediction line, a line of the example's "
                   "features, as VW's --audit: a tab before each name:slot:value:weight "
                   "(ns^name, crosses a^x*b^y, Constant).", bool),
            shared.QUIET, *shared.VW_ACCEPTED, shared.TEST_ONLY,
        ]),
    ], predict, positional=shared.FILES, hint=shared.predict_hint, clash=shared.vw_clash,
    interrupted="interrupted; the predictions are incomplete")


# ---------------------------------------------------------------- inspect

def inspect(values):
    from streamherd.inspection import inspect_model

    if values.as_json and values.as_tsv:
        raise StreamherdError("--json and --tsv each choose the output; pass one of them")
    inspect_model(values.model, "json" if values.as_json else "tsv" if values.as_tsv
                  else "table", values.top, data=values.names)


INSPECT = Command(
    "inspect", "Print every non-zero weight of a model: slot (Constant: the bias), class, weight "
               "and, for the Gaussian learners, its variance; largest |weight| first.", [
        ("Output", [
            Option(("--top",), "top", "Only the K largest weights.", int, "K"),
            Option(("--json",), "as_json", "One JSON object per row.", bool),
            Option(("--tsv",), "as_tsv", "Tab-separated, with a header line.", bool),
            Option(("--names",), "names", "Name each slot by the features of these data files "
                   "(repeatable) that hash there with the model's feature flags: ns^name, "
                   "crosses a^x*b^y, several blank-separated when they collide.",
                   metavar="FILE", repeatable=True),
        ]),
    ], inspect, positional=Positional("model", "MODEL", "The model (.npz).", many=False),
    hint=shared.vw_hint)


# ---------------------------------------------------------------- herd

def herd(values):
    start_up.imported("streamherd.herding_command").run_herd(
        values.train_file, test=values.test, predictions=values.predictions,
        final_model=values.final_model, hidden=values.hidden, batch=values.batch,
        ratio=values.ratio, validation=values.validation, burn_in=values.burn_in,
        max_epochs=values.max_epochs, snapshots=values.snapshots, mode=values.multiclass,
        seed=values.seed, input_scale=values.input_scale, fmt=values.fmt, quiet=values.quiet)


HERD = Command(
    "herd", "Conditional herding (Gelfand et al. 2010): mini-batches in a fixed shuffled order, "
            "predictions averaged over every iteration after burn-in.", [
        ("Input", [
            Option(("--test",), "test", "Transductive: vote on this file at every iteration.",
                   metavar="FILE"),
            Option(("--input-scale",), "input_scale", "Divide every feature value by this "
                   "(255: raw 0..255 pixels to grey levels).", float, "SCALE", 1.0),
            shared.FORMAT,
        ]),
        ("Herding", [
            Option(("--hidden",), "hidden", "Hidden units M.", int, "M", 100),
            Option(("--batch",), "batch", "Mini-batch size.", int, "N", 100),
            Option(("--ratio",), "ratio", "rho = sigma/eta (initial scale over step); several: "
                   "the best on a --validation split.", metavar="LIST",
                   default="0.3,1,3,10,30"),
            Option(("--validation",), "validation", "Fraction held out to choose --ratio.",
                   float, "FRACTION", 0.2),
            Option(("--burn-in",), "burn_in", "Iterations before the votes count.", int, "N",
                   1000),
            Option(("--max-epochs",), "max_epochs", "Stop after this many epochs (else at an "
                   "error-free epoch).", int, "N", 1000),
            Option(("--snapshots",), "snapshots", "Weight snapshots saved after burn-in "
                   "(predict averages their votes).", int, "N", 32),
            Option(("--multiclass",), "multiclass", "joint, or ova (one binary herder per "
                   "class).", metavar="MODE", default="joint", choices=("joint", "ova")),
            Option(("--seed",), "seed", "Initial weights and batch order.", int, "SEED", 0),
        ]),
        ("Output", [
            Option(("-p", "--predictions"), "predictions", "The --test file's predicted "
                   "labels.", Path, "FILE"),
            Option(("-f", "--final-model"), "final_model", "Save the snapshots for 'predict "
                   "-m'.", Path, "MODEL"),
            shared.QUIET,
        ]),
    ], herd, positional=Positional("train_file", "TRAIN", "The training file (read whole into "
                                                          "memory).", many=False),
    hint=shared.vw_hint, interrupted="interrupted; nothing was written")


# ---------------------------------------------------------------- experiment

_TUNED = "; ".join(
    f"{h.name}: {shared.learner_list([n for n, v in REGISTRY.items() if v.tuned == h])}"
    for h, _ in hyperparameters() if any(v.tuned == h for v in REGISTRY.values()))


def experiment(values):
    from streamherd.experiment.cluster import Cluster
    from streamherd.experiment.command import run_experiment

    run_experiment(values.datasets, algos=values.algos, grid=values.grid, noise=values.noise,
                   folds=values.folds, max_passes=values.max_passes,
                   validation=values.validation, max_train=values.max_train,
                   all_pairs=values.all_pairs, multiclass=values.multiclass, seed=values.seed,
                   processes=values.processes, out=str(values.out), bits=values.bits,
                   normalize=values.normalize, fmt=values.fmt, curve_task=values.curve_task,
                   scatter=values.scatter, plots=not values.no_plots,
                   plot_format=values.plot_format, quiet=values.quiet,
                   cluster=Cluster(values.scheduler, values.workers),
                   argv=values.command_line)


EXPERIMENT = Command(
    "experiment", "Run the seed papers' tournament: algorithms x hyperparameters x label noise x "
                  "folds.", [
        ("Tournament", [
            Option(("--algos",), "algos", "Comma-separated learners (registry names), and herd: "
                   "conditional herding (streamherd herd's defaults, its --ratio searched by the "
                   "grid, learned in one go in the file's order).", metavar="LIST",
                   default="nherd-p,nherd-e,nherd-d,arow-p,arow-d,cw,pa2,perceptron"),
            Option(("--grid",), "grid", f"NAME=VALUES for the tuned hyperparameter NAME "
                   f"({_TUNED}); VALUES 'a,b,c', '2^-4..2^4' or '2^-8..2^8:2' (every 2nd power; "
                   f"the default); eta: 0.55,0.6,...,0.95 (repeatable).", metavar="NAME=VALUES",
                   repeatable=True),
            Option(("--noise",), "noise", "Label-noise rates of the training data (test stays "
                   "clean).", metavar="LIST", default="0,0.1,0.3"),
            Option(("--folds",), "folds", "k-fold cross-validation for datasets given as one "
                   "file.", int, "K", 10),
            Option(("--max-passes",), "max_passes", "Passes are chosen in 1..N with the "
                   "hyperparameter.", int, "N", 10),
            Option(("--validation",), "validation", "Fraction of the training data held out to "
                   "choose hyperparameter and passes.", float, "FRACTION", 0.2),
            Option(("--max-train",), "max_train", "At most N training examples per run (a "
                   "random stratified subset).", int, "N"),
            Option(("--all-pairs",), "all_pairs", "Turn each multiclass dataset into its "
                   "K(K-1)/2 binary tasks (without it: one multiclass task).", bool),
            Option(("--multiclass",), "multiclass", "How the online learners learn a multiclass "
                   "task, as train's --multiclass: joint, ova or mira (pa, pa1, pa2 only). herd "
                   "is always its joint herder.", metavar="MODE", default="joint",
                   choices=shared.MULTICLASS_MODES),
            Option(("--seed",), "seed", "Fixes every random choice.", int, "SEED", 0),
        ]),
        ("Data", [
            Option(("-b", "--bits"), "bits", "At most 2^bits slots per dataset (fewer when its "
                   "features fit without collisions).", int, "BITS", 18),
            Option(("--normalize",), "normalize", "l2: scale each example's features to unit L2 "
                   "norm (bias kept at 1); none.", metavar="RULE", default="l2"),
            shared.FORMAT,
        ]),
        ("Running", [
            Option(("-j", "--jobs"), "processes", "Worker processes.", int, "N", 1),
            Option(("--scheduler",), "scheduler", "Send the runs to a running Dask scheduler "
                   "(tcp://HOST:8786) instead of -j's processes.", metavar="ADDRESS"),
            Option(("--workers",), "workers", "Send the runs to a local Dask cluster of N worker "
                   "processes (started and closed by the command).", int, "N"),
        ]),
        ("Output", [
            Option(("--out",), "out", "Folder for runs.csv, validation.csv, report.md and the "
                   "plots.", Path, "FOLDER", "experiment"),
            Option(("--curve-task",), "curve_task", "Task of the learning-curve plot (default: "
                   "the first).", metavar="TASK"),
            Option(("--scatter",), "scatter", "A,B: the accuracy scatter's algorithms (default "
                   "nherd-p,arow-p).", metavar="A,B"),
            Option(("--no-plots",), "no_plots", "Write no plots.", bool),
            Option(("--plot-format",), "plot_format", "png or svg.", metavar="FORMAT",
                   default="png"),
            shared.QUIET,
        ]),
    ], experiment, positional=Positional("datasets", "DATASETS", "Each FILE (split into --folds) "
                                                                 "or TRAIN,TEST (a pair of "
                                                                 "files)."),
    hint=shared.vw_hint, interrupted="interrupted; the experiment is incomplete")


# ---------------------------------------------------------------- completion

def completion(values):
    print(completion_script(COMMANDS.values(), values.shell, HELP), end="")


COMPLETION = Command(
    "completion", "Print a shell's completion script: commands, flags, learner names, files.",
    [("Options", [])], completion, positional=Positional(
        "shell", "SHELL", f"{', '.join(SHELLS)}; e.g. 'eval \"$(streamherd completion bash)\"' "
                          f"in ~/.bashrc, or its output saved as "
                          f"~/.local/share/bash-completion/completions/streamherd.",
        many=False))


# ---------------------------------------------------------------- the entry point

COMMANDS = {command.name: command for command in (TRAIN, dist_train.COMMAND, PREDICT, INSPECT,
                                                  serve.COMMAND, HERD, EXPERIMENT, COMPLETION)}
HELP = "Online linear classifiers (CW, AROW, NHERD, PA, perceptrons) over streamed svmlight or " \
       "VW-format lines."


def help_text():
    return laid_out("streamherd [OPTIONS] COMMAND [ARGS]...", HELP, [
        ("Commands", [(name, command.help) for name, command in COMMANDS.items()]),
        ("Options", [("--version", "Print the version and exit."),
                     (", ".join(HELP_FLAGS), "Show this message and exit.")])])


def _parsed(argv):
    """The command ``argv`` names and its values; or the help or the version, printed, and the
    process ends."""
    if not argv:
        print(help_text(), file=sys.stderr, end="")
        sys.exit(2)
    first = argv[0]
    if first in HELP_FLAGS or first == "--version":
        print(help_text() if first in HELP_FLAGS else f"streamherd {__version__}\n", end="")
        sys.exit(0)
    if first.startswith("-"):
        raise UsageError(f"No such option: {first}")
    if first not in COMMANDS:
        raise UsageError(f"No such command '{first}'.")
    command = COMMANDS[first]
    try:
        return command, command.parse(argv[1:])
    except HelpAsked:
        print(command.help_text(), end="")
        sys.exit(0)


def _interrupted_line(interrupted, replaced_before):
    """The one line of an interrupted run: the command's (or the interruption's own) words, or
    the files it had already written."""
    written = outputs.replaced_since(replaced_before)
    if written:
        return f"streamherd: interrupted after writing {', '.join(written)}; nothing else " \
               f"was written"
    return f"streamherd: {interrupted}"


def run(argv=None):
    """Entry point: every user error is one line on stderr and a non-zero exit, never a traceback.

    Ctrl-C, SIGTERM and SIGHUP end the run the same way, through Python's exceptions
    (temporary outputs removed, existing files left as they were; outputs.catch_signals): exit
    128 + the signal's number (130, 143, 129)."""
    start_up.begin()
    warning_filters = warnings.filters[:]
    if not sys.warnoptions:   # a library's warning is no message for the user (-W shows them)
        warnings.simplefilter("ignore")
    interrupted = "interrupted"   # while the command line is read
    replaced_before = len(outputs.replaced)
    previous = {}
    try:
        # inside the try: a signal as soon as the handlers are set is an interruption like any
        if threading.current_thread() is threading.main_thread():
            previous = outputs.catch_signals(
                lambda: _interrupted_line(interrupted, replaced_before))
        command, values = _parsed(list(sys.argv[1:] if argv is None else argv))
        for note in () if getattr(values, "quiet", False) else values.notes:
            say(f"streamherd: {note}")
        interrupted = command.interrupted
        try:
            command.run(values)
        except (StreamherdError, KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception:
            # after a signal, a library's clean-up can raise an error of its own in place of
            # the interruption (zipfile's close inside numpy's savez, its write cut short):
            # the interruption it is
            outputs.raise_if_signalled()
            raise
        outputs.raise_if_signalled()   # its exception swallowed on the way (a destructor's)
    except UsageError as e:
        say(e.line())
        sys.exit(e.exit_code)
    except StreamherdError as e:   # (the files written before it named: --save_per_pass's)
        written = outputs.replaced_since(replaced_before)
        say(f"streamherd: {e}{' (written before the error: ' if written else ''}"
            f"{', '.join(written)}{')' if written else ''}")
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:   # Ctrl-C, or an Interrupted (SIGTERM, SIGHUP too)
        if outputs.may_say_interrupted():
            say(_interrupted_line(getattr(e, "message", None) or interrupted, replaced_before))
        sys.exit(getattr(e, "exit_code", 130))
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. '| head'): stop quietly with the status
        # of a process ended by SIGPIPE (128 + 13), as cat and vw do.
        sys.stderr.close()
        os._exit(141)
    finally:
        gc.enable()  # for a caller that runs the CLI in its own process and catches the exit
        if argv is not None:   # such a caller's own handlers back (main: its own to the end)
            outputs.restore_signals(previous)
            warnings.filters[:] = warning_filters
    sys.exit(0)


def main():
    """The ``streamherd`` command (its console script and ``python -m streamherd``): run, then
    end the process at once. Output is flushed and every file written is closed by then; what
    is skipped is the interpreter's teardown (every module unloaded one by one, numba's and
    LLVM's exit handlers)."""
    try:
        try:
            run()
            code = 0
        except SystemExit as e:
            code = e.code
        outputs.defer_signals_to_the_end()   # the run is over: a signal cuts no flush short
    except KeyboardInterrupt as e:   # a signal outside run's own try (its finally, its exit)
        code = getattr(e, "exit_code", 130)
        if outputs.may_say_interrupted():
            say(outputs.interruption_line())
    if code is not None and not isinstance(code, int):  # sys.exit("message")
        say(str(code))
        code = 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader of our stdout went away, as in run
        os._exit(141)
    except OSError as e:   # e.g. a full disk under '> file': the output is incomplete
        say(f"streamherd: cannot write to standard output: {e.strerror}")
        code = code or 2
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code or 0)
