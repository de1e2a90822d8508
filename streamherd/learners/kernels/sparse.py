"""Sparse-row primitives the learner kernels share (inlined by numba), and their numerical check.

Numerical safety: a kernel checks, for each example, the margin it predicts with (every
example: a margin that is not finite is a garbage prediction), the numbers its update is made of
(the margin, the squared norm or confidence the step divides by, the step itself: ``finite``) and
the state entries the update touched (``axpy``, covariance.entry_ok, covariance.full_update). On a
failure it returns the example's index and ``Learner.checked`` raises ``UnstableUpdate``, which
training turns into a one-line error naming the file and line. The checks are scalar, or on the
entries the update has just written (in cache): never a pass over the whole state.
"""
import numpy as np
from numba import njit

from streamherd.io.positions import unsigned
from streamherd.learners.kernels.prefetch import NO_ROW, prefetch, prefetch_rest, row_ahead


@njit(cache=True, inline="always")
def dot_ahead(w, indices, values, start, end, ahead):
    """w . x for the row [start, end), asking the cache for w at the slots of the row ``ahead``
    (prefetch.row_ahead) in the same loop."""
    total = 0.0
    for k in range(start, end):
        if ahead[0] + k - start < ahead[1]:   # the slot of the same rank in the row ahead
            prefetch(w, indices[unsigned(ahead[0] + k - start)])
        total += w[unsigned(indices[unsigned(k)])] * values[unsigned(k)]
    prefetch_rest(w, indices, ahead, end - start)
    return total


@njit(cache=True, inline="always")
def dot(w, indices, values, start, end):
    return dot_ahead(w, indices, values, start, end, NO_ROW)


@njit(cache=True, inline="always")
def squared_norm(values, start, end):
    total = 0.0
    for k in range(start, end):
        total += values[unsigned(k)] * values[unsigned(k)]
    return total


@njit(cache=True, inline="always")
def finite(a, b=0.0, c=0.0):
    """Whether a, b and c are all finite (see the module docstring: a margin, a norm or
    confidence, a step)."""
    return np.isfinite(a) and np.isfinite(b) and np.isfinite(c)


@njit(cache=True, inline="always")
def axpy(w, scale, indices, values, start, end):
    """w += scale * x for the row x = values[start:end] at slots indices[start:end]; returns
    whether every entry it wrote is finite."""
    ok = True
    for k in range(start, end):
        j = unsigned(indices[unsigned(k)])
        w[j] += scale * values[unsigned(k)]
        ok = ok and np.isfinite(w[j])
    return ok


@njit(cache=True, nogil=True)
def margins(w, indptr, indices, values, out):
    """out[i] = w . x_i for every row: prediction with a fixed weight vector (predict's hot loop:
    the slots of the row two ahead are prefetched, see prefetch.py)."""
    for i in range(len(indptr) - 1):
        out[i] = dot_ahead(w, indices, values, indptr[i], indptr[i + 1], row_ahead(indptr, i))
