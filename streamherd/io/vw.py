"""Vowpal Wabbit text lines: ``label [importance] ['tag]|ns[:scale] feat[:value] ... |ns2 ...``."""
import numpy as np
from numba import njit

from streamherd.features.hashing import hashstring, murmur3_32
from streamherd.io import linecodes as codes
from streamherd.io.csr import append_wrapping_slot
from streamherd.io.lexing import (BAR, COLON, LF, MINUS, PLUS, QUOTE, SWAR_REACH, fast_decimal,
                                  find_byte, is_binary, is_blank, parse_float, simple_decimal,
                                  skip_blanks, swar_digits)
from streamherd.io.svmlight import ROW, USE_GENERAL, is_text_label, next_token


@njit(cache=True, inline="always")
def _vw_token_end(buf, p, end):
    """A feature or namespace token ends at a blank or at the next '|'."""
    while p < end and not is_blank(buf[p]) and buf[p] != BAR:
        p += 1
    return p


@njit(cache=True)
def _parse_header(buf, p, bar):
    """The part before the first '|': label, importance, (ignored) base and tag.

    Returns (code, token_start, token_end, label, importance, label_start, label_end,
    tag_start, tag_end). A token starting with "'" is the tag; so is the last token when it
    touches the '|' and is not the first (VW: ``1 1.0 zebra|f ...``). A line with no label
    has label NaN and label_start -1.
    """
    label = np.nan
    weight = 1.0
    label_start = -1
    label_end = -1
    tag_start = -1
    tag_end = -1
    numbers = 0
    q = p
    while True:
        q = skip_blanks(buf, q, bar)
        if q >= bar:
            break
        te = q
        while te < bar and not is_blank(buf[te]):
            if is_binary(buf[te]):
                return codes.BINARY_BYTES, q, te + 1, label, weight, label_start, label_end, tag_start, tag_end
            te += 1
        if buf[q] == QUOTE:
            tag_start = q + 1
            tag_end = te
        elif te == bar and numbers > 0:
            tag_start = q
            tag_end = te
        elif numbers == 0:
            value, ok = parse_float(buf, q, te)
            if not ok:
                if not is_text_label(buf, q, te):
                    return codes.BAD_LABEL, q, te, label, weight, label_start, label_end, tag_start, tag_end
                value = np.nan  # a class name: label_start/label_end keep it
            label = value
            label_start = q
            label_end = te
            numbers = 1
        elif numbers == 1:
            value, ok = parse_float(buf, q, te)
            if not ok or value < 0.0:
                return codes.BAD_IMPORTANCE, q, te, label, weight, label_start, label_end, tag_start, tag_end
            weight = value
            numbers = 2
        elif numbers == 2:  # VW's "base" (initial prediction): checked, not used
            _, ok = parse_float(buf, q, te)
            if not ok:
                return codes.EXTRA_TOKEN, q, te, label, weight, label_start, label_end, tag_start, tag_end
            numbers = 3
        else:
            return codes.EXTRA_TOKEN, q, te, label, weight, label_start, label_end, tag_start, tag_end
        q = te
    return codes.OK, 0, 0, label, weight, label_start, label_end, tag_start, tag_end


@njit(cache=True)
def _parse_features(buf, p, end, mask, indices, values, nnz):
    """Namespaces and features from the first '|' (at p) to the end of the line.

    Returns (code, new_nnz, token_start, token_end).
    """
    seed = np.uint64(0)
    scale = 1.0
    q = p
    while q < end:
        c = buf[q]
        if is_binary(c):
            return codes.BINARY_BYTES, nnz, q, q + 1
        if c == BAR:
            q += 1
            seed = np.uint64(0)
            scale = 1.0
            if q < end and not is_blank(buf[q]) and buf[q] != BAR:
                te = _vw_token_end(buf, q, end)
                colon = find_byte(buf, q, te, COLON)
                for k in range(q, te):
                    if is_binary(buf[k]):
                        return codes.BINARY_BYTES, nnz, q, te
                if colon < te:
                    scale, ok = parse_float(buf, colon + 1, te)
                    if not ok:
                        return codes.BAD_SCALE, nnz, q, te
                seed = hashstring(buf, q, colon, np.uint64(0))
                q = te
            continue
        if is_blank(c):
            q += 1
            continue
        # One pass over the name: where it ends, whether it is all digits (VW then uses the
        # number itself, see hashing.hashstring), and no NUL byte.
        name_end = q
        number = np.uint64(0)
        all_digits = True
        while name_end < end:
            c = buf[name_end]
            if is_blank(c) or c == BAR or c == COLON:
                break
            if c == 0:
                return codes.BINARY_BYTES, nnz, q, _vw_token_end(buf, q, end)
            if all_digits and 48 <= c <= 57:
                number = number * np.uint64(10) + np.uint64(c - 48)
            else:
                all_digits = False
            name_end += 1
        value = 1.0
        te = name_end
        if name_end < end and buf[name_end] == COLON:
            value, te = simple_decimal(buf, name_end + 1, end)
            if te < 0 or not (te == end or is_blank(buf[te]) or buf[te] == BAR):
                te = _vw_token_end(buf, name_end + 1, end)
                if name_end + 1 == te:
                    return codes.MISSING_VALUE, nnz, q, te
                value, ok = parse_float(buf, name_end + 1, te)
                if not ok:
                    return codes.BAD_VALUE, nnz, q, te
        value *= scale
        if value != 0.0:
            if name_end > q and (buf[q] <= 32 or buf[name_end - 1] <= 32):
                slot = hashstring(buf, q, name_end, seed) & np.uint64(mask)  # VW trims these
            elif all_digits:
                slot = (number + seed) & np.uint64(mask)
            else:
                slot = murmur3_32(buf, q, name_end, seed & np.uint64(0xFFFFFFFF)) & np.uint64(mask)
            indices[nnz] = np.int64(slot)
            values[nnz] = value
            nnz += 1
        q = te
    return codes.OK, nnz, 0, 0


@njit(cache=True)
def parse_vw_line(buf, p, end, mask, indices, values, nnz):
    """Parse one non-blank line; same contract as svmlight.parse_svmlight_line."""
    bar = find_byte(buf, p, end, BAR)
    code, ts, te, label, weight, ls, le, tgs, tge = _parse_header(buf, p, bar)
    if code != codes.OK:
        return code, nnz, ts, te, label, weight, ls, le, tgs, tge
    code, nnz, ts, te = _parse_features(buf, bar, end, mask, indices, values, nnz)
    return code, nnz, ts, te, label, weight, ls, le, tgs, tge


@njit(cache=True, inline="always")
def _ends_name(c):
    """Where scan_vw_line stops a name: a blank, the line end, a control byte, '|' or ':'."""
    return c <= 32 or c == BAR or c == COLON


@njit(cache=True, inline="always")
def _ends_vw_token(buf, p, n):
    return p == n or is_blank(buf[p]) or buf[p] == BAR or buf[p] == LF


@njit(cache=True, nogil=True)
def scan_vw_line(buf, p, n, mask, bias_slot, indices, values, nnz):
    """One pass over the usual VW line, ``[label] |ns feature[:value] ... |ns2 ...``, finding
    the line end as it goes; the contract of svmlight.scan_svmlight_line (p: the first byte,
    neither blank nor '#'), except that ``distinct`` also holds for slots that wrap around
    once (csr.append_wrapping_slot).

    Accepted: a plain decimal label (or none) then the first '|'; namespaces without a scale;
    names of bytes above 0x20 without ':'; plain decimal values. Anything else (importance,
    tag, scale, control bytes, signs or exponents in values, malformed tokens) is USE_GENERAL,
    and parse_vw_line, which gives the same slots and values for every accepted line, decides.
    """
    c = buf[p]
    label = np.nan
    label_start = -1
    label_end = -1
    if c != BAR:
        label_start = p
        if c == MINUS or c == PLUS:
            p += 1
        label, p = fast_decimal(buf, p, n)
        if p < 0 or p == n or not is_blank(buf[p]):
            return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
        if c == MINUS:
            label = -label
        label_end = p
        while p < n and is_blank(buf[p]):
            p += 1
        if p == n or buf[p] != BAR:
            return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
    seed = np.uint64(0)
    row_start = nnz
    last_slot = -1
    distinct = True
    wrapped = False
    while True:
        p, next_line = next_token(buf, p, n)
        if next_line >= 0:
            return ROW, next_line, nnz, label, label_start, label_end, distinct
        c = buf[p]
        if c == BAR:
            p += 1
            seed = np.uint64(0)
            if not _ends_vw_token(buf, p, n):
                start = p
                while p < n and buf[p] > 32 and buf[p] != BAR and buf[p] != COLON:
                    p += 1
                if not _ends_vw_token(buf, p, n):  # a scale, or control bytes
                    return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
                seed = hashstring(buf, start, p, np.uint64(0))
            continue
        start = p
        k = 0
        if p + SWAR_REACH <= n:
            k, number = swar_digits(buf, p)
        if 0 < k < 8 and _ends_name(buf[p + k]):  # a short number, the usual name in VW files
            p += k
            all_digits = True
        else:
            number = np.uint64(0)
            all_digits = True
            while p < n:
                c = buf[p]
                if _ends_name(c):
                    break
                if all_digits and 48 <= c <= 57:
                    number = number * np.uint64(10) + np.uint64(c - 48)
                else:
                    all_digits = False
                p += 1
        name_end = p
        value = 1.0
        if p < n and buf[p] == COLON:
            value, p = fast_decimal(buf, p + 1, n)
            if p < 0:
                return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
        if not _ends_vw_token(buf, p, n):  # control bytes in the name, or junk after the value
            return USE_GENERAL, 0, nnz, 0.0, -1, -1, False
        if value != 0.0:
            if all_digits:
                slot = np.int64((number + seed) & np.uint64(mask))
            else:
                slot = np.int64(murmur3_32(buf, start, name_end, seed & np.uint64(0xFFFFFFFF))
                                & np.uint64(mask))
            nnz, distinct, wrapped = append_wrapping_slot(indices, values, row_start, nnz, slot,
                                                         value, last_slot, distinct, wrapped,
                                                         bias_slot)
            last_slot = slot
