"""The feature stage of the parse kernels: tokens in, rows of slots out.

The lexers (io/svmlight.py, io/vw.py) find a line's tokens and hand each feature here; these
functions are inlined into them (``inline="always"``; name_key excepted, see there), so the stage
costs no call per feature named by a number.
What a lexer holds of the stage is opaque to it:
- a namespace, from ``namespace`` (a VW ``|name``) or ``default_namespace`` (a bare ``|``, and
  every svmlight feature);
- a feature's key, from ``number_key`` (a name of digits, an svmlight index) or ``name_key``;
- the row being written, from ``new_row``, passed to ``add`` for each feature and returned by
  it, then to ``finish_row`` at the line's end (io/block.py, which then merges repeated slots
  if the row may have any: rows.merge_row);
- ``space``, the numbers of the FeatureSpace (space.py: ``kernel_params``), and the chunk's
  ``indices`` and ``values`` arrays (apart, not in a tuple: numba counts references to the
  arrays of a tuple unpacked in an inlined function, on every feature).
So how a token becomes a feature (the hashing, which slots, the bias, later crosses of
namespaces) changes here, and the lexers stay as they are.

Slots are VW's (hashing.py): a feature named by a number (all digits, or an svmlight index) is
the number plus the namespace's seed, any other name its murmur3 hash with that seed; the slot
keeps the low ``bits`` bits.
"""
import numpy as np
from numba import njit

from streamherd.features.hashing import hashstring, murmur3_32

_NO_SEED = np.uint64(0)
_LOW_32_BITS = np.uint64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def default_namespace():
    """VW's default namespace (a bare '|', and svmlight's features): seed 0."""
    return _NO_SEED


@njit(cache=True, inline="always")
def namespace(buf, start, end):
    """The namespace named ``buf[start:end]`` (without its scale): its seed, as VW's."""
    return hashstring(buf, start, end, _NO_SEED)


@njit(cache=True, inline="always")
def new_row(nnz):
    """A row that starts at position nnz of the output arrays: (start, nnz, last slot, falls,
    bias seen), see _append."""
    return nnz, nnz, np.int64(-1), np.int64(0), False


@njit(cache=True, inline="always")
def number_key(namespace, number):
    """The key of the feature named by the number ``number`` (all digits, or an svmlight
    index; uint64, wrapped as VW's size_t) in ``namespace``: the number plus the seed."""
    return number + namespace


@njit(cache=True)
def name_key(namespace, buf, start, end):
    """The key of the feature named ``buf[start:end]`` in ``namespace``, any name, as VW's
    hashstring: trimmed of bytes <= 0x20 at both ends, a name is then a number (number_key)
    or gets its murmur3 hash (hashing.hashstring); the usual word goes straight to murmur3.
    (A lexer that has read a name of digits has its number_key for less.)

    Not inlined, and apart from ``add``: a call (numba checks its status: a branch) inside an
    inlined function that takes arrays costs reference counting of them on every feature."""
    if start < end and buf[start] > 57 and buf[end - 1] > 32:
        return murmur3_32(buf, start, end, namespace & _LOW_32_BITS)
    return hashstring(buf, start, end, namespace)


@njit(cache=True, inline="always")
def add(space, indices, values, row, namespace, key, value):
    """Add the feature of ``key`` (number_key, name_key) in ``namespace`` with ``value`` (not
    0: the lexers drop explicit zeros, which carry nothing) to the row; returns the row. The
    row keeps nothing of the namespace yet: crosses of namespaces would."""
    return _append(space, indices, values, row, key, value)


@njit(cache=True, inline="always")
def _append(space, indices, values, row, key, value):
    """Write the feature at its slot.

    The row notes whether it may hold a slot twice: slots of all-digit names plus the seed
    rise and wrap around at the mask at most once in the usual line, so counting the falls (a
    slot at or below the one before) and noting the bias slot tells at the row's end whether
    merge_row has work (finish_row). That is less work per feature than a distinct flag, which
    would also need the row's first slot, and it has no branch (a branch in an inlined function
    that takes arrays makes numba count references to them on every feature)."""
    mask, _, bias_slot = space
    start, nnz, last_slot, falls, bias_seen = row
    slot = np.int64(key & np.uint64(mask))
    indices[nnz] = slot
    values[nnz] = value
    return start, nnz + 1, slot, falls + (slot <= last_slot), bias_seen | (slot == bias_slot)


@njit(cache=True, inline="always")
def finish_row(space, indices, values, row):
    """End the row with the bias feature (when the space adds it); returns (the position after
    the row, distinct): ``distinct`` False when the row may hold a slot twice, which
    rows.merge_row then sums (io/block.py, once per row: not here, where its branches would
    cost reference counting in the caller's loop). Distinct: no bias slot written, and the
    slots rise strictly, or rise, fall once and then rise strictly up to a last slot below
    the first one. Without a branch: the bias is written either way, and counted if added."""
    _, add_bias, bias_slot = space
    start, nnz, last_slot, falls, bias_seen = row
    distinct = (not bias_seen) & ((falls == 0) | ((falls == 1) & (last_slot < indices[start])))
    indices[nnz] = bias_slot
    values[nnz] = 1.0
    return nnz + add_bias, distinct
