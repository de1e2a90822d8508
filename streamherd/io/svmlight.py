"""svmlight/libsvm lines: ``label [qid:N] index:value ... [# comment]``, parsed a block at a
time."""
import numpy as np
from numba import njit

from streamherd.io import linecodes as codes
from streamherd.io import simd
from streamherd.io.feature_stage import add, default_namespace, number_key
from streamherd.io.lexing import (BAR, COLON, HASH, LF, MINUS, PLUS, SPACE, SWAR_REACH,
                                  fast_decimal, find_byte, is_blank, load_u8, parse_float,
                                  parse_index, simple_decimal, skip_blanks, swar_decimal,
                                  swar_digits_of, swar_token_end, token_end)

# What parse_block found on a line (see scan_svmlight_line).
ROW = 0          # an example, parsed
NOT_A_ROW = 1    # a blank or comment line, or a malformed line skipped
USE_GENERAL = 2  # a line the scanner does not take: the general line parser decides

_QID = np.frombuffer(b"qid", np.uint8)


@njit(cache=True)
def _is_qid(buf, start, end):
    if end - start != 3:
        return False
    return buf[start] == _QID[0] and buf[start + 1] == _QID[1] and buf[start + 2] == _QID[2]


@njit(cache=True, inline="always")
def is_text_label(buf, start, end):
    """A label token that is not a number is a class name (multiclass; the binary and regression
    tasks reject it, labels.numbers_only) unless it holds ':' (a feature where the label should
    be) or NUL."""
    for k in range(start, end):
        if buf[k] == COLON or buf[k] == 0:
            return False
    return end > start


@njit(cache=True)
def vw_shaped(buf, p, end):
    """Whether ``buf[p:end]`` has a '|' before any '#': a VW line, which the svmlight parser
    does not take (it stops at the '|'). Asked only of lines it rejected."""
    for k in range(p, end):
        if buf[k] == BAR:
            return True
        if buf[k] == HASH:
            return False
    return False


@njit(cache=True)
def parse_svmlight_line(buf, p, end, space, indices, values, row):
    """Parse one non-blank line, its features going to ``row`` (features/stage.py).

    Returns (code, row, token_start, token_end, label, importance, label_start, label_end,
    tag_start, tag_end), the contract of every line parser (see io/block.py).
    """
    ns = default_namespace()
    label_end = token_end(buf, p, end)
    label, ok = parse_float(buf, p, label_end)
    if not ok:
        if not is_text_label(buf, p, label_end):
            return codes.BAD_LABEL, row, p, label_end, 0.0, 1.0, p, label_end, -1, -1
        label = np.nan  # a class name: label_start/label_end keep it
    q = label_end
    while True:
        q = skip_blanks(buf, q, end)
        if q >= end or buf[q] == HASH:
            break
        # Fast path, one pass over the usual "index:digits[.digits]" token.
        index = 0
        r = q
        while r < end and 48 <= buf[r] <= 57:
            index = index * 10 + (buf[r] - 48)
            r += 1
        if q < r < end and r - q <= 18 and buf[r] == COLON:
            value, stop = simple_decimal(buf, r + 1, end)
            if stop > 0 and (stop == end or is_blank(buf[stop])):
                if value != 0.0:  # explicit zeros carry nothing (VW drops them too)
                    key = number_key(space, ns, np.uint64(index), buf, q)
                    row = add(space, indices, values, row, ns, key, value, q)
                q = stop
                continue
        # General path: qid, signs, exponents, and every malformed token.
        te = token_end(buf, q, end)
        colon = find_byte(buf, q, te, COLON)
        if colon == te:
            return codes.MISSING_COLON, row, q, te, label, 1.0, p, label_end, -1, -1
        if _is_qid(buf, q, colon):
            _, ok = parse_index(buf, colon + 1, te)
            if not ok:
                return codes.BAD_INDEX, row, q, te, label, 1.0, p, label_end, -1, -1
            q = te
            continue
        index, ok = parse_index(buf, q, colon)
        if not ok:
            return codes.BAD_INDEX, row, q, te, label, 1.0, p, label_end, -1, -1
        if colon + 1 == te:
            return codes.MISSING_VALUE, row, q, te, label, 1.0, p, label_end, -1, -1
        value, ok = parse_float(buf, colon + 1, te)
        if not ok:
            return codes.BAD_VALUE, row, q, te, label, 1.0, p, label_end, -1, -1
        if value != 0.0:
            key = number_key(space, ns, np.uint64(index), buf, q)
            row = add(space, indices, values, row, ns, key, value, q)
        q = te
    return codes.OK, row, 0, 0, label, 1.0, p, label_end, -1, -1


@njit(cache=True, inline="always")
def next_token(buf, p, n):
    """(q, next_line): q is p moved past blanks; next_line is the start of the next line when
    q is at the end of this one (a newline, or the end of the block), else -1."""
    p = skip_blanks(buf, p, n)
    if p == n:
        return p, n
    if buf[p] == LF:
        return p, p + 1
    return p, -1


@njit(cache=True, inline="always")
def _ends_number(buf, p, n):
    """A number ends at a blank, at the end of the line (LF) or at the end of the block."""
    return p == n or is_blank(buf[p]) or buf[p] == LF


# Bytes _fast_feature reads from a token's first byte: two words to find the token's end, and
# swar_decimal's reach from the value's start, at most 9 bytes in (after 8 digits and ':');
# the vector reading takes 16.
FEATURE_REACH = max(9 + SWAR_REACH, simd.TOKEN_REACH)


@njit(cache=True, inline="always")
def _vector_feature(buf, s):
    """_swar_feature by 16-byte vector instructions (io/simd.py), with 1 to 8 digits in the
    index and in the value: the same (ok, end, index, value) for every token both take."""
    ok, end, index, has_value, value = simd.digits_token(buf, s)
    return ok & (has_value == 1), end, index, value


@njit(cache=True, inline="always")
def _swar_feature(buf, s):
    """(ok, end, index, value) for the usual feature token at s, ``digits:digits[.digits]`` with
    runs shorter than 8 digits, ending at the first byte up to 0x20 in ``buf[s:s + 16]``; ok is
    False for anything else (the caller then tries _slow_feature). Reads
    buf[s:s + FEATURE_REACH].

    The token's end comes from its separator, found in two words loaded at s: the next token's
    address depends on s through one load and a few instructions only. Walking the digits
    instead (index, ':', integer part, '.', fraction, each read where the last one ended) makes
    a chain of dependent loads through every feature of the line, which the CPU cannot overlap;
    now the number conversions of successive features run in parallel.

    When ok, the digits, ':' and '.' span exactly buf[s:end], and end is the first byte up to
    0x20 (a blank, the newline, or another control byte, which the caller rejects).
    """
    end, w0 = swar_token_end(buf, s)  # s + 16 without a separator: not ok
    k, index = swar_digits_of(w0)
    colon = s + k
    ok, value, stop = swar_decimal(buf, colon + 1)
    ok &= (0 < k) & (k < 8) & (load_u8(buf, colon) == COLON) & (stop == end) & (end < s + 16)
    return ok, end, np.int64(index), value


_fast_feature = _vector_feature if simd.AVAILABLE else _swar_feature


@njit(cache=True)
def _slow_feature(buf, s, n):
    """(ok, end, index, value) for any feature token the scanner takes at s, reading nothing
    past n: an index of 1 to 18 digits, ':', a value simple_decimal takes; end is where the
    value stops, and the caller checks the byte there. For the tokens _fast_feature does not
    take (long numbers, the end of the block) and malformed ones (ok False)."""
    index = 0
    p = s
    while p < n and 48 <= buf[p] <= 57:
        index = index * 10 + (buf[p] - 48)
        p += 1
    if p == s or p - s > 18 or p == n or buf[p] != COLON:
        return False, p, index, 0.0
    value, stop = simple_decimal(buf, p + 1, n)
    return stop >= 0, stop, index, value


@njit(cache=True, nogil=True)
def scan_svmlight_line(buf, p, n, space, indices, values, row):
    """One pass over the usual line, ``label index:value ... [# comment]`` with plain decimals,
    from its first byte p, which parse_block has found is neither blank nor '#'.

    Finds the line end itself (no separate search for the newline): returns (status, next_p,
    row, label, label_start, label_end), next_p being the start of the next line, the features
    gone to ``row`` (features/stage.py).
    Any other shape (qid, signs and exponents in values, long numbers, malformed tokens)
    returns USE_GENERAL before anything is committed: the caller then runs parse_svmlight_line
    on the line, which gives the same result for every line this function accepts.
    """
    c = buf[p]
    label_start = p
    if c == MINUS or c == PLUS:
        p += 1
    label, p = fast_decimal(buf, p, n)
    if p < 0 or not _ends_number(buf, p, n):
        return USE_GENERAL, 0, row, 0.0, -1, -1
    if c == MINUS:
        label = -label
    label_end = p
    ns = default_namespace()
    while True:
        p, next_line = next_token(buf, p, n)
        if next_line >= 0:
            return ROW, next_line, row, label, label_start, label_end
        if buf[p] == HASH:
            return ROW, find_byte(buf, p, n, LF) + 1, row, label, label_start, label_end
        ok = False
        if p + FEATURE_REACH <= n:
            ok, end, index, value = _fast_feature(buf, p)
        if not ok:
            ok, end, index, value = _slow_feature(buf, p, n)
        if not ok or not _ends_number(buf, end, n):
            return USE_GENERAL, 0, row, 0.0, -1, -1
        p, row = add_feature_run(buf, p, n, space, ns, indices, values, row, end, index, value,
                                 _fast_feature)


@njit(cache=True, inline="always")
def add_feature_run(buf, p, n, space, ns, indices, values, row, end, number, value,
                    fast_feature):
    """Add the feature named by ``number`` at p, ending at ``end``, and the usual features
    after it, each after one space and read by ``fast_feature`` (_fast_feature,
    vw._fast_vw_feature): no blank skipping, no checks for the line's end, a comment or a '|'.
    Returns (p, row), p at the end byte of the last feature, a byte up to 0x20 (fast_feature's
    ok): the scanner's loop skips it if blank, ends the row at a newline, and a control byte
    fails as the next token (USE_GENERAL)."""
    while True:
        if value != 0.0:  # explicit zeros carry nothing (VW drops them too)
            key = number_key(space, ns, np.uint64(number), buf, p)
            row = add(space, indices, values, row, ns, key, value, p)
        p = end
        if p + 1 + FEATURE_REACH > n or load_u8(buf, p) != SPACE:
            return p, row
        ok, end, number, value = fast_feature(buf, p + 1)
        if not ok:
            return p, row
        p += 1   # the feature's start (its name's, for the stage)


@njit(cache=True, nogil=True)
def largest_zero_index(buf, n):
    """The largest index of an explicit zero (``index:0``, which the parsers drop) in the
    svmlight lines of ``buf[:n]``, parsed already; 0 when there is none. scikit-learn's loader
    counts its columns to the largest index written, explicit zeros included."""
    largest = 0
    p = 0
    while p < n:
        eol = find_byte(buf, p, n, LF)
        q = p
        label = True
        while True:
            q = skip_blanks(buf, q, eol)
            if q >= eol or buf[q] == HASH:
                break
            te = token_end(buf, q, eol)
            colon = find_byte(buf, q, te, COLON)
            if not label and colon < te and not _is_qid(buf, q, colon):
                value, ok = parse_float(buf, colon + 1, te)
                if ok and value == 0.0:
                    index, ok = parse_index(buf, q, colon)
                    if ok and index > largest:
                        largest = index
            label = False
            q = te
        p = eol + 1
    return largest
