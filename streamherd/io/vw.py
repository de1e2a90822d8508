"""Vowpal Wabbit text lines: ``label [importance] ['tag]|ns[:scale] feat[:value] ... |ns2 ...``."""
import numpy as np
from numba import njit

from streamherd.io import linecodes as codes
from streamherd.io import simd
from streamherd.io.feature_stage import add, default_namespace, name_key, namespace, number_key
from streamherd.io.lexing import (BAR, COLON, HASH, LF, MINUS, PLUS, QUOTE, fast_decimal,
                                  find_byte, is_binary, is_blank, load_u8, parse_float,
                                  simple_decimal, skip_blanks, swar_decimal, swar_digits_of,
                                  swar_token_end, token_end)
from streamherd.io.svmlight import (FEATURE_REACH, ROW, USE_GENERAL, add_feature_run,
                                    is_text_label, next_token)


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
                return (codes.BINARY_BYTES, q, te + 1, label, weight,
                        label_start, label_end, tag_start, tag_end)
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
                    return (codes.BAD_LABEL, q, te, label, weight,
                            label_start, label_end, tag_start, tag_end)
                value = np.nan  # a class name: label_start/label_end keep it
            label = value
            label_start = q
            label_end = te
            numbers = 1
        elif numbers == 1:
            value, ok = parse_float(buf, q, te)
            if not ok or value < 0.0:
                return (codes.BAD_IMPORTANCE, q, te, label, weight,
                        label_start, label_end, tag_start, tag_end)
            weight = value
            numbers = 2
        elif numbers == 2:  # VW's "base" (initial prediction): checked, not used
            _, ok = parse_float(buf, q, te)
            if not ok:
                return (codes.EXTRA_TOKEN, q, te, label, weight,
                        label_start, label_end, tag_start, tag_end)
            numbers = 3
        else:
            return (codes.EXTRA_TOKEN, q, te, label, weight,
                    label_start, label_end, tag_start, tag_end)
        q = te
    return codes.OK, 0, 0, label, weight, label_start, label_end, tag_start, tag_end


@njit(cache=True)
def _parse_features(buf, p, end, space, indices, values, row):
    """Namespaces and features from the first '|' (at p) to the end of the line, the features
    going to ``row`` (features/stage.py).

    Returns (code, row, token_start, token_end).
    """
    ns = default_namespace()
    scale = 1.0
    q = p
    while q < end:
        c = buf[q]
        if is_binary(c):
            return codes.BINARY_BYTES, row, q, q + 1
        if c == BAR:
            q += 1
            ns = default_namespace()
            scale = 1.0
            if q < end and not is_blank(buf[q]) and buf[q] != BAR:
                te = _vw_token_end(buf, q, end)
                colon = find_byte(buf, q, te, COLON)
                for k in range(q, te):
                    if is_binary(buf[k]):
                        return codes.BINARY_BYTES, row, q, te
                if colon < te:
                    scale, ok = parse_float(buf, colon + 1, te)
                    if not ok:
                        return codes.BAD_SCALE, row, q, te
                ns = namespace(buf, q, colon)
                q = te
            continue
        if is_blank(c):
            q += 1
            continue
        # One pass over the name: where it ends, whether it is all digits (a number, which the
        # feature stage takes as one), and no NUL byte.
        name_end = q
        number = np.uint64(0)
        all_digits = True
        while name_end < end:
            c = buf[name_end]
            if is_blank(c) or c == BAR or c == COLON:
                break
            if c == 0:
                return codes.BINARY_BYTES, row, q, _vw_token_end(buf, q, end)
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
                    return codes.MISSING_VALUE, row, q, te
                value, ok = parse_float(buf, name_end + 1, te)
                if not ok:
                    return codes.BAD_VALUE, row, q, te
        if scale != 1.0:
            value *= scale
            if np.isinf(value):  # both finite, the product not
                return codes.VALUE_OVERFLOW, row, q, te
        if value != 0.0:  # explicit zeros carry nothing (VW drops them too)
            key = (number_key(space, ns, number, buf, q) if all_digits
                   else name_key(ns, buf, q, name_end))
            row = add(space, indices, values, row, ns, key, value, q)
        q = te
    return codes.OK, row, 0, 0


@njit(cache=True)
def svmlight_shaped(buf, p, bar, end):
    """Whether the line from p (its first non-blank byte) to end, whose first '|' is at bar
    (end: none), is an svmlight line: no '|' before a '#' (or none at all), and a token after
    the first, before any '#', that holds ':' and is not a tag ('...). A VW line without
    features (a label, an importance, a tag) has no such token."""
    hash_at = find_byte(buf, p, bar, HASH)
    if bar < end and hash_at == bar:
        return False  # a '|' before any '#': VW
    q = token_end(buf, p, hash_at)  # past the first token
    while q < hash_at:
        q = skip_blanks(buf, q, hash_at)
        te = token_end(buf, q, hash_at)
        if q < te and buf[q] != QUOTE and find_byte(buf, q, te, COLON) < te:
            return True
        q = te
    return False


@njit(cache=True)
def parse_vw_line(buf, p, end, space, indices, values, row):
    """Parse one non-blank line; same contract as svmlight.parse_svmlight_line. A line of
    svmlight features (svmlight_shaped) is SVMLIGHT_LINE, whatever the rest of it."""
    bar = find_byte(buf, p, end, BAR)
    if bar > p and svmlight_shaped(buf, p, bar, end):  # (a line starting with '|' is VW)
        return codes.SVMLIGHT_LINE, row, p, end, np.nan, 1.0, -1, -1, -1, -1
    code, ts, te, label, weight, ls, le, tgs, tge = _parse_header(buf, p, bar)
    if code != codes.OK:
        return code, row, ts, te, label, weight, ls, le, tgs, tge
    code, row, ts, te = _parse_features(buf, bar, end, space, indices, values, row)
    return code, row, ts, te, label, weight, ls, le, tgs, tge


@njit(cache=True, inline="always")
def _ends_vw_token(buf, p, n):
    return p == n or is_blank(buf[p]) or buf[p] == BAR or buf[p] == LF


@njit(cache=True, inline="always")
def _vector_vw_feature(buf, s):
    """_swar_vw_feature by 16-byte vector instructions (io/simd.py), with values of 1 to 8
    digits: the same (ok, end, number, value) for every token both take."""
    ok, end, number, has_value, value = simd.digits_token(buf, s)
    # no branch on has_value (files mix both): without ':' the value read is 0, and 1 is added
    return ok, end, np.uint64(number), value + np.float64(1 - has_value)


@njit(cache=True, inline="always")
def _swar_vw_feature(buf, s):
    """(ok, end, number, value) for the usual VW feature token at s, a name of 1 to 8 digits
    alone (value 1) or followed by ``:digits[.digits]`` with runs shorter than 8 digits, ending
    at the first byte up to 0x20 in ``buf[s:s + 16]``; ok is False for anything else (the
    caller then tries _slow_vw_feature). Reads buf[s:s + FEATURE_REACH]: the reads of
    svmlight._swar_feature (see there for why), with the name in place of the index. Whether a
    name has a value is not a branch either (files mix both): the value is always read, and
    dropped without ':'.
    """
    end, w0 = swar_token_end(buf, s)  # s + 16 without a separator: not ok
    k, number = swar_digits_of(w0)
    name_end = s + k
    has_value = load_u8(buf, name_end) == COLON
    value_ok, value, stop = swar_decimal(buf, name_end + 1)
    # A name of 8 digits may go on, but then its 9th byte, at name_end, is neither ':' nor
    # the separator at end: not ok. So k needs no upper bound here.
    ok = ((0 < k) & (end < s + 16)
          & ((has_value & value_ok & (stop == end)) | (name_end == end)))
    return ok, end, number, value if has_value else 1.0


_fast_vw_feature = _vector_vw_feature if simd.AVAILABLE else _swar_vw_feature


@njit(cache=True)
def _slow_vw_feature(buf, s, n):
    """(ok, end, name_end, all_digits, number, value) for any feature token scan_vw_line takes
    at s, reading nothing past n: a name of bytes above 0x20 other than '|' and ':' (its number
    when all digits, also the empty name), then maybe ':' and a value simple_decimal takes, then
    a blank, '|', the line end or the block end. For the tokens _fast_vw_feature does not take,
    and malformed ones (ok False: control bytes in the name, junk after the value...)."""
    number = np.uint64(0)
    all_digits = True
    p = s
    while p < n:
        c = buf[p]
        if c <= 32 or c == BAR or c == COLON:
            break
        if all_digits and 48 <= c <= 57:
            number = number * np.uint64(10) + np.uint64(c - 48)
        else:
            all_digits = False
        p += 1
    name_end = p
    value = 1.0
    if p < n and buf[p] == COLON:
        value, p = simple_decimal(buf, p + 1, n)
        if p < 0:
            return False, p, name_end, all_digits, number, value
    return _ends_vw_token(buf, p, n), p, name_end, all_digits, number, value


@njit(cache=True, nogil=True)
def scan_vw_line(buf, p, n, space, indices, values, row):
    """One pass over the usual VW line, ``[label] |ns feature[:value] ... |ns2 ...``, finding
    the line end as it goes; the contract of svmlight.scan_svmlight_line (p: the first byte,
    neither blank nor '#').

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
            return USE_GENERAL, 0, row, 0.0, -1, -1
        if c == MINUS:
            label = -label
        label_end = p
        while p < n and is_blank(buf[p]):
            p += 1
        if p == n or buf[p] != BAR:
            return USE_GENERAL, 0, row, 0.0, -1, -1
    ns = default_namespace()
    while True:
        p, next_line = next_token(buf, p, n)
        if next_line >= 0:
            return ROW, next_line, row, label, label_start, label_end
        if buf[p] == BAR:
            p += 1
            ns = default_namespace()
            if not _ends_vw_token(buf, p, n):
                start = p
                while p < n and buf[p] > 32 and buf[p] != BAR and buf[p] != COLON:
                    p += 1
                if not _ends_vw_token(buf, p, n):  # a scale, or control bytes
                    return USE_GENERAL, 0, row, 0.0, -1, -1
                ns = namespace(buf, start, p)
            continue
        ok = False
        if p + FEATURE_REACH <= n:
            ok, end, number, value = _fast_vw_feature(buf, p)
        if not ok:
            ok, end, name_end, all_digits, number, value = _slow_vw_feature(buf, p, n)
            if not ok:
                return USE_GENERAL, 0, row, 0.0, -1, -1
            if value != 0.0:
                key = (number_key(space, ns, number, buf, p) if all_digits
                       else name_key(ns, buf, p, name_end))
                row = add(space, indices, values, row, ns, key, value, p)
            p = end
            continue
        p, row = add_feature_run(buf, p, n, space, ns, indices, values, row, end, number, value,
                                 _fast_vw_feature)   # a run of features named by numbers
