"""Lazy, block-at-a-time reading of all inputs into CSR chunks, parsed in a background thread.

Memory does not grow with input length: at most a few blocks (``block_size`` bytes each, plus
their parsed arrays) are alive at once, bounded by the queue between the parser and the learner.
"""
import os
import queue
import threading
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.io import linecodes
from streamherd.io.csr import Chunk, allocate_outputs
from streamherd.io.sources import Source

# Larger blocks parse no faster and raise the peak of memory: a few blocks and their parsed
# arrays are alive at once (benchmarks/README.md, "Design measurements").
DEFAULT_BLOCK_SIZE = 1 << 20
# Parser threads when the consumer does little per chunk (predict, whose margins are computed on
# these threads; parse-only loops): with two cores, two parsers keep both busy.
DEFAULT_WORKERS = min(2, os.cpu_count() or 1)
# Parser threads under training: the learner is the one sequential step, so it keeps a core of
# its own, and the parsers take the others (up to two): on two cores a second parser takes CPU
# from the learner and slows training down, while predict, whose scores are computed on the
# parser threads, needs both (benchmarks/README.md, "Design measurements").
TRAINING_WORKERS = max(1, min(2, (os.cpu_count() or 1) - 1))
FORMATS = ("auto", "svmlight", "vw")
# how long a stopped iteration waits for its reading thread, which stops at its next block
# within 0.1 s unless a read of a paused pipe holds it (ChunkReader.__iter__)
READER_STOP_SECONDS = 1.0
_END = object()
_CARRY_ROOM = 1 << 16
_CR, _LF = 13, 10


def _has_line_end(data):
    """Whether the bytes ``data`` (uint8) hold an LF or a CR."""
    return bool(np.any(data == _LF) or np.any(data == _CR))
# --format auto reads this many lines that tell a format (line_format), at most, from the start
# of the first block of each input, and takes the format of most of them.
DETECT_LINES = 1000
_DETECT_BYTES = 1 << 18
# Bytes read at a time when the rest of a compressed input is decompressed to check it.
_CHECK_READ = 1 << 20


def line_format(line: bytes):
    """'vw' for a line with a '|' before any '#' (an svmlight line may end with a comment that
    holds a '|'); 'svmlight' for one with a ':' in a token after the first, before any '#', and
    no such '|'; None for a line that tells neither (blank, comment, label only)."""
    text = line.split(b"#", 1)[0]
    if b"|" in text:
        return "vw"
    label_and_rest = text.split(None, 1)
    if len(label_and_rest) == 2 and b":" in label_and_rest[1]:
        return "svmlight"
    return None


def detect_format(head: bytes) -> str:
    """auto: the format of most of the first DETECT_LINES lines of ``head`` that tell one
    (line_format), the first of them on a tie, svmlight when none does. One odd line at the
    start (a '|' in an svmlight line) does not decide the format of a file; a line of the
    other format is an error that names it (see ChunkReader._parse). The last line of ``head``
    is read only when it is the only one (it may be cut)."""
    lines = head.split(b"\n", 4 * DETECT_LINES)
    votes = {"vw": 0, "svmlight": 0}
    first = None
    for line in lines[:-1] or lines:
        kind = line_format(line)
        if kind is not None:
            votes[kind] += 1
            first = first or kind
            if votes["vw"] + votes["svmlight"] == DETECT_LINES:
                break
    if votes["vw"] != votes["svmlight"]:
        return max(votes, key=votes.get)
    return first or "svmlight"


def describe_token(token: bytes) -> str:
    text = token.decode("utf-8", "backslashreplace")
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= 40 else text[:37] + "..."


class ChunkReader:
    """Iterates the chunks of every source in order (``"-"`` is stdin)."""

    def __init__(self, paths, fmt="auto", *, features, skip_bad=False,
                 block_size=DEFAULT_BLOCK_SIZE, workers=None, process=None,
                 max_line_bytes=linecodes.MAX_LINE_BYTES):
        """``paths``: file names, or Sources (a shard of a file: distributed/shards.py).
        ``features``: the FeatureSpace (features/space.py) that turns the tokens into rows,
        and scales them, on the parser threads. Labels come as
        written: one that is not a number is a class name, for the task (tasks/) to take or
        refuse.
        ``process(chunk)``, when given, runs in the parser thread right after parsing and its
        result becomes ``chunk.derived``: work on a chunk that does not depend on the chunks
        before it (predict's scores) then runs on the parser threads, in parallel.
        ``max_line_bytes``: a line longer is an error; measured only when a block ends inside
        a line, so a line within one block passes whatever the limit."""
        if fmt not in FORMATS:
            raise StreamherdError(f"unknown --format '{fmt}'; use one of {', '.join(FORMATS)}")
        self.sources = [p if isinstance(p, Source) else Source(p) for p in (paths or ["-"])]
        self.fmt = fmt
        self.features = features
        self.skip_bad = skip_bad
        self.block_size = block_size
        self.max_line_bytes = max_line_bytes
        self.bytes_done = 0  # raw bytes of finished sources plus the current position
        self.bad_lines = 0
        self.formats_seen = set()
        self.workers = DEFAULT_WORKERS if workers is None else workers
        self.process = process
        self._stop = threading.Event()
        self._check_source = None  # the source the consumer wants checked (see _line_error)
        self._check_requested = threading.Event()
        self._local = threading.local()

    @property
    def total_bytes(self):
        """Sum of the input sizes, or None when one is a pipe (no progress bar then)."""
        total = 0
        for s in self.sources:
            if s.path == "-" or not os.path.isfile(s.path):
                return None
            total += os.path.getsize(s.path)
        return total

    def __iter__(self):
        """Chunks in input order. One thread reads (and decompresses) blocks and numbers their
        lines; ``workers`` threads parse them (the kernels release the GIL); the caller gets them
        back in order, while it works on the previous one. A caller that would wait for its next
        chunk parses a waiting block itself (see _ParseJobs).

        A chunk's arrays live in buffers that are reused: they hold that chunk until the caller
        asks for the next one (copy what must outlive the loop body).
        """
        if self.workers < 1:
            yield from self.chunks()
            return
        # One slot for the chunk the caller holds, one per parser, one the caller may be
        # parsing, one being read.
        free_slots = queue.Queue()
        for _ in range(self.workers + 3):
            free_slots.put(_Slot())
        jobs = _ParseJobs(self._parse, self.workers)
        thread = threading.Thread(target=self._submit_all, args=(jobs, free_slots),
                                  daemon=True, name="streamherd-read")
        thread.start()
        held = None
        try:
            while True:
                job = jobs.next_in_order()
                if job is _END:
                    break
                if isinstance(job, BaseException):
                    raise job
                try:
                    chunk = jobs.result(job)
                except StreamherdError as e:
                    raise self._line_error(job.block.origin, e, thread) from None
                if held is not None:
                    free_slots.put(held)
                held = job.block.slot
                self.bad_lines += chunk.bad_lines
                yield chunk
        finally:
            self._stop.set()
            # the reader stops at its next block; but a read of a pipe or a terminal whose
            # writer pauses (`tail -f ... | streamherd train --examples N`, Ctrl-C there) waits
            # for the writer, for ever: after READER_STOP_SECONDS it is left to it (a daemon
            # thread, which fills only this loop's slots and whose blocks nobody takes)
            thread.join(READER_STOP_SECONDS)
            jobs.shutdown()

    def _submit_all(self, jobs, free_slots):
        try:
            for block in self._blocks(lambda: self._take(free_slots)):
                jobs.submit(block)
            jobs.finish(_END)
        except _Stopped:
            pass
        except BaseException as e:  # handed to the consumer, which raises it
            jobs.finish(e)

    def _take(self, free_slots):
        """A free slot; waits for the consumer to hand one back (the bound on memory)."""
        while True:
            try:
                return free_slots.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    raise _Stopped from None
                if self._check_requested.is_set():
                    raise _CheckRequested from None

    def chunks(self):
        """The same chunks, read and parsed in the calling thread (one slot, reused)."""
        slot = _Slot()
        for block in self._blocks(lambda: slot):
            try:
                chunk = self._parse(block)
            except StreamherdError as e:
                raise self._line_error(block.origin, e) from None
            self.bad_lines += chunk.bad_lines
            yield chunk

    def _line_error(self, source, error, reader_thread=None):
        """The error to raise for a malformed line (``error``) of ``source``: for a compressed
        source whose data turns out damaged, that damage instead.

        A flipped byte in a gzip body yields garbage text, and gzip only says so at the end of
        its member (the CRC): the garbage reaches the parser first. So before a line error of a
        compressed source, the rest of it is decompressed (not parsed), unless the reader has
        already read it all. That is done where the stream is read: here without a reader
        thread, else by the reader thread on request (_blocks), the consumer waiting. Malformed
        lines skipped with --skip-bad need no check here: the reader reads on to the end of the
        source, and damage found there stops the run with its error, in input order.
        """
        if not source.compressed:
            return error
        if not source.checked.is_set():
            if reader_thread is None:
                self._check_rest(source)
            else:
                self._check_source = source
                self._check_requested.set()
                while not source.checked.wait(0.1):
                    if not reader_thread.is_alive():  # ended by some other error first
                        break
        return source.read_error or error

    def _check_rest(self, source):
        """Decompress the rest of ``source`` (discarded), keeping its error in read_error; stops
        early when the consumer has gone (an interrupt while it waited)."""
        scratch = np.empty(_CHECK_READ, np.uint8)
        try:
            while not self._stop.is_set() and not source.ended:
                source.read_into(memoryview(scratch))
        except StreamherdError:  # kept in source.read_error, and checked is set
            pass

    def _blocks(self, take_slot):
        """Blocks of complete lines, in order, with the file line number each starts at, each
        read into a slot from ``take_slot()``."""
        from streamherd.io.block import complete_lines

        finished = 0
        slot = None  # taken for the next block; kept while it holds no block
        for source in self.sources:
            source.open()
            try:
                carry = b""
                held = 0   # bytes of a line longer than a block, kept at the start of the slot
                next_line = source.first_line
                fmt = None
                while not self._stop.is_set():
                    try:
                        if self._check_requested.is_set():
                            raise _CheckRequested
                        if slot is None:
                            slot = take_slot()
                    except _CheckRequested:
                        # the consumer has a line error and waits for this check: read no more
                        if self._check_source is source:
                            self._check_rest(source)
                        raise _Stopped from None
                    if held:   # the long line stays in the slot, which grows geometrically
                        buf = slot.grown_buffer(held + self.block_size, held)
                    else:
                        buf = slot.read_buffer(self.block_size + len(carry))
                        buf[:len(carry)] = np.frombuffer(carry, np.uint8)
                        held = len(carry)
                    got = source.read_into(memoryview(buf)[held:held + self.block_size])
                    n = held + got
                    at_end = source.ended
                    if n == 0:
                        break
                    # (lone CRs become LFs here: a CR-only file has lines too)
                    if held and not at_end and buf[held - 1] != _CR \
                            and not _has_line_end(buf[held:n]):
                        complete = 0   # the long line goes on: only the bytes read are looked at
                    else:
                        complete, newlines = complete_lines(buf, n, at_end)
                    if complete == 0:  # one line longer than the block: read on before parsing
                        if n > self.max_line_bytes:
                            raise StreamherdError(linecodes.line_too_long(
                                f"{source.name}:{next_line}", self.max_line_bytes))
                        held = n
                        continue
                    held = 0
                    if fmt is None:
                        fmt = self._detect(buf, complete)
                    position = source.raw_position()
                    if position is not None:
                        self.bytes_done = finished + position
                    # The partial last line moves to the next block; copy it before this block
                    # goes to a parser (the slot is not touched again until it comes back).
                    carry = buf[complete:n].tobytes()
                    yield _Block(source.name, slot, complete, fmt, next_line, newlines, source)
                    slot = None
                    # A last line without a newline still counts as a line.
                    next_line += newlines + (1 if at_end and buf[complete - 1] != 10 else 0)
                    if at_end:
                        break
            finally:
                source.close()
            if source.size is not None:
                finished += source.size

    def _detect(self, buf, complete):
        from streamherd.io.block import SVMLIGHT, VW

        name = (self.fmt if self.fmt != "auto"
                else detect_format(buf[:min(complete, _DETECT_BYTES)].tobytes()))
        self.formats_seen.add(name)
        return VW if name == "vw" else SVMLIGHT

    def _parse(self, block):
        from streamherd.io.block import parse_block

        merge_table = getattr(self._local, "merge_table", None)
        if merge_table is None:
            merge_table = self._local.merge_table = self.features.new_merge_table()
        slot, complete = block.slot, block.complete
        buf = slot.buf
        outputs = slot.outputs_for(complete, block.newlines, self.features, buf[:complete])
        rows, nnz, lines, bad, code, err_line, err_start, err_end = parse_block(
            buf, complete, block.fmt, self.features.kernel_params(), self.skip_bad,
            block.first_line, outputs, merge_table, False, self.fmt == "auto")
        if code != linecodes.OK:
            from streamherd.io.block import VW

            what, expected = linecodes.message(code, block.fmt == VW)
            raw = buf[err_start:err_end].tobytes()
            marked = linecodes.byte_order_mark_error(f"{block.source}:{err_line}", raw,
                                                     block.source)
            if marked:
                raise StreamherdError(marked)
            token = describe_token(raw)
            where = f"{block.source}:{err_line}: {what} '{token}'"
            if code in linecodes.OTHER_FORMAT:
                raise StreamherdError(f"{where}; {self._format_advice(block.fmt)}")
            raise StreamherdError(
                f"{where}; expected {expected}. Fix the line, or pass --skip-bad to skip such "
                f"lines")
        (labels, importance, line_numbers, indptr, indices, values,
         tag_start, tag_end, label_start, label_end, bad_line_numbers) = outputs
        chunk = Chunk(block.source, buf[:complete], labels[:rows], importance[:rows],
                      line_numbers[:rows], indptr[:rows + 1], indices[:nnz], values[:nnz],
                      tag_start[:rows], tag_end[:rows], label_start[:rows], label_end[:rows],
                      lines, bad, complete, bad_line_numbers=bad_line_numbers[:bad])
        self.features.transform(chunk)
        if self.process is not None:
            chunk.derived = self.process(chunk)
        return chunk

    def _format_advice(self, fmt):
        """How to fix a line of the other format in input read as ``fmt`` (block.SVMLIGHT/VW)."""
        from streamherd.io.block import VW

        name, other = ("VW", "svmlight") if fmt == VW else ("svmlight", "VW")
        if self.fmt == "auto":
            return (f"the input is read as {name}, the format of most of its first lines: fix "
                    f"the line, or pass --format {other.lower()} if the input is {other} (split "
                    f"a file of mixed formats)")
        return (f"the input is read as {name} (--format {self.fmt}): pass --format "
                f"{other.lower()} if it is {other}, or fix the line, or pass --skip-bad to skip "
                f"such lines")


class _ParseJob:
    """One block to parse; ``done`` is set when ``chunk`` (or ``error``) is there."""

    __slots__ = ("block", "chunk", "error", "done")

    def __init__(self, block):
        self.block = block
        self.chunk = None
        self.error = None
        self.done = threading.Event()

    def run(self, parse):
        try:
            self.chunk = parse(self.block)
        except BaseException as e:  # raised in the consumer, in input order
            self.error = e
        self.done.set()


class _ParseJobs:
    """Blocks parsed by worker threads and, when it would otherwise wait, by the consumer.

    Every block is queued twice: in input order for the consumer, and in a queue of blocks no
    thread has taken yet. When the consumer's next chunk is not parsed yet, it takes the
    oldest untaken block (its own next one, or a later one) and parses it itself instead of
    waiting: the parse kernels release the GIL, so this is a second parser exactly when the
    consumer has nothing else to do. Training on two cores, the learner and one parser thread
    each take a core and the parser is the slower: some of the blocks are then parsed by the
    learner's thread, which would otherwise wait.
    """

    def __init__(self, parse, workers):
        self._parse = parse
        self._in_order = queue.Queue()
        self._untaken = queue.Queue()
        self._threads = [threading.Thread(target=self._work, daemon=True,
                                          name=f"streamherd-parse-{i}") for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def _work(self):
        while True:
            job = self._untaken.get()
            if job is None:
                return
            job.run(self._parse)

    def submit(self, block):
        job = _ParseJob(block)
        self._in_order.put(job)
        self._untaken.put(job)

    def finish(self, item):
        """The end of the input (_END) or the reader's exception, after the last block."""
        self._in_order.put(item)

    def next_in_order(self):
        return self._in_order.get()

    def result(self, job):
        """The job's chunk; while it is not parsed, parse untaken blocks in this thread."""
        while not job.done.is_set():
            try:
                other = self._untaken.get_nowait()
            except queue.Empty:
                job.done.wait()
                break
            other.run(self._parse)
        if job.error is not None:
            raise job.error
        return job.chunk

    def shutdown(self):
        """Stop the workers once they finish their block; untaken blocks are dropped."""
        while True:
            try:
                self._untaken.get_nowait()
            except queue.Empty:
                break
        for _ in self._threads:
            self._untaken.put(None)
        for thread in self._threads:
            thread.join()


class _Stopped(Exception):
    """The consumer stopped iterating: the reader thread ends quietly."""


class _CheckRequested(Exception):
    """The consumer asks the reader thread to check the current compressed source, then stop."""


class _Slot:
    """A read buffer and the parser's output arrays, reused block after block (no allocation
    and no page faults per block). They only grow: for a line longer than a block, or a block
    with more lines than any before it."""

    def __init__(self):
        self.buf = np.empty(0, np.uint8)
        self.outputs = None
        self.bytes_capacity = -1
        self.newlines_capacity = -1
        self.crossed_capacity = 0

    def read_buffer(self, size):
        """At least ``size`` bytes; with room for the partial line carried over from the
        previous block, so that the usual few hundred bytes of it never reallocate."""
        if len(self.buf) < size:
            self.buf = np.empty(size + _CARRY_ROOM, np.uint8)
        return self.buf

    def grown_buffer(self, size, keep):
        """At least ``size`` bytes, the first ``keep`` of the buffer kept: a line longer than a
        block grows in place, to twice the size at each growth, so reading a line of L bytes
        copies O(L) bytes, not a copy of all of it per block read."""
        if len(self.buf) < size:
            grown = np.empty(max(size, 2 * len(self.buf)) + _CARRY_ROOM, np.uint8)
            grown[:keep] = self.buf[:keep]
            self.buf = grown
        return self.buf

    def outputs_for(self, n_bytes, newlines, features, block):
        """Output arrays for a block of n_bytes with that many newlines (``block``, its bytes:
        the features that crosses of namespaces make are counted on its lines), for the rows
        of the FeatureSpace ``features`` (see allocate_outputs)."""
        crossed = features.max_crossed_features(block)
        if (n_bytes > self.bytes_capacity or newlines > self.newlines_capacity
                or crossed > self.crossed_capacity):
            # Room for a quarter more lines than asked: blocks of a file hold about as many
            # lines each, and growing by one line at a time would reallocate block after block.
            # As many bytes as the read buffer holds, for the same reason (a block's bytes
            # vary with its carried line): each new allocation's pages fault in anew.
            self.bytes_capacity = max(n_bytes, len(self.buf), self.bytes_capacity)
            self.newlines_capacity = max(newlines + newlines // 4, self.newlines_capacity)
            self.crossed_capacity = max(crossed + crossed // 4, self.crossed_capacity)
            self.outputs = allocate_outputs(self.bytes_capacity, self.newlines_capacity,
                                            features, self.crossed_capacity)
        return self.outputs


@dataclass
class _Block:
    source: str
    slot: _Slot
    complete: int
    fmt: int
    first_line: int
    newlines: int
    origin: Source  # the input, for the integrity check of a compressed one
