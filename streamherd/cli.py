"""The ``streamherd`` command line (typer). Thin: it parses flags and calls streamherd.training.

Nothing heavy is imported at module level, so ``--help`` and ``--version`` answer without
importing numpy or numba; each command imports what it needs.
"""
import contextlib
import functools
import gc
import inspect
import os
import signal
import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer

from streamherd import __version__, cli_coercion
from streamherd.errors import Interrupted, StreamherdError, say
from streamherd.learners import ALIASES, DEFAULT_ALGO, REGISTRY, hyperparameters
from streamherd.learners.spec import POSITIVE

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
    help="Online linear classifiers (CW, AROW, NHERD, PA, perceptrons) over streamed "
         "svmlight or VW-format lines.")

ALGOS = ", ".join([*REGISTRY, *(f"{alias} (= {name})" for alias, name in ALIASES.items())])


def _learner_list(names):
    """``names`` shortened where they cover a family (every nherd variant: nherd*)."""
    shown = []
    for name in names:
        family = name.split("-")[0]
        variants = [n for n in REGISTRY if n.split("-")[0] == family]
        if len(variants) > 1 and all(v in names for v in variants):
            if f"{family}*" not in shown:
                shown.append(f"{family}*")
        else:
            shown.append(name)
    return ", ".join(shown)


_REGRESSION = _learner_list([name for name, variant in REGISTRY.items()
                             if variant.regression is not None])


_TUNED = "; ".join(
    f"{h.name}: {_learner_list([n for n, v in REGISTRY.items() if v.tuned == h])}"
    for h, _ in hyperparameters() if any(v.tuned == h for v in REGISTRY.values()))


def _with_hyperparameter_flags(command):
    """``command`` with its ``**hyperparameters`` replaced by one option per hyperparameter the
    registry declares (learners/__init__.py): the flags, their help and the learners that take
    each come from the declarations, so a new learner's flags need no edit here."""
    signature = inspect.signature(command)
    fixed = [p for p in signature.parameters.values() if p.kind != p.VAR_KEYWORD]
    generated = []
    for h, takers in hyperparameters():
        text = h.help[0].upper() + h.help[1:]
        if h.domain != POSITIVE:   # an unusual range is worth saying
            text = f"{text}, {h.domain.text()}"
        generated.append(inspect.Parameter(
            h.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
            default=typer.Option(None, *h.flags, show_default=False, metavar="FLOAT|auto",
                                 callback=_number_or_auto,
                                 help=f"{text} ({_learner_list(takers)}; default {h.default:g}; "
                                      f"auto: chosen by a bank, see --grid)."
                                 )))
    command.__signature__ = signature.replace(parameters=[
        *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in fixed), *generated])
    command.__annotations__ = {**command.__annotations__,
                               **{p.name: p.annotation for p in generated}}
    return command


def _number_or_auto(ctx: typer.Context, param: typer.CallbackParam, value: Optional[str]):
    """A hyperparameter's value: a number, or "auto" (streamherd.selection chooses it)."""
    if value is None or value == "auto":
        return value
    try:
        return float(value)
    except ValueError:
        raise typer.BadParameter("Input should be a valid number or auto, unable to parse "
                                 "string as a number", ctx=ctx, param=param) from None


Files = typer.Argument(None, show_default=False, metavar="[FILES]...",
                       help="Input files (.gz, .bz2, .xz detected by content); '-' or none: stdin.")
Data = typer.Option(None, "-d", "--data", show_default=False, help="An input file (repeatable).")
Format = typer.Option("auto", "--format", help="auto, svmlight or vw (auto: the format of most "
                      "of the first lines; a line with '|' is VW).")


class _OutputClosed(Exception):
    """The reader of our output went away (``| head``), told to ``run`` past click, whose own
    handling of a BrokenPipeError is exit status 1."""


class _Stopped(Exception):
    """Ctrl-C or SIGTERM, told to ``run`` past typer, which turns a KeyboardInterrupt into an
    exit code that it returns (not raises) when not in standalone mode."""

    def __init__(self, interrupted):
        super().__init__(interrupted.message)
        self.interrupted = interrupted


def _reported_to_run(command, interrupted_message):
    """``command`` with its BrokenPipeError raised as _OutputClosed and its interruption as
    _Stopped (run applies it to every command's callback), so that neither depends on how
    click or typer handle them."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError as e:
            raise _OutputClosed() from e
        except KeyboardInterrupt as e:   # Ctrl-C, or an Interrupted (SIGTERM too)
            raise _Stopped(Interrupted(getattr(e, "exit_code", 130),
                                       getattr(e, "message", None) or interrupted_message)
                           ) from None
    return wrapper


# What an interruption left undone, when the command did not say more itself.
_INTERRUPTED = {"train": "interrupted; no model was written",
                "predict": "interrupted; the predictions are incomplete",
                "herd": "interrupted; nothing was written",
                "experiment": "interrupted; the experiment is incomplete"}


Quiet = typer.Option(False, "--quiet", help="No progress table or summary on stderr.")
SkipBad = typer.Option(False, "--skip-bad", help="Skip malformed lines (counted in the summary) "
                       "instead of stopping at the first one.")
SkipBadKeepingLines = typer.Option(False, "--skip-bad", help="Skip malformed lines instead of "
                                   "stopping at the first one; each skipped line gets an empty "
                                   "output line, so that output line k is still example k.")


def _version(value: bool):
    if value:
        typer.echo(f"streamherd {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")):
    """Online linear classifiers over streamed svmlight or VW-format lines."""


def _vw_flag(default, name, help):
    """An option spelled as VW spells it (--holdout_period) and with dashes (--holdout-period)."""
    return typer.Option(default, f"--{name}", f"--{name.replace('_', '-')}", help=help)


def _namespace_option(*flags, help):
    """A repeatable train flag of namespace letters or interactions (FeatureSpace)."""
    return typer.Option(None, *flags, show_default=False, help=help)


@app.command()
@_with_hyperparameter_flags
def train(
    files: Optional[List[str]] = Files,
    data: Optional[List[str]] = Data,
    algo: Optional[str] = typer.Option(None, "--algo", show_default=False,
                                       help=f"Learner (default {DEFAULT_ALGO}): {ALGOS}; "
                                            f"auto (binary tasks): a bank of several learners, "
                                            f"each over its default grid, the best kept (see "
                                            f"--grid; the preamble names them)."),
    multiclass: Optional[str] = typer.Option(
        None, "--multiclass", show_default=False,
        help="joint (one weight block per class, the default for data with more than two "
             "classes; an update on the best wrong class), ova (one binary learner per class) "
             "or mira (joint, pa/pa1/pa2 only: Crammer & Singer's update on every class that "
             "violates the margin, a small QP solved exactly per example)."),
    classes: Optional[str] = typer.Option(
        None, "--classes", show_default=False,
        help="Fix the class set, e.g. 1,2,3 (multiclass; a label outside it is a bad line)."),
    loss: Optional[str] = typer.Option(
        None, "--loss", show_default=False,
        help=f"hinge (classification, default) or squared (regression: {_REGRESSION})."),
    normalize: bool = typer.Option(False, "--normalize",
                                   help="Scale each example's features to unit L2 norm, the "
                                        "bias kept at 1 (saved in the model, applied by "
                                        "predict; as experiment --normalize l2)."),
    bits: Optional[int] = typer.Option(None, "-b", "--bits", "--bit_precision",
                                       show_default=False,
                                       help="2^bits hashed weight slots (default 18)."),
    no_bias: bool = typer.Option(False, "--no-bias", "--noconstant",
                                 help="Do not add the constant feature."),
    quadratic: Optional[List[str]] = _namespace_option(
        "-q", "--quadratic", help="Cross two namespaces, as VW's -q ab (repeatable). A "
        "namespace is named by the first letter of its name, case-sensitive as in VW (a and "
        "A differ); ' ' is the default namespace (a bare '|', and all of svmlight's "
        "features); ':' alone means every namespace (-q ::). Slots as VW's; saved in the "
        "model."),
    cubic: Optional[List[str]] = _namespace_option(
        "--cubic", help="Cross three namespaces, as VW's --cubic abc (letters as for -q)."),
    interactions: Optional[List[str]] = _namespace_option(
        "--interactions", help="Crosses of any order, comma-separated: letters (ab,abc, as "
        "-q) or full namespace names joined by '|' (user|item: only the namespaces of "
        "exactly those names, as VW's --experimental_full_name_interactions)."),
    ignore: Optional[List[str]] = _namespace_option(
        "--ignore", help="Drop the namespaces beginning with these letters (case-sensitive), "
        "as VW."),
    keep: Optional[List[str]] = _namespace_option(
        "--keep", help="Read only the namespaces beginning with these letters "
        "(case-sensitive; overrides --ignore, as in VW)."),
    ignore_linear: Optional[List[str]] = _namespace_option(
        "--ignore_linear", "--ignore-linear", help="Use the namespaces beginning with these "
        "letters only in crosses, not as features themselves (case-sensitive), as VW."),
    hash_mode: str = typer.Option(
        "strings", "--hash", help="strings: a feature name of digits only is its number plus "
        "the namespace's seed (VW's default); all: every name hashed as a string, as VW's "
        "--hash all (saved in the model)."),
    final_model: Optional[Path] = typer.Option(None, "-f", "--final-model",
                                               "--final_regressor", show_default=False,
                                               help="Write the model here (.npz)."),
    initial_model: Optional[Path] = typer.Option(None, "-i", "--initial-model",
                                                 "--initial_regressor", show_default=False,
                                                 help="Continue training this model."),
    fmt: str = Format,
    quiet: bool = Quiet,
    skip_bad: bool = SkipBad,
    allow_empty: bool = typer.Option(False, "--allow-empty",
                                     help="Write the model even when no labeled example was "
                                          "read (without it, such a run fails and writes "
                                          "nothing)."),
    passes: int = typer.Option(1, "--passes", help="Read the inputs N times (stdin is copied "
                               "to a temporary file first). With N > 1 a holdout set is "
                               "scored, not learned from, and the best pass's model written."),
    holdout_period: int = _vw_flag(10, "holdout_period", "With --passes > 1: hold out the "
                                   "K-th, 2K-th, ... example of each pass."),
    holdout_after: int = _vw_flag(0, "holdout_after", "With --passes > 1: hold out every "
                                  "example after the N-th of each pass instead (0: by period)."),
    holdout_off: bool = _vw_flag(False, "holdout_off", "No holdout set: learn from every "
                                 "example of every pass, and write the last pass's model."),
    early_terminate: int = _vw_flag(3, "early_terminate", "Stop after K passes in a row "
                                    "without a lower holdout loss."),
    save_per_pass: bool = _vw_flag(False, "save_per_pass", "Also write each pass's model, "
                                   "STEM.passK.npz beside -f STEM.npz."),
    shuffle: bool = typer.Option(False, "--shuffle", help="Each pass in its own random order: "
                                 "exact when the input fits --shuffle_memory, else "
                                 "block-wise (blocks and the rows of each window permuted)."),
    random_seed: int = _vw_flag(0, "random_seed", "Seed of --shuffle."),
    shuffle_memory: int = _vw_flag(1024, "shuffle_memory", "MiB of parsed rows --shuffle holds "
                                   "at once."),
    predictions: Optional[Path] = typer.Option(
        None, "-p", "--predictions", show_default=False,
        help="Write the progressive predictions here (each made before its example's update), "
             "one line per example as predict writes them."),
    test_only: bool = typer.Option(False, "-t", "--testonly",
                                   help="Predict every example without learning (with -i: "
                                        "the model's test loss in the table); writes no model."),
    calibration: Optional[str] = typer.Option(
        None, "--calibration", show_default=False,
        help="How predict --proba maps a score to P(y|x), learned from the progressive "
             "predictions of the first pass: isotonic (default), platt, probit (Gaussian "
             "learners: Phi(a m / sqrt(x'Sigma x + s^2))) or none (no map: a Gaussian model's "
             "--proba is then Phi(mu.x / sqrt(x'Sigma x)), the probability that a weight vector "
             "drawn from the posterior says +1, which is not P(y=+1|x); other models have no "
             "--proba). Multiclass: softmax(beta s + b) over the class scores (any but none). "
             "With -i: the model's own."),
    examples: Optional[int] = typer.Option(None, "--examples", show_default=False,
                                           help="Stop after N examples (over all passes)."),
    audit: bool = typer.Option(False, "--audit", help="On standard output, each example's "
                               "prediction line, then its features as VW's --audit "
                               "(name:slot:value:weight, the weight before its update; a line "
                               "per class, class:score first, for a multiclass model)."),
    progress: Optional[str] = typer.Option(None, "-P", "--progress", show_default=False,
                                           help="A table row every N examples (an integer), or "
                                                "each time the count grows F times (a number "
                                                "with a point); default: doubling, as VW."),
    grid: Optional[str] = typer.Option(
        None, "--grid", show_default=False,
        help="The values a hyperparameter given 'auto' tries: 'v1,v2,...' or '2^LO..2^HI[:STEP]' "
             "(default 2^-10..2^10:2, eta 0.55..0.95). Binary tasks: every value learns from "
             "every example in the same pass; chosen on the later half of the first pass: "
             "among the values within one standard error of the lowest progressive 0/1 loss, "
             "the highest AUC of the progressive margins (with --passes and a holdout set: the "
             "lowest holdout loss); ties go to the value nearest the default, then the "
             "smaller."),
    save_bank: bool = typer.Option(False, "--save-bank", help="With auto: also write every "
                                   "value's model as the run left it, STEM.bankK.npz beside -f "
                                   "STEM.npz (K: its rank in the grid, ascending; --algo auto: "
                                   "in the order of its learners). With --passes and a holdout "
                                   "set, -f's model is the best pass's and these the last "
                                   "pass's."),
    **hyperparameters,
):
    """Train a model, one online update per line, reporting progressive validation loss."""
    from streamherd.passes import Passes

    _training().train(_inputs(files, data), algo=algo, options=hyperparameters, bits=bits,
                      bias=False if no_bias else None, fmt=fmt, final_model=final_model,
                      initial_model=initial_model, quiet=quiet, skip_bad=skip_bad,
                      normalize=True if normalize else None, multiclass=multiclass,
                      classes=classes, loss=loss, allow_empty=allow_empty,
                      passes=Passes(passes, holdout_period, holdout_after, holdout_off,
                                    early_terminate, save_per_pass, shuffle, random_seed,
                                    shuffle_memory), progress_every=progress,
                      predictions=predictions, examples=examples, test_only=test_only,
                      audit=audit, calibration=calibration, grid=grid, save_bank=save_bank,
                      namespaces=_namespaces(quadratic, cubic, interactions, ignore, keep,
                                             ignore_linear, hash_mode))


# ---------------------------------------------------------------- dist-train (issue 22)
from streamherd.distributed import command as _dist  # noqa: E402  (no dask, no numba)

app.command("dist-train")(_with_hyperparameter_flags(_dist.with_train_flags(_dist.dist_train,
                                                                            train)))
_INTERRUPTED["dist-train"] = _dist.INTERRUPTED

def _namespaces(quadratic, cubic, interactions, ignore, keep, ignore_linear, hash_mode):
    """The FeatureSpace's namespace flags from train's (and dist-train's) options."""
    return dict(quadratic=quadratic, cubic=cubic, interactions=interactions,
                ignore="".join(ignore or ()), keep="".join(keep or ()),
                ignore_linear="".join(ignore_linear or ()), hash_all=_hashes_all(hash_mode))


def _hashes_all(hash_mode):
    """--hash: whether all-digit names are hashed as strings too."""
    if hash_mode not in ("strings", "all"):
        raise StreamherdError(f"--hash {hash_mode!r} is not a hash mode; use --hash strings "
                              f"(the default) or --hash all")
    return hash_mode == "all"


@app.command()
def predict(
    files: Optional[List[str]] = Files,
    data: Optional[List[str]] = Data,
    model: Path = typer.Option(..., "-m", "--model", show_default=False, help="The model (.npz)."),
    predictions: Optional[Path] = typer.Option(None, "-p", "--predictions", show_default=False,
                                               help="Write predictions here instead of stdout."),
    raw: bool = typer.Option(False, "--raw", help="Print the margin w.x instead of the label "
                             "(multiclass: every class's score, as --scores)."),
    proba: bool = typer.Option(False, "--proba", help="Print P(y=+1|x) instead of the label, by "
                               "the model's calibration map (train --calibration); multiclass: "
                               "class:P(class|x) for every class, classes sorted. A model "
                               "without a map (--calibration none, or older): Gaussian models "
                               "only, Phi(mu.x / sqrt(x'Sigma x))."),
    scores: bool = typer.Option(False, "--scores", help="Multiclass: print class:score for "
                                "every class instead of the label."),
    fmt: str = Format,
    quiet: bool = Quiet,
    skip_bad: bool = SkipBadKeepingLines,
    audit: bool = typer.Option(False, "--audit", help="After each prediction line, a line of "
                               "the example's features, as VW's --audit: a tab before each "
                               "name:slot:value:weight (ns^name, crosses a^x*b^y, Constant)."),
):
    """Predict one line per example (label, or margin with --raw; VW tags follow the value)."""
    _training().predict(model, _inputs(files, data), output=predictions, raw=raw, fmt=fmt,
                        quiet=quiet, skip_bad=skip_bad, proba=proba, scores=scores, audit=audit)


def _training():
    """streamherd.training, imported the way start-up is fastest (_import_numba, then
    _end_start_up)."""
    _import_numba()
    from streamherd import training

    _end_start_up()
    return training


def _begin_start_up():
    """Start-up (imports, and numba loading its compiler target) creates about a million
    long-lived objects and little garbage: the cycle collector would walk them again and again.
    And streamherd does no BLAS work (its kernels are numba loops), so the OpenBLAS thread pools
    that numpy and scipy start would only take CPU from the parser threads (unless the user
    asks for them). Together about 0.4 s of CPU on a one-line input."""
    gc.disable()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _import_numba():
    """numba's import also imports pyyaml, to read a .numba_config.yaml in the current folder,
    and scipy, only to check its version: 15 to 20 ms of start-up. Both are hidden while numba
    imports (pyyaml only when there is no such file); what needs scipy later imports it."""
    if "numba" in sys.modules:
        return
    config_file = os.path.exists(".numba_config.yaml")
    with _hidden_modules("scipy", *(() if config_file else ("yaml",))):
        import numba  # noqa: F401


@contextlib.contextmanager
def _hidden_modules(*names):
    """While inside, importing one of ``names`` that is not imported yet fails at once (None
    in sys.modules makes "import" raise ImportError); afterwards it imports normally."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


def _end_start_up():
    """Load numba's compiler target while the collector is off, then move everything alive
    to the permanent generation (gc.freeze: never walked again) and turn the collector on.

    While the target loads, numba imports scipy.linalg.cython_blas only to learn whether BLAS
    is there (numba.np.arraymath): 0.27 s and 16 MB, for np.correlate and np.convolve, which no
    streamherd kernel calls. Hiding the module for that moment skips the import; jitted code
    that needs BLAS (np.dot) still gets it, as numba imports it again when compiling such code.
    numba_runtime.install: numba's runtime functions come from an object-code cache instead of
    LLVM, and streamherd's cached kernels load without numba's compiler registries."""
    import numpy as np

    from streamherd import numba_runtime
    from streamherd.io.block import count_newlines

    numba_runtime.install()

    with _hidden_modules("scipy.linalg.cython_blas"):
        count_newlines(np.zeros(1, np.uint8), 1)
    gc.freeze()
    gc.enable()


@app.command("inspect")
def inspect_command(
    model: Path = typer.Argument(..., show_default=False, help="The model (.npz)."),
    top: Optional[int] = typer.Option(None, "--top", show_default=False,
                                      help="Only the K largest weights."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per row."),
    as_tsv: bool = typer.Option(False, "--tsv", help="Tab-separated, with a header line."),
    names: Optional[List[str]] = typer.Option(
        None, "--names", show_default=False,
        help="Name each slot by the features of these data files (repeatable) that hash "
             "there with the model's feature flags: ns^name, crosses a^x*b^y, several "
             "blank-separated when they collide."),
):
    """Print every non-zero weight of a model: slot (Constant: the bias), class, weight and, for
    the Gaussian learners, its variance; largest |weight| first."""
    from streamherd.errors import StreamherdError
    from streamherd.inspection import inspect_model

    if as_json and as_tsv:
        raise StreamherdError("--json and --tsv each choose the output; pass one of them")
    inspect_model(model, "json" if as_json else "tsv" if as_tsv else "table", top, data=names)


@app.command()
def herd(
    train_file: str = typer.Argument(..., metavar="TRAIN", show_default=False,
                                     help="The training file (read whole into memory)."),
    test: Optional[str] = typer.Option(None, "--test", show_default=False,
                                       help="Transductive: vote on this file at every iteration."),
    predictions: Optional[Path] = typer.Option(None, "-p", "--predictions", show_default=False,
                                               help="The --test file's predicted labels."),
    final_model: Optional[Path] = typer.Option(None, "-f", "--final-model", show_default=False,
                                               help="Save the snapshots for 'predict -m'."),
    hidden: int = typer.Option(100, "--hidden", help="Hidden units M."),
    batch: int = typer.Option(100, "--batch", help="Mini-batch size."),
    ratio: str = typer.Option("0.3,1,3,10,30", "--ratio", help="rho = sigma/eta (initial scale "
                              "over step); several: the best on a --validation split."),
    validation: float = typer.Option(0.2, "--validation", help="Fraction held out to choose "
                                     "--ratio."),
    burn_in: int = typer.Option(1000, "--burn-in", help="Iterations before the votes count."),
    max_epochs: int = typer.Option(1000, "--max-epochs", help="Stop after this many epochs "
                                   "(else at an error-free epoch)."),
    snapshots: int = typer.Option(32, "--snapshots", help="Weight snapshots saved after burn-in "
                                  "(predict averages their votes)."),
    multiclass: str = typer.Option("joint", "--multiclass", help="joint, or ova (one binary "
                                   "herder per class)."),
    seed: int = typer.Option(0, "--seed", help="Initial weights and batch order."),
    input_scale: float = typer.Option(1.0, "--input-scale", help="Divide every feature value "
                                      "by this (255: raw 0..255 pixels to grey levels)."),
    fmt: str = Format,
    quiet: bool = Quiet,
):
    """Conditional herding (Gelfand et al. 2010): mini-batches in a fixed shuffled order,
    predictions averaged over every iteration after burn-in."""
    _import_numba()
    from streamherd.herding_command import run_herd

    _end_start_up()

    run_herd(train_file, test=test, predictions=predictions, final_model=final_model,
             hidden=hidden, batch=batch, ratio=ratio, validation=validation, burn_in=burn_in,
             max_epochs=max_epochs, snapshots=snapshots, mode=multiclass, seed=seed,
             input_scale=input_scale, fmt=fmt, quiet=quiet)


# ---------------------------------------------------------------- experiment (issue 5)

@app.command()
def experiment(
    datasets: Optional[List[str]] = typer.Argument(
        None, show_default=False, metavar="DATASETS...",
        help="Each FILE (split into --folds) or TRAIN,TEST (a pair of files)."),
    algos: str = typer.Option("nherd-p,nherd-e,nherd-d,arow-p,arow-d,cw,pa2,perceptron",
                              "--algos", help="Comma-separated learners (registry names), and "
                              "herd: conditional herding (streamherd herd's defaults, its "
                              "--ratio searched by the grid, learned in one go in the file's "
                              "order)."),
    grid: Optional[List[str]] = typer.Option(
        None, "--grid", show_default=False,
        help=f"NAME=VALUES for the tuned hyperparameter NAME ({_TUNED}); VALUES 'a,b,c', "
             f"'2^-4..2^4' or '2^-8..2^8:2' (every 2nd power; the default); eta: "
             f"0.55,0.6,...,0.95 (repeatable)."),
    noise: str = typer.Option("0,0.1,0.3", "--noise",
                              help="Label-noise rates of the training data (test stays clean)."),
    folds: int = typer.Option(10, "--folds", help="k-fold cross-validation for datasets "
                                                   "given as one file."),
    max_passes: int = typer.Option(10, "--max-passes", help="Passes are chosen in 1..N with "
                                                            "the hyperparameter."),
    validation: float = typer.Option(0.2, "--validation", help="Fraction of the training data "
                                     "held out to choose hyperparameter and passes."),
    max_train: Optional[int] = typer.Option(None, "--max-train", show_default=False,
                                            help="At most N training examples per run (a "
                                                 "random stratified subset)."),
    all_pairs: bool = typer.Option(False, "--all-pairs", help="Turn each multiclass dataset "
                                   "into its K(K-1)/2 binary tasks (without it: one multiclass "
                                   "task)."),
    multiclass: str = typer.Option("joint", "--multiclass", help="How the online learners "
                                   "learn a multiclass task, as train's --multiclass: joint, "
                                   "ova or mira (pa, pa1, pa2 only). herd is always its joint "
                                   "herder."),
    seed: int = typer.Option(0, "--seed", help="Fixes every random choice."),
    processes: int = typer.Option(1, "-j", "--jobs", help="Worker processes."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", show_default=False,
        help="Send the runs to a running Dask scheduler (tcp://HOST:8786) instead of -j's "
             "processes."),
    workers: Optional[int] = typer.Option(
        None, "--workers", show_default=False,
        help="Send the runs to a local Dask cluster of N worker processes (started and "
             "closed by the command)."),
    out: Path = typer.Option(Path("experiment"), "--out", help="Folder for runs.csv, "
                             "validation.csv, report.md and the plots."),
    bits: int = typer.Option(18, "-b", "--bits", help="At most 2^bits slots per dataset (fewer "
                             "when its features fit without collisions)."),
    normalize: str = typer.Option("l2", "--normalize", help="l2: scale each example's features "
                                  "to unit L2 norm (bias kept at 1); none."),
    curve_task: Optional[str] = typer.Option(None, "--curve-task", show_default=False,
                                             help="Task of the learning-curve plot (default: "
                                                  "the first)."),
    scatter: Optional[str] = typer.Option(None, "--scatter", show_default=False,
                                          help="A,B: the accuracy scatter's algorithms "
                                               "(default nherd-p,arow-p)."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Write no plots."),
    plot_format: str = typer.Option("png", "--plot-format", help="png or svg."),
    fmt: str = Format,
    quiet: bool = Quiet,
):
    """Run the seed papers' tournament: algorithms x hyperparameters x label noise x folds."""
    from streamherd.experiment.cluster import Cluster
    from streamherd.experiment.command import run_experiment

    run_experiment(datasets or [], algos=algos, grid=grid, noise=noise, folds=folds,
                   max_passes=max_passes, validation=validation, max_train=max_train,
                   all_pairs=all_pairs, multiclass=multiclass, seed=seed, processes=processes, out=str(out), bits=bits,
                   normalize=normalize, fmt=fmt, curve_task=curve_task, scatter=scatter,
                   plots=not no_plots, plot_format=plot_format, quiet=quiet,
                   cluster=Cluster(scheduler, workers),
                   argv=sys.argv[sys.argv.index("experiment") + 1:]
                   if "experiment" in sys.argv else None)


# Vowpal Wabbit's flags that streamherd spells differently or does without: an unknown one gets
# this hint instead of click's "No such option" and its guess at a similar flag of ours. The
# README's "Coming from Vowpal Wabbit" table says the same.
_NO_CACHE = ("no cache file: streamherd reads its text input faster than VW reads its cache; "
             "drop the flag")
_NO_LEARNING_RATE = ("streamherd's learners have no learning rate: their steps come from -C "
                     "(pa1, pa2, nherd, scw), -r (arow) or --eta (cw, scw)")
_NO_SGD = "streamherd has no SGD or quasi-Newton learner: choose a learner with --algo"
VW_SPELLINGS = {
    "--oaa": "--multiclass ova (one binary learner per class; the classes come from the data, "
             "or fix them with --classes)",
    "--link": "streamherd predict --proba (P(y=+1|x), calibrated during train: --calibration)",
    "--loss_function": "--loss squared (regression) or --loss hinge (classification)",
    "-c": _NO_CACHE, "--cache": _NO_CACHE, "--cache_file": _NO_CACHE, "-k": _NO_CACHE,
    "--kill_cache": _NO_CACHE,
    "-l": _NO_LEARNING_RATE, "--learning_rate": _NO_LEARNING_RATE, "--power_t": _NO_LEARNING_RATE,
    "--initial_t": _NO_LEARNING_RATE, "--decay_learning_rate": _NO_LEARNING_RATE,
    "--sgd": _NO_SGD, "--adaptive": _NO_SGD, "--normalized": _NO_SGD, "--invariant": _NO_SGD,
    "--bfgs": _NO_SGD, "--ftrl": _NO_SGD, "--coin": _NO_SGD,
    "--l1": "no L1/L2 penalty: AROW's -r and NHERD's -C regularise",
    "--l2": "no L1/L2 penalty: AROW's -r and NHERD's -C regularise",
    "--readable_model": "streamherd inspect MODEL (every non-zero weight, no retraining)",
    "--invert_hash": "streamherd inspect MODEL --names DATA (every non-zero weight, named, "
                     "no retraining)",
    "--daemon": "no daemon: pipe examples to streamherd predict, which answers each line as it "
                "arrives",
    "--binary": "a binary model predicts its labels' two values already (--raw: the margin); "
                "drop the flag",
}
# the flags that make a model's features: predict reads them from the model
_FEATURE_FLAGS = ("-q", "--quadratic", "--cubic", "--interactions", "--ignore", "--keep",
                  "--ignore_linear", "--hash", "-b", "--bits", "--bit_precision", "--noconstant",
                  "--no-bias", "--normalize")


def _vw_hint(e, command):
    """The hint for an unknown flag of ``command`` that is Vowpal Wabbit's (VW_SPELLINGS), or
    None."""
    if type(e).__name__ != "NoSuchOption":
        return None
    option = getattr(e, "option_name", "") or ""
    hint = VW_SPELLINGS.get(option)
    if command.endswith("predict") and option in ("-t", "--testonly"):
        hint = "predict never updates the model; drop the flag"
    if command.endswith("predict") and option in _FEATURE_FLAGS:
        return (f"no such option {option} for predict: the model makes its features as it was "
                f"trained to (its bits, bias, crosses and hashing are saved in it); drop the "
                f"flag")
    return hint and f"no such option {option} (Vowpal Wabbit's); streamherd: {hint}"


def _inputs(files, data):
    return [*(files or []), *(data or [])] or ["-"]


def _exit_for_cli_exception(e):
    kind = type(e).__name__
    if kind == "Exit" and hasattr(e, "exit_code"):
        sys.exit(e.exit_code)
    if kind == "Abort":
        sys.exit(130)
    if kind == "NoArgsIsHelpError":  # bare 'streamherd': the help, as click would show it
        ctx = getattr(e, "ctx", None)
        print(ctx.get_help() if ctx is not None else e.format_message(), file=sys.stderr)
        sys.exit(2)
    if hasattr(e, "format_message") and hasattr(e, "exit_code"):
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx is not None else "streamherd"
        message = _vw_hint(e, where) or " ".join(e.format_message().split())
        print(f"{where}: {message} (see '{where} --help')", file=sys.stderr)
        sys.exit(e.exit_code)
    raise e


def _terminate(signum, frame):
    raise Interrupted(128 + signum)


def run(argv=None):
    """Entry point: every user error is one line on stderr and a non-zero exit, never a traceback.

    Ctrl-C and SIGTERM end the run the same way, through Python's exceptions (temporary outputs
    removed, existing files left as they were): exit 130 for Ctrl-C, 143 for SIGTERM."""
    from streamherd.errors import StreamherdError

    _begin_start_up()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    cli_coercion.install()
    command = typer.main.get_command(app)
    for name, subcommand in command.commands.items():
        subcommand.callback = _reported_to_run(subcommand.callback,
                                               _INTERRUPTED.get(name, "interrupted"))
    try:
        code = command.main(args=argv, prog_name="streamherd", standalone_mode=False)
    except StreamherdError as e:
        say(f"streamherd: {e}")
        sys.exit(e.exit_code)
    except _Stopped as e:
        say(f"streamherd: {e.interrupted.message}")
        sys.exit(e.interrupted.exit_code)
    except KeyboardInterrupt as e:   # outside a command: while parsing the command line
        say("streamherd: interrupted")
        sys.exit(getattr(e, "exit_code", 130))
    except (BrokenPipeError, _OutputClosed):
        # The reader of our stdout went away (e.g. '| head'): stop quietly with the status
        # of a process ended by SIGPIPE (128 + 13), as cat and vw do.
        sys.stderr.close()
        os._exit(141)
    except Exception as e:
        # typer raises click's exceptions or those of its own bundled copy of click (which are
        # not subclasses of click's), so they are told apart by name and attributes.
        _exit_for_cli_exception(e)
    finally:
        gc.enable()  # for a caller that runs the CLI in its own process and catches the exit
    # standalone_mode=False: typer returns the code of an Exit it caught (0 for --version)
    sys.exit(code if isinstance(code, int) else 0)


def main():
    """The ``streamherd`` command (its console script and ``python -m streamherd``): run, then
    end the process at once. Output is flushed and every file written is closed by then; what
    is skipped is the interpreter's teardown (about 1,500 modules unloaded one by one, numba's
    and LLVM's exit handlers), which took 30 ms of a one-second training run."""
    try:
        run()
        code = 0
    except SystemExit as e:
        code = e.code
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
