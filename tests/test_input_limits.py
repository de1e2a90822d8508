"""Inputs that do not end as files do: a line without an end (/dev/zero), FIFOs read for several
passes, and the Python loaders against the command line and scikit-learn's loader."""
import bz2
import os
import resource
import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader
from streamherd.loading import load_svmlight

from helpers import REPO, one_line_error, run_cli

# the address space a child may take: the interpreter, numpy, numba and the 64 MiB line limit
# fit; an input read without bound does not
MEMORY_LIMIT = 3 << 30
CHILD_SECONDS = 240


def limited(*args):
    """``args`` run in a child under MEMORY_LIMIT and CHILD_SECONDS (text output)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=CHILD_SECONDS, preexec_fn=cap)


def read_all(paths, **kwargs):
    return list(ChunkReader([str(p) for p in paths], features=FeatureSpace(), **kwargs))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    data = folder / "t.svm"
    data.write_text("1 1:1 2:1\n-1 1:1 3:1\n")
    path = folder / "m.npz"
    assert run_cli("train", data, "-f", path, "--quiet").returncode == 0
    return path


def test_train_on_an_input_without_line_ends_stops_with_a_line_naming_it():
    line = one_line_error(limited("-m", "streamherd", "train", "/dev/zero", "--examples", "5"))
    assert "/dev/zero:1: a line longer than 67108864 bytes" in line
    assert "--max-line-bytes" in line


def test_predict_on_an_input_without_line_ends_stops_with_a_line_naming_it(model):
    line = one_line_error(limited("-m", "streamherd", "predict", "-m", model, "/dev/zero"))
    assert "/dev/zero:1: a line longer than" in line


def test_load_svmlight_on_an_input_without_line_ends_raises_naming_it():
    proc = limited("-c", "import streamherd\nfrom streamherd.errors import StreamherdError\n"
                         "try:\n"
                         "    streamherd.load_svmlight('/dev/zero')\n"
                         "except StreamherdError as e:\n"
                         "    print(e)\n")
    assert proc.returncode == 0, proc.stderr
    assert "/dev/zero:1: a line longer than" in proc.stdout


@pytest.mark.parametrize("block_size", [16, 100])
def test_a_line_longer_than_the_limit_names_its_file_and_line(tmp_path, block_size):
    path = tmp_path / "long.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n\n" + b"1 " + b"3:1 " * 300 + b"\n1 4:1\n")
    with pytest.raises(StreamherdError) as info:
        read_all([path], max_line_bytes=1000, block_size=block_size, workers=0)
    assert str(info.value).startswith(f"{path}:4: a line longer than 1000 bytes")
    rows = sum(len(chunk.labels) for chunk in
               read_all([path], max_line_bytes=2000, block_size=block_size))
    assert rows == 4


def test_max_line_bytes_raises_the_limit_of_train(tmp_path):
    path = tmp_path / "long.svm"
    features = " ".join(f"{i}:1" for i in range(1, 300_000))
    path.write_text(f"1 {features}\n-1 1:1\n")   # a line of about 2.6 MB
    line = one_line_error(run_cli("train", path, "--max-line-bytes", 2_000_000, "--quiet"))
    assert f"{path}:1: a line longer than 2000000 bytes" in line
    assert run_cli("train", path, "--quiet").returncode == 0


def fifo_fed(tmp_path, data):
    """A FIFO in ``tmp_path`` and the thread that writes ``data`` to it, once, then closes it."""
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


def same_model(a, b):
    with np.load(a) as first, np.load(b) as second:
        return sorted(first.files) == sorted(second.files) and all(
            np.array_equal(first[k], second[k]) for k in first.files)


def test_train_reads_a_fifo_once_for_several_passes(tmp_path):
    data = "".join(f"{1 if i % 3 else -1} {i % 7 + 1}:1 {i % 5 + 8}:0.5\n"
                   for i in range(200)).encode()
    plain = tmp_path / "plain.svm"
    plain.write_bytes(data)
    assert run_cli("train", "--passes", 3, plain, "-f", tmp_path / "plain.npz",
                   "--quiet").returncode == 0
    fifo, writer = fifo_fed(tmp_path, data)
    proc = run_cli("train", "--passes", 3, fifo, "-f", tmp_path / "fifo.npz", timeout=120)
    writer.join(5)
    assert proc.returncode == 0, proc.stderr
    assert f"{fifo} is copied to" in proc.stderr
    assert same_model(tmp_path / "plain.npz", tmp_path / "fifo.npz")


# ---------------------------------------------------------------- the loaders as the CLI

@pytest.mark.parametrize("mark", [b"\xef\xbb\xbf", b"\xff\xfe"])
def test_load_svmlight_refuses_a_marked_label_among_numbers_as_train_does(tmp_path, mark):
    path = tmp_path / "marked.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n" + mark + b"1 3:1\n-1 1:1\n")
    line = one_line_error(run_cli("train", path))
    with pytest.raises(StreamherdError) as info:
        load_svmlight(path)
    assert line == f"streamherd: {info.value}"
    assert f"{path}:3: " in line


def test_load_svmlight_keeps_class_names_as_train_does(tmp_path):
    path = tmp_path / "names.svm"
    path.write_text("cat 1:1\ndog 2:1\n1 3:1\ncat 1:1\n")
    X, y = load_svmlight(path)
    assert list(y) == ["cat", "dog", "1", "cat"]
    assert X.shape == (4, 3)


def test_load_svmlight_refuses_a_damaged_number_among_class_names_as_train_does(tmp_path):
    path = tmp_path / "names.svm"
    path.write_text("cat 1:1\ndog 2:1\nnan 3:1\ncat 1:1\n")
    line = one_line_error(run_cli("train", path))
    with pytest.raises(StreamherdError) as info:
        load_svmlight(path)
    assert line == f"streamherd: {info.value}"


@pytest.mark.parametrize("kept", [4, 6, 9])
def test_a_bzip2_file_cut_inside_its_header_is_truncated_bzip2(tmp_path, kept):
    whole = bz2.compress(b"".join(b"%d 1:1 2:0.5\n" % (i % 2 * 2 - 1) for i in range(100)))
    path = tmp_path / "cut.svm.bz2"
    path.write_bytes(whole[:kept])
    line = one_line_error(run_cli("train", path))
    assert "corrupt bzip2 data (it ends early" in line
    with pytest.raises(StreamherdError) as info:
        load_svmlight(path)
    assert line == f"streamherd: {info.value}"


def test_text_that_begins_like_bzip2_is_still_text(tmp_path):
    path = tmp_path / "text.svm"
    path.write_text("BZh 1:1\n")
    assert load_svmlight(path)[1].tolist() == ["BZh"]


# ---------------------------------------------------------------- columns as scikit-learn's

def test_load_svmlight_counts_explicit_zeros_in_its_columns_as_sklearn(tmp_path):
    path = tmp_path / "zeros.svm"
    path.write_text("1 1:1 7:0\n# 9:0 a comment\n-1 qid:3 2:1 5:0.0e5\n")
    X, _ = load_svmlight(path)
    X_ref, _ = load_svmlight_file(str(path), zero_based=False)
    assert X.shape == X_ref.shape == (2, 7)
    assert (X != X_ref).nnz == 0


def test_load_svmlight_columns_equal_sklearn_on_a9a_test_set(data_dir):
    path = data_dir / "a9a.t.svm.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    X, y = load_svmlight(path)
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=False)
    assert X.shape == X_ref.shape
    assert (X != X_ref).nnz == 0
    np.testing.assert_array_equal(y, y_ref)
