"""The chunk of examples every parser produces and every learner consumes, and the
per-line slot merge that makes each row a proper sparse vector."""
import mmap
from dataclasses import dataclass, field, replace

import numpy as np
from numba import njit

# Open-addressing table used to merge repeated slots within one line. Lines with
# more features than half the table fall back to a sort (rare: long documents).
MERGE_TABLE_SIZE = 4096
_MERGE_TABLE_MASK = MERGE_TABLE_SIZE - 1
_FIBONACCI = 2654435769


@dataclass
class Chunk:
    """A block of parsed examples in CSR form.

    labels: float64 label as written (NaN when the line has none); importance: the VW importance
    weight (1 for svmlight); line_numbers: 1-based line of each example in its file; indptr,
    indices (hashed slots, int32), values: the rows; tag_start/tag_end and label_start/label_end:
    byte offsets into ``block`` (-1 when absent); n_lines: lines consumed, blank and skipped included.
    bad_lines: the malformed lines skipped (--skip-bad) among them, and bad_line_numbers (int64,
    rising, ``bad_lines`` of them): their 1-based lines in the file, so that output can keep one
    line per input line (select adds the rows it drops as bad). Blank and comment lines are in
    neither.

    ChunkReader reuses the buffers behind these arrays for later blocks: a chunk's arrays hold
    its data until the next chunk is requested (copy what must outlive that).
    """

    source: str
    block: np.ndarray
    labels: np.ndarray
    importance: np.ndarray
    line_numbers: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    tag_start: np.ndarray
    tag_end: np.ndarray
    label_start: np.ndarray
    label_end: np.ndarray
    n_lines: int
    bad_lines: int
    n_bytes: int
    derived: object = None  # what ChunkReader's ``process`` returned for this chunk
    bad_line_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n_examples(self):
        return len(self.labels)

    def tags(self):
        """The VW tags as str (None where a line has none); only for output, not in hot loops."""
        raw = self.block.tobytes()
        return [raw[s:e].decode("utf-8", "replace") if s >= 0 else None
                for s, e in zip(self.tag_start.tolist(), self.tag_end.tolist())]

    def select(self, keep, dropped_as_bad=True):
        """The chunk with only the rows where ``keep`` is True (the dropped rows count as bad
        lines when ``dropped_as_bad``); vectorised, no Python work per row."""
        keep = np.asarray(keep, bool)
        lengths = np.diff(self.indptr)
        indptr = np.zeros(int(keep.sum()) + 1, np.int64)
        np.cumsum(lengths[keep], out=indptr[1:])
        entries = np.repeat(keep, lengths)
        bad_line_numbers = self.bad_line_numbers
        if dropped_as_bad and not keep.all():  # both rise and differ: one sort merges them
            bad_line_numbers = np.sort(np.concatenate([bad_line_numbers,
                                                       self.line_numbers[~keep]]))
        return replace(
            self, labels=self.labels[keep], importance=self.importance[keep],
            line_numbers=self.line_numbers[keep], indptr=indptr, indices=self.indices[entries],
            values=self.values[entries], tag_start=self.tag_start[keep],
            tag_end=self.tag_end[keep], label_start=self.label_start[keep],
            label_end=self.label_end[keep], bad_line_numbers=bad_line_numbers,
            bad_lines=self.bad_lines + (int((~keep).sum()) if dropped_as_bad else 0))

    def text_label_rows(self):
        """Rows whose label is a class name rather than a number (parsed as NaN with a token)."""
        return np.isnan(self.labels) & (self.label_start >= 0)

    def label_tokens(self):
        raw = self.block.tobytes()
        return [raw[s:e].decode("utf-8", "replace") if s >= 0 else None
                for s, e in zip(self.label_start.tolist(), self.label_end.tolist())]


def untouched_array(length, dtype):
    """An array whose pages take memory only once written.

    The feature arrays are sized for the worst case (a block of one-byte features) and are
    mostly never written. numpy asks the kernel for transparent huge pages on large arrays,
    and khugepaged then fills in the unwritten parts of each 2 MB region: resident memory would
    grow to the worst case during a run. An anonymous mapping without that advice stays small.
    """
    dtype = np.dtype(dtype)
    nbytes = max(length * dtype.itemsize, 1)
    if nbytes < 1 << 22:  # below numpy's huge-page threshold
        return np.empty(length, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype, count=length)


def allocate_outputs(n_bytes, n_newlines):
    """Output arrays large enough for any block of ``n_bytes`` with ``n_newlines`` line ends,
    in the order of parse_block's parameters (labels ... label_end, bad line numbers).

    Every feature takes at least two bytes ("1 " or "a "), plus one bias feature per line; the
    feature arrays have as much room again, the scratch of merge_row for a long row (untouched,
    so not resident, unless such a row comes).
    """
    max_lines = n_newlines + 1
    max_features = 2 * (n_bytes // 2 + 2 * max_lines)
    return (
        np.empty(max_lines, np.float64),   # labels
        np.empty(max_lines, np.float64),   # importance
        np.empty(max_lines, np.int64),     # line numbers
        np.empty(max_lines + 1, np.int64),  # indptr
        untouched_array(max_features, np.int32),  # indices
        untouched_array(max_features, np.float64),  # values
        np.empty(max_lines, np.int64),     # tag start
        np.empty(max_lines, np.int64),     # tag end
        np.empty(max_lines, np.int64),     # label start
        np.empty(max_lines, np.int64),     # label end
        np.empty(max_lines, np.int64),     # line numbers of the bad lines skipped
    )


def new_merge_table():
    """Scratch for merge_row: slot keys, owning-row stamps, positions."""
    return (np.zeros(MERGE_TABLE_SIZE, np.int64), np.full(MERGE_TABLE_SIZE, -1, np.int64),
            np.zeros(MERGE_TABLE_SIZE, np.int64))


@njit(cache=True, inline="always")
def append_rising_slot(indices, values, nnz, slot, value, last_slot, distinct, bias_slot):
    """Write one feature at nnz; returns (new nnz, distinct): distinct stays True while the
    slots rise strictly and none is bias_slot, so the row needs no merge_row (svmlight rows)."""
    indices[nnz] = slot
    values[nnz] = value
    return nnz + 1, distinct and last_slot < slot != bias_slot


@njit(cache=True, inline="always")
def append_wrapping_slot(indices, values, nnz, slot, value, last_slot, falls, bias_seen,
                         bias_slot):
    """append_rising_slot for VW rows, whose all-digit names plus the namespace seed rise and
    then wrap around once at the mask; returns (new nnz, falls, bias_seen), from which
    wrapping_slots_distinct tells at the row's end whether it needs merge_row.

    Counting the falls (a slot at or below the one before) and noting the bias slot is less
    work per feature than keeping a distinct flag up to date, which also needs the row's first
    slot; and it has no branch (a branch here also kept numba's reference counting of
    ``indices`` in the scanner's loop).
    """
    indices[nnz] = slot
    values[nnz] = value
    return nnz + 1, falls + (slot <= last_slot), bias_seen | (slot == bias_slot)


@njit(cache=True, inline="always")
def wrapping_slots_distinct(indices, row_start, last_slot, falls, bias_seen):
    """Whether the slots append_wrapping_slot wrote from row_start are all different and none
    is the bias slot: they rise strictly (no fall), or rise, fall once and then rise strictly,
    up to a last slot below the row's first one. (last_slot is -1 for an empty row.)"""
    return not bias_seen and (falls == 0 or (falls == 1 and last_slot < indices[row_start]))


@njit(cache=True, inline="always")
def slots_ordered(indices, start, end, bias_slot):
    """True when the slots rise strictly and none is bias_slot: appending the bias then leaves
    nothing for merge_row to merge."""
    for k in range(start, end):
        if indices[k] == bias_slot or (k > start and indices[k] <= indices[k - 1]):
            return False
    return True


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
        h = ((slot * _FIBONACCI) >> 12) & _MERGE_TABLE_MASK
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
    allocate_outputs sizes for it: no allocation (an allocation would also bring numba's
    array module into every process that loads the parse kernel, 25 ms of start-up).
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
