"""Vowpal Wabbit compatible feature hashing, as numba kernels over raw bytes.

A model's slots mean the same as in VW (``vw/core/hashstring.h``):
- a namespace's seed is ``hashstring(name, 0)``; the bare ``|`` namespace has seed 0;
- a name is first trimmed of bytes <= 0x20 at both ends;
- a feature name made only of ASCII digits is a number: slot ``(int(name) + seed) & mask``;
- any other name goes to ``murmur3_x86_32(name, seed) & mask``;
- the bias ("Constant") feature sits at slot ``11650396 & mask``.
All arithmetic is done in uint64 and masked explicitly: numba promotes mixed
signed/unsigned integer arithmetic to float64, which would silently break the hash.
"""
import numpy as np
from numba import njit

VW_CONSTANT_HASH = 11650396

_M32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_N = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)


@njit(cache=True, inline="always")
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


@njit(cache=True, inline="always")
def _mix_block(k):
    k = (k * _C1) & _M32
    k = _rotl32(k, 15)
    return (k * _C2) & _M32


@njit(cache=True, nogil=True, inline="always")
def murmur3_32(buf, start, end, seed):
    """MurmurHash3 x86_32 of ``buf[start:end]`` (uint8 array) with a 32-bit seed. Inlined into
    its few callers (hashstring, features/stage's name_key): a word's hash is then one call."""
    h = np.uint64(seed) & _M32
    n = end - start
    nblocks = n // 4
    for i in range(nblocks):
        p = start + 4 * i
        k = (np.uint64(buf[p]) | (np.uint64(buf[p + 1]) << np.uint64(8))
             | (np.uint64(buf[p + 2]) << np.uint64(16)) | (np.uint64(buf[p + 3]) << np.uint64(24)))
        h ^= _mix_block(k)
        h = _rotl32(h, 13)
        h = (h * np.uint64(5) + _N) & _M32
    tail = start + nblocks * 4
    rem = n & 3
    k = np.uint64(0)
    if rem == 3:
        k ^= np.uint64(buf[tail + 2]) << np.uint64(16)
    if rem >= 2:
        k ^= np.uint64(buf[tail + 1]) << np.uint64(8)
    if rem >= 1:
        k ^= np.uint64(buf[tail])
        h ^= _mix_block(k)
    h ^= np.uint64(n)
    h ^= h >> np.uint64(16)
    h = (h * _F1) & _M32
    h ^= h >> np.uint64(13)
    h = (h * _F2) & _M32
    h ^= h >> np.uint64(16)
    return h


@njit(cache=True, nogil=True)
def hashstring(buf, start, end, seed):
    """VW's ``hashstring`` (the module's docstring says how): "\x1a12" is the number 12, and a
    name of control bytes only the empty number, 0. The integer wraps modulo 2**64 like VW's
    size_t, so a 12-digit (or 30-digit) name cannot overflow."""
    while start < end and buf[start] <= 32:
        start += 1
    while end > start and buf[end - 1] <= 32:
        end -= 1
    value = np.uint64(0)
    for p in range(start, end):
        c = buf[p]
        if c < 48 or c > 57:
            return murmur3_32(buf, start, end, np.uint64(seed) & _M32)
        value = value * np.uint64(10) + (np.uint64(c) - np.uint64(48))
    return value + np.uint64(seed)
