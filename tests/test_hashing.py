"""VW-compatible feature hashing: murmur3_32 against the mmh3 package, hashstring's integer rule,
and slot-by-slot agreement with Vowpal Wabbit's own ``--audit`` output."""
import random
import subprocess
import sys

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamherd.features.hashing import VW_CONSTANT_HASH, hashstring, murmur3_32


def _buf(data: bytes):
    return np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)


# ---------------------------------------------------------------- murmur3_32

def test_murmur3_matches_mmh3_on_random_bytes_of_every_length():
    rng = random.Random(1234)
    for length in range(0, 65):
        for _ in range(8):
            data = bytes(rng.randrange(256) for _ in range(length))
            seed = rng.randrange(2 ** 32)
            got = int(murmur3_32(_buf(data), 0, len(data), seed))
            assert got == mmh3.hash(data, seed, signed=False), (data, seed)


def test_murmur3_hashes_only_the_given_range_of_a_larger_buffer():
    rng = random.Random(99)
    big = bytes(rng.randrange(256) for _ in range(200))
    buf = _buf(big)
    for _ in range(200):
        start = rng.randrange(0, 150)
        end = start + rng.randrange(0, 50)
        seed = rng.randrange(2 ** 32)
        expected = mmh3.hash(big[start:end], seed, signed=False)
        assert int(murmur3_32(buf, start, end, seed)) == expected


def test_murmur3_known_vectors():
    # Published MurmurHash3_x86_32 test vectors (independent of mmh3 and of the code under test).
    assert int(murmur3_32(_buf(b""), 0, 0, 0)) == 0
    assert int(murmur3_32(_buf(b""), 0, 0, 1)) == 0x514E28B7
    assert int(murmur3_32(_buf(b""), 0, 0, 0xFFFFFFFF)) == 0x81F16F39
    assert int(murmur3_32(_buf(b"\xff\xff\xff\xff"), 0, 4, 0)) == 0x76293B50
    assert int(murmur3_32(_buf(b"\x21\x43\x65\x87"), 0, 4, 0)) == 0xF55B516B
    assert int(murmur3_32(_buf(b"\x21\x43\x65\x87"), 0, 4, 0x5082EDEE)) == 0x2362F9DE
    assert int(murmur3_32(_buf(b"\x21\x43\x65"), 0, 3, 0)) == 0x7E4A8634
    assert int(murmur3_32(_buf(b"\x21\x43"), 0, 2, 0)) == 0xA0F7B07A
    assert int(murmur3_32(_buf(b"\x21"), 0, 1, 0)) == 0x72661CF4
    assert int(murmur3_32(_buf(b"\x00\x00\x00\x00"), 0, 4, 0)) == 0x2362F9DE


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=0, max_size=64), seed=st.integers(0, 2 ** 32 - 1))
def test_murmur3_property(data, seed):
    assert int(murmur3_32(_buf(data), 0, len(data), seed)) == mmh3.hash(data, seed, signed=False)


# ---------------------------------------------------------------- hashstring

@pytest.mark.parametrize("name", [b"0", b"7", b"00", b"007", b"2005", b"123456789",
                                  b"871277810810",                 # 12 digits (sms_spam)
                                  b"1234567890123456789012345",    # 25 digits: wraps mod 2**64
                                  b"18446744073709551615",         # 2**64 - 1
                                  b"18446744073709551616"])        # 2**64 -> 0
@pytest.mark.parametrize("seed", [0, 1, 5, 0xDEADBEEF, 2 ** 32 - 1, 2 ** 63 + 12345])
def test_hashstring_all_digit_names_are_integers_plus_seed(name, seed):
    expected = (int(name) + seed) % 2 ** 64
    # The parser passes namespace seeds as uint64 (a digit namespace can exceed 2**63).
    assert int(hashstring(_buf(name), 0, len(name), np.uint64(seed))) == expected


def test_hashstring_digit_names_do_not_overflow_or_go_through_float():
    # 2**53 + 1 is not representable in float64: any float detour would lose the last digit.
    name = str(2 ** 53 + 1).encode()
    assert int(hashstring(_buf(name), 0, len(name), 0)) == 2 ** 53 + 1
    name = b"9" * 30
    assert int(hashstring(_buf(name), 0, len(name), 3)) == (int(name) + 3) % 2 ** 64


@pytest.mark.parametrize("name", [b"a", b"abc", b"-1", b"1.5", b"+3", b"12a", b"a12",
                                  b"1e5", b"\xc3\xa9t\xc3\xa9", b"<num>", b"good_movie", b"x" * 40])
@pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF, 2 ** 32 - 1])
def test_hashstring_other_names_are_murmur3(name, seed):
    assert int(hashstring(_buf(name), 0, len(name), seed)) == mmh3.hash(name, seed, signed=False)


@pytest.mark.parametrize("name,trimmed", [(b" 12", b"12"), (b"\x1a12\x1a", b"12"),
                                          (b"\x1a?maybe", b"?maybe"), (b"x\x1a", b"x"),
                                          (b"\x1a\x1a", b"")])
def test_hashstring_trims_bytes_up_to_space_like_vowpal_wabbit(name, trimmed):
    # VW's hashstring trims bytes <= 0x20 at both ends before the digit test and murmur3.
    seed = 77
    expected = (int(trimmed or b"0") + seed if trimmed.isdigit() or not trimmed else
                mmh3.hash(trimmed, seed, signed=False))
    assert int(hashstring(_buf(name), 0, len(name), seed)) == expected


def test_hashstring_wide_seed_is_truncated_to_32_bits_for_murmur():
    # A namespace named by digits has a seed beyond 32 bits; murmur takes its low 32 bits
    # (uint32_t).
    seed = 99999999999
    expected = mmh3.hash(b"word", seed % 2 ** 32, signed=False)
    assert int(hashstring(_buf(b"word"), 0, 4, seed)) == expected


@settings(max_examples=300, deadline=None)
@given(name=st.one_of(st.binary(min_size=1, max_size=40),
                      st.text(alphabet="0123456789", min_size=1, max_size=30).map(str.encode)),
       seed=st.integers(0, 2 ** 32 - 1))
def test_hashstring_property(name, seed, vw_hashstring):
    assert int(hashstring(_buf(name), 0, len(name), seed)) == vw_hashstring(name, seed)


def test_constant_is_vw_constant():
    assert VW_CONSTANT_HASH == 11650396


# ---------------------------------------------------------------- against Vowpal Wabbit itself

def _vw_audit(path, bits=18):
    """Per example: dict slot -> summed value, from ``vw --audit`` (zero values dropped)."""
    pytest.importorskip("vowpalwabbit")
    proc = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(path), "-b", str(bits),
                           "--audit", "--quiet"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    rows = []
    for line in proc.stdout.decode("latin-1").split("\n"):
        if not line.startswith("\t"):
            continue
        row = {}
        for token in line.strip("\t").split("\t"):
            # ns^feature:slot:value:weight@...   (bare namespace: feature:slot:value:...)
            assert "@" in token, token
            _name, slot, value, _weight = token.rsplit(":", 3)
            slot, value = int(slot), float(value)
            row[slot] = row.get(slot, 0.0) + value
        rows.append({k: v for k, v in row.items() if v != 0.0})
    return rows


VW_LINES = [
    b"1 'first |ns1:2 a b:3 123 871277810810:0.5 |ns2 x:-1.5 7 |  c d:2",
    b"-1 | 5 zz:0.25 |ns1 a a",
    b"1 1.0 zebra|f a 1234567890123456789012345 |g:0.5 871277810810 q:4",
    b"-1 2.5 |a 0 00 007 ab:0 000123 |b a |",
    b"1 |x 5 |y 5 |123 5 q",
    b"|f 3 4 0.5:2",
    b"-1 0.5 'tag2 |Aa Bb:1e-2 bB:-0.75 |bb Bb",
    b"1 |ns1 good_movie <num> don't x-y a.b",
    b"1 |w 2005 2005 2005:0.5 18446744073709551615 18446744073709551616",
]


def _compare_with_vw(tmp_path, lines, bits=18):
    path = tmp_path / "audit.vw"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = _vw_audit(path, bits)
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader

    got = []
    for chunk in ChunkReader([str(path)], fmt="vw", features=FeatureSpace(bits)):
        for i in range(chunk.n_examples):
            s, e = chunk.indptr[i], chunk.indptr[i + 1]
            got.append(dict(zip(chunk.indices[s:e].tolist(), chunk.values[s:e].tolist())))
    assert len(got) == len(expected) == len(lines)
    for n, (g, x) in enumerate(zip(got, expected), start=1):
        assert set(g) == set(x), f"line {n}: slots differ: {sorted(g)} vs VW {sorted(x)}"
        for slot in x:
            assert g[slot] == pytest.approx(x[slot], rel=1e-6), f"line {n} slot {slot}"


def test_slots_and_values_match_vowpal_wabbit_audit(tmp_path):
    _compare_with_vw(tmp_path, VW_LINES, bits=18)


def test_slots_match_vowpal_wabbit_audit_with_few_bits(tmp_path):
    # 10 bits: many collisions, so repeated slots must be summed like VW's weights see them.
    _compare_with_vw(tmp_path, VW_LINES, bits=10)


def test_random_vw_lines_match_vowpal_wabbit(tmp_path):
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABC0123456789_-.<>"
    lines = []
    for _ in range(60):
        parts = [rng.choice(["1", "-1"])]
        for _ in range(rng.randrange(1, 4)):
            ns = "".join(rng.choice(alphabet[:29]) for _ in range(rng.randrange(0, 4)))
            scale = f":{rng.choice(['2', '0.5', '-1', '3'])}" if ns and rng.random() < 0.3 else ""
            parts.append(f"|{ns}{scale}")
            for _ in range(rng.randrange(0, 6)):
                if rng.random() < 0.3:
                    feat = str(rng.randrange(0, 10 ** rng.randrange(1, 14)))
                else:
                    feat = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 9)))
                if feat[0] in "-.":
                    feat = "f" + feat
                value = rng.choice(["", ":2", ":0.25", ":-3", ":1.5"])
                parts.append(feat + value)
        lines.append(" ".join(parts).encode())
    _compare_with_vw(tmp_path, lines, bits=18)


def test_names_with_leading_control_bytes_hash_like_vowpal_wabbit(tmp_path):
    # Real data: amazon_books.vw.gz line 1629 holds the tokens '\x1a?maybe' and '\x1a?maybe_i'.
    # VW's hashstring skips leading bytes <= 0x20 before hashing, so both VW and a
    # VW-compatible hasher must give '\x1a?maybe' the slot of '?maybe'.
    _compare_with_vw(tmp_path, [b"1 |w \x1a?maybe ?maybe_i \x1a12 x\x1ay"], bits=18)
