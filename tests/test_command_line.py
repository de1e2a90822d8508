"""How a command line is read (streamherd/command_line.py): click's habits, kept since the CLI
was written with typer (a value may begin with a dash, files and options mix, ``--`` ends the
options, no abbreviations), one-line messages naming every spelling, help laid out from the
declarations, and a feature option that is one declaration."""
import json
import subprocess
import sys

import pytest

from streamherd.cli import COMMANDS
from streamherd.command_line import HelpAsked, UsageError
from streamherd.option_groups import inputs, training_arguments

from helpers import REPO

TRAIN = COMMANDS["train"]


def usage_error(command, argv):
    with pytest.raises(UsageError) as error:
        COMMANDS[command].parse(argv)
    line = error.value.line()
    assert line.startswith(f"streamherd {command}: ") and "\n" not in line, line
    assert line.endswith(f"(see 'streamherd {command} --help')"), line
    return line


def test_a_value_may_begin_with_a_dash():
    values = TRAIN.parse(["-C", "-1e-3", "--classes", "-1,0,1", "--ignore", "-", "a.svm"])
    assert (values.C, values.classes, values.ignore, values.files) == \
        (-0.001, "-1,0,1", ["-"], ["a.svm"])


def test_files_and_options_mix_in_any_order_and_double_dash_ends_the_options():
    values = TRAIN.parse(["a.svm", "--quiet", "b.svm", "-d", "c.svm", "--", "--d.svm"])
    assert values.quiet is True
    assert inputs(values) == ["a.svm", "b.svm", "--d.svm", "c.svm"]
    assert inputs(TRAIN.parse([])) == ["-"]


def test_attached_values_and_short_switches_run_together():
    values = TRAIN.parse(["-tb12", "--algo=cw", "-qab", "-q", "cd", "--eta=0.7"])
    assert (values.test_only, values.bits, values.algo, values.quadratic, values.eta) == \
        (True, 12, "cw", ["ab", "cd"], 0.7)


def test_vw_spellings_set_the_same_options():
    ours = TRAIN.parse(["-b", "12", "--no-bias", "-f", "m.npz", "--holdout-period", "4"])
    vws = TRAIN.parse(["--bit_precision", "12", "--noconstant", "--final_regressor", "m.npz",
                       "--holdout_period", "4"])
    for name in ("bits", "bias", "final_model", "holdout_period"):
        assert getattr(ours, name) == getattr(vws, name)
    assert training_arguments(vws)["bias"] is False and training_arguments(vws)["bits"] == 12


def test_flags_are_never_abbreviated():
    line = usage_error("train", ["--pass", "2"])
    assert "No such option: --pass (Possible options: " in line and "--passes" in line


def test_an_unknown_flag_and_help_come_before_a_bad_value():
    assert "No such option: --frob" in usage_error("train", ["-b", "x", "--frob"])
    with pytest.raises(HelpAsked):
        TRAIN.parse(["-b", "x", "--help"])


@pytest.mark.parametrize("command, argv, message", [
    ("train", ["-b", "x1"], "Invalid value for '-b' / '--bits' / '--bit_precision': Input should "
                            "be a valid integer, unable to parse string as an integer"),
    ("train", ["-C", "one"], "Invalid value for '-C': Input should be a valid number or auto"),
    ("herd", ["--validation", "x", "t.svm"], "Invalid value for '--validation': Input should be "
                                             "a valid number"),
    ("train", ["x.svm", "--algo"], "Option '--algo' requires an argument."),
    ("train", ["--quiet=yes"], "Option '--quiet' does not take a value."),
    ("predict", ["x.svm"], "Missing option '-m' / '--model'."),
    ("herd", [], "Missing argument 'TRAIN'."),
    ("inspect", ["a.npz", "b.npz"], "Got unexpected extra argument(s) (b.npz)"),
    ("train", ["--oaa", "3"], "no such option --oaa (Vowpal Wabbit's); streamherd: --multiclass "
                              "ova"),
    ("dist-train", ["--link=logistic"], "no such option --link (Vowpal Wabbit's)"),
    ("predict", ["--ignore_linear", "a"], "no such option --ignore_linear for predict: the model "
                                          "makes its features"),
    ("predict", ["-i", "m.npz"], "no such option -i for predict (Vowpal Wabbit's -i)"),
    ("train", ["-a", "x.svm"], "Input should be a valid number or auto, unable to parse string "
                               "as a number; Vowpal Wabbit's -a (audit) is --audit here"),
])
def test_mistakes_are_one_line_naming_the_flag(command, argv, message):
    assert message in usage_error(command, argv)


def test_help_names_each_value_once_after_every_spelling_in_groups_by_purpose():
    text = TRAIN.help_text(width=100)
    assert text.startswith("Usage: streamherd train [OPTIONS] [FILES]...\n")
    titles = [line[:-1] for line in text.splitlines() if line and not line.startswith(" ")
              and line.endswith(":")]
    assert titles == ["Input", "Learner", "Features", "Passes", "Model and output",
                      "Vowpal Wabbit's spellings"]
    assert "  -b, --bits BITS " in text and "  -a, --init-variance FLOAT|auto" in text
    assert "  --bit_precision BITS" in text and "= -b, --bits" in text
    assert "-b, --bits, --bit_precision" not in text and "<" not in text.replace("<=", "")
    dist = COMMANDS["dist-train"].help_text(width=100)
    for shared in ("  -q, --quadratic AB", "  --normalize", "  -C FLOAT|auto", "  --loss LOSS"):
        assert shared in text and shared in dist


def test_help_and_version_answer_without_numpy():
    probe = ("import sys\nfrom streamherd.cli import run\n"
             "for argv in (['--help'], ['train', '--help'], ['dist-train', '-h'], ['--version']):\n"
             "    try:\n        run(argv)\n    except SystemExit as e:\n"
             "        assert e.code == 0, e.code\n"
             "print(sorted(m for m in ('numpy', 'numba', 'typer', 'click') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_a_misspelt_learner_file_or_bits_is_answered_before_numba_loads(tmp_path):
    """The values train, dist-train and predict can check without a kernel fail with their
    one line and exit 2 before numba (or, but for --passes, numpy) is imported."""
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n")
    cases = [
        (["train", "--algo", "nosuch", str(data)], "unknown --algo 'nosuch'", False),
        (["dist-train", "--algo", "nosuch", str(data)], "unknown --algo 'nosuch'", False),
        (["train", "-b", "31", str(data)], "--bits 31 is out of range", False),
        (["train", str(tmp_path / "missing.svm")], "missing.svm: no such file", False),
        (["train", str(data), "-f", str(tmp_path / "no" / "m.npz")], "folder", False),
        (["train", str(data), "-f", str(data)], "it is also an input", False),
        (["predict", "-m", str(tmp_path / "none.npz"), str(data)], "none.npz does not exist",
         False),
        (["predict", "-m", str(data), str(tmp_path / "missing.svm")], "no such file", False),
        (["train", "--passes", "0", str(data)], "--passes 0: give at least 1 pass", True),
    ]
    probe = ("import io, json, sys, contextlib\nfrom streamherd.cli import run\n"
             "argv, numpy_allowed = json.loads(sys.argv[1])\nerr = io.StringIO()\n"
             "with contextlib.redirect_stderr(err):\n    try:\n        run(argv)\n"
             "    except SystemExit as e:\n        code = e.code\n"
             "print(json.dumps([code, err.getvalue(), [m for m in ('numpy', 'numba') "
             "if m in sys.modules]]))\n")
    for argv, words, numpy_allowed in cases:
        proc = subprocess.run([sys.executable, "-c", probe, json.dumps([argv, numpy_allowed])],
                              capture_output=True, text=True, cwd=REPO, timeout=120)
        assert proc.returncode == 0, proc.stderr
        code, err, imported = json.loads(proc.stdout.strip().splitlines()[-1])
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert imported == (["numpy"] if numpy_allowed else []), (argv, imported)


def test_a_feature_option_is_one_declaration():
    """A FeatureOption declared (here at run time, before the command line is built) is a flag
    of train and dist-train with its help, reaches training's feature arguments through its
    transform, and is one that predict says comes from the model."""
    probe = """
from streamherd.features import options
options.FEATURE_OPTIONS += (options.FeatureOption(
    "toy", ("--toy",), int, "A toy feature option.", "T", to_space=lambda v: v and 2 * v),)
from streamherd import cli, option_groups
values = cli.COMMANDS["dist-train"].parse(["--toy", "21", "x.svm"])
print(option_groups.training_arguments(values)["namespaces"]["toy"])
print(all("--toy T " in cli.COMMANDS[c].help_text() for c in ("train", "dist-train")))
print(cli.COMMANDS["predict"].hint("--toy"))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doubled, in_help, hint = proc.stdout.strip().splitlines()
    assert (doubled, in_help) == ("42", "True")
    assert hint.startswith("no such option --toy for predict: the model makes its features")
