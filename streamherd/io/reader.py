"""Lazy, block-at-a-time reading of all inputs into CSR chunks, parsed in a background thread.

Memory does not grow with input length: at most a few blocks (``block_size`` bytes each, plus
their parsed arrays) are alive at once, bounded by the queue between the parser and the learner.
"""
import queue
import threading

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.features.hashing import VW_CONSTANT_HASH
from streamherd.io import linecodes
from streamherd.io.csr import Chunk, allocate_outputs, new_merge_table
from streamherd.io.sources import Source, read_into

DEFAULT_BLOCK_SIZE = 4 << 20
FORMATS = ("auto", "svmlight", "vw")
_QUEUE_DEPTH = 2
_END = object()


def detect_format(head: bytes) -> str:
    """auto: the first line that is neither blank nor a comment decides; a '|' makes it VW."""
    for line in head.split(b"\n")[:-1] or [head]:
        text = line.strip()
        if text and not text.startswith(b"#"):
            return "vw" if b"|" in text else "svmlight"
    return "svmlight"


def describe_token(token: bytes) -> str:
    text = token.decode("utf-8", "backslashreplace")
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= 40 else text[:37] + "..."


class ChunkReader:
    """Iterates the chunks of every source in order (``"-"`` is stdin)."""

    def __init__(self, paths, fmt="auto", bits=18, bias=True, skip_bad=False,
                 block_size=DEFAULT_BLOCK_SIZE):
        if fmt not in FORMATS:
            raise StreamherdError(f"unknown --format '{fmt}'; use one of {', '.join(FORMATS)}")
        self.sources = [Source(p) for p in (paths or ["-"])]
        self.fmt = fmt
        self.mask = (1 << bits) - 1
        self.bias = bias
        self.bias_slot = VW_CONSTANT_HASH & self.mask
        self.skip_bad = skip_bad
        self.block_size = block_size
        self.bytes_done = 0  # raw bytes of finished sources plus the current position
        self.bad_lines = 0
        self.formats_seen = set()
        self._stop = threading.Event()

    @property
    def total_bytes(self):
        """Sum of the input sizes, or None when one is a pipe (no progress bar then)."""
        import os

        total = 0
        for s in self.sources:
            if s.path == "-" or not os.path.isfile(s.path):
                return None
            total += os.path.getsize(s.path)
        return total

    def __iter__(self):
        chunks = queue.Queue(maxsize=_QUEUE_DEPTH)
        thread = threading.Thread(target=self._produce, args=(chunks,), daemon=True,
                                  name="streamherd-parser")
        thread.start()
        try:
            while True:
                item = chunks.get()
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self._stop.set()
            while thread.is_alive():  # unblock a producer waiting on a full queue
                try:
                    chunks.get(timeout=0.05)
                except queue.Empty:
                    pass
            thread.join()

    def _produce(self, chunks):
        try:
            for chunk in self.chunks():
                while not self._stop.is_set():
                    try:
                        chunks.put(chunk, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
            chunks.put(_END)
        except BaseException as e:  # handed to the consumer, which raises it
            chunks.put(e)

    def chunks(self):
        """The same chunks, produced in the calling thread."""
        finished = 0
        for source in self.sources:
            source.open()
            try:
                yield from self._source_chunks(source, finished)
            finally:
                source.close()
            if source.size is not None:
                finished += source.size

    def _source_chunks(self, source, finished_bytes):
        from streamherd.io.block import SVMLIGHT, VW, count_newlines, end_of_last_line, parse_block

        merge_table = new_merge_table()
        carry = b""
        next_line = 1
        fmt = None
        while not self._stop.is_set():
            buf = np.empty(self.block_size + len(carry), np.uint8)
            buf[:len(carry)] = np.frombuffer(carry, np.uint8)
            got = read_into(source.stream, memoryview(buf)[len(carry):])
            n = len(carry) + got
            at_end = got < self.block_size
            if n == 0:
                break
            if at_end:
                complete = n
            else:
                complete = end_of_last_line(buf, n)
                if complete == 0:  # one line longer than the block: read more before parsing
                    carry = buf[:n].tobytes()
                    continue
            if fmt is None:
                name = self.fmt if self.fmt != "auto" else detect_format(buf[:min(complete, 1 << 16)].tobytes())
                fmt = VW if name == "vw" else SVMLIGHT
                self.formats_seen.add(name)
            outputs = allocate_outputs(complete, count_newlines(buf, complete))
            rows, nnz, lines, bad, code, err_line, err_start, err_end = parse_block(
                buf, complete, fmt, self.mask, self.bias, self.bias_slot, self.skip_bad,
                next_line, *outputs, *merge_table)
            if code != linecodes.OK:
                what, expected = linecodes.MESSAGES[code]
                token = describe_token(buf[err_start:err_end].tobytes())
                raise StreamherdError(
                    f"{source.name}:{err_line}: {what} '{token}'; expected {expected}. "
                    f"Fix the line, or pass --skip-bad to skip such lines")
            next_line += lines
            self.bad_lines += bad
            position = source.raw_position()
            if position is not None:
                self.bytes_done = finished_bytes + position
            (labels, importance, line_numbers, indptr, indices, values,
             tag_start, tag_end, label_start, label_end) = outputs
            yield Chunk(source.name, buf[:complete], labels[:rows], importance[:rows],
                        line_numbers[:rows], indptr[:rows + 1], indices[:nnz], values[:nnz],
                        tag_start[:rows], tag_end[:rows], label_start[:rows], label_end[:rows],
                        lines, bad, complete)
            carry = buf[complete:n].tobytes()
            if at_end:
                break

