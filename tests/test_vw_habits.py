"""A Vowpal Wabbit user's habits: VW's spellings of flags streamherd has (aliases), a one-line
hint naming the equivalent for VW flags streamherd spells differently or does without, -h."""
import numpy as np
import pytest

from streamherd.model import load_model
from streamherd.option_groups import VW_SPELLINGS

from helpers import without_compile_notice


def usage_error(proc):
    """The one line of a command-line usage error (exit 2, no traceback)."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = without_compile_notice(proc.stderr).strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("command, flags, equivalent", [
    ("train", ["--oaa", "3"], "--multiclass ova"),
    ("train", ["--link=logistic"], "predict --proba"),
    ("train", ["--link", "logistic"], "predict --proba"),
    ("train", ["--loss_function", "squared"], "--loss squared"),
    ("train", ["--save_resume"], "train -i MODEL continues it exactly"),
    ("predict", ["--probabilities"], "predict --proba"),
    ("train", ["--raw_predictions", "r.txt"], "predict --raw -p FILE"),
    ("train", ["--passes_nonexistent"], None),
    ("train", ["-l", "0.5"], "no learning rate"),
    ("train", ["--sgd"], "no SGD"),
])
def test_a_vw_flag_gets_a_hint_naming_the_equivalent(run_cli, command, flags, equivalent,
                                                     tmp_path):
    args = [command, *flags, "samples/sample.svm"]
    if command == "predict":
        args += ["-m", tmp_path / "absent.npz"]
    line = usage_error(run_cli(*args))
    if equivalent is None:   # not VW's: click's own message
        assert "Vowpal Wabbit" not in line and "No such option" in line
    else:
        assert f"no such option {flags[0].split('=')[0]} (Vowpal Wabbit's)" in line
        assert equivalent in line


def test_every_hint_names_no_flag_streamherd_has():
    """A hint is for a flag streamherd does not take (else the flag would never be unknown)."""
    from streamherd.cli import COMMANDS

    ours = {flag for command in COMMANDS.values() for option in command.options
            for flag in option.flags}
    assert "--bit_precision" in ours and "-C" in ours
    assert not ours & set(VW_SPELLINGS)


def test_vw_spellings_of_flags_streamherd_has(run_cli, tmp_path):
    ours, vws = tmp_path / "ours.npz", tmp_path / "vw.npz"
    assert run_cli("train", "--quiet", "samples/sample.svm", "--no-bias", "-b", "12",
                   "-f", ours).returncode == 0
    assert run_cli("train", "--quiet", "samples/sample.svm", "--noconstant",
                   "--bit_precision", "12", "-f", vws).returncode == 0
    (meta_a, a), (meta_b, b) = load_model(ours), load_model(vws)
    assert meta_a["bits"] == meta_b["bits"] == 12 and meta_a["bias"] is meta_b["bias"] is False
    np.testing.assert_array_equal(a["mean"], b["mean"])
    # VW's long names of -i and -f
    continued = tmp_path / "continued.npz"
    assert run_cli("train", "--quiet", "samples/sample.svm", "--initial_regressor", vws,
                   "--final_regressor", continued).returncode == 0
    assert load_model(continued)[0]["examples"] == 2 * meta_b["examples"]


@pytest.mark.parametrize("command, flags, meant", [
    ("train", ["-a"], "Vowpal Wabbit's -a (audit) is --audit here"),
    ("train", ["-r", "raw.txt"], "Vowpal Wabbit's -r (raw predictions) is 'predict --raw -p FILE'"),
    ("predict", ["-a"], "Vowpal Wabbit's -a (audit) is --audit here"),
    ("predict", ["-i", "m.npz"], "no such option -i for predict (Vowpal Wabbit's -i); "
                                 "streamherd: predict -m MODEL"),
])
def test_a_vw_flag_we_spell_for_another_meaning_says_what_vws_is(run_cli, command, flags,
                                                                 meant):
    assert meant in usage_error(run_cli(command, *flags, "samples/sample.svm"))


def test_harmless_vw_flags_are_accepted_with_a_note_and_change_nothing(run_cli, tmp_path):
    plain, flagged = tmp_path / "plain.npz", tmp_path / "flagged.npz"
    assert run_cli("train", "--quiet", "samples/sample.svm", "-f", plain).returncode == 0
    proc = run_cli("train", "samples/sample.svm", "-c", "-k", "--cache_file", "c.cache",
                   "--binary", "-f", flagged)
    assert proc.returncode == 0, proc.stderr
    for flag in ("-c", "-k", "--cache_file", "--binary"):
        assert f"streamherd: {flag} (Vowpal Wabbit's) does nothing here: " in proc.stderr
    assert not (tmp_path / "c.cache").exists()
    np.testing.assert_array_equal(load_model(plain)[1]["mean"], load_model(flagged)[1]["mean"])
    predicted = run_cli("predict", "-t", "--binary", "-m", flagged, "samples/sample.svm")
    assert predicted.returncode == 0
    assert "-t (Vowpal Wabbit's) does nothing here: predict never updates" in predicted.stderr
    assert predicted.stdout == run_cli("predict", "-m", plain, "samples/sample.svm").stdout
    quiet = run_cli("predict", "-t", "--quiet", "-m", flagged, "samples/sample.svm")
    assert "Vowpal Wabbit" not in quiet.stderr


@pytest.mark.parametrize("flags", [["-q", "ff"], ["--hash", "all"], ["-b", "12"]])
def test_predict_says_the_feature_flags_come_from_the_model(run_cli, flags):
    line = usage_error(run_cli("predict", "-m", "absent.npz", *flags, "samples/sample.svm"))
    assert f"no such option {flags[0]} for predict: the model makes its features" in line


@pytest.mark.parametrize("command", ["train", "predict", "experiment"])
def test_dash_h_is_help(run_cli, command):
    short, long = run_cli(command, "-h"), run_cli(command, "--help")
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout and "Usage: streamherd " + command in short.stdout
