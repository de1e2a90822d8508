"""svmlight/libsvm lines: ``label [qid:N] index:value ... [# comment]``, parsed a block at a time."""
import numpy as np
from numba import njit

from streamherd.io import linecodes as codes
from streamherd.io.csr import append_rising_slot
from streamherd.io.lexing import (COLON, HASH, LF, MINUS, PLUS, SWAR_REACH, fast_decimal,
                                  find_byte, is_blank, parse_float, parse_index, simple_decimal,
                                  skip_blanks, swar_digits, token_end)

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
    """A label token that is not a number is a class name (multiclass; training.py rejects it for
    binary and regression) unless it holds ':' (a feature where the label should be) or NUL."""
    for k in range(start, end):
        if buf[k] == COLON or buf[k] == 0:
            return False
    return end > start


@njit(cache=True)
def parse_svmlight_line(buf, p, end, mask, indices, values, nnz):
    """Parse one non-blank line into indices/values from position nnz.

    Returns (code, new_nnz, token_start, token_end, label, importance, label_start, label_end,
    tag_start, tag_end), the contract of every line parser (see io/block.py).
    """
    label_end = token_end(buf, p, end)
    label, ok = parse_float(buf, p, label_end)
    if not ok:
        if not is_text_label(buf, p, label_end):
            return codes.BAD_LABEL, nnz, p, label_end, 0.0, 1.0, p, label_end, -1, -1
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
                if value != 0.0:
                    indices[nnz] = index & mask
                    values[nnz] = value
                    nnz += 1
                q = stop
                continue
        # General path: qid, signs, exponents, and every malformed token.
        te = token_end(buf, q, end)
        colon = find_byte(buf, q, te, COLON)
        if colon == te:
            return codes.MISSING_COLON, nnz, q, te, label, 1.0, p, label_end, -1, -1
        if _is_qid(buf, q, colon):
            _, ok = parse_index(buf, colon + 1, te)
            if not ok:
                return codes.BAD_INDEX, nnz, q, te, label, 1.0, p, label_end, -1, -1
            q = te
            continue
        index, ok = parse_index(buf, q, colon)
        if not ok:
            return codes.BAD_INDEX, nnz, q, te, label, 1.0, p, label_end, -1, -1
        if colon + 1 == te:
            return codes.MISSING_VALUE, nnz, q, te, label, 1.0, p, label_end, -1, -1
        value, ok = parse_float(buf, colon + 1, te)
        if not ok:
            return codes.BAD_VALUE, nnz, q, te, label, 1.0, p, label_end, -1, -1
        if value != 0.0:  # explicit zeros carry nothing (VW drops them too)
            indices[nnz] = index & mask
            values[nnz] = value
            nnz += 1
        q = te
    return codes.OK, nnz, 0, 0, label, 1.0, p, label_end, -1, -1


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


@njit(cache=True, nogil=True)
def scan_svmlight_line(buf, p, n, mask, bias_slot, indices, values, nnz):
    """One pass over the usual line, ``label index:value ... [# comment]`` with plain decimals,
    from its first byte p, which parse_block has found is neither blank nor '#'.

    Finds the line end itself (no separate search for the newline): returns (status, next_p,
    new_nnz, label, label_start, label_end, distinct), next_p being the start of the next line.
    ``distinct``: the slots rise strictly and none is bias_slot, so the row needs no merge.
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
        return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
    if c == MINUS:
        label = -label
    label_end = p
    last_slot = -1
    distinct = True
    while True:
        p, next_line = next_token(buf, p, n)
        if next_line >= 0:
            return ROW, next_line, nnz, label, label_start, label_end, distinct
        c = buf[p]
        if c == HASH:
            return ROW, find_byte(buf, p, n, LF) + 1, nnz, label, label_start, label_end, distinct
        start = p
        k = 0
        if p + SWAR_REACH <= n:
            k, swar_index = swar_digits(buf, p)
        if 0 < k < 8:
            index = np.int64(swar_index)
            p += k
        else:
            index = 0
            while p < n and 48 <= buf[p] <= 57:
                index = index * 10 + (buf[p] - 48)
                p += 1
        if p == start or p - start > 18 or p == n or buf[p] != COLON:
            return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
        value, p = fast_decimal(buf, p + 1, n)
        if p < 0 or not _ends_number(buf, p, n):
            return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
        if value != 0.0:  # explicit zeros carry nothing, as in parse_svmlight_line
            slot = index & mask
            nnz, distinct = append_rising_slot(indices, values, nnz, slot, value, last_slot,
                                               distinct, bias_slot)
            last_slot = slot
