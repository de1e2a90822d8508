"""Byte-level helpers shared by the format parsers (numba, inlined into the parse kernels)."""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
from numba.extending import intrinsic

# Exact powers of ten (shared with io/simd.py): a mantissa below 2**53 times or divided by one
# of these is correctly rounded (Clinger's fast path), which covers nearly every value in data;
# parse_float has the slower steps for the others.
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


# ---------------------------------------------------------------- decimal to double
#
# parse_float rounds as strtod does (to nearest, ties to even), for any number of digits and any
# exponent, in three steps, each taken only when the one before cannot decide:
# 1. Clinger's fast path: a value of at most 19 significant digits below 2**53, times or divided
#    by an exact power of ten up to 10**22, is one correctly rounded operation.
# 2. Eisel and Lemire's algorithm: the first 19 significant digits (a uint64) times a 128-bit
#    approximation of the power of ten give the rounded result, unless the product lies too
#    close to a halfway point between two doubles. With more digits it runs for the 19-digit
#    prefix w and for w + 1, which bound the value: when both round to one double, so does the
#    value (the other digits only move it between them).
# 3. Otherwise (close to a halfway point, subnormal, at the edge of the range; about one number
#    in a thousand of those with more than 19 digits), exact decimal arithmetic on up to 800
#    digits, as Go's strconv falls back to (decimal.floatBits).
_POW10_MIN_EXP = -348
_POW10_MAX_EXP = 347


def _powers_of_ten_128():
    """(high, low): the two 64-bit halves of the leading 128 bits (top bit set, rounded down) of
    10**e for e from _POW10_MIN_EXP to _POW10_MAX_EXP, as Go's detailedPowersOfTen."""
    high = np.empty(_POW10_MAX_EXP - _POW10_MIN_EXP + 1, np.uint64)
    low = np.empty_like(high)
    for i, e in enumerate(range(_POW10_MIN_EXP, _POW10_MAX_EXP + 1)):
        if e >= 0:
            v = 10 ** e
            bits = v.bit_length()
            v = v >> (bits - 128) if bits > 128 else v << (128 - bits)
        else:  # 2**k // 10**-e, with k making the quotient 128 bits long
            d = 10 ** -e
            v = (1 << (d.bit_length() + 127)) // d
        high[i] = v >> 64
        low[i] = v & 0xFFFFFFFFFFFFFFFF
    return high, low


_POW10_HIGH, _POW10_LOW = _powers_of_ten_128()
_U0, _U1, _U10 = np.uint64(0), np.uint64(1), np.uint64(10)
_LOW_NINE_BITS = np.uint64(0x1FF)
_FRACTION_BITS = np.uint64((1 << 52) - 1)
_EXACT_LIMIT = np.uint64(_MAX_EXACT_MANTISSA)
_MAX_KEPT_DIGITS = 19  # 10**19 - 1 < 2**64 (and 10**19 too, for w + 1)
# Decimal exponents are added up to this and no further: a longer exponent overflows or
# underflows anyway, and the sum stays far from the int64 limits.
_EXPONENT_CAP = 1 << 40


@intrinsic
def _multiply_128(typingctx, a, b):
    """(high, low) 64-bit halves of the 128-bit product of two uint64."""
    signature = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, sig.return_type,
                                  [high, builder.trunc(product, ir.IntType(64))])

    return signature, codegen


@intrinsic
def bits_of_float(typingctx, value):
    """The IEEE 754 bits (a uint64) of the float64 ``value``: numpy's ``view(np.uint64)`` of one
    number, without numba's array module."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float64 whose IEEE 754 bits are ``bits`` (a uint64)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


@njit(cache=True)
def parse_float(buf, start, end):
    """Parse ``buf[start:end]`` as a decimal float; returns (value, ok).

    Accepts [+-]digits[.digits][(e|E)[+-]digits], with any number of digits, and rounds as
    strtod does (correctly, ties to even: see the steps above). Letters (nan, inf), empty
    tokens and values that overflow to infinity are rejected (ok = False); values below half
    the smallest subnormal become 0.
    """
    p = start
    if p >= end:
        return 0.0, False
    negative = False
    if buf[p] == PLUS or buf[p] == MINUS:
        negative = buf[p] == MINUS
        p += 1
    # The first 19 significant digits in a uint64, and the decimal exponent of the last one
    # kept; a later digit only moves the exponent (in the integer part) and, when it is not 0,
    # makes the kept value fall short of the number (``truncated``).
    mantissa = _U0
    kept = 0
    exponent = 0
    digits = 0
    truncated = False
    while p < end and 48 <= buf[p] <= 57:
        if kept < _MAX_KEPT_DIGITS:
            mantissa = mantissa * _U10 + np.uint64(buf[p] - 48)
            if mantissa != _U0:  # leading zeros are not significant
                kept += 1
        else:
            exponent += 1
            truncated |= buf[p] != 48
        digits += 1
        p += 1
    if p < end and buf[p] == DOT:
        p += 1
        while p < end and 48 <= buf[p] <= 57:
            if kept < _MAX_KEPT_DIGITS:
                mantissa = mantissa * _U10 + np.uint64(buf[p] - 48)
                exponent -= 1
                if mantissa != _U0:
                    kept += 1
            else:
                truncated |= buf[p] != 48
            digits += 1
            p += 1
    if digits == 0:
        return 0.0, False
    written_exponent = 0   # the e part's, capped at _EXPONENT_CAP
    if p < end and (buf[p] == 101 or buf[p] == 69):  # e or E
        p += 1
        exp_negative = False
        if p < end and (buf[p] == PLUS or buf[p] == MINUS):
            exp_negative = buf[p] == MINUS
            p += 1
        exp_digits = 0
        exp_value = 0
        while p < end and 48 <= buf[p] <= 57:
            if exp_value < _EXPONENT_CAP:
                exp_value = exp_value * 10 + (buf[p] - 48)
            exp_digits += 1
            p += 1
        if exp_digits == 0:
            return 0.0, False
        written_exponent = -exp_value if exp_negative else exp_value
        exponent += written_exponent
    if p != end:
        return 0.0, False
    if mantissa == _U0:
        value = 0.0
    elif not truncated and mantissa < _EXACT_LIMIT and -22 <= exponent <= 22:
        value = float(mantissa)  # exact, and so is the power of ten: one rounding
        if exponent >= 0:
            value = value * POW10[exponent]
        else:
            value = value / POW10[-exponent]
    elif exponent < -342:  # below 10**19 * 10**-343, under half the smallest subnormal
        value = 0.0
    elif exponent > 308:  # at least 10**309
        return 0.0, False
    else:
        value, ok = _eisel_lemire(mantissa, exponent)
        if ok and truncated:
            above, ok = _eisel_lemire(mantissa + _U1, exponent)
            ok = ok and above == value
        if not ok:
            value = _decimal_to_float(buf, start, end, written_exponent)
    if not np.isfinite(value):
        return 0.0, False
    return (-value if negative else value), True


@njit(cache=True)
def _eisel_lemire(mantissa, exponent):
    """(value, ok): mantissa * 10**exponent rounded to nearest, for a uint64 mantissa > 0 and
    -342 <= exponent <= 308, as Go's strconv.eiselLemire64 computes it; ok is False when the
    128-bit product cannot tell the rounding (too close to a halfway point), or the result is
    subnormal or infinite: the caller then uses _decimal_to_float."""
    index = exponent - _POW10_MIN_EXP
    zeros = leading_zeros(mantissa)
    mantissa = mantissa << zeros
    # 217706 / 2**16 is log2(10) closely enough that this is floor(exponent * log2(10)) over
    # the table's range; 1023 is the exponent bias
    exp2 = ((217706 * exponent) >> 16) + 64 + 1023 - np.int64(zeros)
    high, low = _multiply_128(mantissa, _POW10_HIGH[index])
    # The low 9 bits of high are below the 54 kept; when they are all ones, the truncated part
    # of the power of ten may carry into them: add the product with the table's low half.
    if (high & _LOW_NINE_BITS) == _LOW_NINE_BITS and low + mantissa < mantissa:
        extra_high, extra_low = _multiply_128(mantissa, _POW10_LOW[index])
        merged_low = low + extra_high
        merged_high = high + np.uint64(merged_low < low)
        if ((merged_high & _LOW_NINE_BITS) == _LOW_NINE_BITS and merged_low + _U1 == _U0
                and extra_low + mantissa < mantissa):
            return 0.0, False
        high, low = merged_high, merged_low
    top = high >> np.uint64(63)
    bits = high >> (top + np.uint64(9))  # 54 bits: the 53 of the result and a rounding bit
    exp2 -= 1 - np.int64(top)
    if low == _U0 and (high & _LOW_NINE_BITS) == _U0 and (bits & np.uint64(3)) == _U1:
        return 0.0, False  # maybe exactly halfway: the product cannot say
    bits += bits & _U1
    bits >>= _U1
    if (bits >> np.uint64(53)) != _U0:  # rounding carried into a new bit
        bits >>= _U1
        exp2 += 1
    if exp2 <= 0 or exp2 >= 0x7FF:
        return 0.0, False
    return _float_from_bits((np.uint64(exp2) << np.uint64(52)) | (bits & _FRACTION_BITS)), True


# Exact decimal arithmetic (Go's strconv decimal type): the digits d[:nd] (values 0-9) of a
# number 0.d[0]d[1]... * 10**dp, and whether nonzero digits were dropped after them (trunc).
# 800 digits decide every rounding (a halfway point between two doubles has at most 767).
_DECIMAL_DIGITS = 800
_DECIMAL_ROOM = 832  # and the up to 18 digits a left shift adds before they are cut
_MAX_SHIFT = 59  # a shift by k bits keeps values below 10 * 2**k: 59 stays inside an int64
_SHIFT_DIGITS = np.array([len(str(1 << k)) for k in range(_MAX_SHIFT + 1)], np.int64)
_POWTAB = np.array([1, 3, 6, 9, 13, 16, 19, 23, 26], np.int64)  # Go's: bits per decimal digit


@intrinsic
def _decimal_scratch(typingctx):
    """A pointer to _DECIMAL_ROOM bytes on the calling function's stack: the digits of
    _decimal_to_float without an allocation (the parse kernels allocate nothing). Indexed as
    a pointer, not wrapped in an array (numba.carray): loading a cached kernel that makes an
    array imports numba's array module, which streamherd's start-up avoids."""
    def codegen(context, builder, sig, args):
        return cgutils.alloca_once(builder, ir.IntType(8),
                                   size=ir.Constant(ir.IntType(64), _DECIMAL_ROOM))
    return types.CPointer(types.uint8)(), codegen


@njit(cache=True)
def _decimal_to_float(buf, start, end, written_exponent):
    """|value| of the number in ``buf[start:end]`` (its syntax checked by parse_float, which
    read its e part: ``written_exponent``), correctly rounded, by exact decimal arithmetic (Go's
    decimal.set and floatBits): shift by powers of two until the value is in [1/2, 1), then take
    53 bits, rounded. Infinity when it overflows. Slow (several passes over up to 800 digits),
    and rare."""
    d = _decimal_scratch()
    nd = 0
    dp = 0
    trunc = False
    p = start
    if buf[p] == PLUS or buf[p] == MINUS:
        p += 1
    while p < end and 48 <= buf[p] <= 57:  # every significant integer digit moves the point
        if nd > 0 or buf[p] != 48:
            dp += 1
            nd, trunc = _push_digit(d, nd, trunc, buf[p] - 48)
        p += 1
    if p < end and buf[p] == DOT:
        p += 1
        while p < end and 48 <= buf[p] <= 57:
            if nd == 0 and buf[p] == 48:
                dp -= 1  # a leading zero of the fraction
            else:
                nd, trunc = _push_digit(d, nd, trunc, buf[p] - 48)
            p += 1
    nd, dp = _trim(d, nd, dp + written_exponent)
    if nd == 0:
        return 0.0
    if dp > 310:
        return np.inf
    if dp < -330:
        return 0.0
    exp2 = 0
    while dp > 0:  # scale into [1/2, 1) by powers of two
        n = 27 if dp >= len(_POWTAB) else _POWTAB[dp]
        nd, dp, trunc = _shift(d, nd, dp, trunc, -n)
        exp2 += n
    while dp < 0 or (dp == 0 and d[0] < 5):
        n = 27 if -dp >= len(_POWTAB) else _POWTAB[-dp]
        nd, dp, trunc = _shift(d, nd, dp, trunc, n)
        exp2 -= n
    exp2 -= 1  # [1/2, 1) to the [1, 2) of a double
    if exp2 < -1022:  # subnormal: the smallest exponent, fewer bits
        n = -1022 - exp2
        nd, dp, trunc = _shift(d, nd, dp, trunc, -n)
        exp2 += n
    if exp2 + 1023 >= 0x7FF:
        return np.inf
    nd, dp, trunc = _shift(d, nd, dp, trunc, np.int64(53))  # (typed: see _shift)
    mantissa = _rounded_integer(d, nd, dp, trunc)
    if mantissa == 2 << 52:  # rounding carried into a new bit
        mantissa >>= 1
        exp2 += 1
        if exp2 + 1023 >= 0x7FF:
            return np.inf
    if mantissa & (1 << 52) == 0:  # subnormal
        exp2 = -1023
    bits = (np.uint64(mantissa) & _FRACTION_BITS) | (np.uint64(exp2 + 1023) << np.uint64(52))
    return _float_from_bits(bits)


@njit(cache=True, inline="always")
def _push_digit(d, nd, trunc, digit):
    if nd < _DECIMAL_DIGITS:
        d[nd] = digit
        return nd + 1, trunc
    return nd, trunc or digit != 0


@njit(cache=True, inline="always")
def _trim(d, nd, dp):
    while nd > 0 and d[nd - 1] == 0:
        nd -= 1
    if nd == 0:
        dp = 0
    return nd, dp


@njit(cache=True)
def _shift(d, nd, dp, trunc, k):
    """The decimal times 2**k (k may be negative); returns (nd, dp, trunc).

    k reaches _shift, _left_shift and _right_shift as an int64, never a bare constant (numba
    types a constant argument as a literal and would compile them once more per constant)."""
    if nd == 0:
        return nd, dp, trunc
    while k > _MAX_SHIFT:
        nd, dp, trunc = _left_shift(d, nd, dp, trunc, np.int64(_MAX_SHIFT))
        k -= _MAX_SHIFT
    while k < -_MAX_SHIFT:
        nd, dp, trunc = _right_shift(d, nd, dp, trunc, np.int64(_MAX_SHIFT))
        k += _MAX_SHIFT
    if k > 0:
        return _left_shift(d, nd, dp, trunc, k)
    if k < 0:
        return _right_shift(d, nd, dp, trunc, -k)
    return nd, dp, trunc


@njit(cache=True)
def _right_shift(d, nd, dp, trunc, k):
    """The decimal divided by 2**k, 0 < k <= _MAX_SHIFT (Go's rightShift)."""
    r = 0
    w = 0
    n = 0
    while (n >> k) == 0:  # enough leading digits for the first output digit
        if r >= nd:
            if n == 0:
                return 0, 0, trunc
            while (n >> k) == 0:
                n = n * 10
                r += 1
            break
        n = n * 10 + np.int64(d[r])
        r += 1
    dp -= r - 1
    mask = (np.int64(1) << k) - 1
    while r < nd:
        c = np.int64(d[r])
        d[w] = n >> k
        w += 1
        n = (n & mask) * 10 + c
        r += 1
    while n > 0:
        digit = n >> k
        n = (n & mask) * 10
        if w < _DECIMAL_DIGITS:
            d[w] = digit
            w += 1
        elif digit > 0:
            trunc = True
    nd, dp = _trim(d, w, dp)
    return nd, dp, trunc


@njit(cache=True)
def _left_shift(d, nd, dp, trunc, k):
    """The decimal times 2**k, 0 < k <= _MAX_SHIFT: the digits are rewritten from the last
    one, _SHIFT_DIGITS[k] places further on, the most the product can add; when it adds one
    less, they move back by one."""
    delta = _SHIFT_DIGITS[k]
    w = nd + delta
    n = 0
    for r in range(nd - 1, -1, -1):
        n += np.int64(d[r]) << k
        quotient = n // 10
        w -= 1
        d[w] = n - 10 * quotient
        n = quotient
    while n > 0:
        quotient = n // 10
        w -= 1
        d[w] = n - 10 * quotient
        n = quotient
    if w > 0:  # w is 0 or 1: D * 2**k has nd + delta or nd + delta - 1 digits
        for i in range(nd + delta - w):
            d[i] = d[i + w]
    nd += delta - w
    dp += delta - w
    if nd > _DECIMAL_DIGITS:
        for i in range(_DECIMAL_DIGITS, nd):
            if d[i] != 0:
                trunc = True
        nd = _DECIMAL_DIGITS
    nd, dp = _trim(d, nd, dp)
    return nd, dp, trunc


@njit(cache=True)
def _rounded_integer(d, nd, dp, trunc):
    """The decimal's integer part, rounded to nearest, ties to even (Go's RoundedInteger)."""
    n = 0
    i = 0
    while i < dp and i < nd:
        n = n * 10 + np.int64(d[i])
        i += 1
    while i < dp:
        n *= 10
        i += 1
    if 0 <= dp < nd:
        if d[dp] == 5 and dp + 1 == nd:  # exactly halfway, unless digits were dropped after
            if trunc or (dp > 0 and d[dp - 1] % 2 == 1):
                n += 1
        elif d[dp] >= 5:
            n += 1
    return n


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


@njit(cache=True, inline="always")
def find_byte(buf, start, end, byte):
    # inlined: its callers pass the byte as a constant, for which numba would compile a
    # specialisation per byte value (and per literal start)
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
