"""Shards: each input file is one, and a large uncompressed file is cut into byte ranges.

A shard [s, e) of a file owns every line whose first byte lies in [s, e): its reader seeks to
s - 1, skips to just after the next newline (at s - 1 itself: the line starting at s is
whole), and reads while a line starts before e. Every line of the file then belongs to
exactly one shard, wherever the cuts fall (a cut inside a line gives that line to the shard in
which it starts). A compressed file cannot be entered in the middle: it is one shard.

A shard's lines keep their numbers in the file (errors name them, the holdout set is chosen by
them). The number of its first line is counted once, before round 1: each shard counts the
lines it owns (``owned_lines``, a task per shard, in parallel) and ``numbered`` adds them up;
a shard not numbered so counts the newlines before it each time it is opened.
"""
import dataclasses
import math
import os
from dataclasses import dataclass

from streamherd.errors import StreamherdError
from streamherd.io import sources

# bytes read at a time when looking for a newline, or counting the lines before a shard
_SCAN_BYTES = 1 << 16
_COUNT_BYTES = 1 << 24


@dataclass(frozen=True)
class Shard:
    """The lines of ``path`` that start in [start, end) (end None: to the end of the file)."""

    path: str
    start: int = 0
    end: "int | None" = None
    first_line: "int | None" = None   # the number of its first line in the file (None: count)

    def describe(self):
        return self.path if self.end is None and self.start == 0 else \
            f"{self.path}[{self.start}:{self.end}]"

    def source(self):
        """The reader's Source of this shard (streamherd.io.reader.ChunkReader takes it)."""
        if self.start == 0 and self.end is None:
            return sources.Source(self.path)
        return ByteRangeSource(self.path, self.start, self.end, self.first_line)

    @property
    def ranged(self):
        """Whether the shard is a byte range of its file (not the whole file)."""
        return self.end is not None or self.start > 0


def is_compressed(path):
    """Whether ``path`` starts with a compressed stream's magic bytes (sources' detection)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise StreamherdError(f"cannot read {path}: {e.strerror}; check the path and "
                              f"permissions") from None
    return sources.detect_compression(head) is not None


def plan_shards(paths, count):
    """The shards of ``paths``, in input order: one per file when ``count`` is at most the
    number of files, else the uncompressed files cut into about ``count`` byte ranges in
    all, each file's share in proportion to its size."""
    if "-" in paths:
        raise StreamherdError("dist-train reads files that every worker can open, not standard "
                              "input; save the data to a file (on storage the workers share)")
    cuttable = {p: os.path.getsize(p) for p in paths if not is_compressed(p)}
    spare = count - (len(paths) - len(cuttable))
    total = sum(cuttable.values())
    shards = []
    for path in paths:
        size = cuttable.get(path)
        pieces = 1 if size is None or total == 0 or spare <= len(cuttable) else \
            max(1, math.ceil(spare * size / total - 1e-9))
        shards += byte_ranges(path, size, pieces)
    return shards


def byte_ranges(path, size, pieces):
    """``pieces`` shards of equal byte ranges of a file of ``size`` bytes (the whole file for
    one piece)."""
    if pieces <= 1:
        return [Shard(os.fspath(path))]
    cuts = [size * k // pieces for k in range(pieces + 1)]
    return [Shard(os.fspath(path), s, e) for s, e in zip(cuts, cuts[1:])]


def _after_newline(f, position, size):
    """The offset just after the first newline at or after ``position`` (``size``: none)."""
    f.seek(position)
    while True:
        block = f.read(_SCAN_BYTES)
        if not block:
            return size
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)


def owned_bytes(f, start, end, size):
    """The byte range [a, b) of the whole lines that start in [start, end) of the file ``f``."""
    end = size if end is None else min(end, size)
    first = 0 if start == 0 else _after_newline(f, start - 1, size)
    if first >= end:
        return first, first
    return first, _after_newline(f, end - 1, size)


def _newlines(f, position, stop):
    """The newlines in bytes [position, stop) of the file ``f`` (read in large blocks)."""
    f.seek(position)
    count, left = 0, stop - position
    while left > 0:
        block = f.read(min(left, _COUNT_BYTES))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


def owned_lines(shard):
    """The newlines in the bytes that ``shard`` (a byte range) owns: the number of its lines,
    the last one counted when it ends with a newline."""
    try:
        with open(shard.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return _newlines(f, *owned_bytes(f, shard.start, shard.end, size))
    except OSError as e:
        raise StreamherdError(f"cannot read {shard.path}: {e.strerror}; check that every "
                              f"worker sees the file at that path") from None


def numbered(shards, counts):
    """``shards`` with the number of their first line set, from each ranged one's
    ``owned_lines`` (``counts``, None for a whole file): a file's byte ranges follow one
    another in order, each one's first line after the previous one's lines."""
    out, before = [], {}
    for shard, count in zip(shards, counts):
        if count is None:
            out.append(shard)
            continue
        first = 1 if shard.start == 0 else before[shard.path]
        out.append(dataclasses.replace(shard, first_line=first))
        before[shard.path] = first + count
    return out


class _Bounded:
    """The next ``length`` bytes of a raw file, then its end."""

    def __init__(self, raw, length):
        self._raw = raw
        self._left = length

    def readinto(self, view):
        if self._left <= 0:
            return 0
        n = self._raw.readinto(view[:min(len(view), self._left)])
        self._left -= n
        return n


class ByteRangeSource(sources.Source):
    """The lines of a shard [start, end) of an uncompressed file, as a Source: the reader
    reads them as a file of their own whose line numbers continue the file's."""

    def __init__(self, path, start, end, first_line=None):
        super().__init__(path)
        self.start, self.end, self.known_first_line = start, end, first_line

    def open(self):
        super().open()
        if self.compressed:
            self.close()
            raise StreamherdError(f"{self.name} is compressed: it cannot be cut into byte "
                                  f"ranges; give it as one shard")
        raw = self._raw
        size = os.fstat(raw.fileno()).st_size
        first, last = owned_bytes(raw, self.start, self.end, size)
        if first == 0:   # the file's first range reads past a byte-order mark, as a Source
            first = min(sources.byte_order_mark_length(raw), last)
        self.first_line = self.known_first_line or 1 + _newlines(raw, 0, first)
        raw.seek(first)
        self.size = last - first
        self.stream = _Bounded(raw, last - first)
        return self
