"""The check that sends a crossed row to the merge of repeated slots
(interactions.repeats_a_slot) against a set of the row's slots."""
import numpy as np

from streamherd.features.interactions import repeats_a_slot
from streamherd.features.rows import new_merge_table


def _rows(rng, high):
    """Rows of random slots below ``high``, with and without a slot twice."""
    for length in (0, 1, 2, 40, 860, 3000):
        for _ in range(20):
            row = rng.integers(0, high, length).astype(np.int32)
            yield row
            if length > 1:   # a repeat placed anywhere, as crosses repeat a linear slot
                repeated = row.copy()
                i, j = rng.choice(length, 2, replace=False)
                repeated[j] = repeated[i]
                yield repeated


def test_exact_for_slots_of_the_bit_set_and_clear_after_each_row():
    rng = np.random.default_rng(3)
    seen = new_merge_table()[3]
    for row in _rows(rng, 1 << 20):
        padded = np.concatenate([np.full(5, 7, np.int32), row, np.full(3, 7, np.int32)])
        got = repeats_a_slot(padded, 5, 5 + len(row), seen)
        assert got == (len(set(row.tolist())) < len(row))
        assert not seen.any()


def test_never_misses_a_repeat_of_wider_slots():
    """Slots of a wider mask share bits: a row of distinct slots may be sent to the merge
    (which then finds nothing), a row with a repeat always is."""
    rng = np.random.default_rng(4)
    seen = new_merge_table()[3]
    for row in _rows(rng, 1 << 31):
        got = repeats_a_slot(row, 0, len(row), seen)
        distinct = len(set(row.tolist())) == len(row)
        assert got or distinct
        assert not seen.any()
    shared = np.array([5, 5 + (1 << 20)], np.int32)   # one bit, two slots
    assert repeats_a_slot(shared, 0, 2, seen) and not seen.any()
