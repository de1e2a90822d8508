"""The options train and dist-train share, and how their values become training's arguments:
inputs, the learner (its hyperparameters generated from the learner registry), the features
(generated from features/options.py) and the model files. Also the hints every command gives
for Vowpal Wabbit's flags that streamherd spells differently or does without.

Imports neither numpy nor numba (``--help`` answers without them).
"""
from pathlib import Path

from streamherd.command_line import Option, Positional
from streamherd.errors import StreamherdError
from streamherd.features.options import FEATURE_OPTIONS, check_bits, space_flags
from streamherd.io.linecodes import MAX_LINE_BYTES as LINE_LIMIT
from streamherd.learners import ALIASES, DEFAULTS, REGISTRY, canonical_name, hyperparameters
from streamherd.outputs import check_inputs, resolve_output
from streamherd.learners.spec import POSITIVE


def learner_list(names):
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


def number_or_auto(text):
    """A hyperparameter's value: a number, or "auto" (a bank chooses it)."""
    return text if text == "auto" else float(text)


def hyperparameter_options():
    """One option per hyperparameter the registry declares (learners/__init__.py), with the
    learners that take it: a new learner's flags need no edit here."""
    options = []
    for h, takers in hyperparameters():
        text = h.help[0].upper() + h.help[1:]
        if h.domain != POSITIVE:   # an unusual range is worth saying
            text = f"{text}, {h.domain.text()}"
        options.append(Option(
            h.flags, h.name, f"{text} ({learner_list(takers)}; default {h.default:g}; auto: "
                             f"chosen by a bank, see --grid).",
            number_or_auto, "FLOAT|auto", expected="a valid number or auto, unable to parse "
                                                   "string as a number"))
    return options


def feature_options():
    """One option per feature option (features/options.py)."""
    return [Option(o.spellings, o.key, o.help, o.type, o.metavar, o.default, o.repeatable,
                   vw=o.vw) for o in FEATURE_OPTIONS]


FILES = Positional("files", "FILES", "Input files (.gz, .bz2, .xz detected by content); '-' or "
                                     "none: stdin.")
DATA = Option(("-d", "--data"), "data", "An input file (repeatable).", metavar="FILE",
              repeatable=True)
FORMAT = Option(("--format",), "fmt", "auto, svmlight or vw (auto: the format of most of the "
                                      "first lines; a line with '|' is VW).",
                metavar="FORMAT", default="auto", choices=("auto", "svmlight", "vw"))
QUIET = Option(("--quiet",), "quiet", "No progress table or summary on stderr.", bool)
SKIP_BAD = Option(("--skip-bad",), "skip_bad", "Skip malformed lines (counted in the summary) "
                  "instead of stopping at the first one.", bool)
MAX_LINE_BYTES = Option(("--max-line-bytes",), "max_line_bytes", "A longer line is an error "
                        "(it bounds the memory an input without line ends takes); measured where "
                        "a 1 MiB read block ends inside a line.", int, "N", LINE_LIMIT)
DEFAULT_LEARNERS = "; ".join(f"{kind}: {default.describe()}" for kind, default in DEFAULTS.items())
MULTICLASS_MODES = ("joint", "ova", "mira")
ALGOS = ", ".join([*REGISTRY, *(f"{alias} (= {name})" for alias, name in ALIASES.items())])
REGRESSION = learner_list([name for name, variant in REGISTRY.items()
                           if variant.regression is not None])
LEARNER = [
    Option(("--algo",), "algo", f"Learner: {ALGOS}; auto: a bank of several learners, each "
           f"over its default grid, the best kept (see --grid; the preamble names them), of "
           f"those with a form for the task (--loss squared: a squared-loss one; --multiclass "
           f"mira: the pa family). Default: per task, {DEFAULT_LEARNERS} (with no --algo, no "
           f"hyperparameter may be given).", metavar="NAME",
           choices=(*REGISTRY, *ALIASES, "auto")),
    Option(("--multiclass",), "multiclass",
           "joint (one weight block per class, the default for data with more than two "
           "classes; an update on the best wrong class), ova (one binary learner per class) or "
           "mira (joint, pa/pa1/pa2 only: Crammer & Singer's update on every class that "
           "violates the margin, a small QP solved exactly per example).", metavar="MODE",
           choices=MULTICLASS_MODES),
    Option(("--classes",), "classes", "Fix the class set, e.g. 1,2,3 (multiclass; a label "
           "outside it is a bad line).", metavar="LIST"),
    Option(("--loss",), "loss", f"hinge (classification, default) or squared (regression: "
           f"{REGRESSION}).", metavar="LOSS", choices=("hinge", "squared")),
    Option(("--center",), "center", "Regression: start the constant feature's weight at the "
           "mean label of the first block, as if the labels were centered (the default "
           "learner does).", bool),
    Option(("--no-center",), "no_center", "Regression: start the constant feature's weight "
           "at 0 (as a named learner does).", bool),
]
CALIBRATION = Option(
    ("--calibration",), "calibration",
    "How predict --proba maps a score to P(y|x), learned from the progressive predictions of "
    "the first pass: isotonic (default), platt, probit (Gaussian learners: Phi(a m / "
    "sqrt(x'Sigma x + s^2))) or none (no map: a Gaussian model's --proba is then Phi(mu.x / "
    "sqrt(x'Sigma x)), the probability that a weight vector drawn from the posterior says +1, "
    "which is not P(y=+1|x); other models have no --proba). Multiclass: softmax(beta s + b) "
    "over the class scores (any but none). With -i: the model's own.", metavar="METHOD",
    choices=("isotonic", "platt", "probit", "none"))
FINAL_MODEL = Option(("-f", "--final-model", "--final_regressor"), "final_model",
                     "Write the model here (.npz).", Path, "MODEL", vw=("--final_regressor",))
INITIAL_MODEL = Option(("-i", "--initial-model", "--initial_regressor"), "initial_model",
                       "Continue training this model.", Path, "MODEL",
                       vw=("--initial_regressor",))
EARLY_TERMINATE = Option(("--early_terminate", "--early-terminate"), "early_terminate",
                         "Stop after K passes in a row without a lower holdout loss.", int, "K",
                         3)


def inputs(values):
    """The input files: the positional ones, then -d's; none: stdin."""
    return [*(values.files or []), *(values.data or [])] or ["-"]


def check_before_loading(values):
    """The values of train's and dist-train's options that need no kernel to check (the inputs,
    the model's path, the learner's name, --bits), checked before numba loads
    (start_up.imported): a misspelt file or learner is answered at once. The command checks
    them again where it uses them (training.train, for its Python callers)."""
    paths = inputs(values)
    check_inputs(paths)
    if values.final_model is not None:
        resolve_output(values.final_model, paths, "model")
    if values.algo not in (None, "auto"):
        canonical_name(values.algo)
    if values.bits is not None:
        check_bits(values.bits)


def center(values):
    """--center / --no-center: True, False, or None (neither: the learner's default)."""
    if values.center and values.no_center:
        raise StreamherdError("--center and --no-center contradict each other; give one")
    return True if values.center else False if values.no_center else None


def training_arguments(values):
    """The arguments of training.train (and of dist-train's driver) for the values of the
    LEARNER, CALIBRATION, hyperparameter and feature options."""
    space = space_flags({o.key: getattr(values, o.key) for o in FEATURE_OPTIONS})
    bits, bias, normalize = space.pop("bits"), space.pop("bias"), space.pop("normalize")
    return dict(algo=values.algo, multiclass=values.multiclass, classes=values.classes,
                loss=values.loss, calibration=values.calibration, center=center(values),
                options={h.name: getattr(values, h.name) for h, _ in hyperparameters()},
                # train takes --normalize as a switch (None: an initial model's own)
                bits=bits, bias=bias, normalize=True if normalize else None, namespaces=space)


# Vowpal Wabbit's flags that are harmless here: accepted, each saying in one line what it means
# here, so that a VW script runs unedited.
_NO_CACHE = "no cache (streamherd reads its text input faster than VW reads its cache)"
VW_ACCEPTED = [
    Option(("-c", "--cache"), "vw_cache", "", bool, vw=("-c", "--cache"), note=_NO_CACHE),
    Option(("-k", "--kill_cache"), "vw_kill_cache", "", bool, vw=("-k", "--kill_cache"),
           note=_NO_CACHE),
    Option(("--cache_file",), "vw_cache_file", "", metavar="FILE", repeatable=True,
           vw=("--cache_file",), note=_NO_CACHE),
    Option(("--binary",), "vw_binary", "", bool, vw=("--binary",),
           note="a binary model's predictions are its labels' two values already (predict "
                "--raw: the margin)"),
]
TEST_ONLY = Option(("-t", "--testonly"), "vw_testonly", "", bool, vw=("-t", "--testonly"),
                   note="predict never updates the model")

# Vowpal Wabbit's flags that streamherd spells differently or does without: an unknown one gets
# this hint instead of "No such option" and its guess at a similar flag of ours. The README's
# "Coming from Vowpal Wabbit" table says the same.
_NO_LEARNING_RATE = ("streamherd's learners have no learning rate: their steps come from -C "
                     "(pa1, pa2, nherd, scw), -r (arow) or --eta (cw, scw)")
_NO_SGD = "streamherd has no SGD or quasi-Newton learner: choose a learner with --algo"
VW_SPELLINGS = {
    "--oaa": "--multiclass ova (one binary learner per class; the classes come from the data, "
             "or fix them with --classes)",
    "--link": "streamherd predict --proba (P(y=+1|x), calibrated during train: --calibration)",
    "--loss_function": "--loss squared (regression) or --loss hinge (classification)",
    "-l": _NO_LEARNING_RATE, "--learning_rate": _NO_LEARNING_RATE, "--power_t": _NO_LEARNING_RATE,
    "--initial_t": _NO_LEARNING_RATE, "--decay_learning_rate": _NO_LEARNING_RATE,
    "--sgd": _NO_SGD, "--adaptive": _NO_SGD, "--normalized": _NO_SGD, "--invariant": _NO_SGD,
    "--bfgs": _NO_SGD, "--ftrl": _NO_SGD, "--coin": _NO_SGD,
    "--l1": "no L1/L2 penalty: AROW's -r and NHERD's -C regularise",
    "--l2": "no L1/L2 penalty: AROW's -r and NHERD's -C regularise",
    "--readable_model": "streamherd inspect MODEL (every non-zero weight, no retraining)",
    "--invert_hash": "streamherd inspect MODEL --names DATA (every non-zero weight, named, "
                     "no retraining)",
    "--daemon": "the daemon is its own command: streamherd serve -m MODEL [--port 26542] answers "
                "each line on its socket and learns from labeled ones (docs/serving.md)",
    "--save_resume": "every streamherd model holds what continuing needs: train -i MODEL "
                     "continues it exactly",
    "--probabilities": "streamherd predict --proba (every class's probability, calibrated "
                       "during train)",
    "--raw_predictions": "streamherd predict --raw -p FILE (the scores)",
}
# Vowpal Wabbit's flags that streamherd has with another meaning: a bad value says what VW's is
VW_CLASHES = {
    "-a": "Vowpal Wabbit's -a (audit) is --audit here; -a is the initial variance",
    "-r": "Vowpal Wabbit's -r (raw predictions) is 'predict --raw -p FILE' here; -r is AROW's "
          "regularization",
}


def vw_clash(flag):
    return VW_CLASHES.get(flag)


def vw_hint(flag):
    """The message for an unknown ``flag`` that is Vowpal Wabbit's (VW_SPELLINGS), or None."""
    hint = VW_SPELLINGS.get(flag)
    return hint and f"no such option {flag} (Vowpal Wabbit's); streamherd: {hint}"


def predict_hint(flag):
    """vw_hint, and what predict says of train's flags that it takes from the model."""
    if flag in VW_CLASHES:
        return f"no such option {flag} for predict; {VW_CLASHES[flag]}"
    if flag in ("-i", "--initial_regressor"):
        return (f"no such option {flag} for predict (Vowpal Wabbit's -i); streamherd: predict -m "
                f"MODEL")
    if any(flag in o.spellings for o in FEATURE_OPTIONS):
        return (f"no such option {flag} for predict: the model makes its features as it was "
                f"trained to (its bits, bias, crosses and hashing are saved in it); drop the "
                f"flag")
    return vw_hint(flag)
