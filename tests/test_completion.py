"""`streamherd completion SHELL`: the script it prints completes commands, every declared flag,
the declared values of an option, and paths, when bash runs it as bash-completion would."""
import shutil
import subprocess

import pytest

from helpers import REPO

from streamherd import calibration, herding, option_groups, tasks
from streamherd.cli import COMMANDS, TRAIN
from streamherd.io import reader
from streamherd.learners import ALIASES, REGISTRY
from streamherd.tasks import multiclass

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is absent")


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory, run_cli):
    proc = run_cli("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path_factory.mktemp("completion") / "streamherd.bash"
    path.write_text(proc.stdout)
    return path


def completed(script, words, cwd=REPO):
    """What bash offers for the last of ``words`` (the command line typed so far)."""
    words_array = " ".join(f"'{w}'" for w in words)
    program = (f"source '{script}'; COMP_WORDS=({words_array}); "
               f"COMP_CWORD={len(words) - 1}; COMP_LINE='{' '.join(words)}'; "
               f"COMP_POINT=${{#COMP_LINE}}; _shtab_streamherd; "
               f"printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=cwd,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(filter(None, proc.stdout.split("\n")))


def test_commands_complete_from_a_prefix(bash_script):
    assert completed(bash_script, ["streamherd", "tr"]) == {"train"}
    assert completed(bash_script, ["streamherd", ""]) >= set(COMMANDS)


def test_every_declared_train_flag_completes(bash_script):
    offered = completed(bash_script, ["streamherd", "train", "-"])
    declared = {flag for option in TRAIN.options for flag in option.flags}
    assert declared <= offered
    assert {"--algo", "--final_regressor", "-q", "--help"} <= offered


def test_learner_names_complete_from_the_registry(bash_script):
    offered = completed(bash_script, ["streamherd", "train", "--algo", "arow"])
    expected = {name for name in [*REGISTRY, *ALIASES] if name.startswith("arow")}
    assert offered == expected and "arow-p" in offered


def test_input_files_and_model_paths_complete(bash_script, tmp_path):
    (tmp_path / "train.svm").write_text("1 1:1\n")
    (tmp_path / "trained.npz").write_text("")
    assert completed(bash_script, ["streamherd", "train", "tr"], tmp_path) == \
        {"train.svm", "trained.npz"}
    assert completed(bash_script, ["streamherd", "predict", "-m", "trained"], tmp_path) == \
        {"trained.npz"}


def test_an_unknown_shell_is_a_one_line_usage_error(run_cli):
    proc = run_cli("completion", "fish")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("streamherd completion: No completion for the shell 'fish'; "
                                  "give one of bash, zsh, tcsh")


@pytest.mark.parametrize("shell", ["zsh", "tcsh"])
def test_other_shells_get_a_script_naming_every_command(run_cli, shell):
    proc = run_cli("completion", shell)
    assert proc.returncode == 0, proc.stderr
    assert all(name in proc.stdout for name in COMMANDS)
    if shutil.which(shell) and shell == "zsh":
        check = subprocess.run(["zsh", "-n"], input=proc.stdout, text=True,
                               capture_output=True, timeout=60)
        assert check.returncode == 0, check.stderr


def test_declared_choices_are_the_values_the_code_accepts():
    """The completion's value lists are written beside the flags (the command line imports no
    numpy); each equals the list the code checks the value against."""
    def choices(command, flag):
        return next(o.choices for o in COMMANDS[command].options if flag in o.flags)

    assert choices("train", "--format") == reader.FORMATS
    assert set(choices("train", "--calibration")) == set(calibration.METHODS)
    assert choices("train", "--loss") == tasks.LOSSES
    assert set(option_groups.MULTICLASS_MODES) == set(multiclass.MODES)
    assert choices("experiment", "--multiclass") == option_groups.MULTICLASS_MODES
    assert choices("herd", "--multiclass") == herding.MODES
