"""Lines already in memory (a server's reads) parsed into a Chunk, stopping at a malformed line
so that its caller can answer it and parse on after it.

The ChunkReader reads blocks from files; a server receives its lines from sockets, a few at a
time, and a malformed one there is no reason to stop: this parses one block of such lines with
the same parse kernels (io/block.py) and the same feature stage, and says where the first
malformed line ends.
"""
from typing import NamedTuple

import numpy as np

from streamherd.io import linecodes
from streamherd.io.csr import Chunk, allocate_outputs
from streamherd.io.reader import describe_token

FORMAT_NAMES = ("svmlight", "vw")


class MalformedLine(NamedTuple):
    """The first malformed line of a block: its number, what is wrong with it as one line
    (``SOURCE:LINE: what 'token'; expected ...``) and the offset just past its line end."""

    line: int
    message: str
    end: int


class Outputs:
    """The parse kernel's output arrays, kept from one block to the next and grown when a
    block needs more (a server parses many small blocks: allocating a dozen arrays for each
    would cost more than parsing its line)."""

    def __init__(self):
        self.arrays = None
        self.room = (-1, -1, -1)

    def for_block(self, block, features):
        n = len(block)
        newlines = int(np.count_nonzero(block == 10))
        crossed = features.max_crossed_features(block)
        if n > self.room[0] or newlines > self.room[1] or crossed > self.room[2]:
            self.room = (max(n, self.room[0]), max(newlines, self.room[1]),
                         max(crossed, self.room[2]))
            self.arrays = allocate_outputs(*self.room[:2], features, self.room[2])
        return self.arrays


def parse_text(block, fmt, features, first_line, source, merge_table, strict_format=False,
               outputs=None):
    """(chunk, MalformedLine or None) for ``block`` (a uint8 array of whole lines, each ending
    with a line feed but perhaps the last), read as ``fmt`` ("svmlight" or "vw") with the
    FeatureSpace ``features`` and its ``merge_table`` (new_merge_table; one per thread that
    parses). The chunk holds the rows before the first malformed line, if any, numbered from
    ``first_line``. ``strict_format``: a line of the other format is malformed (the format was
    guessed), as the ChunkReader's. ``outputs``: an Outputs whose arrays the chunk's are (valid
    until its next block); None: arrays of the chunk's own."""
    from streamherd.io.block import parse_block

    n = len(block)
    outputs = (outputs or Outputs()).for_block(block, features)
    fmt_code = FORMAT_NAMES.index(fmt)
    rows, nnz, lines, bad, code, error_line, error_start, error_end = parse_block(
        block, n, fmt_code, features.kernel_params(), False, first_line, outputs, merge_table,
        False, strict_format)
    (labels, importance, line_numbers, indptr, indices, values, tag_start, tag_end,
     label_start, label_end, _) = outputs
    malformed = None
    if code != linecodes.OK:
        what, expected = linecodes.message(code, fmt == "vw")
        token = describe_token(block[error_start:error_end].tobytes())
        malformed = MalformedLine(
            error_line, f"{source}:{error_line}: {what} '{token}'; expected {expected}",
            _end_of_line(block, lines))
        lines += 1
    chunk = Chunk(source, block, labels[:rows], importance[:rows], line_numbers[:rows],
                  indptr[:rows + 1], indices[:nnz], values[:nnz], tag_start[:rows],
                  tag_end[:rows], label_start[:rows], label_end[:rows], lines, 0,
                  malformed.end if malformed else n)
    features.transform(chunk)
    return chunk, malformed


def _end_of_line(block, before):
    """The offset just past the line that follows the first ``before`` lines of ``block``."""
    ends = np.flatnonzero(block == 10)
    return int(ends[before]) + 1 if before < len(ends) else len(block)
