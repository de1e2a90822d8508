"""Outputs that replace a file keep its mode and, as root, its owner; an output path that is a
symbolic link planted by another user in a sticky world-writable folder is refused in one line,
as the kernel's fs.protected_symlinks would refuse it, and the file behind it is left alone."""
import os
import stat

import pytest

from helpers import one_line_error

SAMPLE = "samples/sample.svm"
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_private_model_and_predictions_stay_private(run_cli, tmp_path):
    model, predictions = tmp_path / "m.npz", tmp_path / "p.txt"
    assert run_cli("train", "--quiet", SAMPLE, "-f", model).returncode == 0
    predictions.write_text("old\n")
    os.chmod(model, 0o600)
    os.chmod(predictions, 0o640)
    assert run_cli("train", "--quiet", SAMPLE, "-f", model).returncode == 0
    assert run_cli("predict", "--quiet", "-m", model, SAMPLE, "-p", predictions).returncode == 0
    assert (mode(model), mode(predictions)) == (0o600, 0o640)
    assert predictions.read_text() != "old\n"


def test_a_new_output_is_an_ordinary_file(run_cli, tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    assert run_cli("train", "--quiet", SAMPLE, "-f", tmp_path / "new.npz").returncode == 0
    assert mode(tmp_path / "new.npz") == 0o666 & ~umask


@AS_ROOT
def test_a_replaced_file_keeps_its_owner(run_cli, tmp_path):
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", SAMPLE, "-f", model).returncode == 0
    os.chown(model, 65534, 65534)
    assert run_cli("train", "--quiet", SAMPLE, "-f", model).returncode == 0
    assert (os.stat(model).st_uid, os.stat(model).st_gid) == (65534, 65534)


@AS_ROOT
@pytest.mark.parametrize("command", ["train", "predict"])
def test_a_link_planted_by_another_user_in_a_shared_folder_is_refused(run_cli, tmp_path,
                                                                      command):
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    private = tmp_path / "root-only"
    private.write_text("secret\n")
    os.chmod(private, 0o600)
    planted = shared / "out"
    planted.symlink_to(private)
    os.lchown(planted, 65534, 65534)
    if command == "train":
        proc = run_cli("train", "--quiet", SAMPLE, "-f", planted)
    else:
        model = tmp_path / "m.npz"
        assert run_cli("train", "--quiet", SAMPLE, "-f", model).returncode == 0
        proc = run_cli("predict", "--quiet", "-m", model, SAMPLE, "-p", planted)
    assert "is a symbolic link owned by another user in a shared folder" in one_line_error(proc)
    assert private.read_text() == "secret\n" and planted.is_symlink()


def test_ones_own_link_is_written_through(run_cli, tmp_path):
    target, link = tmp_path / "real.npz", tmp_path / "link.npz"
    link.symlink_to(target)
    assert run_cli("train", "--quiet", SAMPLE, "-f", link).returncode == 0
    assert link.is_symlink() and target.stat().st_size > 0
