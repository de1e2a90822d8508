"""A full disk: every output that overflows it is one line naming the file and saying "no space
left", exit 2, and leaves what was there as it was (no half-written file, no temporary file).
Run on a small tmpfs, which needs root (CI runs as root); skipped otherwise."""
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO, one_line_error, run_cli

SMALL = 64 * 1024


@pytest.fixture
def full(tmp_path):
    """A folder on a 64 KiB tmpfs, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    folder = tmp_path / "full"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL}", "tmpfs",
                              str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def write_data(path, lines, features=8, width=400, seed=5):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for k in range(lines):
            slots = np.sort(rng.choice(np.arange(1, width), features, replace=False))
            f.write(f"{1 if k % 3 else -1} "
                    + " ".join(f"{j}:{rng.random():.3f}" for j in slots) + "\n")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("disk")
    # ~3 bytes of prediction a line: 40,000 lines overflow 64 KiB
    write_data(folder / "long.svm", 40_000)
    # 6,000 distinct features at -b 18: an inspect table of some 380 KB, a model of ~110 KB
    write_data(folder / "wide.svm", 3_000, width=6_000)
    assert run_cli("train", folder / "wide.svm", "--algo", "arow", "-b", "18", "-f",
                   folder / "wide.npz", "--quiet").returncode == 0
    return folder


def only(folder, *names):
    """The folder holds exactly ``names``: no temporary file, no partial output."""
    assert sorted(os.listdir(folder)) == sorted(names)


def test_train_predictions_overflowing_the_disk_stop_the_run_and_write_no_model(
        data, full, tmp_path):
    model = tmp_path / "m.npz"
    proc = run_cli("train", data / "long.svm", "-p", full / "p.txt", "-f", model, "--quiet")
    line = one_line_error(proc)
    assert "p.txt" in line and "no space left" in line and "was not created" in line, line
    only(full)
    assert not model.exists()   # the run stopped at the failed write: -f was not written


def test_an_existing_predictions_file_and_model_stay_as_they_were(data, full, tmp_path):
    (full / "p.txt").write_text("old predictions\n")
    model = tmp_path / "m.npz"
    model.write_bytes(b"old model")
    proc = run_cli("train", data / "long.svm", "-p", full / "p.txt", "-f", model, "--quiet")
    line = one_line_error(proc)
    assert "p.txt" in line and "no space left" in line and "was left as it was" in line, line
    assert (full / "p.txt").read_text() == "old predictions\n"
    assert model.read_bytes() == b"old model"
    only(full, "p.txt")


def test_predict_predictions_overflowing_the_disk(data, full):
    proc = run_cli("predict", "-m", data / "wide.npz", data / "long.svm", "-p", full / "q.txt",
                   "--quiet")
    line = one_line_error(proc)
    assert line.startswith("streamherd: cannot write predictions ") and "q.txt" in line
    assert "no space left" in line
    only(full)


def test_a_model_overflowing_the_disk(data, full):
    assert os.path.getsize(data / "wide.npz") > SMALL
    proc = run_cli("train", data / "wide.svm", "--algo", "arow", "-b", "18", "-f",
                   full / "m.npz", "--quiet")
    line = one_line_error(proc)
    assert "cannot write model" in line and "m.npz" in line and "no space left" in line, line
    only(full)


def run_shell(command, cwd):
    return subprocess.run(f"{sys.executable} -m streamherd {command}", shell=True, cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH",
                                                                          str(REPO))})


def test_inspect_onto_a_full_disk_leaves_no_half_table(data, full):
    whole = run_cli("inspect", data / "wide.npz").stdout
    assert len(whole) > SMALL
    proc = run_shell(f"inspect {data / 'wide.npz'} > {full / 'i.txt'}", cwd=full.parent)
    line = one_line_error(proc)
    assert "standard output" in line and "i.txt" in line and "no space left" in line, line
    assert (full / "i.txt").read_bytes() == b""   # what the shell's '>' had left: empty


def test_inspect_appended_onto_a_full_disk_keeps_what_the_file_held(data, full):
    (full / "log.txt").write_text("earlier lines\n")
    proc = run_shell(f"inspect {data / 'wide.npz'} >> {full / 'log.txt'}", cwd=full.parent)
    assert "no space left" in one_line_error(proc)
    assert (full / "log.txt").read_text() == "earlier lines\n"


def test_inspect_to_a_pipe_still_writes_the_whole_table(data, tmp_path):
    """The writer that reports a full disk writes what the table is, byte for byte."""
    from streamherd.inspection import inspect_model

    expected = io.StringIO()
    inspect_model(str(data / "wide.npz"), out=expected)
    proc = run_shell(f"inspect {data / 'wide.npz'} | cat", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == expected.getvalue()


def test_experiment_onto_a_full_disk(data, full):
    proc = run_cli("experiment", data / "wide.svm", "--algos", "pa2,arow-p", "--folds", "2",
                   "--max-passes", "1", "--noise", "0", "--out", full / "exp", "--quiet",
                   cwd=full.parent)
    line = one_line_error(proc)
    failed = re.search(r"cannot write [a-z ]+ (\S+): no space left on device", line)
    assert failed, line
    assert not os.path.exists(failed.group(1))
    written = os.listdir(full / "exp")
    assert not [name for name in written if name.startswith(".streamherd-")]
    # each file it wrote whole is named as written
    for name in written:
        assert name in line


# ---------------------------------------------------------------- a full TMPDIR

def run_with_tmpdir(tmpdir, *args, stdin=None, cwd):
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as source:
        proc = subprocess.run([sys.executable, "-m", "streamherd", *map(str, args)], cwd=cwd,
                              stdin=source, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TMPDIR": str(tmpdir),
                                   "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))})
    return proc


def fill(folder):
    """Fill the tmpfs to its last byte (a file may still be created there, not written)."""
    with open(folder / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        for _ in range(2 * SMALL // 4096):
            f.write(b"\0" * 4096)


@pytest.mark.parametrize("filled", [True, False], ids=["full", "overflowing"])
def test_standard_input_copied_for_passes_into_a_full_tmpdir_fails_in_one_line(
        data, full, tmp_path, filled):
    """Python's tempfile would take /tmp instead of a full TMPDIR, silently; the copy stays
    where the user sent it, and a full disk there is said."""
    if filled:
        fill(full)
    proc = run_with_tmpdir(full, "train", "--passes", "3", "-f", tmp_path / "m.npz", "--quiet",
                           stdin=data / "long.svm", cwd=tmp_path)
    line = one_line_error(proc)
    assert "standard input" in line and str(full) in line and "No space left" in line, line
    only(full, *(["filler"] if filled else []))
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("filled", [True, False], ids=["full", "overflowing"])
def test_the_block_wise_shuffle_spill_into_a_full_tmpdir_fails_in_one_line(
        data, full, tmp_path, filled):
    if filled:
        fill(full)
    # more than 1 MiB of parsed rows: the shuffle spills its blocks
    proc = run_with_tmpdir(full, "train", data / "long.svm", "--passes", "2", "--shuffle",
                           "--shuffle_memory", "1", "-f",
                           tmp_path / "m.npz", "--quiet", cwd=tmp_path)
    line = one_line_error(proc)
    assert "shuffle's copy of the input" in line and str(full) in line, line
    assert "No space left" in line
    only(full, *(["filler"] if filled else []))
    assert not (tmp_path / "m.npz").exists()


def test_a_tmpdir_that_does_not_exist_is_named(data, tmp_path):
    proc = run_with_tmpdir(tmp_path / "nowhere", "train", "--passes", "2", "-f",
                           tmp_path / "m.npz", "--quiet", stdin=data / "long.svm", cwd=tmp_path)
    line = one_line_error(proc)
    assert f"TMPDIR ({tmp_path / 'nowhere'})" in line and "No such file" in line, line


# ---------------------------------------------------------------- the Python API

@pytest.fixture(scope="module")
def estimator(data):
    import streamherd
    from streamherd.sklearn import OnlineClassifier

    X, y = streamherd.load_svmlight(str(data / "wide.svm"))
    return OnlineClassifier("arow", bits=18).fit(X, y)


def test_save_model_onto_a_full_disk_keeps_the_old_model_whole(estimator, full):
    from streamherd.errors import StreamherdError

    old = full / "m.npz"
    old.write_bytes(b"the old model")
    with pytest.raises(StreamherdError) as info:
        estimator.save_model(str(old))
    assert str(old) in str(info.value) and "no space left" in str(info.value).lower()
    assert old.read_bytes() == b"the old model"
    only(full, "m.npz")


def test_save_model_into_a_read_only_folder_keeps_the_old_model_whole(estimator, full):
    from streamherd.errors import StreamherdError

    old = full / "m.npz"
    old.write_bytes(b"the old model")
    subprocess.run(["mount", "-o", "remount,ro", str(full)], check=True)
    with pytest.raises(StreamherdError) as info:
        estimator.save_model(str(old))
    assert str(old) in str(info.value) and "Read-only file system" in str(info.value)
    assert old.read_bytes() == b"the old model"
    only(full, "m.npz")


@pytest.mark.parametrize("path, reason", [
    ("missing.svm", "no such file"),
    (".", "it is a folder"),
    ("/proc/self/mem", "Input/output error"),   # a read that fails: a failing device's EIO
])
def test_load_svmlight_of_an_unreadable_path_names_it(tmp_path, monkeypatch, path, reason):
    import streamherd
    from streamherd.errors import StreamherdError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StreamherdError) as info:
        streamherd.load_svmlight(path)
    assert f"cannot read {path}: {reason}" in str(info.value)


@pytest.mark.parametrize("path, reason", [
    ("missing.npz", "model missing.npz does not exist"),
    (".", "cannot read model .: Is a directory"),
    ("/proc/self/mem", "cannot read model /proc/self/mem: Input/output error"),
])
def test_load_model_of_an_unreadable_path_names_it(tmp_path, monkeypatch, path, reason):
    from streamherd.errors import StreamherdError
    from streamherd.sklearn import load_model

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StreamherdError) as info:
        load_model(path)
    assert reason in str(info.value)
