"""The one-pass line scanners and SWAR number reading (io/svmlight.py scan_svmlight_line,
io/vw.py scan_vw_line, io/lexing.py fast_decimal) against the general line parsers: on random
lines full of edge cases, parse_block must give exactly what it gives with general_only=True."""
import random

import numpy as np
import pytest

from streamherd.features.rows import new_merge_table
from streamherd.features.space import FeatureSpace
from streamherd.io.block import SVMLIGHT, VW, count_newlines, parse_block
from streamherd.io.csr import allocate_outputs

NUMBERS = ["0", "1", "7", "12", "0.5", ".5", "5.", ".", "1234567", "12345678", "123456789",
           "0.1234567", "0.12345678", "1234567.1234567", "00012", "-1", "+1", "1e3", "1E-2",
           "-0", "0.0", "3.14159265358979", "1234567890123456", "nan", "inf", "", "1x", "1.2.3"]
BLANKS = [" ", " ", " ", "  ", "\t", "\r"]
NAMES = ["a", "f", "12", "1234567", "12345678", "007", "ab12", "12ab", "x y", "\x1a12", "a\x00b",
         "Ünï", "18446744073709551616", "", "999999", "1048575", "1048576", "3", "5", "9"]


def _writable(data):
    """The bytes as a writable uint8 array, as the reader's blocks are: the kernels run with the
    argument types of a real run (those the install precompiles), not a read-only copy of them."""
    return np.frombuffer(bytearray(data), np.uint8)


def _svmlight_line(rng):
    parts = [rng.choice(NUMBERS[:12] + NUMBERS[16:19] + ["1", "-1", "+1", "0"] * 6)]
    for _ in range(rng.randrange(0, 12)):
        index = rng.choice(["1", "7", "23", "999999", "1048575", "1048576", "12345678",
                            "123456789012345678", "1234567890123456789", "0"] * 3
                           + ["-3", "x", "qid"])
        value = rng.choice(NUMBERS if rng.random() < 0.2 else NUMBERS[:10])
        token = rng.choice([f"{index}:{value}"] * 30 + [index, f"{index}:", f"{index}:{value}#c"])
        parts.append(rng.choice(BLANKS) + token)
    if rng.random() < 0.1:
        parts.append(rng.choice(BLANKS) + "# comment 1:2 |")
    if rng.random() < 0.1:
        parts.append(rng.choice(BLANKS))
    return "".join(parts)


def _vw_line(rng):
    header = rng.choice(["1 ", "-1 ", "+1 ", "0 ", "0.5 ", "", "1", "1 2 ", "1 'tag ", "1 tag",
                         "1 0.5 'a b ", "x "] + ["1 ", "-1 "] * 6)
    parts = [header]
    for _ in range(rng.randrange(0, 4)):
        namespace = rng.choice(["|", "|f", "|ns1", "|12", "|f:2", "|f:x", "|\x1af", "| "])
        parts.append(namespace)
        for _ in range(rng.randrange(0, 8)):
            name = rng.choice(NAMES + ["12", "7", "1234567"] * 4)
            value = rng.choice(NUMBERS if rng.random() < 0.2 else NUMBERS[:10])
            token = rng.choice([name, f"{name}:{value}", f"{name}:{value}", f"{name}:"])
            parts.append(rng.choice(BLANKS) + token)
        parts.append(rng.choice(["", " ", "  "]))
    return "".join(parts)


def _parse(data, n, fmt, skip_bad, general_only, bits=20, strict_format=False):
    outputs = allocate_outputs(n, count_newlines(data, n), FeatureSpace(bits))
    result = parse_block(data, n, fmt, FeatureSpace(bits).kernel_params(), skip_bad, 1, outputs,
                         new_merge_table(), general_only, strict_format)
    rows, nnz = result[0], result[1]
    (labels, importance, line_numbers, indptr, indices, values,
     tag_start, tag_end, label_start, label_end, bad_line_numbers) = outputs
    labels = [repr(label) for label in labels[:rows].tolist()]  # repr: so that NaN == NaN
    return (result, labels, importance[:rows].tolist(),
            line_numbers[:rows].tolist(), indptr[:rows + 1].tolist(), indices[:nnz].tolist(),
            values[:nnz].tolist(), tag_start[:rows].tolist(), tag_end[:rows].tolist(),
            label_start[:rows].tolist(), label_end[:rows].tolist(),
            bad_line_numbers[:result[3]].tolist())


@pytest.mark.parametrize("fmt", [SVMLIGHT, VW], ids=["svmlight", "vw"])
@pytest.mark.parametrize("seed", range(6))
def test_scanners_agree_with_the_general_parsers(fmt, seed):
    rng = random.Random(seed)
    make = _svmlight_line if fmt == SVMLIGHT else _vw_line
    lines = [make(rng) if rng.random() < 0.95 else rng.choice(["", "  ", "# c", " #x"])
             for _ in range(3000)]
    text = "\n".join(lines).encode("utf-8") + rng.choice([b"\n", b"\r\n", b""])
    # Bytes after n are digits: a SWAR read must never take them as part of the last number.
    data = _writable(text + b"1234567890" * 3)
    for n in (len(text), len(text) - 1, len(text) - 5):
        for skip_bad in (True, False):
            # 4 bits: slots wrap around the mask and collide within most rows
            for bits in (20, 4):
                fast = _parse(data, n, fmt, skip_bad, False, bits)
                general = _parse(data, n, fmt, skip_bad, True, bits)
                assert fast == general
    # Well-formed lines only: nothing stops early, every row is compared.
    good = _parse(data, len(text), fmt, True, general_only=False)
    assert good[0][0] > 750
    # the scanners only read the block (the reader's blocks are writable, so nothing else
    # would tell)
    assert data.tobytes() == text + b"1234567890" * 3


@pytest.mark.parametrize("fmt", [SVMLIGHT, VW], ids=["svmlight", "vw"])
@pytest.mark.parametrize("seed", range(3))
def test_scanners_agree_on_lines_of_the_other_format(fmt, seed):
    # svmlight lines among VW ones and VW lines among svmlight ones (linecodes.OTHER_FORMAT),
    # skipped as bad lines or stopping the block (strict_format): the same either way, with the
    # same bad line numbers
    rng = random.Random(100 + seed)
    lines = []
    for _ in range(2000):
        own = rng.random() < 0.9
        make = _svmlight_line if (fmt == SVMLIGHT) == own else _vw_line
        lines.append(make(rng))
    text = "\n".join(lines).encode("utf-8") + b"\n"
    data = _writable(text + b"1234567890" * 3)
    for skip_bad in (True, False):
        for strict in (True, False):
            fast = _parse(data, len(text), fmt, skip_bad, False, strict_format=strict)
            assert fast == _parse(data, len(text), fmt, skip_bad, True, strict_format=strict)
    skipped = _parse(data, len(text), fmt, True, False)
    assert skipped[0][3] == len(skipped[-1]) > 100  # bad lines counted and numbered


@pytest.mark.parametrize("fmt", [SVMLIGHT, VW], ids=["svmlight", "vw"])
def test_scanners_on_the_usual_lines(fmt):
    prefix = b"" if fmt == SVMLIGHT else b"|f "
    text = b"".join(b"%s %s%s\n" % (label, prefix, b" ".join(
        b"%d:%s" % (i * 37 + k, v) for k, v in enumerate([b"1", b"0.25", b"2.5", b"3", b"0.1"])))
        for i, label in enumerate([b"1", b"-1"] * 500))
    data = _writable(text)
    assert _parse(data, len(text), fmt, False, False) == _parse(data, len(text), fmt, False, True)


# Feature tokens around the scanner's limits: 7 and 8 digit runs, tokens of 15 and 16 bytes and
# longer (the first separator is looked for in the 16 bytes at a token's start), a '#', a ':' or
# a control byte right after the value, and blanks other than one space between features.
EDGE_TOKENS = ["1:1", "1234567:1", "12345678:1", "1:1234567", "1:12345678", "1:1234567.1234567",
               "1234567:1.123456", "1234567:12.12345", "1234567:123.12345", "1:1234567.123456",
               "12:1234567.123456", "1:1234567.123456#c", "1:1234567.123456x", "12:1234567.12345#",
               "1:1.5#c", "1:1.5:2", "1:.5", "1:5.", "1:.", "1:", ":1", "1::1", "1:1.1.1",
               "999999:0.25\x01", "999999:0.25\x0b", "1:0", "1:0.0", "3:0.1234567", "qid:3",
               # the 16-byte vector reading: 8-digit numbers, tokens of 15 and 16 bytes, a '.'
               # in the index, bytes above 0x7f
               "12345678:12345.6", "1:12345.678", "1:123456.789", "123:1234.5678",
               "12345678:12.4567", "1234567:1234.567", "1.5:2", "1:2\x80", "\xc3\xa9:1"]


@pytest.mark.parametrize("seed", range(3))
def test_svmlight_scanner_token_edges(seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        tokens = [rng.choice(["1", "-1", "0.5"])]
        for _ in range(rng.randrange(0, 8)):
            tokens.append(rng.choice(["1:1", "23:0.5", "456789:2.5"] * 4 + EDGE_TOKENS))
        gaps = [rng.choice([" "] * 12 + ["  ", "\t", " \r ", "\r"]) for _ in tokens]
        line = "".join(g + t for g, t in zip(gaps, tokens))[1:]
        lines.append(line + rng.choice(["", "", " ", "\r", " # c 1:2"]))
    text = "\n".join(lines).encode("utf-8")
    data = _writable(text + b"1234567890" * 3)
    # Every cut near the end: the last feature's bytes leave the fast path one by one.
    for n in range(len(text) - 40, len(text) + 1):
        for skip_bad in (True, False):
            assert (_parse(data, n, SVMLIGHT, skip_bad, False)
                    == _parse(data, n, SVMLIGHT, skip_bad, True))
    good = _parse(data, len(text), SVMLIGHT, True, False)
    assert good[0][0] > 100
    assert data.tobytes() == text + b"1234567890" * 3   # read, never written


# VW feature tokens around the scanner's limits: names of 7, 8 and more digits alone and with
# values, tokens of 15 and 16 bytes and longer (ending in a byte that is not a separator), a '|',
# ':' or control byte right after a name or value, names that are not numbers, and the values
# the general parser decides.
VW_EDGE_TOKENS = ["1", "1234567", "12345678", "123456789012", "1:1", "1234567:1", "12345678:1",
                  "1:1234567", "1:12345678", "1:1234567.1234567", "1234567:1.123456",
                  "1234567:12.12345", "1234567:123.12345", "12:1234567.123456",
                  "123456789012345", "1234567890123456", "7|", "7:1.5|", "7:1.5|g", "12:0.5|ab",
                  "7\x01", "7:1.5\x01", "7:2\x0b", "a", "a:2", "12a", "12a:0.5", "a12:1", ":1",
                  ":", "1:", "1::1", "1:1:2", "1:.", "1:.5", "1:5.", "1:1.1.1", "1:-1", "1:+2",
                  "1:1e3", "1:0", "1:0.0", "3:0.1234567", "\x1a12", "Ünï:2", "007:3",
                  "1234567:1234567.x", "1234567:12.12345x", "12345678:1.12345|",
                  "12345678:123456.1", "12345678", "123456789", "12345678:12345.6",
                  "1:12345.678", "1.5", "1.5:2", "7\x80", "12345678:12.4567"]


@pytest.mark.parametrize("seed", range(3))
def test_vw_scanner_token_edges(seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        parts = [rng.choice(["1 ", "-1 ", "0.5 ", "", "1 'tag ", "2 "])]
        for _ in range(rng.randrange(1, 4)):
            parts.append(rng.choice(["|f", "|f", "|", "|ns1", "|12", "| ", "|f:2"]))
            for _ in range(rng.randrange(0, 8)):
                token = rng.choice(["1:1", "23:0.5", "456789:2.5", "7", "31"] * 12
                                   + VW_EDGE_TOKENS)
                parts.append(rng.choice([" "] * 12 + ["  ", "\t", " \r ", "\r"]) + token)
            parts.append(rng.choice(["", "", " ", "\t"]))
        lines.append("".join(parts) + rng.choice(["", "", " ", "\r"]))
    text = "\n".join(lines).encode("utf-8")
    data = _writable(text + b"1234567890" * 3)
    # Every cut near the end: the last feature's bytes leave the fast path one by one.
    for n in range(len(text) - 40, len(text) + 1):
        for skip_bad in (True, False):
            for bits in (20, 4):
                assert (_parse(data, n, VW, skip_bad, False, bits)
                        == _parse(data, n, VW, skip_bad, True, bits))
    good = _parse(data, len(text), VW, True, False)
    assert good[0][0] > 100


# The two readings of the usual token, 16-byte vectors (io/simd.py, where the CPU has them) and
# 8-byte words (lexing.swar_*, everywhere), against the byte-by-byte reading on random tokens.
TOKEN_BYTES = "0123456789" * 4 + "::..a|\x01\x80 "


def _random_token(rng):
    parts = ["".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 10)))]
    if rng.random() < 0.85:
        parts.append(":")
        parts.append("".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 9))))
        if rng.random() < 0.6:
            parts.append(".")
            parts.append("".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 9))))
    token = "".join(parts)
    if rng.random() < 0.15:  # a byte anywhere that is not part of the usual shape
        at = rng.randrange(0, len(token) + 1)
        token = token[:at] + rng.choice(TOKEN_BYTES) + token[at:]
    return token.encode("latin-1") + rng.choice([b" ", b"\n", b"\t", b"\r", b"\x01", b"|"])


@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
def test_vector_and_word_readers_agree_with_the_byte_reader(fmt):
    from numba import njit

    from streamherd.io import simd, svmlight, vw

    if fmt == "svmlight":
        vector, words = svmlight._vector_feature, svmlight._swar_feature
        slow = svmlight._slow_feature
    else:
        vector, words = vw._vector_vw_feature, vw._swar_vw_feature

        @njit
        def slow(buf, s, n):   # a name the fast readings take is all digits: its number
            ok, end, _, all_digits, number, value = vw._slow_vw_feature(buf, s, n)
            return ok and all_digits, end, number, value

    @njit
    def read(buf, s, n, use_vector):
        if use_vector:
            return vector(buf, s)
        return words(buf, s)

    @njit
    def read_slowly(buf, s, n):
        return slow(buf, s, n)

    rng = random.Random(11)
    readers = [False] + ([True] if simd.AVAILABLE else [])
    taken = {r: 0 for r in readers}
    for _ in range(4000):
        token = _random_token(rng)
        buf = _writable(token + b"9876543210" * 4)
        # the token's end; without a separator ('|' last, then digits) no reading takes it
        n = next((i for i, byte in enumerate(token) if byte <= 0x20), None)
        for use_vector in readers:
            ok, end, number, value = read(buf, 0, len(buf), use_vector)
            if not ok:
                continue
            assert n is not None, token
            taken[use_vector] += 1
            slow_ok, slow_end, slow_number, slow_value = read_slowly(buf, 0, n)
            assert slow_ok and (end, int(number), value) == (slow_end, int(slow_number),
                                                            slow_value), token
            assert end == n, token
    # about a third of the random tokens have the usual shape: both readings take them
    assert all(count > 1000 for count in taken.values()), taken
