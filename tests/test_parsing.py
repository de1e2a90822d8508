"""The block parsers, through ChunkReader: svmlight and VW syntax, block boundaries, compressed
inputs, stdin, malformed lines, and every real data file against the counts in its README."""
import bz2
import collections
import gzip
import json
import lzma
import math
import random
import subprocess
import sys

import numpy as np
import pytest

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader

BLOCK_SIZES = [1, 64, 4 << 20]
CONSTANT = 11650396


def bias_slot(bits):
    return CONSTANT & ((1 << bits) - 1)


def xs(rows):
    return [r["x"] for r in rows]


# ---------------------------------------------------------------- svmlight syntax

@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_svmlight_labels(parse, block_size):
    rows = parse(b"+1 1:1\n-1 1:1\n1 1:1\n0 1:1\n1.5 1:1\n-2.5e-1 1:1\n", fmt="svmlight",
                 block_size=block_size)
    assert [r["label"] for r in rows] == [1.0, -1.0, 1.0, 0.0, 1.5, -0.25]
    assert [r["importance"] for r in rows] == [1.0] * 6
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["tag"] is None for r in rows)


def test_svmlight_features_bias_qid_order_repeats_zeros(parse):
    b = bias_slot(18)
    rows = parse(b"1 qid:3 1:0.5 7:2\n"          # qid is not a feature
                 b"-1 7:1 3:2 7:0.5 1:1\n"       # any order; repeated index summed
                 b"1 1:0 2:0.0 3:-0 4:0e5 5:1\n"  # explicit zeros dropped
                 b"1 0:4 262144:1 262145:2\n",    # index 0 allowed; indices are masked to 18 bits
                 fmt="svmlight", bits=18)
    assert xs(rows) == [{1: 0.5, 7: 2.0, b: 1.0},
                        {7: 1.5, 3: 2.0, 1: 1.0, b: 1.0},
                        {5: 1.0, b: 1.0},
                        {0: 5.0, 1: 2.0, b: 1.0}]


@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_repeats_summed_in_line_order_in_rows_longer_than_the_merge_table(parse, block_size):
    # Rows of more than 2048 features are merged by sorting instead of the merge table; each
    # slot's values are summed in their order in the line, as Python sums them here.
    rng = random.Random(7)
    lines = []
    expected = []
    for n in (2049, 5000, 3):
        features = [(rng.randrange(1, 700), rng.choice([0.1, 0.7, 1e-3, 3.3, 1e16, -2.5]))
                    for _ in range(n)]
        lines.append(b"1 " + b" ".join(b"%d:%r" % (i, v) for i, v in features))
        sums = {}
        for i, v in features:
            sums[i] = sums.get(i, 0.0) + v
        expected.append(sums)
    rows = parse(b"\n".join(lines) + b"\n", fmt="svmlight", bias=False, block_size=block_size)
    assert [r["x"] for r in rows] == expected
    assert list(rows[1]["x"]) == sorted(rows[1]["x"])   # the long rows come out sorted


def test_svmlight_values_and_exponents(parse):
    rows = parse(b"1 1:.5 2:5. 3:-1.25e2 4:1E-3 5:+7 6:0.1 7:123456789012345678901234\n",
                 fmt="svmlight", bias=False)
    assert rows[0]["x"] == {1: 0.5, 2: 5.0, 3: -125.0, 4: 1e-3, 5: 7.0, 6: 0.1,
                            7: pytest.approx(1.2345678901234568e23, rel=1e-15)}


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_svmlight_comments_blank_lines_and_line_numbers(tmp_path, read_rows, block_size):
    content = (b"# header comment\n"
               b"\n"
               b"1 1:1 # trailing comment 9:9\n"
               b"   \n"
               b"\t# indented comment\n"
               b"-1 2:2\t# comment\n"
               b"\n\n"
               b"1 3:3 #\n")
    path = tmp_path / "c.svm"
    path.write_bytes(content)
    rows, reader, chunks = read_rows(path, fmt="svmlight", bias=False, block_size=block_size)
    assert [r["line"] for r in rows] == [3, 6, 9]
    assert xs(rows) == [{1: 1.0}, {2: 2.0}, {3: 3.0}]
    assert sum(c.n_lines for c in chunks) == 9
    assert reader.bad_lines == 0


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_svmlight_crlf_equals_lf(parse, block_size):
    lf = b"1 1:1 2:2\n-1 3:3\n\n1 4:4 # c\n"
    crlf = lf.replace(b"\n", b"\r\n")
    a = parse(lf, name="lf.svm", block_size=block_size)
    b = parse(crlf, name="crlf.svm", block_size=block_size)
    assert a == b
    assert [r["line"] for r in b] == [1, 2, 4]


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_label_only_lines_trailing_blanks_and_no_final_newline(parse, block_size):
    b = bias_slot(18)
    rows = parse(b"1\n-1 \n+1\t# only a label\n1 1:1   \t\n0 2:2 \r\n-1 3:3", fmt="svmlight",
                 block_size=block_size)
    assert [r["label"] for r in rows] == [1, -1, 1, 1, 0, -1]
    assert xs(rows) == [{b: 1.0}, {b: 1.0}, {b: 1.0}, {1: 1.0, b: 1.0}, {2: 2.0, b: 1.0},
                        {3: 3.0, b: 1.0}]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5, 6]
    no_bias = parse(b"1\n-1 \n", fmt="svmlight", bias=False, block_size=block_size)
    assert xs(no_bias) == [{}, {}]


@pytest.mark.parametrize("bits", [1, 4, 10, 18, 24, 30])
def test_bias_slot_and_value(parse, bits):
    rows = parse(b"1 5:2\n", fmt="svmlight", bits=bits)
    mask = (1 << bits) - 1
    expected = {5 & mask: 2.0}
    expected[CONSTANT & mask] = expected.get(CONSTANT & mask, 0.0) + 1.0
    assert rows[0]["x"] == expected
    assert parse(b"1 5:2\n", fmt="svmlight", bits=bits, bias=False)[0]["x"] == {5 & mask: 2.0}


@pytest.mark.parametrize("block_size", [7, 64, 100])
def test_line_longer_than_the_block(parse, block_size):
    long_line = b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 201))
    content = b"-1 1:1\n" + long_line + b"\n\n-1 2:2\n" + long_line
    small = parse(content, name="long.svm", bias=False, block_size=block_size)
    assert len(small) == 4
    assert small[1]["x"] == {i: float(i) for i in range(1, 201)}
    assert [r["line"] for r in small] == [1, 2, 4, 5]
    assert small == parse(content, name="long2.svm", bias=False)


# ---------------------------------------------------------------- compressed inputs and stdin

SAMPLE_SVM = b"".join(b"%d 1:%d %d:0.5 # c\n" % (1 if i % 3 else -1, i, i + 2)
                     for i in range(1, 300))


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress],
                         ids=["gzip", "bzip2", "xz"])
def test_compressed_input_detected_by_magic_bytes(parse, compress):
    plain = parse(SAMPLE_SVM, name="plain.txt")
    packed = parse(compress(SAMPLE_SVM), name="packed.txt", block_size=64)
    assert len(plain) == 299
    assert packed == plain


def test_gzip_with_multiple_members(parse):
    half = len(SAMPLE_SVM) // 2
    cut = SAMPLE_SVM.index(b"\n", half) + 1
    data = gzip.compress(SAMPLE_SVM[:cut]) + gzip.compress(SAMPLE_SVM[cut:])
    assert parse(data, name="two.gz") == parse(SAMPLE_SVM, name="one.svm")


_STDIN_SCRIPT = r"""
import json, sys
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader
rows = []
for chunk in ChunkReader(["-"], fmt=sys.argv[1], features=FeatureSpace(),
                         block_size=int(sys.argv[2])):
    for i in range(chunk.n_examples):
        s, e = int(chunk.indptr[i]), int(chunk.indptr[i + 1])
        rows.append([chunk.labels[i], int(chunk.line_numbers[i]),
                     sorted(zip(chunk.indices[s:e].tolist(), chunk.values[s:e].tolist())),
                     chunk.source])
print(json.dumps(rows))
"""


@pytest.mark.parametrize("compressed", [False, True])
def test_stdin_dash(parse, compressed):
    data = gzip.compress(SAMPLE_SVM) if compressed else SAMPLE_SVM
    proc = subprocess.run([sys.executable, "-c", _STDIN_SCRIPT, "auto", "64"], input=data,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    got = json.loads(proc.stdout)
    expected = parse(SAMPLE_SVM, name="stdin.svm")
    assert [(g[0], g[1], [tuple(p) for p in g[2]]) for g in got] == \
        [(r["label"], r["line"], sorted(r["x"].items())) for r in expected]
    assert {g[3] for g in got} == {"<stdin>"}


# ---------------------------------------------------------------- VW syntax

def test_vw_label_importance_tag(parse, vw_slot):
    b = bias_slot(18)
    rows = parse(b"1 2.5 'mytag |f a\n"
                 b"-1 'only_tag |f a\n"
                 b"1 1.0 zebra|f a\n"            # a token touching '|' after the label is the tag
                 b"-1 0.5 0.2 'base_given |f a\n"  # VW's third number (base) is accepted
                 b"0 |f a\n",
                 fmt="vw")
    fa = vw_slot(b"f", b"a", 18)
    assert [r["label"] for r in rows] == [1, -1, 1, -1, 0]
    assert [r["importance"] for r in rows] == [2.5, 1.0, 1.0, 0.5, 1.0]
    assert [r["tag"] for r in rows] == ["mytag", "only_tag", "zebra", "base_given", None]
    assert xs(rows) == [{fa: 1.0, b: 1.0}] * 5


def test_vw_namespaces_values_and_scales(parse, vw_slot):
    b = bias_slot(18)
    rows = parse(b"1 | a b:2 |ns:2 a:3 c |n2:0.5 a:-4 871277810810 1234567890123456789012345\n",
                 fmt="vw")
    s = lambda ns, f: vw_slot(ns, f, 18)  # noqa: E731
    expected = {}
    for slot, value in [(s(b"", b"a"), 1.0), (s(b"", b"b"), 2.0), (s(b"ns", b"a"), 6.0),
                        (s(b"ns", b"c"), 2.0), (s(b"n2", b"a"), -2.0),
                        (s(b"n2", b"871277810810"), 0.5),
                        (s(b"n2", b"1234567890123456789012345"), 0.5), (b, 1.0)]:
        expected[slot] = expected.get(slot, 0.0) + value
    assert rows[0]["x"] == expected


def test_vw_numeric_features_are_integers_plus_namespace_seed(parse, vw_hashstring):
    rows = parse(b"1 | 5 0 42\n1 |w 2005 871277810810\n", fmt="vw", bits=30, bias=False)
    mask = (1 << 30) - 1
    assert rows[0]["x"] == {5: 1.0, 0: 1.0, 42: 1.0}
    seed = vw_hashstring(b"w", 0)
    assert rows[1]["x"] == {(2005 + seed) & mask: 1.0, (871277810810 + seed) & mask: 1.0}


def test_vw_repeated_features_summed_and_zeros_dropped(parse, vw_slot):
    rows = parse(b"1 |f a a:2 b:0 |g:0 a |h a:1 a:-1\n", fmt="vw", bias=False)
    # a:1 + a:-1 cancel to zero after merging; the row must not hold anything else.
    expected = {vw_slot(b"f", b"a", 18): 3.0}
    got = {k: v for k, v in rows[0]["x"].items() if v != 0.0}
    assert got == expected
    assert set(rows[0]["x"]) <= {vw_slot(b"f", b"a", 18), vw_slot(b"h", b"a", 18)}


def test_vw_unlabeled_lines(parse, vw_slot):
    rows = parse(b"|f a\n 'tag_only |f a\n", fmt="vw")
    assert all(math.isnan(r["label"]) for r in rows)
    assert [r["tag"] for r in rows] == [None, "tag_only"]
    assert xs(rows) == [{vw_slot(b"f", b"a", 18): 1.0, bias_slot(18): 1.0}] * 2


def test_vw_crlf_tabs_and_empty_namespaces(parse, vw_slot):
    rows = parse(b"1\t|f\ta  b\r\n-1 |w\r\n\r\n1 |\n", fmt="vw", block_size=64)
    b = bias_slot(18)
    assert xs(rows) == [{vw_slot(b"f", b"a", 18): 1.0, vw_slot(b"f", b"b", 18): 1.0, b: 1.0},
                        {b: 1.0}, {b: 1.0}]
    assert [r["line"] for r in rows] == [1, 2, 4]


@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_format_auto_detection(tmp_path, read_rows, block_size):
    vw = tmp_path / "a.vw"
    vw.write_bytes(b"1 'x |f a b:2\n-1 |g c\n")
    svm = tmp_path / "b.svm"
    svm.write_bytes(b"\n# comment\n1 1:1 2:2\n-1 3:1\n")
    rows_auto, reader, _ = read_rows([vw, svm], fmt="auto", block_size=block_size)
    assert reader.formats_seen == {"vw", "svmlight"}
    assert rows_auto == read_rows(vw, fmt="vw")[0] + read_rows(svm, fmt="svmlight")[0]


def test_format_auto_svmlight_with_bar_in_trailing_comment(parse):
    # A valid svmlight file whose comment holds a '|' is still svmlight (as with --format svmlight).
    content = b"1 1:1 # source: a|b\n-1 2:1\n"
    assert parse(content, name="a.svm", fmt="auto") == parse(content, name="b.svm", fmt="svmlight")


def test_unknown_format_is_an_error():
    with pytest.raises(StreamherdError, match="json"):
        ChunkReader(["x"], fmt="json", features=FeatureSpace())


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(StreamherdError, match="nope.svm"):
        list(ChunkReader([str(tmp_path / "nope.svm")], features=FeatureSpace()))


# ---------------------------------------------------------------- independent oracle on random data

def _random_svmlight(rng: random.Random, n_lines=400):
    """Random svmlight text exercising the whole syntax; returns bytes."""
    labels = ["+1", "-1", "1", "0", "1.5", "-2", "3e0"]
    lines = []
    for _ in range(n_lines):
        r = rng.random()
        if r < 0.05:
            lines.append(rng.choice(["", "   ", "\t", "# a comment | with a bar", "  # x 1:2"]))
            continue
        parts = [rng.choice(labels)]
        if rng.random() < 0.1:
            parts.append(f"qid:{rng.randrange(100)}")
        used = []
        for _ in range(rng.randrange(0, 12)):
            if used and rng.random() < 0.15:
                index = rng.choice(used)           # repeated index
            else:
                index = rng.randrange(0, 1 << 20)  # masked to 18 bits: collisions too
            used.append(index)
            value = rng.choice([
                f"{rng.uniform(-10, 10):.4f}", f"{rng.randrange(1, 100)}", "0", "0.0", "-0",
                f"{rng.uniform(0, 1):.3e}", f".{rng.randrange(1, 99)}", f"{rng.randrange(1, 9)}.",
            ])
            parts.append(f"{index}:{value}")
        sep = rng.choice([" ", "\t", "  "])
        line = sep.join(parts)
        if rng.random() < 0.1:
            line += rng.choice([" ", "\t", " \t "])
        if rng.random() < 0.1:
            line += " # comment 5:5 |"
        lines.append(line)
    eol = "\r\n" if rng.random() < 0.3 else "\n"
    text = eol.join(lines)
    if rng.random() < 0.7:
        text += eol
    return text.encode()


def _oracle_svmlight(text: bytes, bits, bias):
    """Pure-Python svmlight parse: [(line, label, {slot: value})]."""
    mask = (1 << bits) - 1
    rows = []
    for number, raw in enumerate(text.split(b"\n"), start=1):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        tokens = line.split(b"#", 1)[0].split()
        if not tokens:
            continue
        label = float(tokens[0])
        x = {}
        for token in tokens[1:]:
            key, value = token.split(b":")
            if key == b"qid":
                continue
            value = float(value)
            if value == 0.0:
                continue
            slot = int(key) & mask
            x[slot] = x.get(slot, 0.0) + value
        if bias:
            x[CONSTANT & mask] = x.get(CONSTANT & mask, 0.0) + 1.0
        rows.append((number, label, x))
    return rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_random_svmlight_against_pure_python_oracle(parse, seed, block_size):
    rng = random.Random(seed)
    text = _random_svmlight(rng)
    bias = seed % 2 == 0
    rows = parse(text, name=f"r{seed}.svm", fmt="svmlight", bits=18, bias=bias,
                 block_size=block_size)
    expected = _oracle_svmlight(text, 18, bias)
    assert len(rows) == len(expected)
    for r, (line, label, x) in zip(rows, expected):
        assert r["line"] == line
        assert r["label"] == label
        assert r["x"].keys() == x.keys(), f"line {line}"
        for k in x:
            assert r["x"][k] == pytest.approx(x[k], rel=1e-12, abs=1e-12), f"line {line} slot {k}"


def test_random_svmlight_against_sklearn(tmp_path, read_rows):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    rng = random.Random(42)
    lines = []
    for _ in range(300):
        indices = sorted(rng.sample(range(1, 5000), rng.randrange(0, 10)))
        feats = " ".join(f"{i}:{rng.uniform(-5, 5):.5f}" for i in indices)
        lines.append(f"{rng.choice(['-1', '1'])} {feats}".rstrip())
    path = tmp_path / "sk.svm"
    path.write_text("\n".join(lines) + "\n")
    X, y = sklearn_datasets.load_svmlight_file(str(path), zero_based=True, n_features=5000)
    X = X.tocsr()
    rows, _, _ = read_rows(path, fmt="svmlight", bits=24, bias=False)
    assert [r["label"] for r in rows] == y.tolist()
    for i, r in enumerate(rows):
        row = X.getrow(i).tocoo()
        expected = {int(c): float(v) for c, v in zip(row.col, row.data) if v != 0}
        assert r["x"] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- malformed lines

BAD_LINES = [
    ("svmlight", b"1 1:abc", "1:abc"),
    ("svmlight", b"1 2:1 3:", "3:"),
    ("svmlight", b"1 3:nan", "3:nan"),
    ("svmlight", b"1 3:NaN", "3:NaN"),
    ("svmlight", b"1 3:inf", "3:inf"),
    ("svmlight", b"1 3:-inf", "3:-inf"),
    ("svmlight", b"1 3:1e999", "3:1e999"),
    ("svmlight", b"1 abc", "abc"),
    ("svmlight", b"1 2:1 abc 3:1", "abc"),
    ("svmlight", b"1 -3:1", "-3:1"),
    ("svmlight", b"1 x:1", "x:1"),
    ("svmlight", b"1 2:1\x00", "2:1\\x00"),
    ("svmlight", b"1 \x00", "\\x00"),
    ("vw", b"1 |f a:abc", "a:abc"),
    ("vw", b"1 |f a:", "a:"),
    ("vw", b"1 |f a:nan", "a:nan"),
    ("vw", b"1 |f a:inf", "a:inf"),
    ("vw", b"1 -2 |f a", "-2"),
    ("vw", b"1 x2 |f a", "x2"),
    ("vw", b"1 1 0.5 2 |f a", "2"),
    ("vw", b"1 |f:x a", "f:x"),
    ("vw", b"1 |f a\x00b", "a\\x00b"),
]


def _bad_file(tmp_path, fmt, bad, crlf=False):
    good = b"1 1:1 2:2" if fmt == "svmlight" else b"1 |f a b:2"
    eol = b"\r\n" if crlf else b"\n"
    path = tmp_path / ("bad.svm" if fmt == "svmlight" else "bad.vw")
    path.write_bytes(eol.join([good, b"", bad, good]) + eol)
    return path


@pytest.mark.parametrize("fmt,bad,token", BAD_LINES, ids=[repr(b[1]) for b in BAD_LINES])
def test_malformed_line_is_a_one_line_error_with_file_line_and_token(tmp_path, fmt, bad, token):
    path = _bad_file(tmp_path, fmt, bad)
    with pytest.raises(StreamherdError) as info:
        list(ChunkReader([str(path)], fmt=fmt, features=FeatureSpace()))
    message = str(info.value)
    assert f"{path}:3:" in message
    assert token in message
    assert "\n" not in message


@pytest.mark.parametrize("fmt,bad,token", BAD_LINES, ids=[repr(b[1]) for b in BAD_LINES])
@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_malformed_line_skipped_and_counted_with_skip_bad(tmp_path, read_rows, fmt, bad, token,
                                                          block_size):
    path = _bad_file(tmp_path, fmt, bad, crlf=block_size == 64)
    rows, reader, chunks = read_rows(path, fmt=fmt, skip_bad=True, block_size=block_size)
    assert [r["line"] for r in rows] == [1, 4]
    assert rows[0] == {**rows[1], "line": 1}
    assert reader.bad_lines == 1
    assert sum(c.bad_lines for c in chunks) == 1
    assert sum(c.n_lines for c in chunks) == 4


# labels that are not numbers: class names for the reader, bad lines for a binary (or
# regression) task, whose label rule (labels.numbers_only) names them as the reader names any
BAD_LABELS = [
    ("svmlight", b"abc 1:1", "abc"),
    ("svmlight", b"nan 1:1", "nan"),
    ("vw", b"abc |f a", "abc"),
    ("vw", b"nan |f a", "nan"),
]


@pytest.mark.parametrize("fmt,bad,token", BAD_LABELS, ids=[repr(b[1]) for b in BAD_LABELS])
def test_a_label_no_number_is_a_one_line_error_for_numbers_only(tmp_path, fmt, bad, token):
    from streamherd.labels import numbers_only

    path = _bad_file(tmp_path, fmt, bad)
    with pytest.raises(StreamherdError) as info:
        [numbers_only(chunk, skip_bad=False) for chunk in ChunkReader([str(path)], fmt=fmt,
                                                                      features=FeatureSpace())]
    message = str(info.value)
    assert f"{path}:3:" in message
    assert f"'{token}'" in message
    assert "\n" not in message


@pytest.mark.parametrize("fmt,bad,token", BAD_LABELS, ids=[repr(b[1]) for b in BAD_LABELS])
@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_a_label_no_number_is_skipped_and_counted_by_numbers_only(tmp_path, fmt, bad, token,
                                                                  block_size):
    from streamherd.labels import numbers_only

    path = _bad_file(tmp_path, fmt, bad, crlf=block_size == 64)
    chunks = [numbers_only(chunk, skip_bad=True).copy()
              for chunk in ChunkReader([str(path)], fmt=fmt, features=FeatureSpace(), skip_bad=True,
                                       block_size=block_size)]
    assert [line for c in chunks for line in c.line_numbers.tolist()] == [1, 4]
    assert sum(c.bad_lines for c in chunks) == 1
    assert sum(c.n_lines for c in chunks) == 4


def test_error_line_number_in_a_later_block(tmp_path):
    path = tmp_path / "late.svm"
    path.write_bytes(b"1 1:1\n" * 40 + b"\n" * 9 + b"# c\n" + b"-1 5:x\n" + b"1 1:1\n" * 5)
    for block_size in (7, 64, 4 << 20):
        with pytest.raises(StreamherdError, match=r"late\.svm:51: .*'5:x'"):
            list(ChunkReader([str(path)], features=FeatureSpace(), block_size=block_size))
    rows = list(ChunkReader([str(path)], features=FeatureSpace(), block_size=64, skip_bad=True))
    assert sum(c.n_examples for c in rows) == 45
    assert sum(c.bad_lines for c in rows) == 1


# ------------------------------------------------------------ the consumer parses while it waits

def _recording_parse(started=None, release=None):
    """A parse function that records which thread parsed each block; block 0 sets ``started``
    and then waits for ``release``."""
    import threading

    parsed_by = {}

    def parse(block):
        if block == 0 and release is not None:
            started.set()
            release.wait(10)
        if block == "bad":
            raise StreamherdError("bad block")
        parsed_by[block] = threading.current_thread().name
        return f"chunk {block}"
    return parse, parsed_by


def test_consumer_parses_every_block_itself_without_workers():
    from streamherd.io.reader import _ParseJobs

    parse, parsed_by = _recording_parse()
    jobs = _ParseJobs(parse, workers=0)
    for block in range(3):
        jobs.submit(block)
    jobs.finish("end")
    got = [jobs.result(jobs.next_in_order()) for _ in range(3)]
    assert got == ["chunk 0", "chunk 1", "chunk 2"] and jobs.next_in_order() == "end"
    assert set(parsed_by.values()) == {"MainThread"}
    jobs.shutdown()


def test_consumer_waiting_for_a_block_parses_the_next_ones_and_keeps_the_order():
    import threading

    from streamherd.io.reader import _ParseJobs

    started, release = threading.Event(), threading.Event()
    parse, parsed_by = _recording_parse(started, release)
    jobs = _ParseJobs(parse, workers=1)
    jobs.submit(0)
    assert started.wait(10)   # the worker has taken block 0 and waits in it
    for block in (1, 2):
        jobs.submit(block)
    threading.Timer(0.2, release.set).start()
    first = jobs.next_in_order()
    assert jobs.result(first) == "chunk 0"   # blocks 1 and 2 were parsed meanwhile, here
    assert parsed_by[0].startswith("streamherd-parse")
    assert parsed_by[1] == parsed_by[2] == "MainThread"
    assert [jobs.result(jobs.next_in_order()) for _ in range(2)] == ["chunk 1", "chunk 2"]
    jobs.shutdown()


def test_a_parse_error_is_raised_in_input_order():
    from streamherd.io.reader import _ParseJobs

    parse, _ = _recording_parse()
    jobs = _ParseJobs(parse, workers=0)
    for block in (0, "bad", 2):
        jobs.submit(block)
    later = [jobs.next_in_order() for _ in range(3)]
    assert jobs.result(later[2]) == "chunk 2"   # parsed first, while waiting for it
    assert jobs.result(later[0]) == "chunk 0"
    with pytest.raises(StreamherdError, match="bad block"):
        jobs.result(later[1])
    jobs.shutdown()


def test_nul_byte_in_vw_tag_is_rejected(tmp_path):
    # A NUL byte never occurs in a text line (lexing.is_binary); the tag is echoed to the
    # predictions, so binary bytes there must be reported like anywhere else in the line.
    path = tmp_path / "nul.vw"
    path.write_bytes(b"1 |f a\n1 'ta\x00g |f a\n")
    with pytest.raises(StreamherdError) as info:
        list(ChunkReader([str(path)], fmt="vw", features=FeatureSpace()))
    assert f"{path}:2:" in str(info.value)
    assert "\\x00" in str(info.value)


# ---------------------------------------------------------------- the real data files

# file: (lines, label counts, max svmlight index or None, average nnz per line or None), from
# README.md
REAL_FILES = {
    "rcv1_small.train.vw.gz": (1000, {-1: 541, 1: 459}, None, 77.7),
    "rcv1_small.test.vw.gz": (500, {-1: 255, 1: 245}, None, 78.9),
    "amazon_books.vw.gz": (2000, {-1: 1000, 1: 1000}, None, 239.6),
    "amazon_dvd.vw.gz": (2000, {-1: 1000, 1: 1000}, None, 234.5),
    "amazon_electronics.vw.gz": (2000, {-1: 1000, 1: 1000}, None, 153.8),
    "amazon_kitchen.vw.gz": (2000, {-1: 1000, 1: 1000}, None, 131.7),
    "news20_comp_ibm_vs_mac.train.svm.gz": (1168, {-1: 590, 1: 578}, 21313, 109.7),
    "news20_comp_ibm_vs_mac.test.svm.gz": (777, {-1: 392, 1: 385}, 21311, 107.5),
    "news20_sci_elec_vs_med.train.svm.gz": (1185, {-1: 591, 1: 594}, 28780, 138.3),
    "news20_sci_elec_vs_med.test.svm.gz": (789, {-1: 393, 1: 396}, 28778, 135.8),
    "news20_talk_guns_vs_mideast.train.svm.gz": (1110, {-1: 546, 1: 564}, 32200, 205.7),
    "news20_talk_guns_vs_mideast.test.svm.gz": (740, {-1: 364, 1: 376}, 32192, 203.1),
    "sms_spam.vw": (5574, {-1: 4827, 1: 747}, None, 14.7),
    "spambase.train.svm": (3065, {-1: 1847, 1: 1218}, 57, 13.0),
    "spambase.test.svm": (1536, {-1: 941, 1: 595}, None, 12.6),
    "w8a.svm.gz": (49749, {-1: 48270, 1: 1479}, 300, 11.7),
    "a9a.svm.gz": (32561, {-1: 24720, 1: 7841}, 123, 13.9),
    "a9a.t.svm.gz": (16281, {-1: 12435, 1: 3846}, None, None),  # its only 123 is an explicit 0
    "agaricus.train.svm": (6513, {0: 3373, 1: 3140}, 126, 22.0),
    "agaricus.test.svm": (1611, {0: 835, 1: 776}, None, None),
    "usps.train.svm.gz": (7291,
                          dict(enumerate([1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644])),
                          256, 181.4),
    "usps.test.svm.gz": (2007, dict(enumerate([359, 264, 198, 166, 200, 160, 170, 147, 166, 177])),
                         None, 183.9),
    "mnist5k.svm.gz": (5000, {d: 500 for d in range(10)}, 779, 151.0),
    "pendigits.scale.svm": (7494, dict(zip(range(1, 11), [780, 779, 780, 719, 780, 720, 720, 778,
                                                          719, 719])), 16, 13.9),
    "pendigits.scale.t.svm": (3498, dict(zip(range(1, 11), [363, 364, 364, 336, 364, 335, 336, 364,
                                                            336, 336])), None, None),
    "dna.scale.svm": (2000, {1: 464, 2: 485, 3: 1051}, 180, 45.6),
    "dna.scale.t.svm": (1186, {1: 303, 2: 280, 3: 603}, None, None),
    "r8.train.vw.gz": (5485, {1: 1596, 2: 253, 3: 2840, 4: 41, 5: 190, 6: 206, 7: 108, 8: 251},
                       None, 59.8),
    "r8.test.vw.gz": (2189, {1: 696, 2: 121, 3: 1083, 4: 10, 5: 81, 6: 87, 7: 36, 8: 75},
                      None, 54.5),
}


def _scan(path, features=None, **kwargs):
    reader = ChunkReader([str(path)], features=features or FeatureSpace(), **kwargs)
    stats = collections.Counter()
    labels = collections.Counter()
    empty_lines = []
    positive_lines = []
    max_index = -1
    for chunk in reader:
        stats["lines"] += chunk.n_lines
        stats["examples"] += chunk.n_examples
        nnz = np.diff(chunk.indptr)
        stats["nnz"] += int(nnz.sum())
        empty_lines.extend(chunk.line_numbers[nnz == 0].tolist())
        positive_lines.extend(chunk.line_numbers[chunk.labels > 0].tolist())
        labels.update(chunk.labels.tolist())
        if chunk.indices.size:
            max_index = max(max_index, int(chunk.indices.max()))
        assert np.all(np.diff(chunk.line_numbers) > 0)
    return reader, stats, labels, empty_lines, positive_lines, max_index


def test_readme_lists_every_data_file(data_dir):
    on_disk = {p.name for p in data_dir.iterdir()
               if p.name != "README.md" and ".vocab." not in p.name}
    assert on_disk == set(REAL_FILES)


@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_file_counts_match_readme(data_dir, name):
    lines, label_counts, max_index, nnz_per_line = REAL_FILES[name]
    reader, stats, labels, empty, positives, seen_max = _scan(
        data_dir / name, features=FeatureSpace(30, bias=False))
    assert reader.formats_seen == {"vw" if ".vw" in name else "svmlight"}
    assert stats["lines"] == lines
    assert stats["examples"] == lines
    assert reader.bad_lines == 0
    assert dict(labels) == {float(k): v for k, v in label_counts.items()}
    if max_index is not None:
        assert seen_max == max_index
    if nnz_per_line is not None:
        assert abs(stats["nnz"] / lines - nnz_per_line) <= 0.051
    if name == "w8a.svm.gz":
        assert len(empty) == 4203
        assert positives == list(range(741, 2220))  # the README's block of 1479 positives
    elif name == "sms_spam.vw":
        assert len(empty) == 2


def test_real_file_same_chunks_with_small_blocks(data_dir, read_rows):
    path = data_dir / "a9a.t.svm.gz"  # trailing spaces on every line; explicit 123:0 on line 1
    big, _, _ = read_rows(path)
    small, _, chunks = read_rows(path, block_size=4096)
    assert len(chunks) > 100
    assert small == big
    assert 123 not in big[0]["x"]
