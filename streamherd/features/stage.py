"""The feature stage of the parse kernels: tokens in, rows of slots out.

This module implements the calls io/feature_stage.py declares (see there) as numba overloads,
inlined into the lexers (``inline="always"``; name_key excepted, see there), so the stage costs
no call per feature named by a number. The lexers pass ``space`` (FeatureSpace.kernel_params)
and the chunk's ``indices`` and ``values`` arrays apart, not in a tuple: numba counts
references to the arrays of a tuple unpacked in an inlined function, on every feature. A space
without namespace flags compiles none of the crosses' code, one without --hash all none of its
hashing, one that does not name features none of the notes (the kernel params' tuple type
chooses the overloads: _crosses_namespaces, _hashes_all, _names_features).

Slots are VW's (hashing.py): a feature named by a number (all digits, or an svmlight index) is
the number plus the namespace's seed (with --hash all: hashed as any name), any other name its
murmur3 hash with that seed; the slot keeps the low ``bits`` bits.
"""
import numpy as np
from numba import njit
from numba.extending import overload

from streamherd.features.hashing import hashstring, murmur3_32
from streamherd.features.interactions import cross_letter_pairs, cross_row, repeats_a_slot
from streamherd.features.names import note_bias, note_feature
from streamherd.features.rows import merge_row
from streamherd.io import feature_stage as calls

_NO_SEED = np.uint64(0)
_DEFAULT_LETTER = np.uint64(ord(" "))
_LOW_32_BITS = np.uint64(0xFFFFFFFF)
_SIX = np.uint64(6)
_LOW_6_BITS = np.uint64(63)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@overload(calls.default_namespace, inline="always")
def _default_namespace():
    """VW's default namespace (a bare '|', and svmlight's features): seed 0, letter ' ', no
    name (its start -1)."""
    def default():
        return _NO_SEED, _DEFAULT_LETTER, np.int64(-1)
    return default


@overload(calls.namespace, inline="always")
def _namespace(buf, start, end):
    """The namespace named ``buf[start:end]`` (without its scale, not empty): (its seed, as
    VW's; its letter, the first byte, which -q and --ignore name; where its name starts, for
    the names of features: unused, so compiled away, elsewhere)."""
    def named(buf, start, end):
        return hashstring(buf, start, end, _NO_SEED), np.uint64(buf[start]), np.int64(start)
    return named


@overload(calls.new_row, inline="always")
def _new_row(nnz):
    """A row that starts at position nnz of the output arrays: (start, nnz, last slot, falls,
    bias seen), see _append."""
    def row(nnz):
        return nnz, nnz, np.int64(-1), np.int64(0), False
    return row


@overload(calls.number_key, inline="always")
def _number_key_of_space(space, namespace, number, buf, start):
    """The number plus the namespace's seed (uint64, wrapped as VW's size_t); with --hash all
    (a space that hashes all names), the murmur3 hash of its digits, as any other name's (VW's
    hashall: untrimmed)."""
    if not _hashes_all(space):
        def plus_seed(space, namespace, number, buf, start):
            return number + namespace[0]
        return plus_seed

    def hashed(space, namespace, number, buf, start):
        return _digits_hash(buf, start, namespace[0])
    return hashed


@njit(cache=True, nogil=True)
def _digits_hash(buf, start, seed):
    """The murmur3 hash of the digits from ``buf[start]`` on. (A call, not inlined: murmur3
    inlined twice over trips numba's scoping of its variables.)"""
    end = start
    while end < len(buf) and 48 <= buf[end] <= 57:
        end += 1
    return murmur3_32(buf, start, end, seed & _LOW_32_BITS)


@overload(calls.name_key)
def _name_key(namespace, buf, start, end):
    """The key of the feature named ``buf[start:end]`` in ``namespace``, any name, as VW's
    hashstring: trimmed of bytes <= 0x20 at both ends, a name is then a number (number_key)
    or gets its murmur3 hash (hashing.hashstring); the usual word goes straight to murmur3.
    (A lexer that has read a name of digits has its number_key for less.)

    Not inlined, and apart from ``add``: a call (numba checks its status: a branch) inside an
    inlined function that takes arrays costs reference counting of them on every feature. (Nor
    an inlined overload that calls a compiled function: the call would be inside it.)"""
    def hashed(namespace, buf, start, end):
        seed = namespace[0]
        if start < end and buf[start] > 57 and buf[end - 1] > 32:
            return murmur3_32(buf, start, end, seed & _LOW_32_BITS)
        return hashstring(buf, start, end, seed)
    return hashed


@overload(calls.add, inline="always")
def _add(space, indices, values, row, namespace, key, value, name_start):
    """A space without crosses or kept namespaces keeps nothing of the namespace
    (_add_feature), one that does not name features nothing of the name (names.note_feature)."""
    def added(space, indices, values, row, namespace, key, value, name_start):
        note_feature(space[5], row[1], namespace, key, name_start)
        return _add_feature(space, indices, values, row, namespace, key, value)
    return added


# The parts of the kernel params' tuple (FeatureSpace.kernel_params): (mask, bias, bias slot,
# crossing, hashing, naming), the last three empty tuples when not used. Constants of the parse
# kernel's types: a space without them compiles none of their code.

def _crosses_namespaces(space):
    """Whether the space (the numba type of the kernel params) crosses or keeps namespaces."""
    return len(space[3]) > 0


def _hashes_all(space):
    """Whether the space hashes all-digit names as strings (--hash all)."""
    return len(space[4]) > 0


def _names_features(space):
    """Whether the space notes where each feature's name is (features/names.py): its rows are
    then never merged, each position staying one feature."""
    return len(space[5]) > 0


def _add_feature(space, indices, values, row, namespace, key, value):
    raise TypeError("_add_feature is compiled into the parse kernels (features/stage.py)")


@overload(_add_feature, inline="always")
def _add_feature_of_space(space, indices, values, row, namespace, key, value):
    """The plain feature write, or, when the space crosses or keeps namespaces, the write that
    also notes the namespace (letter, seed) at the mirror position (features/interactions.py)
    and keeps the feature only if its letter is read (--keep, --ignore)."""
    if not _crosses_namespaces(space):
        def plain(space, indices, values, row, namespace, key, value):
            return _append(space, indices, values, row, key, value)
        return plain

    def noted(space, indices, values, row, namespace, key, value):
        seed, letter = namespace[0], namespace[1]
        mirror = len(indices) - 1 - (row[1] - row[0])   # the row's k-th at len - 1 - k
        indices[mirror] = np.int32(letter)
        values[mirror] = np.float64(seed)
        read = np.int64((_word_of(space[3][0], letter >> _SIX) >> (letter & _LOW_6_BITS))
                        & _ONE)
        start, nnz, last_slot, falls, bias_seen = _append(space, indices, values, row, key,
                                                          value)
        return start, nnz - 1 + read, last_slot, falls, bias_seen
    return noted


@njit(cache=True, inline="always")
def _word_of(words, k):
    """``words[k]`` of four uint64 words, without a branch: numba indexes a tuple at a
    run-time position by a jump table, and a branch in an inlined function that takes
    arrays makes numba count references to them on every feature."""
    return ((words[0] & (_ZERO - np.uint64(k == 0))) | (words[1] & (_ZERO - np.uint64(k == 1)))
            | (words[2] & (_ZERO - np.uint64(k == 2))) | (words[3] & (_ZERO - np.uint64(k == 3))))


@njit(cache=True, inline="always")
def _append(space, indices, values, row, key, value):
    """Write the feature at its slot.

    The row notes whether it may hold a slot twice: slots of all-digit names plus the seed
    rise and wrap around at the mask at most once in the usual line, so counting the falls (a
    slot at or below the one before) and noting the bias slot tells at the row's end whether
    merge_row has work (finish_row). That is less work per feature than a distinct flag, which
    would also need the row's first slot, and it has no branch (a branch in an inlined function
    that takes arrays makes numba count references to them on every feature)."""
    mask = space[0]
    bias_slot = space[2]
    start, nnz, last_slot, falls, bias_seen = row
    slot = np.int64(key & np.uint64(mask))
    indices[nnz] = slot
    values[nnz] = value
    return start, nnz + 1, slot, falls + (slot <= last_slot), bias_seen | (slot == bias_slot)


@overload(calls.finish_row, inline="always")
def _finish_of_space(space, indices, values, row):
    """End the row. Its repeated slots are summed by merge_repeats (io/block.py, once per row:
    not here, where merge_row's branches would cost reference counting in the caller's loop).

    Without crosses: the bias, and whether the row is distinct. Distinct: no bias slot
    written, and the slots rise strictly, or rise, fall once and then rise strictly up to a
    last slot below the first one. Without a branch: the bias is written either way, and
    counted if added. With crosses or kept namespaces the row goes to merge_repeats always,
    which crosses it, adds the bias and merges it (crosses repeat slots often, and a kept
    feature's slot may follow a dropped one's): the crosses' program is in the merge table."""
    unmerged = _names_features(space)
    if not _crosses_namespaces(space):
        def plain(space, indices, values, row):
            add_bias, bias_slot = space[1], space[2]
            start, nnz, last_slot, falls, bias_seen = row
            distinct = (not bias_seen) & ((falls == 0) | ((falls == 1)
                                                          & (last_slot < indices[start])))
            indices[nnz] = bias_slot
            values[nnz] = 1.0
            note_bias(space[5], nnz)
            return nnz + add_bias, distinct | unmerged
        return plain

    def crossed(space, indices, values, row):
        return row[1], False   # its crosses and its bias come at merge_repeats
    return crossed


@overload(calls.merge_repeats, inline="always")
def _merge_repeats_of_space(space, indices, values, start, end, merge_table, stamp):
    """rows.merge_row. With crosses, the row is first ended: its crosses
    (interactions.cross_row, whose program is in the merge table: FeatureSpace.new_merge_table)
    and its bias; then checked for repeats (interactions.repeats_a_slot: most rows have
    none), unless the space names features."""
    if not _crosses_namespaces(space):
        def merged(space, indices, values, start, end, merge_table, stamp):
            return _merge_row(indices, values, start, end, merge_table, stamp)
        return merged

    def crossed(space, indices, values, start, end, merge_table, stamp):
        return _end_crossed_row(space, indices, values, start, end, merge_table, stamp)
    return crossed


@njit(cache=True, nogil=True)
def _end_crossed_row(space, indices, values, start, nnz, merge_table, stamp):
    """The crosses of the row ``start:nnz`` (the usual -q's by cross_letter_pairs when the row
    fits its scratch, see FeatureSpace.new_merge_table for the merge table's items), its
    bias, its repeated slots summed; returns its end (-1: a sum overflowed). A call, not
    inlined, on the parse kernel's uncounted arrays (io/references.py)."""
    if space[3][2] and len(space[5]) == 0 and nnz - start <= len(merge_table[4]):
        end = cross_letter_pairs(indices, values, start, nnz, space[0], merge_table[6],
                                 merge_table[4], merge_table[5])
    else:
        end = cross_row(indices, values, start, nnz, space[0], merge_table[6:], space[3][1],
                        space[5])
    indices[end] = space[2]
    values[end] = 1.0
    note_bias(space[5], end)
    end += space[1]
    if len(space[5]) > 0 or not repeats_a_slot(indices, start, end, merge_table[3]):
        return end
    return _merge_row(indices, values, start, end, merge_table, stamp)


@njit(cache=True, inline="always")
def _merge_row(indices, values, start, end, merge_table, stamp):
    return merge_row(indices, values, start, end, merge_table[0], merge_table[1],
                     merge_table[2], stamp)
