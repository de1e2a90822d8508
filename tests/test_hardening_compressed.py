"""gzip, bzip2 and xz files end alike: concatenated streams are read one after another, zeros
after the last one are padding, and anything else after it is one error naming the file
("trailing data after the compressed stream") from the command line and the Python loaders
alike; a stream cut short is damaged data."""
import bz2
import gzip
import lzma

import numpy as np
import pytest
from helpers import one_line_error, run_cli

import streamherd
from streamherd.errors import StreamherdError

COMPRESS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
TEST_COMMAND = {"gz": "gzip -t", "bz2": "bzip2 -t", "xz": "xz -t"}


def text(lines, seed):
    rng = np.random.default_rng(seed)
    return "".join(f"{rng.choice([1, -1])} " + " ".join(
        f"{j}:{rng.random():.3f}" for j in np.sort(rng.choice(np.arange(1, 60), 5, False)))
        + "\n" for _ in range(lines)).encode()


@pytest.fixture
def parts():
    return text(300, 1), text(200, 2)


@pytest.mark.parametrize("suffix", COMPRESS)
@pytest.mark.parametrize("tail", [b"garbage!", b"\x00\x00\x00\x00 more", b"\x1f\x8b"],
                         ids=["text", "zeros-then-text", "a-magic-alone"])
def test_trailing_data_after_the_stream_is_one_error_naming_the_file(tmp_path, parts, suffix,
                                                                   tail):
    if suffix == "gz" and tail == b"\x1f\x8b":
        tail = b"BZh"   # a gzip magic alone would start a (cut short) member: another case
    path = tmp_path / f"data.svm.{suffix}"
    stream = COMPRESS[suffix](parts[0])
    path.write_bytes(stream + tail)
    offset = len(stream) + len(tail) - len(tail.lstrip(b"\0"))
    expected = (f"{path}: trailing data after the compressed stream, from byte {offset:,}; "
                f"the file is damaged or has something appended: get an intact copy "
                f"({TEST_COMMAND[suffix]} checks one)")
    assert one_line_error(run_cli("train", path, "-f", tmp_path / "m.npz", "--quiet")) == \
        f"streamherd: {expected}"
    assert not (tmp_path / "m.npz").exists()
    with pytest.raises(StreamherdError) as info:
        streamherd.load_svmlight(str(path))
    assert str(info.value) == expected


@pytest.mark.parametrize("suffix", COMPRESS)
def test_concatenated_streams_and_zero_padding_read_as_the_text(tmp_path, parts, suffix):
    """The same rows as the plain text: two streams one after the other ('cat a.gz b.gz'),
    then zeros (a tape's or a block device's padding; xz's stream padding)."""
    path = tmp_path / f"data.svm.{suffix}"
    path.write_bytes(COMPRESS[suffix](parts[0]) + COMPRESS[suffix](parts[1]) + bytes(1024))
    plain = tmp_path / "data.svm"
    plain.write_bytes(parts[0] + parts[1])
    X, y = streamherd.load_svmlight(str(path), n_features=60)
    X_plain, y_plain = streamherd.load_svmlight(str(plain), n_features=60)
    assert X.shape == (500, 60)
    assert (X != X_plain).nnz == 0 and np.array_equal(y, y_plain)
    for source in (path, plain):
        assert run_cli("train", source, "-f", tmp_path / f"{source.name}.npz", "-p",
                       tmp_path / f"{source.name}.txt", "--quiet").returncode == 0
    assert (tmp_path / f"{path.name}.txt").read_text() == \
        (tmp_path / "data.svm.txt").read_text()


@pytest.mark.parametrize("suffix", COMPRESS)
@pytest.mark.parametrize("cut", ["first", "second"])
def test_a_stream_cut_short_is_damaged_data(tmp_path, parts, suffix, cut):
    first, second = COMPRESS[suffix](parts[0]), COMPRESS[suffix](parts[1])
    data = first[:len(first) // 2] if cut == "first" else first + second[:len(second) // 2]
    path = tmp_path / f"data.svm.{suffix}"
    path.write_bytes(data)
    line = one_line_error(run_cli("train", path, "-f", tmp_path / "m.npz", "--quiet"))
    assert line.startswith(f"streamherd: {path}: corrupt ") and "ends early" in line, line
