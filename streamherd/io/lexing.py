"""Byte-level helpers shared by the format parsers (numba, inlined into the parse kernels)."""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

# Exact powers of ten (shared with io/simd.py): a mantissa below 2**53 times or divided by one
# of these is correctly rounded (Clinger's fast path), which covers every value in practice.
POW10 = np.array([10.0 ** i for i in range(23)])
_MAX_EXACT_MANTISSA = 2 ** 53
_POW10_INT = np.array([10 ** i for i in range(9)], np.uint64)

SPACE, TAB, CR, LF = 32, 9, 13, 10
HASH, COLON, BAR, QUOTE = 35, 58, 124, 39
PLUS, MINUS, DOT = 43, 45, 46


@njit(cache=True, inline="always")
def is_blank(c):
    return c == SPACE or c == TAB or c == CR


@njit(cache=True, inline="always")
def is_binary(c):
    """A NUL byte never occurs in a text line: the sign of binary garbage.

    Other control bytes do occur in real VW data (the Amazon files hold 0x1A inside
    tokens) and VW hashes them like any byte, so they are accepted in names.
    """
    return c == 0


@njit(cache=True, inline="always")
def skip_blanks(buf, p, end):
    while p < end and is_blank(buf[p]):
        p += 1
    return p


@njit(cache=True, inline="always")
def token_end(buf, p, end):
    while p < end and not is_blank(buf[p]):
        p += 1
    return p


@njit(cache=True)
def parse_float(buf, start, end):
    """Parse ``buf[start:end]`` as a decimal float; returns (value, ok).

    Accepts [+-]digits[.digits][(e|E)[+-]digits]. Letters (nan, inf), empty
    tokens and values that overflow to infinity are rejected (ok = False).
    """
    p = start
    if p >= end:
        return 0.0, False
    negative = False
    if buf[p] == PLUS or buf[p] == MINUS:
        negative = buf[p] == MINUS
        p += 1
    mantissa = 0
    exponent = 0
    digits = 0
    significant = 0
    while p < end and 48 <= buf[p] <= 57:
        if significant < 19:
            mantissa = mantissa * 10 + (buf[p] - 48)
            if mantissa > 0:
                significant += 1
        else:
            exponent += 1
        digits += 1
        p += 1
    if p < end and buf[p] == DOT:
        p += 1
        while p < end and 48 <= buf[p] <= 57:
            if significant < 19:
                mantissa = mantissa * 10 + (buf[p] - 48)
                exponent -= 1
                if mantissa > 0:
                    significant += 1
            digits += 1
            p += 1
    if digits == 0:
        return 0.0, False
    if p < end and (buf[p] == 101 or buf[p] == 69):  # e or E
        p += 1
        exp_negative = False
        if p < end and (buf[p] == PLUS or buf[p] == MINUS):
            exp_negative = buf[p] == MINUS
            p += 1
        exp_digits = 0
        exp_value = 0
        while p < end and 48 <= buf[p] <= 57:
            if exp_value < 100000:
                exp_value = exp_value * 10 + (buf[p] - 48)
            exp_digits += 1
            p += 1
        if exp_digits == 0:
            return 0.0, False
        exponent += -exp_value if exp_negative else exp_value
    if p != end:
        return 0.0, False
    if mantissa == 0:
        value = 0.0
    elif mantissa < _MAX_EXACT_MANTISSA and -22 <= exponent <= 22:
        if exponent >= 0:
            value = mantissa * POW10[exponent]
        else:
            value = mantissa / POW10[-exponent]
    elif exponent < -330:
        value = 0.0
    elif exponent > 330:
        return 0.0, False
    else:
        # Outside the fast path: split the scaling so neither factor overflows early.
        value = float(mantissa)
        if exponent > 0:
            value = value * _power_of_ten(exponent)
        else:
            value = value / _power_of_ten(-exponent // 2) / _power_of_ten(-exponent - (-exponent // 2))
    if not np.isfinite(value):
        return 0.0, False
    return (-value if negative else value), True


@njit(cache=True, inline="always")
def _power_of_ten(exponent):
    """10.0 ** exponent for 0 <= exponent, by squaring, as numba computes ``10.0 ** n`` (the same
    products in the same order, so the same values): numba's own implementation would bring its
    numbers module into every process that loads the parse kernel."""
    result = 1.0
    base = 10.0
    while exponent != 0:
        if exponent & 1:
            result *= base
        exponent >>= 1
        base *= base
    return result


@njit(cache=True, inline="always")
def simple_decimal(buf, p, end):
    """Fast path for the common value shape ``digits[.digits]`` (at most 15 digits).

    Returns (value, stop): stop is where the number ends, or -1 when the text is not of that
    shape (a sign, an exponent, too many digits...), in which case the caller uses parse_float.
    With at most 15 digits the mantissa is exact, so the one division is correctly rounded.
    """
    start = p
    mantissa = 0
    while p < end and 48 <= buf[p] <= 57:
        mantissa = mantissa * 10 + (buf[p] - 48)
        p += 1
    digits = p - start
    fraction = 0
    if p < end and buf[p] == DOT:
        p += 1
        while p < end and 48 <= buf[p] <= 57:
            mantissa = mantissa * 10 + (buf[p] - 48)
            p += 1
            fraction += 1
        digits += fraction
    if digits == 0 or digits > 15:
        return 0.0, -1
    if fraction == 0:
        return float(mantissa), p
    return mantissa / POW10[fraction], p


@njit(cache=True)
def parse_index(buf, start, end):
    """Parse an unsigned decimal integer (a feature index); returns (value, ok). Wraps at 2**63."""
    if start >= end:
        return 0, False
    value = 0
    for p in range(start, end):
        c = buf[p]
        if c < 48 or c > 57:
            return 0, False
        value = (value * 10 + (c - 48)) & 0x7FFFFFFFFFFFFFFF
    return value, True


@njit(cache=True)
def find_byte(buf, start, end, byte):
    for p in range(start, end):
        if buf[p] == byte:
            return p
    return end


# SWAR ("SIMD within a register") digit runs: the digits of a number are found and converted 8
# bytes at a time, without a branch per digit. Numbers in text have random lengths, so a
# byte-at-a-time loop mispredicts its exit branch about once per number, which costs more
# than everything else in the parser.
_ASCII_ZEROS = np.uint64(0x3030303030303030)
_ABOVE_NINE = np.uint64(0x4646464646464646)  # adding it sets the high bit of bytes above '9'
_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW_SEVEN_BITS = np.uint64(0x7F7F7F7F7F7F7F7F)
_ABOVE_SPACE = np.uint64(0x5F5F5F5F5F5F5F5F)  # adding it sets the high bit of bytes above ' '
# Bytes a SWAR read may touch past the start of a number (two 8-byte words and a '.').
SWAR_REACH = 17


@intrinsic
def load_u64(typingctx, array, index):
    """The 8 bytes at ``array[index:index + 8]`` as one little-endian uint64 (unaligned load);
    the caller guarantees they are inside the array."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        word = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(word, align=1)
    return types.uint64(array, types.intp), codegen


@intrinsic
def load_u8(typingctx, array, index):
    """``array[index]`` without the code numba adds for negative indices; the caller
    guarantees 0 <= index < len(array)."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load(builder.gep(data, [args[1]]))
    return types.uint8(array, types.intp), codegen


@njit(cache=True, inline="always")
def swar_digits(buf, p):
    """(k, value): the number of ASCII digits starting at p (0 to 8) and their value."""
    return swar_digits_of(load_u64(buf, p))


@njit(cache=True, inline="always")
def swar_digits_of(word):
    """swar_digits for the 8 bytes already loaded in ``word`` (the first byte lowest).

    Subtracting '0' from each byte leaves digits as 0..9; a byte below '0' borrows and one
    above '9' overflows when 0x46 is added, so the first non-digit byte has its high bit set.
    Borrows and carries only move towards later bytes, so bytes before it stay exact.
    """
    digits = word - _ASCII_ZEROS
    non_digits = ((word + _ABOVE_NINE) | digits) & _HIGH_BITS
    k = 8 if non_digits == 0 else np.int64(trailing_zeros(non_digits) >> np.uint64(3))
    if k == 0:
        return 0, np.uint64(0)
    # Keep the k digits, as the top bytes (the zeros below them are leading zeros), then
    # combine neighbours: pairs, quads, the whole word.
    digits = digits << np.uint64(64 - 8 * k)
    digits = (digits * np.uint64(10) + (digits >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    digits = (digits * np.uint64(100) + (digits >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    digits = (digits * np.uint64(10000) + (digits >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return k, digits


@njit(cache=True, inline="always")
def swar_decimal(buf, p):
    """(ok, value, stop) for ``digits[.digits]`` at p read with SWAR digit runs; reads
    buf[p:p + SWAR_REACH], and ok is False when a run has 8 digits or more or there is no digit.
    When ok, value is what simple_decimal gives for the same bytes, and stop where it stops.

    Whether there is a fraction is as unpredictable as the number lengths ("1", "0.25"), so it
    is not a branch: the fraction run is always read, and multiplied by 0 when there is no '.'.
    """
    k, integer = swar_digits(buf, p)
    point = p + k
    has_point = np.int64(load_u8(buf, point) == DOT)
    k2, fraction = swar_digits(buf, point + 1)
    k2 *= has_point
    stop = point + has_point * (1 + k2)
    mantissa = integer * _POW10_INT[k2] + fraction * np.uint64(has_point)
    return (k < 8) & (k2 < 8) & (k + k2 > 0), float(mantissa) / POW10[k2], stop


@njit(cache=True, inline="always")
def fast_decimal(buf, p, n):
    """simple_decimal (same values, same stops) for a number starting at p in ``buf[:n]``,
    with SWAR digit runs (swar_decimal) when both runs are shorter than 8 digits and the reads
    stay in the array; otherwise simple_decimal itself.
    """
    if p + SWAR_REACH <= len(buf):
        ok, value, stop = swar_decimal(buf, p)
        if ok and stop <= n:
            return value, stop
    return simple_decimal(buf, p, n)


@njit(cache=True, inline="always")
def swar_separators(word):
    """The high bit of each byte of ``word`` that is a space or a control byte (at most 0x20:
    blanks, newlines), the bytes that end a token; the other bits are 0.

    Exact for every byte: the low seven bits plus 0x5F stay below 0x100, so no carry crosses
    into the next byte, and a byte of 0x80 or more is never a separator.
    """
    return ~(((word & _LOW_SEVEN_BITS) + _ABOVE_SPACE) | word) & _HIGH_BITS


@njit(cache=True, inline="always")
def swar_token_end(buf, s):
    """(end, w0): the first byte up to 0x20 (swar_separators) in ``buf[s:s + 16]``, or s + 16
    when there is none, found in two words loaded at s; w0 is the first word, from which the
    caller reads the token's leading digits. Reads buf[s:s + 16].

    Not a branch on the first word: token lengths (8 to 11 bytes in the usual files) straddle
    the word boundary at random. trailing_zeros(0) is 64, which makes end s + 16 when neither
    word holds a separator (the token may go on).
    """
    w0 = load_u64(buf, s)
    m0 = swar_separators(w0)
    bits = (trailing_zeros(m0)
            + trailing_zeros(swar_separators(load_u64(buf, s + 8))) * np.uint64(m0 == 0))
    return s + np.int64(bits >> np.uint64(3)), w0
