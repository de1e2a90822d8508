"""Faults of the input layer (streamherd/io): numbers with many digits, values that overflow,
CR-only line ends, files of one format read as the other, damaged compressed inputs, and the
line numbers of the bad lines a chunk skips. Values are checked against Python's float()."""
import bz2
import gzip
import lzma
import random
import re
import struct
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.io.lexing import parse_float
from streamherd.io.reader import ChunkReader, detect_format

from helpers import one_line_error

CONSTANT = 11650396


def read_error(path, features=None, **kwargs):
    """The StreamherdError reading ``path`` raises (one line)."""
    with pytest.raises(StreamherdError) as info:
        list(ChunkReader([str(path)], features=features or FeatureSpace(), **kwargs))
    message = str(info.value)
    assert "\n" not in message
    return message


def same_double(a, b):
    return struct.pack("<d", a) == struct.pack("<d", b)


# ---------------------------------------------------------------- 1. numbers, correctly rounded

@njit
def _parse_all(buf, starts, ends, values, oks):
    for i in range(len(starts)):
        values[i], oks[i] = parse_float(buf, starts[i], ends[i])


def parse_floats(strings):
    """parse_float on each string (in one buffer, each followed by a space)."""
    encoded = [s.encode() for s in strings]
    buf = np.frombuffer(b" ".join(encoded) + b" ", np.uint8)
    lengths = np.array([len(e) for e in encoded], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    values = np.empty(len(encoded))
    oks = np.empty(len(encoded), np.bool_)
    _parse_all(buf, starts, starts + lengths, values, oks)
    return values, oks


def _digits(rng, n):
    return "".join(rng.choice("0123456789") for _ in range(n))


def random_decimal(rng):
    """A decimal string of an odd shape: 17 to 40 digit mantissas, leading zeros, exponents at
    both ends of the range, subnormals, exact halfway points between doubles (and cut ones)."""
    kind = rng.randrange(6)
    if kind == 0:  # long mantissa, the point anywhere, maybe an exponent
        digits = _digits(rng, rng.randrange(17, 41))
        at = rng.randrange(len(digits) + 1)
        s = digits[:at] + "." + digits[at:]
        if rng.random() < 0.6:
            s += rng.choice("eE") + str(rng.randrange(-340, 310))
    elif kind == 1:  # the exact decimal value halfway between two doubles, maybe cut short
        x = rng.random() * 10.0 ** rng.randrange(-307, 308)
        half = Fraction(x) + Fraction(float(np.spacing(x))) / 2
        # as a decimal: numerator * 10**k // denominator is exact for a power-of-two denominator
        k = max(0, half.denominator.bit_length())
        digits = str(half.numerator * 10 ** k // half.denominator)
        s = f"{digits}e-{k}"
        if rng.random() < 0.5:
            cut = rng.randrange(1, len(digits) + 1)
            s = f"{digits[:cut]}e{len(digits) - cut - k}"
    elif kind == 2:  # subnormals, the underflow and overflow edges
        s = _digits(rng, rng.randrange(1, 30)) + "e" + str(
            rng.choice([rng.randrange(-360, -300), rng.randrange(280, 320)]))
    elif kind == 3:  # leading zeros, in the integer part and the fraction
        s = "0" * rng.randrange(0, 40) + _digits(rng, rng.randrange(1, 30))
        at = rng.randrange(len(s) + 1)
        s = s[:at] + "." + s[at:]
        if rng.random() < 0.5:
            s += "e" + rng.choice(["", "+", "-"]) + str(rng.randrange(0, 400))
    elif kind == 4:  # shortest repr of a random double (the usual output of programs)
        bits = rng.getrandbits(63)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        s = repr(x) if np.isfinite(x) else "1"
    else:  # integers of 15 to 25 digits (labels)
        s = str(rng.randrange(10 ** 14, 10 ** rng.randrange(15, 26)))
    if s.startswith("."):
        s = "0" + s
    if s.endswith(".") and rng.random() < 0.5:
        s += "0"
    return rng.choice(["", "", "-", "+"]) + s


# Known hard cases: 19 and 20 digit mantissas near 2**63 and 2**64, the two from the report,
# the edges of the subnormal and normal ranges, halfway points, 800+ digit strings.
HARD = ["3", "0.9999999999999999999", "9300000000000000000", "9223372036854775807",
        "9223372036854775808", "9999999999999999999", "18446744073709551615",
        "18446744073709551616", "99999999999999999999999", "0.99999999999999999999",
        "9007199254740993", "9007199254740992.5000000000000000001", "2.2250738585072011e-308",
        "2.2250738585072014e-308", "2.225073858507201136057409796709131975934819546351645648e-308",
        "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
        "1.7976931348623157e308", "1.7976931348623158079e308", "7.2057594037927933e16",
        "1e23", "8.98846567431158e307", "0.1", "1e-342", "1e-343", "123456789012345678901234",
        "1" + "0" * 900 + "e-850", "0." + "0" * 500 + "17976931348623157e809",
        "2.47032822920623272088284396434110686182529901307162382212792841250337753635104375932649"
        "918180817996189898282347722858865463328355177969898199387398005390939063150356595155702"
        "263922908583924491051844359318028499365361525003193704576782492193656236698636584807570"
        "015857692699037063119282795585513329278343384093519780155312465972635795746227664652728"
        "272200563740064854999770965994704540208281662262378573934507363390079677619305775067401"
        "763246736009689513405355374585166611342237666786041621596804619144672918403005300575308"
        "490487653917113865916462395249126236538818796362393732804238910186723484976682350898633"
        "885879256283027559956575244555072551893136908362547791869486679949683240497058210285131"
        "854513962138377228261454376934125320985913276672363281249e-324"]


def test_parse_float_is_correctly_rounded_against_python_float():
    rng = random.Random(20240611)
    strings = HARD + [random_decimal(rng) for _ in range(40000)]
    values, oks = parse_floats(strings)
    wrong = []
    for s, value, ok in zip(strings, values, oks):
        expected = float(s)
        if np.isinf(expected):
            if ok:
                wrong.append((s, value, "should be rejected (overflows)"))
        elif not ok or not same_double(value, expected):
            wrong.append((s, value, expected))
    assert wrong == []


def test_long_numbers_through_every_parser_path(parse, vw_slot):
    # svmlight: label and values (the scanner hands numbers over 15 digits to parse_float)
    rows = parse(b"9300000000000000000 3:0.9999999999999999999 4:12345678901234567890123\n"
                 b"-0.99999999999999999999 1:1\n", fmt="svmlight", bias=False)
    assert [r["label"] for r in rows] == [9.3e18, -1.0]
    assert rows[0]["x"] == {3: 1.0, 4: float("12345678901234567890123")}
    # VW: label, importance, namespace scale, value
    rows = parse(b"18446744073709551617 0.99999999999999999999 |ns:0.9999999999999999999 "
                 b"a:9999999999999999999\n", fmt="vw", bias=False)
    assert rows[0]["label"] == float("18446744073709551617")
    assert rows[0]["importance"] == 1.0
    assert rows[0]["x"] == {vw_slot(b"ns", b"a", 18): 1e19 * 1.0}


@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_random_long_numbers_in_files_match_python_float(parse, vw_slot, fmt, block_size):
    rng = random.Random(7 + block_size)
    lines, expected = [], []
    while len(lines) < 400:
        label = random_decimal(rng)
        value = random_decimal(rng)
        if np.isinf(float(label)) or np.isinf(float(value)) or float(value) == 0.0:
            continue
        if fmt == "svmlight":
            lines.append(f"{label} 5:{value}")
        else:
            lines.append(f"{label} |f a:{value}")
        expected.append((float(label), float(value)))
    rows = parse(("\n".join(lines) + "\n").encode(), name=f"n.{fmt}", fmt=fmt, bias=False,
                 block_size=block_size)
    slot = 5 if fmt == "svmlight" else vw_slot(b"f", b"a", 18)
    got = [(r["label"], r["x"][slot]) for r in rows]
    assert len(got) == len(expected)
    for (label, value), (want_label, want_value) in zip(got, expected):
        assert same_double(label + 0.0, want_label + 0.0) and same_double(value, want_value)


# ---------------------------------------------------------------- 2. values that overflow

OVERFLOWS = [
    ("vw", b"1 |ns:1e300 a:1e300", "a:1e300"),           # scale times value
    ("vw", b"1 |ns:-1e200 a b:1e200", "b:1e200"),
    ("vw", b"1 |f a:1e308 a:1e308", "1 |f a:1e308"),       # a repeated feature's sum
    ("svmlight", b"1 1:1e308 2:1 1:1e308", "1 1:1e308"),
    ("svmlight", b"1 7:-1.5e308 7:-1.5e308", "7:-1.5e308"),
]


@pytest.mark.parametrize("fmt,bad,token", OVERFLOWS, ids=[repr(o[1]) for o in OVERFLOWS])
def test_overflowing_products_and_sums_are_bad_values(tmp_path, read_rows, fmt, bad, token):
    good = b"1 1:1 2:2" if fmt == "svmlight" else b"1 |f a b:2"
    path = tmp_path / "over.txt"
    # the line after the bad one has repeats: the merge table must not keep the bad row's slots
    repeats = b"-1 3:1 3:2" if fmt == "svmlight" else b"-1 |f c c:2"
    path.write_bytes(b"\n".join([good, bad, repeats]) + b"\n")
    message = read_error(path, fmt=fmt)
    assert f"{path}:2: feature value out of range" in message and token in message
    rows, reader, chunks = read_rows(path, fmt=fmt, skip_bad=True, bias=False)
    assert [r["line"] for r in rows] == [1, 3]
    assert all(np.isfinite(v) for r in rows for v in r["x"].values())
    assert list(rows[1]["x"].values()) == [3.0]
    assert reader.bad_lines == 1
    assert np.concatenate([c.bad_line_numbers for c in chunks]).tolist() == [2]


def test_overflowing_sum_in_a_row_longer_than_the_merge_table(tmp_path):
    # more than 2048 features: merged by sorting, which must check its sums too
    features = b" ".join(b"%d:1" % i for i in range(1, 3000))
    path = tmp_path / "long.svm"
    path.write_bytes(b"1 " + features + b" 5:1e308 5:1e308\n")
    assert f"{path}:1: feature value out of range" in read_error(path, fmt="svmlight")


# ---------------------------------------------------------------- 3. CR-only line ends

def _oracle_lines(text):
    """Line numbers of the non-blank, non-comment lines, split as bytes.splitlines does (LF,
    CR and CRLF each end a line)."""
    return [k for k, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.strip().startswith(b"#")]


@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
@pytest.mark.parametrize("block_size", [1, 7, 64, 4 << 20])
def test_lone_cr_ends_a_line(parse, fmt, block_size):
    lines = ([b"1 1:1 2:2", b"-1 3:3", b"", b"# c", b"1 4:4 # c"] if fmt == "svmlight"
             else [b"1 |f a b:2", b"-1 |g c", b"", b"1 'tag |f d"])
    lf = b"\n".join(lines) + b"\n"
    cr = lf.replace(b"\n", b"\r")
    mixed = b"\r\n".join(lines[:2]) + b"\r" + b"\n".join(lines[2:]) + b"\r"  # CR, CRLF and LF
    expected = parse(lf, name="lf", fmt=fmt, block_size=block_size)
    assert len(expected) == len(_oracle_lines(lf))
    for text in (cr, mixed, cr[:-1]):
        rows = parse(text, name="cr", fmt=fmt, block_size=block_size)
        assert [{k: v for k, v in r.items() if k != "line"} for r in rows] == \
            [{k: v for k, v in r.items() if k != "line"} for r in expected]
        assert [r["line"] for r in rows] == _oracle_lines(text)


@pytest.mark.parametrize("block_size", [1, 5, 64, 4 << 20])
def test_lone_cr_line_numbers_in_errors_and_bad_lines(tmp_path, read_rows, block_size):
    path = tmp_path / "cr.vw"
    text = b"1 |f a\r\r-1 |f b\r\n1 |f c:x\r1 |f d\r"   # the bad line is line 4
    path.write_bytes(text)
    assert f"{path}:4: bad feature value 'c:x'" in read_error(path, block_size=block_size)
    rows, _, chunks = read_rows(path, skip_bad=True, block_size=block_size)
    assert [r["line"] for r in rows] == [1, 3, 5]
    assert np.concatenate([c.bad_line_numbers for c in chunks]).tolist() == [4]
    assert sum(c.n_lines for c in chunks) == 5


def test_complete_lines_against_python():
    # 64-byte vector steps and the byte tail: random lengths and CR/LF patterns at every offset
    from streamherd.io.block import complete_lines

    rng = random.Random(5)
    for _ in range(3000):
        n = rng.randrange(0, 300)
        raw = bytes(rng.choice(b"a \r\n\r\na") for _ in range(n))
        at_end = rng.random() < 0.5
        buf = np.frombuffer(raw + b"\r\n" * 40, np.uint8).copy()  # bytes after n: not read
        complete, newlines = complete_lines(buf, n, at_end)
        # oracle: each CR not followed by LF becomes LF, but a last CR when more may come
        text = bytearray(raw)
        for k in range(n):
            if text[k] == 13 and ((k + 1 < n and text[k + 1] != 10) or (k + 1 == n and at_end)):
                text[k] = 10
        want = n if at_end else (text.rfind(b"\n") + 1)
        assert bytes(buf[:n]) == bytes(text)
        assert (complete, newlines) == (want, text[:want].count(b"\n"))


def test_cr_inside_a_crlf_is_still_a_blank(parse):
    # "\r\r\n": a lone CR (a line end), then a CRLF (one more line end, an empty line)
    rows = parse(b"1 1:1\r\r\n-1 2:2\r\n", fmt="svmlight", bias=False)
    assert [(r["line"], r["x"]) for r in rows] == [(1, {1: 1.0}), (3, {2: 2.0})]


# ---------------------------------------------------------------- 4. format detection

def test_detect_format_takes_most_of_the_first_lines():
    svm = b"+1 1:1 2:0.5\n"
    vw = b"1 |f a b:2\n"
    assert detect_format(b"1 1:1|2 3:1\n" + svm * 5) == "svmlight"
    assert detect_format(svm + vw * 3) == "vw"
    assert detect_format(b"# c | x\n1\n\n" + svm + vw) == "svmlight"  # a tie: the first that tells
    assert detect_format(b"1\n-1\n") == "svmlight"
    assert detect_format(b"1 1:1 # a|b\n" * 3) == "svmlight"


def test_svmlight_file_whose_first_line_has_a_bar(tmp_path, read_rows, run_cli):
    path = tmp_path / "first.svm"
    path.write_bytes(b"1 1:1|2 3:1\n" + b"+1 1:1\n-1 2:1\n" * 1000)
    for skip_bad in (False, True):   # auto detection: an error even with --skip-bad
        message = read_error(path, skip_bad=skip_bad)
        assert f"{path}:1: line in VW format" in message and "--format vw" in message
    rows, _, chunks = read_rows(path, fmt="svmlight", skip_bad=True)
    assert len(rows) == 2000 and rows[0]["line"] == 2
    assert np.concatenate([c.bad_line_numbers for c in chunks]).tolist() == [1]
    proc = run_cli("train", path, "--skip-bad", "--quiet")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f"{path}:1:" in proc.stderr and "--format" in proc.stderr


@pytest.mark.parametrize("block_size", [64, 4 << 20])
def test_a_line_of_the_other_format_later_in_the_file(tmp_path, block_size):
    svm = tmp_path / "late.svm"
    svm.write_bytes(b"1 1:1\n" * 50 + b"1 |f a\n" + b"-1 2:1\n")
    vw = tmp_path / "late.vw"
    vw.write_bytes(b"1 |f a\n" * 50 + b"# c\n+1 1:1 2:3\n" + b"-1 |f b\n")
    for path, line, what, advice in ((svm, 51, "VW", "--format vw"),
                                     (vw, 52, "svmlight", "--format svmlight")):
        for skip_bad in (False, True):
            message = read_error(path, skip_bad=skip_bad, block_size=block_size)
            assert f"{path}:{line}: line in {what} format" in message and advice in message


def test_forced_vw_does_not_read_svmlight_lines_as_a_label_and_a_tag(tmp_path, read_rows):
    path = tmp_path / "svm.txt"
    path.write_bytes(b"+1 1:1\n-1 2:1 3:1\n")
    assert f"{path}:1: line in svmlight format" in read_error(path, fmt="vw")
    rows, reader, _ = read_rows(path, fmt="vw", skip_bad=True)   # forced: bad lines
    assert rows == [] and reader.bad_lines == 2


# ---------------------------------------------------------------- 5. damaged compressed inputs

TEXT = b"".join(b"%d 1:%d %d:0.5 7:1.25\n" % (1 if i % 3 else -1, i, i + 2)
               for i in range(1, 60000))


def _flipped(data, at):
    data = bytearray(data)
    data[at] ^= 0x24
    return bytes(data)


@pytest.mark.parametrize("kind,compress", [("gzip", gzip.compress), ("bzip2", bz2.compress),
                                           ("xz", lzma.compress)])
@pytest.mark.parametrize("workers", [None, 0])
def test_damaged_compressed_data_is_a_one_line_error(tmp_path, kind, compress, workers):
    packed = compress(TEXT)
    rng = random.Random(3)
    for k in range(6):   # bytes in the middle of the stream: damage every format detects
        path = tmp_path / f"damaged{k}.{kind}"
        path.write_bytes(_flipped(packed, rng.randrange(len(packed) // 4, 3 * len(packed) // 4)))
        for skip_bad in (False, True):
            message = read_error(path, workers=workers, skip_bad=skip_bad)
            assert message.startswith(f"{path}: corrupt {kind} data (") and "damaged" in message


@pytest.mark.parametrize("workers", [None, 0])
@pytest.mark.parametrize("skip_bad", [False, True])
def test_garbage_from_a_damaged_gzip_body_is_reported_as_damage(tmp_path, workers, skip_bad):
    # Stored (level 0) deflate blocks: a flipped byte is a flipped text byte, which gzip only
    # notices at the end (CRC); the parser meets the malformed line long before.
    packed = bytearray(gzip.compress(TEXT * 4, compresslevel=0))
    at = packed.index(b"7:1.25", 5000) + 2  # in the first of many blocks: "7:x.25"
    packed[at] = ord("x")
    path = tmp_path / "garbage.gz"
    path.write_bytes(packed)
    message = read_error(path, workers=workers, skip_bad=skip_bad, block_size=1 << 14)
    assert message.startswith(f"{path}: corrupt gzip data (")
    # the same malformed line in an intact file is still reported as the line
    text = bytearray(TEXT * 4)
    text[text.index(b"7:1.25", 5000) + 2] = ord("x")
    intact = tmp_path / "intact.gz"
    intact.write_bytes(gzip.compress(bytes(text)))
    if not skip_bad:
        message = read_error(intact, workers=workers, block_size=1 << 14)
        assert re.match(rf"{re.escape(str(intact))}:\d+: bad feature value '7:x.25'", message)


def test_truncated_gzip_is_a_one_line_error(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(TEXT)[:-200])
    assert read_error(path).startswith(f"{path}: corrupt gzip data (it ends early")


def test_bzip2_needs_its_whole_header(parse, tmp_path):
    # "BZh" and a digit start text too: not bzip2 without the block (or end of stream) magic
    rows = parse(b"BZh9 |f a\n", name="bzh.vw", fmt="vw")
    assert len(rows) == 1
    assert parse(bz2.compress(b""), name="empty.bz2") == []
    assert parse(bz2.compress(b"1 1:1\n"), name="one.bz2", bias=False)[0]["x"] == {1: 1.0}


def test_damaged_xz_on_the_command_line(tmp_path, run_cli):
    path = tmp_path / "damaged.svm.xz"
    packed = lzma.compress(TEXT)
    path.write_bytes(_flipped(packed, len(packed) // 2))
    proc = run_cli("train", path, "--quiet")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "corrupt xz data" in proc.stderr


# ---------------------------------------------------------------- 6. the line numbers of bad lines

@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
@pytest.mark.parametrize("block_size", [1, 64, 4 << 20])
@pytest.mark.parametrize("workers", [None, 0])
def test_chunks_carry_the_line_numbers_of_their_bad_lines(tmp_path, fmt, block_size, workers):
    rng = random.Random(block_size)
    good = [b"1 1:1 2:2", b"-1 3:0.5"] if fmt == "svmlight" else [b"1 |f a b:2", b"-1 |g c"]
    bad = [b"1 x:1", b"1 3:", b"1 1:1e400"] if fmt == "svmlight" else [b"1 |f a:x", b"x2 y |f a"]
    lines, expected_bad, expected_rows = [], [], []
    for number in range(1, 301):
        r = rng.random()
        if r < 0.15:
            lines.append(rng.choice(bad))
            expected_bad.append(number)
        elif r < 0.25:
            lines.append(rng.choice([b"", b"  ", b"# comment"]))
        else:
            lines.append(rng.choice(good))
            expected_rows.append(number)
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    reader = ChunkReader([str(path)], fmt=fmt, features=FeatureSpace(), skip_bad=True,
                         block_size=block_size,
                         workers=workers)
    rows, bad_numbers = [], []
    for chunk in reader:
        assert chunk.bad_line_numbers.dtype == np.int64
        assert len(chunk.bad_line_numbers) == chunk.bad_lines
        rows.extend(chunk.line_numbers.tolist())
        bad_numbers.extend(chunk.bad_line_numbers.tolist())
    assert rows == expected_rows
    assert bad_numbers == expected_bad
    assert reader.bad_lines == len(expected_bad)


def test_rows_dropped_for_their_label_join_the_bad_lines_in_order(tmp_path):
    # binary data: a text label is a bad line, dropped after parsing (the binary task's rule)
    from streamherd.labels import numbers_only

    path = tmp_path / "labels.svm"
    path.write_bytes(b"1 1:1\nx:1 2:2\nspam 1:1\n-1 1:1\n1 q\nham 2:1\n1 2:2\n")
    chunks = [numbers_only(chunk, skip_bad=True)
              for chunk in ChunkReader([str(path)], features=FeatureSpace(), skip_bad=True,
                                       workers=0)]
    assert [c.line_numbers.tolist() for c in chunks] == [[1, 4, 7]]
    assert [c.bad_line_numbers.tolist() for c in chunks] == [[2, 3, 5, 6]]
    assert chunks[0].bad_lines == 4


def test_select_keeps_the_bad_line_numbers_consistent(tmp_path):
    path = tmp_path / "s.svm"
    path.write_bytes(b"1 1:1\n1 x\n-1 2:1\n\n1 3:1\n1 4:1\n")
    (chunk,) = list(ChunkReader([str(path)], features=FeatureSpace(), skip_bad=True,
                                workers=0))
    assert chunk.bad_line_numbers.tolist() == [2]
    kept = chunk.select(np.array([True, False, True, False]))
    assert kept.line_numbers.tolist() == [1, 5]
    assert kept.bad_line_numbers.tolist() == [2, 3, 6] and kept.bad_lines == 3
    unchanged = chunk.select(np.array([True, False, True, True]), dropped_as_bad=False)
    assert unchanged.bad_line_numbers.tolist() == [2] and unchanged.bad_lines == 1


@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open], ids=["plain", "gz", "bz2"])
@pytest.mark.parametrize("lines", [["1 1:1 2:0.5", "-1 2:2"], ["spam |w cheap offer",
                                                               "ham |w lunch at noon"]],
                         ids=["svmlight", "vw"])
def test_a_byte_order_mark_at_a_files_start_is_skipped(tmp_path, read_rows, opener, lines):
    """A file that begins with a UTF-8 byte-order mark (Windows editors write one) made its
    first label '\\ufeff1', a class name: a binary file became a multiclass one with classes
    '\\ufeff1' and '-1', silently. It reads as the file without it, compressed or not."""
    text = "\n".join(lines) + "\n"
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text(text)
    with opener(marked, "wb") as f:
        f.write(b"\xef\xbb\xbf" + text.encode())
    def described(rows):
        return [(r["line"], r["importance"], r["x"], repr(r["label"])) for r in rows]

    rows, _, chunks = read_rows(marked)
    assert described(rows) == described(read_rows(plain)[0])
    assert chunks[0].label_token(0) == lines[0].split()[0]


def test_a_byte_order_mark_on_stdin_and_in_a_dist_train_range(tmp_path, run_cli):
    text = "".join(f"{1 if i % 3 else -1} {i % 7 + 1}:1 {i % 5 + 8}:0.5\n" for i in range(40))
    plain, marked = tmp_path / "plain.svm", tmp_path / "marked.svm"
    plain.write_text(text)
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    ours = run_cli("train", "-", "-f", tmp_path / "stdin.npz", "--quiet",
                   input=marked.read_bytes())
    assert ours.returncode == 0, ours.stderr
    assert run_cli("train", plain, "-f", tmp_path / "plain.npz", "--quiet").returncode == 0
    from streamherd.model import load_model
    np.testing.assert_array_equal(load_model(tmp_path / "stdin.npz")[1]["mean"],
                                  load_model(tmp_path / "plain.npz")[1]["mean"])
    from streamherd.distributed.shards import ByteRangeSource

    first = ByteRangeSource(str(marked), 0, 200).open()   # dist-train's first byte range
    head = bytearray(8)
    first.stream.readinto(memoryview(head))
    first.close()
    assert bytes(head) == text.encode()[:8] and first.first_line == 1


def test_a_byte_order_mark_further_on_is_named_in_the_error(tmp_path, run_cli):
    data = tmp_path / "joined.svm"
    data.write_bytes(b"1 1:1\n\xef\xbb\xbf2 1:2\n")
    proc = run_cli("train", data, "--loss", "squared", "-f", tmp_path / "m.npz")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "joined.svm:2: the line begins with a UTF-8 byte-order mark" in proc.stderr


# ---------------------------------------------------------------- 7. each format's own words

# (format, line, the message after "path:2: "): a VW feature is a name, and a VW line has
# namespaces; an svmlight feature is an index, and an svmlight line has no namespace
FORMAT_WORDS = [
    ("vw", b"1 |f a: b", "feature without a value 'a:'; expected name:value, as in a:0.5, or "
                         "the name alone for the value 1. Fix the line, or pass --skip-bad"),
    ("vw", b"1 |f b a:", "feature without a value 'a:'; expected name:value"),
    ("vw", b"1 |f 7:|g b", "feature without a value '7:'; expected name:value"),
    ("svmlight", b"1 1: 2:3", "feature index without a value '1:'; expected index:value, as in "
                              "12:0.5. Fix the line"),
    ("vw", b"1 |f a:1e308 a:1e308", "feature value out of range '1 |f a:1e308 a:1e308'; "
                                    "expected values whose products with their namespace "
                                    "scale and sums over repeated features stay finite"),
    ("svmlight", b"1 1:1e308 1:1e308", "feature value out of range '1 1:1e308 1:1e308'; "
                                       "expected values whose sums over a repeated index stay "
                                       "finite (below 1.8e308). Fix the line"),
]


@pytest.mark.parametrize("fmt, line, words", FORMAT_WORDS,
                         ids=[f"{f}:{line.decode()}" for f, line, _ in FORMAT_WORDS])
@pytest.mark.parametrize("given", [True, False])
def test_a_bad_line_is_told_in_its_formats_words(tmp_path, fmt, line, words, given):
    """A VW feature without a value was "feature index without a value 'a:'; expected
    index:value, as in 12:0.5"; an svmlight sum out of range spoke of namespace scales."""
    path = tmp_path / ("bad.txt" if not given else f"bad.{fmt}")
    path.write_bytes(b"1 |f a b:2\n" + line + b"\n" if fmt == "vw" else
                     b"1 1:1 2:2\n" + line + b"\n")
    message = read_error(path, fmt=fmt if given else "auto")
    assert message.startswith(f"{path}:2: {words}"), message


def test_no_format_gets_the_others_words():
    """Every code a format's parse kernels return, told in that format's words: no svmlight
    index in a VW line's message, no VW name or namespace in an svmlight line's (the lines of
    the other format, linecodes.OTHER_FORMAT, are told as what they are)."""
    from pathlib import Path

    from streamherd.io import linecodes

    io = Path(linecodes.__file__).parent
    returned = {name: {getattr(linecodes, code) for code in
                       re.findall(r"codes\.([A-Z_]+)", (io / f"{name}.py").read_text())
                       if isinstance(getattr(linecodes, code), int)}
                for name in ("vw", "svmlight", "block")}
    assert linecodes.MISSING_VALUE in returned["vw"]
    assert linecodes.BAD_INDEX in returned["svmlight"]
    for vw, codes in ((True, returned["vw"] | returned["block"]),
                      (False, returned["svmlight"] | returned["block"])):
        for code in codes - {linecodes.OK, *linecodes.OTHER_FORMAT}:
            text = " ".join(linecodes.message(code, vw)).lower()
            assert not ("index" in text if vw else "namespace" in text or "name:" in text), \
                (code, text)


def test_a_vw_feature_without_a_value_on_the_command_line(tmp_path, run_cli):
    data = tmp_path / "e.vw"
    data.write_bytes(b"1 |f a: b\n")
    line = one_line_error(run_cli("train", data, "-f", tmp_path / "m.npz"))
    assert line == (f"streamherd: {data}:1: feature without a value 'a:'; expected name:value, "
                    f"as in a:0.5, or the name alone for the value 1. Fix the line, or pass "
                    f"--skip-bad to skip such lines")
