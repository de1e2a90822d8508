"""The names of features: where the parse kernels found each feature's name, for the audit
(streamherd/audit.py: ``inspect --names``, ``train --audit``, ``predict --audit``).

A FeatureSpace asked to name its features (``kernel_params(naming=...)``) passes the parse
kernels a naming: two arrays as long as the output arrays, in which the feature stage notes, at
each feature's position in the row, where its name is (these functions, inlined into it):
``records[k]``: (its namespace name's start in the block, -1 for the default namespace; its
name's start; the namespace seed; its key before masking), and ``members[k]``: -1 for a feature
of the line, the bias -2, a feature of the line --ignore_linear leaves out -3, or the
positions of the features a cross multiplies (-1 padded). Rows are not merged then
(stage.py): a position stays one feature. Any other space passes an empty naming, for which
these functions compile to nothing.
"""
import numpy as np
from numba.extending import overload

LINE_FEATURE = -1
BIAS = -2
UNREAD = -3   # a linear feature of --ignore_linear: crossed, not itself a feature
CONSTANT = "Constant"
_RECORD_FIELDS = 4


def new_naming(max_features, width):
    """The arrays a block's naming needs: up to ``max_features`` features, crosses of up to
    ``width`` terms."""
    return (np.empty((max_features, _RECORD_FIELDS), np.int64),
            np.empty((max_features, max(width, 1)), np.int64))


def _compiled_only(name):
    """A call the feature stage makes, implemented by its overload below (inlined into the parse
    kernels): outside a numba function it raises TypeError."""
    def stub(*args):
        raise TypeError(f"{name} is compiled into the parse kernels (features/names.py)")
    stub.__name__ = stub.__qualname__ = name
    return stub


note_feature, note_bias, note_cross, note_cross_members, mark_unread = map(_compiled_only, (
    "note_feature", "note_bias", "note_cross", "note_cross_members", "mark_unread"))


@overload(note_feature, inline="always")
def _note_feature(naming, position, namespace, key, name_start):
    if len(naming) == 0:
        return lambda naming, position, namespace, key, name_start: None

    def note(naming, position, namespace, key, name_start):
        # (naming indexed, not unpacked: numba drops the writes to an unpacked tuple's arrays
        # in an inlined overload)
        naming[0][position, 0] = namespace[2]
        naming[0][position, 1] = name_start
        naming[0][position, 2] = np.int64(namespace[0])
        naming[0][position, 3] = np.int64(key)
        naming[1][position, 0] = LINE_FEATURE
    return note


@overload(note_bias, inline="always")
def _note_bias(naming, position):
    if len(naming) == 0:
        return lambda naming, position: None

    def note(naming, position):
        naming[1][position, 0] = BIAS
    return note


@overload(note_cross, inline="always")
def _note_cross(naming, position, first, second):
    if len(naming) == 0:
        return lambda naming, position, first, second: None

    def note(naming, position, first, second):
        members = naming[1]
        members[position, :] = -1
        members[position, 0] = first
        members[position, 1] = second
    return note


@overload(note_cross_members, inline="always")
def _note_cross_members(naming, position, members, cursors, order):
    if len(naming) == 0:
        return lambda naming, position, members, cursors, order: None

    def note(naming, position, members, cursors, order):
        crossed = naming[1]
        crossed[position, :] = -1
        for t in range(order):
            crossed[position, t] = members[cursors[t]]
    return note


@overload(mark_unread)
def _mark_unread(naming, indices, start, nnz, mirror, linear_masks):
    """Mark the linear features of the --ignore_linear letters (noted at the mirror positions,
    see interactions.py) UNREAD."""
    if len(naming) == 0:
        return lambda naming, indices, start, nnz, mirror, linear_masks: None

    def mark(naming, indices, start, nnz, mirror, linear_masks):
        members = naming[1]
        for k in range(start, nnz):
            c = indices[mirror - k]
            if (linear_masks[c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                members[k, 0] = UNREAD
    return mark
