"""The per-line merge that sums a row's repeated slots, so that each row is a proper sparse
vector (the feature stage, stage.py, calls it when a row may hold a slot twice)."""
import numpy as np
from numba import njit

# Open-addressing table used to merge repeated slots within one line. Lines with
# more features than half the table fall back to a sort (rare: long documents).
MERGE_TABLE_SIZE = 4096
_MERGE_TABLE_MASK = MERGE_TABLE_SIZE - 1
# the multiplier of the table's Fibonacci hashing: 2^32 over the golden ratio
FIBONACCI = 2654435769


# The bit set of the slots seen in a crossed row (features/interactions.repeats_a_slot): one bit
# per slot of 2^20, as many as the default --bits (a wider mask shares bits: a shared bit
# only sends a row to merge_row), 128 KiB.
SEEN_SLOTS_WORDS = 1 << 14


def new_merge_table():
    """Scratch for merge_row: slot keys, owning-row stamps, positions; and the bit set of
    slots seen (all clear between rows)."""
    return (np.zeros(MERGE_TABLE_SIZE, np.int64), np.full(MERGE_TABLE_SIZE, -1, np.int64),
            np.zeros(MERGE_TABLE_SIZE, np.int64), np.zeros(SEEN_SLOTS_WORDS, np.uint64))


@njit(cache=True)
def merge_row(indices, values, start, end, keys, stamps, positions, stamp):
    """Sum repeated slots of one row in place, keeping first-seen order; returns the new end,
    or -1 when a sum overflows to infinity (a malformed line: values must stay finite).

    Repeated svmlight indices and hash collisions both produce repeated slots; the learners
    need x as a vector (|x|^2 and the per-slot variance updates are not linear in the entries).
    A strictly increasing row (the usual svmlight line) has nothing to merge.
    """
    increasing = True
    for k in range(start + 1, end):
        if indices[k] <= indices[k - 1]:
            increasing = False
            break
    if increasing:
        return end
    if end - start > MERGE_TABLE_SIZE // 2:
        return _merge_row_sorted(indices, values, start, end)
    out = start
    for k in range(start, end):
        slot = indices[k]
        h = ((slot * FIBONACCI) >> 12) & _MERGE_TABLE_MASK
        while True:
            if stamps[h] != stamp:
                stamps[h] = stamp
                keys[h] = slot
                positions[h] = out
                indices[out] = slot
                values[out] = values[k]
                out += 1
                break
            if keys[h] == slot:
                total = values[positions[h]] + values[k]
                if np.isinf(total):  # finite values: only a sum can overflow, here
                    return -1
                values[positions[h]] = total
                break
            h = (h + 1) & _MERGE_TABLE_MASK
    return out


@njit(cache=True)
def _merge_row_sorted(indices, values, start, end):
    """merge_row for a row too long for the merge table: a stable merge sort of the row by
    slot, then one pass that sums runs of a slot in their order in the line (as the table
    does). The sort's scratch is ``indices``/``values`` right after the row, which
    io/csr.allocate_outputs sizes for it: no allocation (an allocation would also bring numba's
    array module into every process that loads the parse kernel, a cost at every start-up).
    """
    n = end - start
    src = start
    dst = end
    width = 1
    while width < n:  # bottom-up: merge neighbouring sorted runs of width into runs of 2 width
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                # the left run wins ties: equal slots keep their order in the line
                if j >= hi or (i < mid and indices[src + i] <= indices[src + j]):
                    indices[dst + k] = indices[src + i]
                    values[dst + k] = values[src + i]
                    i += 1
                else:
                    indices[dst + k] = indices[src + j]
                    values[dst + k] = values[src + j]
                    j += 1
        src, dst = dst, src
        width *= 2
    out = start  # never past the read position: src + k >= start + k >= out
    for k in range(n):
        slot = indices[src + k]
        if out > start and indices[out - 1] == slot:
            total = values[out - 1] + values[src + k]
            if np.isinf(total):
                return -1
            values[out - 1] = total
        else:
            indices[out] = slot
            values[out] = values[src + k]
            out += 1
    return out
