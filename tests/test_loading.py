"""streamherd.load_svmlight / load_vw against independent readers: scikit-learn's
load_svmlight_file for svmlight (real data and a generated file), a pure Python + mmh3
transcription of VW's hashing (conftest.py) for VW format; compression, standard input, several
files, class-name labels and the one-line errors."""
import bz2
import gzip
import lzma
import subprocess
import sys

import numpy as np
import pytest
from scipy.sparse import csr_matrix

from streamherd import load_svmlight, load_vw
from streamherd.errors import StreamherdError

sklearn_datasets = pytest.importorskip("sklearn.datasets")


def _svmlight_text(rng, rows=200, features=60):
    lines = []
    for _ in range(rows):
        indices = np.sort(rng.choice(np.arange(1, features + 1), rng.integers(0, 8),
                                     replace=False))
        label = rng.choice([-1, 1])
        lines.append(" ".join([str(label), *(f"{i}:{rng.normal():.17g}" for i in indices)]))
    return "\n".join(lines) + "\n"


def _sklearn_reference(path, n_features=None):
    X, y = sklearn_datasets.load_svmlight_file(str(path), zero_based=False,
                                               n_features=n_features)
    return X.tocsr(), y


def _assert_same(X, y, X_ref, y_ref):
    assert X.shape == X_ref.shape
    assert (X != X_ref).nnz == 0
    np.testing.assert_array_equal(y, y_ref)


@pytest.mark.parametrize("name", ["a9a.svm.gz", "dna.scale.svm", "usps.train.svm.gz"])
def test_svmlight_equals_sklearn_on_real_data(data_dir, name):
    X, y = load_svmlight(data_dir / name)
    X_ref, y_ref = _sklearn_reference(data_dir / name)
    # sklearn's columns end at the largest index too
    _assert_same(X, y, X_ref, y_ref)
    assert isinstance(X, csr_matrix) and X.has_sorted_indices


@pytest.mark.parametrize("compress", [None, gzip.compress, bz2.compress, lzma.compress])
def test_svmlight_generated_file_any_compression(tmp_path, compress):
    text = _svmlight_text(np.random.default_rng(3))
    plain = tmp_path / "plain.svm"
    plain.write_text(text)
    path = plain if compress is None else tmp_path / "packed.svm.x"
    if compress is not None:
        path.write_bytes(compress(text.encode()))
    X, y = load_svmlight(path)
    _assert_same(X, y, *_sklearn_reference(plain))


def test_svmlight_with_bits_folds_indices_as_the_cli_masks_them(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:1 3:2 9:4\n-1 8:5 16:6 17:7\n")
    X, y = load_svmlight(path, bits=3)
    dense = np.zeros((2, 8))
    # index i is slot i mod 8, in column (slot - 1) mod 8; slot 0 (8, 16) is the last column
    for row, pairs in enumerate([[(1, 1), (3, 2), (9, 4)], [(8, 5), (16, 6), (17, 7)]]):
        for index, value in pairs:
            dense[row, (index % 8 - 1) % 8] += value
    np.testing.assert_array_equal(X.toarray(), dense)
    np.testing.assert_array_equal(y, [1, -1])


def test_several_files_and_standard_input(tmp_path):
    rng = np.random.default_rng(5)
    first, second = _svmlight_text(rng, 50), _svmlight_text(rng, 70)
    (tmp_path / "a.svm").write_text(first)
    (tmp_path / "b.svm").write_text(second)
    (tmp_path / "ab.svm").write_text(first + second)
    X, y = load_svmlight([tmp_path / "a.svm", tmp_path / "b.svm"])
    _assert_same(X, y, *_sklearn_reference(tmp_path / "ab.svm"))
    script = ("import sys, numpy as np; from streamherd import load_svmlight; "
              "X, y = load_svmlight('-'); np.save(sys.argv[1], np.c_[X.toarray(), y])")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "out.npy")], input=first,
                   text=True, check=True)
    X_ref, y_ref = _sklearn_reference(tmp_path / "a.svm")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.c_[X_ref.toarray(), y_ref])


def test_vw_slots_are_vw_hashes(tmp_path, vw_slot):
    path = tmp_path / "d.vw"
    path.write_text("1 |a x:2 y |b x z:0.5\n-1 |a y\n3.5 | 17:3\n")
    bits = 10
    X, y = load_vw(path, bits=bits)
    expected = np.zeros((3, 1 << bits))
    for row, features in enumerate([[(b"a", b"x", 2), (b"a", b"y", 1), (b"b", b"x", 1),
                                     (b"b", b"z", 0.5)], [(b"a", b"y", 1)],
                                    [(b"", b"17", 3)]]):
        for namespace, name, value in features:
            expected[row, (vw_slot(namespace, name, bits) - 1) % (1 << bits)] += value
    np.testing.assert_array_equal(X.toarray(), expected)
    np.testing.assert_array_equal(y, [1, -1, 3.5])


def test_class_names_make_text_labels(tmp_path):
    path = tmp_path / "d.vw"
    # the numbers before the first class name are kept as written, as texts
    path.write_text("2 | a\n" * 3 + "sports | b\n|c\n7.5 | d\npolitics | e\n")
    X, y = load_vw(path, bits=8)
    assert y.dtype == object
    assert y.tolist() == ["2", "2", "2", "sports", None, "7.5", "politics"]
    assert X.shape == (7, 256)


def test_vw_line_without_label_is_nan(tmp_path):
    path = tmp_path / "d.vw"
    path.write_text("1 | a\n| b\n")
    _, y = load_vw(path, bits=8)
    assert y[0] == 1 and np.isnan(y[1])


@pytest.mark.parametrize("content, loader, words", [
    (None, load_svmlight, "no such file"),
    ("1 0:1 2:3\n", load_svmlight, "d.txt:1: feature index 0"),
    ("1 2:3\n1 x:y\n", load_svmlight, "d.txt:2"),
    ("1 | a\n", lambda p: load_vw(p, bits=None), "give bits"),
])
def test_errors_are_one_line(tmp_path, content, loader, words):
    path = tmp_path / "d.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(StreamherdError) as caught:
        loader(path)
    message = str(caught.value)
    assert words in message and "\n" not in message


def test_n_features_sets_the_columns(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 2:3\n-1 4:1\n")
    X, _ = load_svmlight(path, n_features=10)
    X_ref, _ = _sklearn_reference(path, n_features=10)
    assert X.shape == (2, 10) and (X != X_ref).nnz == 0
    with pytest.raises(StreamherdError, match="d.svm:2: feature index 4 is above n_features=3"):
        load_svmlight(path, n_features=3)
