"""The chunk of examples every parser produces and every learner, task and experiment consumes,
and its buffers."""
import mmap
from dataclasses import dataclass, field, fields, replace

import numpy as np


@dataclass
class Chunk:
    """A block of parsed examples in CSR form: the one sparse-matrix type of streamherd, from the
    parser through the tasks and learners to the experiment's in-memory datasets.

    labels: float64 label as written (NaN when the line has none, or when its label is a class
    name); importance: the VW importance weight (1 for svmlight); line_numbers: 1-based line of
    each example in its file; indptr, indices (hashed slots, int32), values: the rows;
    tag_start/tag_end and label_start/label_end: byte offsets into ``block`` (-1 when absent);
    n_lines: lines consumed, blank and skipped included. bad_lines: the malformed lines skipped
    (--skip-bad) among them, and bad_line_numbers (int64, rising, ``bad_lines`` of them): their
    1-based lines in the file, so that output can keep one line per input line (select adds the
    rows it drops as bad). Blank and comment lines are in neither.

    ChunkReader reuses the buffers behind these arrays for later blocks: a chunk's arrays hold
    its data until the next chunk is requested (``copy`` what must outlive that).
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

    def label_token(self, row):
        """The label of ``row`` as written (None when the line has none); for messages and the
        progress table."""
        start = self.label_start[row]
        if start < 0:
            return None
        return self.block[start:self.label_end[row]].tobytes().decode("utf-8", "replace")

    def take(self, rows):
        """The rows ``rows`` (an index array, in that order; repeats allowed) as a new chunk,
        whose rows are arrays of its own and whose text (``block``) is this chunk's; vectorised,
        no Python work per row. The bad lines stay the chunk's: taking rows drops none as bad
        (see select)."""
        rows = np.asarray(rows, np.int64)
        indptr, indices, values = self.rows_csr(rows)
        return replace(
            self, labels=self.labels[rows], importance=self.importance[rows],
            line_numbers=self.line_numbers[rows], indptr=indptr, indices=indices,
            values=values, tag_start=self.tag_start[rows], tag_end=self.tag_end[rows],
            label_start=self.label_start[rows], label_end=self.label_end[rows], derived=None)

    def rows_csr(self, rows):
        """(indptr, indices, values) of the rows ``rows`` (an int64 index array) alone: take's
        features, for a caller that needs nothing else of the rows."""
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        # entry k of the new rows is entry k - (new row start - old row start) of the old ones
        entries = np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1] - starts, lengths)
        return indptr, self.indices[entries], self.values[entries]

    def select(self, keep, dropped_as_bad=True):
        """The chunk with only the rows where ``keep`` is True (the dropped rows count as bad
        lines when ``dropped_as_bad``)."""
        keep = np.asarray(keep, bool)
        kept = self.take(np.flatnonzero(keep))
        if not dropped_as_bad or keep.all():
            return kept
        # both rise and differ: one sort merges them
        bad_line_numbers = np.sort(np.concatenate([self.bad_line_numbers,
                                                   self.line_numbers[~keep]]))
        return replace(kept, bad_line_numbers=bad_line_numbers,
                       bad_lines=self.bad_lines + int((~keep).sum()))

    def copy(self):
        """The chunk with arrays of its own."""
        return replace(self, **{f.name: getattr(self, f.name).copy() for f in fields(self)
                                if isinstance(getattr(self, f.name), np.ndarray)})

    @classmethod
    def concatenate(cls, chunks):
        """The chunks of one input, in order, as one chunk with arrays of its own."""
        blocks = [chunk.block for chunk in chunks]
        block_starts = np.cumsum([0, *(len(b) for b in blocks[:-1])])
        entry_starts = np.cumsum([0, *(len(chunk.values) for chunk in chunks[:-1])])

        def joined(name, shifts=None):
            parts = [getattr(chunk, name) for chunk in chunks]
            if shifts is not None:   # offsets into the joined block (-1, absent, stays -1)
                parts = [np.where(part >= 0, part + shift, part)
                         for part, shift in zip(parts, shifts)]
            return np.concatenate(parts)

        indptr = np.concatenate([np.zeros(1, np.int64),
                                 *(chunk.indptr[1:] + start
                                   for chunk, start in zip(chunks, entry_starts))])
        return cls(
            chunks[0].source, np.concatenate(blocks), joined("labels"), joined("importance"),
            joined("line_numbers"), indptr, joined("indices"), joined("values"),
            joined("tag_start", block_starts), joined("tag_end", block_starts),
            joined("label_start", block_starts), joined("label_end", block_starts),
            sum(chunk.n_lines for chunk in chunks), sum(chunk.bad_lines for chunk in chunks),
            sum(chunk.n_bytes for chunk in chunks),
            bad_line_numbers=joined("bad_line_numbers"))

    def row_ids(self):
        """The row of every stored entry (indices and values)."""
        return np.repeat(np.arange(self.n_examples, dtype=np.int64), np.diff(self.indptr))

    def text_label_rows(self):
        """Rows whose label is a class name rather than a number (parsed as NaN with a token)."""
        return np.isnan(self.labels) & (self.label_start >= 0)


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


def allocate_outputs(n_bytes, n_newlines, features, crossed_features=0):
    """Output arrays large enough for any block of ``n_bytes`` with ``n_newlines`` line ends
    and, with crosses of namespaces, ``crossed_features`` features (features.
    max_crossed_features: only a block's lines tell how many), in the order of parse_block's
    parameters (labels ... label_end, bad line numbers), for the rows of the FeatureSpace
    ``features``.

    Every token takes at least two bytes ("1 " or "a "), or one at a line's end; the feature
    space bounds the features those tokens make (features.max_block_features). The feature
    arrays have as much room again, the scratch of features/rows.merge_row for a long row
    and, with crosses, where the feature stage notes each feature's namespace (untouched, so
    not resident, unless used).
    """
    max_lines = n_newlines + 1
    max_features = 2 * max(features.max_block_features(n_bytes // 2 + max_lines, max_lines),
                            crossed_features)
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


