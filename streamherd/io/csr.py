"""The chunk of examples every parser produces and every learner consumes, and its buffers."""
import mmap
from dataclasses import dataclass, field, replace

import numpy as np


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


def allocate_outputs(n_bytes, n_newlines, features):
    """Output arrays large enough for any block of ``n_bytes`` with ``n_newlines`` line ends,
    in the order of parse_block's parameters (labels ... label_end, bad line numbers), for the
    rows of the FeatureSpace ``features``.

    Every token takes at least two bytes ("1 " or "a "), or one at a line's end; the feature
    space bounds the features those tokens make (features.max_block_features). The feature
    arrays have as much room again, the scratch of features/rows.merge_row for a long row
    (untouched, so not resident, unless such a row comes).
    """
    max_lines = n_newlines + 1
    max_features = 2 * features.max_block_features(n_bytes // 2 + max_lines, max_lines)
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


