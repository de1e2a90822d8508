"""svmlight/libsvm lines: ``label [qid:N] index:value ... [# comment]``, parsed a block at a time."""
import numpy as np
from numba import njit

from streamherd.io import linecodes as codes
from streamherd.io.lexing import (COLON, HASH, find_byte, is_blank, parse_float, parse_index,
                                  simple_decimal, skip_blanks, token_end)

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
