"""The usual feature token, ``digits[:digits[.digits]]``, read with 16-byte vector instructions
(x86-64 SSSE3 and SSE4.1, through LLVM's intrinsics; inlined into the parse kernels).

The parse kernel is bound by the instructions the scalar reading (lexing.swar_*) spends per
feature on the token's end, the index and the two digit runs of the value. Here one 16-byte
load gives, by four vector compares, where the separator, the ':' and the '.' are and which
bytes are digits; one byte shuffle then puts the index's digits and the value's digits (the '.'
left out) right-aligned in the two halves of a vector, and three multiply-adds of neighbours
(pairs, fours, eights) give both numbers at once (benchmarks/README.md, "Design
measurements").

``AVAILABLE`` is False on other CPUs and when numba compiles for a named CPU
(NUMBA_CPU_NAME, e.g. for portable caches): the scanners then use the scalar reading, which
gives the same values.
"""
import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from streamherd.io.lexing import POW10


def _host_can():
    if platform.machine().lower() not in ("x86_64", "amd64") or config.CPU_NAME:
        return False
    from llvmlite import binding

    try:
        features = binding.get_host_cpu_features()
    except RuntimeError:
        return False
    return bool(features.get("ssse3") and features.get("sse4.1"))


AVAILABLE = _host_can()

_I8, _I16, _I32, _I64 = (ir.IntType(n) for n in (8, 16, 32, 64))
_BYTES = ir.VectorType(_I8, 16)
_WORDS = ir.VectorType(_I16, 8)
_DWORDS = ir.VectorType(_I32, 4)
# A token and its separator fit in the 16 bytes: at most 15 bytes; numbers of 1 to 8 digits.
TOKEN_REACH = 16
_NONE_FOUND = 0x10000  # or-ed into a 16-lane mask: trailing_zeros gives 16 when no lane is set


def _bytes(values):
    return ir.Constant(_BYTES, [ir.Constant(_I8, v & 0xFF) for v in values])


def _words(values):
    return ir.Constant(_WORDS, [ir.Constant(_I16, v) for v in values])


def _splat(builder, value):
    """<16 x i8> with every lane the low byte of ``value``."""
    vector = builder.insert_element(ir.Constant(_BYTES, None), builder.trunc(value, _I8),
                                    ir.Constant(_I32, 0))
    return builder.shuffle_vector(vector, ir.Constant(_BYTES, None),
                                  ir.Constant(ir.VectorType(_I32, 16), [0] * 16))


def _call(builder, name, return_type, args):
    function_type = ir.FunctionType(return_type, [a.type for a in args])
    return builder.call(cgutils.get_or_insert_function(builder.module, function_type, name), args)


def _load(context, builder, array_type, array, index):
    """The 16 bytes at array[index:index + 16] (unaligned; the caller keeps them in the array)."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.load(builder.bitcast(builder.gep(data, [index]), _BYTES.as_pointer()),
                        align=1)


@intrinsic
def _lane_masks(typingctx, array, index):
    """(separators, colons, dots, digits) of the 16 bytes at s = ``index``: bit i is set when
    byte s + i is up to 0x20 (a blank, a newline, a control byte), ':', '.', an ASCII digit."""
    signature = types.UniTuple(types.int64, 4)(array, types.intp)

    def codegen(context, builder, sig, args):
        v = _load(context, builder, sig.args[0], args[0], args[1])
        lanes = [builder.icmp_unsigned("<=", v, _bytes([0x20] * 16)),
                 builder.icmp_unsigned("==", v, _bytes([0x3A] * 16)),
                 builder.icmp_unsigned("==", v, _bytes([0x2E] * 16)),
                 builder.icmp_unsigned("<=", builder.sub(v, _bytes([0x30] * 16)),
                                       _bytes([9] * 16))]
        masks = [builder.zext(builder.bitcast(lane, _I16), _I64) for lane in lanes]
        return context.make_tuple(builder, sig.return_type, masks)

    return signature, codegen


@intrinsic
def _two_numbers(typingctx, array, index, colon, dot, end):
    """(name, mantissa) of the token at s = ``index`` whose ':' is at s + colon (colon = end:
    no value), whose '.' is at s + dot (-1: none) and which ends at s + end: the value of the
    digits before the ':' and of those after it, the '.' left out, each of 1 to 8 digits (the
    caller has checked the bytes).

    One byte shuffle moves the name's digits right-aligned into lanes 0-7 and the value's into
    lanes 8-15 (lanes before them get 0), then multiply-adds of neighbours sum them with their
    powers of ten: pairs (x10), fours (x100), eights (x10000)."""
    signature = types.UniTuple(types.int64, 2)(array, types.intp, types.intp, types.intp,
                                               types.intp)

    def codegen(context, builder, sig, args):
        array_value, start, colon_at, dot_at, end_at = args
        digits = builder.sub(_load(context, builder, sig.args[0], array_value, start),
                             _bytes([0x30] * 16))
        lane = _bytes(list(range(16)))
        nothing = _bytes([0x80] * 16)  # a shuffle index with its high bit set gives 0
        # lane j < 8 takes byte j - 8 + colon: the name's last digit lands in lane 7
        name = builder.add(lane, builder.sub(_splat(builder, colon_at), _bytes([8] * 16)))
        name = builder.select(builder.icmp_signed(">=", name, _bytes([0] * 16)), name, nothing)
        # lane j >= 8 takes byte j - 16 + end, one byte further back up to the '.', and nothing
        # at or before the ':'
        value = builder.add(lane, builder.sub(_splat(builder, end_at), _bytes([16] * 16)))
        before_dot = builder.icmp_signed("<=", value, _splat(builder, dot_at))
        value = builder.sub(value, builder.zext(before_dot, _BYTES))
        value = builder.select(builder.icmp_signed(">", value, _splat(builder, colon_at)), value,
                               nothing)
        control = builder.select(builder.icmp_unsigned("<", lane, _bytes([8] * 16)), name, value)
        placed = _call(builder, "llvm.x86.ssse3.pshuf.b.128", _BYTES, [digits, control])
        pairs = _call(builder, "llvm.x86.ssse3.pmadd.ub.sw.128", _WORDS,
                      [placed, _bytes([10, 1] * 8)])
        fours = _call(builder, "llvm.x86.sse2.pmadd.wd", _DWORDS, [pairs, _words([100, 1] * 4)])
        fours = _call(builder, "llvm.x86.sse41.packusdw", _WORDS, [fours, fours])
        eights = _call(builder, "llvm.x86.sse2.pmadd.wd", _DWORDS,
                       [fours, _words([10000, 1] * 4)])
        numbers = [builder.zext(builder.extract_element(eights, ir.Constant(_I32, i)), _I64)
                   for i in (0, 1)]
        return context.make_tuple(builder, sig.return_type, numbers)

    return signature, codegen


@njit(cache=True, inline="always")
def _first(mask):
    """Index of the lowest set lane of a 16-lane mask; 16 when none is set."""
    return np.int64(trailing_zeros(np.uint64(mask | _NONE_FOUND)))


@njit(cache=True, inline="always")
def digits_token(buf, s):
    """(ok, end, name, has_value, value) for a token ``digits[:digits[.digits]]`` at s, of 1 to
    8 name digits and 1 to 8 value digits, ending at the first byte up to 0x20 in
    ``buf[s:s + 16]``; has_value is 1 with ':' and 0 without (value 0 then). ok is False for
    any other token (the scanners then read it byte by byte). Reads buf[s:s + 16]. The values
    are those of simple_decimal: mantissa / 10**fraction digits, one correctly rounded division.
    """
    separators, colons, dots, digits = _lane_masks(buf, s)
    end = _first(separators)
    colon = _first(colons)
    # Arithmetic, not conditional expressions, for what depends on the '.' or the ':': numba
    # made branches of those, and whether a value has a '.' is unpredictable ("1", "0.25"), so
    # they were mispredicted feature after feature.
    has_value = np.int64(colon < end)
    name_end = min(colon, end)
    found = _first(dots >> (name_end + 1) << (name_end + 1))  # the first '.' after the name
    has_dot = has_value & np.int64(found < end)
    dot = has_dot * (found + 1) - 1  # -1: none
    token = (np.int64(1) << end) - 1
    # every byte of the token is a digit, but for the ':' and the '.'
    known = digits | (has_value << colon) | (has_dot << found)
    value_digits = end - colon - 1 - has_dot  # negative without a value
    ok = ((end < 16) & (0 < name_end) & (name_end <= 8) & ((known & token) == token)
          & ((has_value == 0) | ((0 < value_digits) & (value_digits <= 8))))
    name, mantissa = _two_numbers(buf, s, name_end, dot, end)
    value = float(mantissa) / POW10[has_dot * (end - 1 - found)]
    return ok, s + end, name, has_value, value
