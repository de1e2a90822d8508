"""Byte streams for the inputs: files, stdin, and compressed files detected by magic bytes."""
import bz2
import io
import lzma
import os
import sys

from streamherd.errors import StreamherdError

try:  # ISA-L's gzip is several times faster than zlib's; the stdlib is the fallback
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover - isal is a declared dependency
    import gzip as _gzip

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}


class _Prefixed(io.RawIOBase):
    """A stream that yields some already-read bytes, then the rest of another stream."""

    def __init__(self, prefix, stream):
        self._prefix = prefix
        self._stream = stream

    def readable(self):
        return True

    def readinto(self, b):
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._stream.readinto(b)


def _detect_compression(head):
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    return None


class Source:
    """One input: its display name, its size in bytes when known, and a binary stream."""

    def __init__(self, path):
        self.path = path
        self.name = "<stdin>" if path == "-" else str(path)
        self.size = None
        self._raw = None
        self.stream = None

    def open(self):
        if self.path == "-":
            raw = sys.stdin.buffer
        else:
            try:
                raw = open(self.path, "rb", buffering=0)
            except OSError as e:
                raise StreamherdError(
                    f"cannot read {self.name}: {e.strerror}; check the path and permissions") from None
            if os.path.isfile(self.path):
                self.size = os.path.getsize(self.path)
        self._raw = raw
        head = _read_exactly(raw, 6)
        kind = _detect_compression(head)
        stream = _Prefixed(head, raw)
        if kind == "gzip":
            stream = _gzip.GzipFile(fileobj=io.BufferedReader(stream, 1 << 20), mode="rb")
        elif kind == "bzip2":
            stream = bz2.BZ2File(io.BufferedReader(stream, 1 << 20))
        elif kind == "xz":
            stream = lzma.LZMAFile(io.BufferedReader(stream, 1 << 20))
        elif kind == "zstd":
            raise StreamherdError(f"{self.name} is zstd-compressed, which streamherd does not read; "
                                  f"decompress it first (zstd -dc {self.name} | streamherd ...)")
        self.stream = stream
        self.compressed = kind is not None
        return self

    def raw_position(self):
        """Bytes consumed from the underlying file (compressed bytes for a compressed file)."""
        try:
            return self._raw.tell()
        except (OSError, ValueError, AttributeError):
            return None

    def close(self):
        if self._raw is not None and self.path != "-":
            self._raw.close()


def _read_exactly(raw, n):
    data = b""
    while len(data) < n:
        more = raw.read(n - len(data))
        if not more:
            break
        data += more
    return data


def read_into(stream, view, name):
    """Fill ``view`` as far as the stream allows; returns the byte count (less only at the end)."""
    total = 0
    size = len(view)
    while total < size:
        try:
            n = stream.readinto(view[total:])
        except EOFError as e:  # a truncated gzip member
            raise StreamherdError(f"{name}: compressed input ends early ({e}); the file is truncated") from None
        except OSError as e:
            raise StreamherdError(f"{name}: cannot read or decompress: {e}") from None
        if not n:
            break
        total += n
    return total
