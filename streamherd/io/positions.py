"""Unsigned positions for the kernels' reads of a row and of the state.

numba reads ``a[k]`` with a signed ``k`` as Python does, a negative one from the end: every
read computes both k and k + len(a) and picks one, a few instructions for each read of a
feature's position, slot and value, which also keep the loop over a row from vectorising.
The kernels' positions are never negative (a row's entries in the chunk, a slot below 2^bits,
a class block's offset), and an unsigned position is read straight: ``a[unsigned(k)]``. The
arithmetic stays signed (numba makes a float of int64 and uint64 mixed): a position is made
unsigned where it reads.
"""
import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def unsigned(k):
    """The position ``k`` (never negative) as an unsigned index."""
    return np.uint64(k)
