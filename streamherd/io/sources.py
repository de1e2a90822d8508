"""Byte streams for the inputs: files, stdin, and compressed files detected by magic bytes.

A file appended to while it is read (a log another process writes) is read to the end found,
in whole lines: where that end falls inside a line and the file has grown since (or grows within
GROWTH_WAIT_SECONDS, when it was written in the last RECENT_WRITE_SECONDS: its writer may be
between two writes of one line), reading goes on to the new end. A last line without a newline
in a file that does not grow is the last line, as in any file."""
import bz2
import io
import lzma
import os
import select
import stat
import sys
import threading
import time

from streamherd.errors import StreamherdError
from streamherd.io.linecodes import BYTE_ORDER_MARK

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}

# bzip2: "BZh", the block size ('1' to '9'), then the magic of a first block (pi) or of the end
# of the stream (sqrt(pi), an empty file). "BZh" alone starts text too ("BZh 1:1" is not bzip2).
_BZIP2_BLOCK_MAGICS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")
_HEAD_BYTES = 10
_TEST_COMMAND = {"gzip": "gzip -t", "bzip2": "bzip2 -t", "xz": "xz -t"}
GROWTH_WAIT_SECONDS = 0.2
RECENT_WRITE_SECONDS = 2.0
_LINE_ENDS = (ord("\n"), ord("\r"))


def _inflate():
    """ISA-L's inflate, several times faster than zlib's (the stdlib's is the fallback);
    imported for a gzip input only."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - isal is a declared dependency
        import zlib as isal_zlib
    return isal_zlib


class _Prefixed(io.RawIOBase):
    """A stream that yields some already-read bytes, then the rest of another stream."""

    def __init__(self, prefix, stream):
        self._prefix = prefix
        self._stream = stream

    def skip_prefix(self, n):
        """Drop the first ``n`` of the already-read bytes."""
        self._prefix = self._prefix[n:]

    def readable(self):
        return True

    def readinto(self, b):
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._stream.readinto(b)


def _is_interactive(raw):
    """Whether ``raw`` is a terminal, a pipe, a FIFO or a socket: a stream whose reads return
    what has arrived so far, and whose writer may pause (``tail -f log | streamherd predict``)."""
    try:
        return not stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def _ready(raw):
    """Whether a read of ``raw`` would return at once (more has arrived, or its end)."""
    return bool(select.select([raw], [], [], 0)[0])


def _could_be_compressed(head):
    """Whether ``head``, the first bytes so far, may yet turn out a compressed stream's."""
    return (any(magic.startswith(head[:len(magic)]) for magic in _MAGIC)
            or head.startswith(b"BZh") or b"BZh".startswith(head))


def detect_compression(head):
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    # (a head shorter than _HEAD_BYTES is the whole file: cut inside its magic, a bzip2 file
    # still, damaged)
    if (head[:3] == b"BZh" and len(head) >= 4 and head[3:4] in b"123456789"
            and any(magic.startswith(head[4:10]) for magic in _BZIP2_BLOCK_MAGICS)):
        return "bzip2"
    return None


class Source:
    """One input: its display name, its size in bytes when known, and a binary stream."""

    def __init__(self, path):
        self.path = path
        self.name = "<stdin>" if path == "-" else str(path)
        self.size = None
        self._raw = None
        self.stream = None
        self.compression = None  # "gzip", "bzip2", "xz" or None
        self.compressed = False
        # Set once the stream has been read to its end (for a compressed one: its checksums
        # verified) or has failed, with that error in read_error: see reader.ChunkReader.
        self.checked = threading.Event()
        self.read_error = None
        # the stream's end was reached (by read_into); an interactive stream (a pipe or a
        # terminal, uncompressed) may end a read early, at a pause of its writer
        self.ended = False
        self.interactive = False
        # the file line number of the first line read (a shard of a file starts further on)
        self.first_line = 1
        self._regular = False     # an uncompressed regular file: it may grow while read
        self._last_byte = None    # the last byte read
        self._grew_at = None      # the file position where it was last found grown

    def open(self):
        self.checked = threading.Event()
        self.read_error = None
        self.ended = False
        if self.path == "-":
            raw = sys.stdin.buffer
            if _is_interactive(raw):
                raw = raw.raw   # unbuffered, so a read returns what has arrived (nothing read yet)
        else:
            try:
                raw = open(self.path, "rb", buffering=0)
            except OSError as e:
                raise StreamherdError(
                    f"cannot read {self.name}: {e.strerror}; check the path and permissions"
                ) from None
            if os.path.isfile(self.path):
                self.size = os.path.getsize(self.path)
        self._regular = self.path != "-" and self.size is not None
        self._last_byte = self._grew_at = None
        self._raw = raw
        interactive = _is_interactive(raw)
        try:
            head = _read_head(raw, interactive)
        except OSError as e:   # a failing device, /proc/self/mem
            raise StreamherdError(f"cannot read {self.name}: {e.strerror or e}; check the file "
                                  f"and the device") from None
        kind = detect_compression(head)
        self.interactive = interactive and kind is None
        stream = _Prefixed(head, raw)
        if kind in _STREAM_MAGIC:
            stream = _Decompressed(stream, kind)
        elif kind == "zstd":
            raise StreamherdError(f"{self.name} is zstd-compressed, which streamherd does not "
                                  f"read; "
                                  f"decompress it first (zstd -dc {self.name} | streamherd ...)")
        self.stream = _without_byte_order_mark(stream, head if kind is None else None)
        self.compression = kind
        self.compressed = kind is not None
        self._regular = self._regular and not self.compressed
        return self

    def read_into(self, view):
        """read_into(self.stream, view), with the errors of this source's decompressor; notes
        the end of the stream, or its error, in ``checked`` and ``read_error``."""
        try:
            got, self.ended = read_into(self.stream, view, self.name, self.compression,
                                        self._raw if self.interactive else None)
        except StreamherdError as e:
            self.read_error = e
            self.checked.set()
            raise
        if got:
            self._last_byte = view[got - 1]
        if self.ended and self._grown_inside_a_line():
            self.ended = False
        if self.ended:
            self.checked.set()
        return got

    def _grown_inside_a_line(self):
        """At the end found, inside a line: whether the file has grown since (waiting a moment
        for a writer that wrote lately; see the module's docstring). Then reading goes on."""
        if not self._regular or self._last_byte is None or self._last_byte in _LINE_ENDS:
            return False
        try:
            fd = self._raw.fileno()
            position = self._raw.tell()
            if position == self._grew_at:   # nothing more came of it (a stream of a range)
                return False
            info = os.fstat(fd)
            deadline = time.monotonic() + (GROWTH_WAIT_SECONDS if time.time() - info.st_mtime
                                           < RECENT_WRITE_SECONDS else 0)
            while info.st_size <= position and time.monotonic() < deadline:
                time.sleep(0.01)
                info = os.fstat(fd)
        except (OSError, ValueError):
            return False
        if info.st_size > position:
            self._grew_at = position
            return True
        return False

    def raw_position(self):
        """Bytes consumed from the underlying file (compressed bytes for a compressed file)."""
        try:
            return self._raw.tell()
        except (OSError, ValueError, AttributeError):
            return None

    def close(self):
        if self._raw is not None and self.path != "-":
            self._raw.close()


# each compressed stream's first bytes: what may follow a stream (a concatenation, as
# 'cat a.gz b.gz' makes)
_STREAM_MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}
_COMPRESSED_READ = 1 << 20


class TrailingData(Exception):
    """Bytes after a complete compressed stream that are neither another stream nor zeros."""

    def __init__(self, offset):
        super().__init__(f"trailing data after the compressed stream, from byte {offset:,}")
        self.offset = offset


class _Decompressed(io.RawIOBase):
    """The decompressed bytes of a gzip, bzip2 or xz file: its streams one after another (a
    concatenation of streams is one file, as its tool reads it), each checked (its CRC, its
    length) as it ends. What follows the last stream may be zeros (padding: tapes, block
    devices, xz's stream padding) and nothing else: other bytes are TrailingData, and a stream
    cut short is an EOFError, the same for the three formats (their tools differ: gzip and
    bzip2 warn of trailing garbage and ignore it, xz refuses it)."""

    def __init__(self, raw, kind):
        self._raw, self._kind = raw, kind
        self._decompressor = self._new_decompressor()
        self._input = b""          # compressed bytes read, not yet taken by the decompressor
        self._read = 0             # compressed bytes read from raw
        self._raw_ended = False
        self._finished = False     # the last stream ended, and only zeros came after it

    def readable(self):
        return True

    def _new_decompressor(self):
        if self._kind == "gzip":
            return _inflate().decompressobj(wbits=16 + 15)   # one gzip member
        if self._kind == "bzip2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)

    def _more(self):
        """The next compressed bytes (b"" at the end of the file)."""
        if self._raw_ended:
            return b""
        data = self._raw.read(_COMPRESSED_READ)
        if not data:
            self._raw_ended = True
            return b""
        self._read += len(data)
        return data

    def _input_or_end(self):
        data = self._input or self._more()
        if not data:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        return data

    def readinto(self, b):
        size = len(b)
        while not self._finished:
            d = self._decompressor
            if d.eof:
                self._next_stream(d.unused_data + self._input)
                continue
            if self._kind == "gzip":   # zlib's interface: what max_length left, handed back
                data = self._input_or_end()
                out = d.decompress(data, size)
                self._input = d.unconsumed_tail
            elif d.needs_input:        # bz2's and lzma's: they keep what they were given
                out = d.decompress(self._input_or_end(), size)
                self._input = b""
            else:
                out = d.decompress(b"", size)
            if out:
                b[:len(out)] = out
                return len(out)
        return 0

    def _next_stream(self, rest):
        """After a stream's end: zeros to the end of the file (finished), or the next stream
        (its decompressor made), or TrailingData."""
        self._input = b""
        while True:
            rest = rest.lstrip(b"\0")
            if rest:
                break
            rest = self._more()
            if not rest:
                self._finished = True
                return
        magic = _STREAM_MAGIC[self._kind]
        while len(rest) < len(magic):
            more = self._more()
            if not more:
                break
            rest += more
        if not rest.startswith(magic):
            raise TrailingData(self._read - len(rest))
        self._decompressor = self._new_decompressor()
        self._input = rest


def _without_byte_order_mark(stream, head=None):
    """``stream`` past a UTF-8 byte-order mark at its start (some Windows editors write one):
    it would be read as part of the first label, and make '1' the class name '\\ufeff1'.
    ``head``: the bytes a _Prefixed stream begins with (an uncompressed file's); else the
    (decompressed) stream's first bytes are looked at by its first read, whose errors (a
    damaged compressed file) read_into reports as every other read's."""
    if head is None:
        return _PastMark(stream)
    if head.startswith(BYTE_ORDER_MARK):
        stream.skip_prefix(len(BYTE_ORDER_MARK))
    return stream


class _PastMark(_Prefixed):
    """A decompressed stream whose first read drops a byte-order mark at its start."""

    def __init__(self, stream):
        super().__init__(b"", stream)
        self._looked = False

    def readinto(self, b):
        if not self._looked:
            self._looked = True
            first = b""
            while len(first) < len(BYTE_ORDER_MARK):
                more = self._stream.read(len(BYTE_ORDER_MARK) - len(first))
                if not more:
                    break
                first += more
            self._prefix = b"" if first == BYTE_ORDER_MARK else first
        return super().readinto(b)


def byte_order_mark_length(raw):
    """The length of a byte-order mark at the start of the seekable file ``raw`` (0: none);
    leaves its position at 0."""
    raw.seek(0)
    head = raw.read(len(BYTE_ORDER_MARK))
    raw.seek(0)
    return len(BYTE_ORDER_MARK) if head == BYTE_ORDER_MARK else 0


def _read_head(raw, interactive):
    """The first _HEAD_BYTES bytes (fewer at the end), whose magic tells the compression. From an
    interactive stream, fewer when its writer pauses first and they cannot begin any magic: a
    short first line typed or piped is not held back."""
    data = b""
    while len(data) < _HEAD_BYTES:
        if interactive and data and not _could_be_compressed(data) and not _ready(raw):
            break
        more = raw.read(_HEAD_BYTES - len(data))
        if not more:
            break
        data += more
    return data


def read_into(stream, view, name, compression=None, interactive=None):
    """Fill ``view`` as far as the stream allows; returns (the byte count, whether the stream
    ended). With ``interactive`` (the raw stream of a pipe or a terminal), it stops short of
    full, not ended, when that stream's writer has paused (nothing more has arrived) and a whole
    line is in hand, so that its example is answered now; a fast writer's pipe still fills
    whole blocks.

    ``compression`` ("gzip", "bzip2", "xz" or None) names the decompressor behind the stream:
    every error it raises (zlib.error, lzma.LZMAError, isal's IsalError, gzip's BadGzipFile,
    bz2's OSError, EOFError for a truncated stream...) means damaged data, reported as such; an
    OSError with an errno is the file system's, whatever the stream.
    """
    total = searched = 0
    size = len(view)
    while total < size:
        try:
            n = stream.readinto(view[total:])
        except TrailingData as e:
            raise StreamherdError(
                f"{name}: {e}; the file is damaged or has something appended: get an intact "
                f"copy ({_TEST_COMMAND[compression]} checks one)") from None
        except OSError as e:
            if e.errno is not None or compression is None:
                raise StreamherdError(f"cannot read {name}: {e.strerror or e}; check the file "
                                      f"and the device") from None
            raise corrupt_data(name, compression, e) from None
        except (MemoryError, RecursionError):
            raise
        except Exception as e:  # the decompressor's own error types
            if compression is None:
                raise
            raise corrupt_data(name, compression, e) from None
        if not n:
            return total, True
        total += n
        if interactive is not None and total < size and not _ready(interactive):
            if view[searched:total].tobytes().find(b"\n") >= 0:
                return total, False
            searched = total
    return total, False


def corrupt_data(name, compression, error):
    """The one-line error for damaged compressed input."""
    detail = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, EOFError):
        detail = f"it ends early: {detail}"
    return StreamherdError(
        f"{name}: corrupt {compression} data ({detail}); the file is damaged or truncated: "
        f"get an intact copy ({_TEST_COMMAND[compression]} checks one)")
