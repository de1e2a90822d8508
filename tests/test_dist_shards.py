"""Byte-range shards (streamherd/distributed/shards.py): every line of a file belongs to exactly
one shard, wherever the cuts fall, checked against a pure Python split of the file's lines."""
import random

import numpy as np
import pytest

from streamherd.distributed.shards import (Shard, byte_ranges, numbered, owned_bytes,
                                          owned_lines, plan_shards)
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader


def _awkward_file(rng):
    """svmlight lines with CRLF endings, empty lines, a line longer than the reader's block and
    than the newline scan, and no final newline; label k on the k-th example line."""
    lines = []
    for k in range(1, 301):
        if rng.random() < 0.1:
            lines.append(b"")
        features = 30000 if k == 150 else rng.randint(1, 6)
        body = " ".join(f"{j + 1}:{rng.randint(1, 9)}" for j in range(features))
        lines.append(f"{k} {body}".encode() + (b"\r" if rng.random() < 0.3 else b""))
    return b"\n".join(lines)


def _lines_by_start(content):
    """(start offset, file line number, label) of each example line: a transcription of the
    file's lines, independent of the reader."""
    out, start = [], 0
    for number, line in enumerate(content.split(b"\n"), 1):
        if line.strip():
            out.append((start, number, float(line.split()[0])))
        start += len(line) + 1
    return out


def _read(shard, block_size):
    reader = ChunkReader([shard.source()], fmt="svmlight", features=FeatureSpace(),
                         block_size=block_size, workers=0)
    return [(int(n), float(y)) for chunk in reader.chunks()
            for n, y in zip(chunk.line_numbers, chunk.labels)]


@pytest.mark.parametrize("seed", range(6))
def test_every_line_in_exactly_one_shard(tmp_path, seed):
    rng = random.Random(seed)
    content = _awkward_file(rng)
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    random_cuts = (rng.randint(0, len(content)) for _ in range(rng.randint(1, 12)))
    cuts = sorted({0, len(content), *random_cuts})
    if seed % 2:   # cuts next to the long line and to newlines, CR, the end
        newline = content.index(b"\n", len(content) // 2)
        cuts = sorted({*cuts, newline, newline + 1, newline - 1, len(content) - 1})
    expected = _lines_by_start(content)
    seen = []
    for s, e in zip(cuts, cuts[1:]):
        got = _read(Shard(str(path), s, e), block_size=4096)
        assert got == [(n, y) for start, n, y in expected if s <= start < e]
        seen += got
    assert seen == [(n, y) for _, n, y in expected]


def test_owned_bytes_are_whole_lines(tmp_path):
    content = b"1 1:1\r\n\n2 2:1\n3 3:1"
    path = tmp_path / "d.txt"
    path.write_bytes(content)
    with open(path, "rb") as f:
        ranges = [owned_bytes(f, s, s + 1, len(content)) for s in range(len(content))]
    pieces = [content[a:b] for a, b in ranges if b > a]
    assert pieces == [b"1 1:1\r\n", b"\n", b"2 2:1\n", b"3 3:1"]


def test_plan_cuts_plain_files_keeps_compressed_whole(tmp_path):
    import gzip

    plain, packed = tmp_path / "a.txt", tmp_path / "b.gz"
    plain.write_bytes(b"1 1:1\n" * 1000)
    packed.write_bytes(gzip.compress(b"1 1:1\n" * 10))
    assert plan_shards([str(plain), str(packed)], 2) == [Shard(str(plain)), Shard(str(packed))]
    shards = plan_shards([str(plain), str(packed)], 4)
    assert shards[-1] == Shard(str(packed))
    assert shards[:-1] == byte_ranges(str(plain), 6000, 3)
    assert np.sum([_read(s, 1 << 20) != [] for s in shards]) == 4


@pytest.mark.parametrize("seed", range(4))
def test_numbered_shards_read_the_line_numbers_they_would_count(tmp_path, seed):
    """First line numbers from every shard's own line count (owned_lines, numbered) give the
    lines the numbers a shard counting the newlines before it gives them, wherever the cuts
    fall (CRLF, empty lines, no final newline)."""
    rng = random.Random(seed)
    content = _awkward_file(rng)
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    cuts = sorted({0, len(content), *(rng.randint(0, len(content)) for _ in range(8))})
    shards = [Shard(str(path), s, e) for s, e in zip(cuts, cuts[1:])]
    counted = numbered(shards, [owned_lines(s) for s in shards])
    with open(path, "rb") as f:
        starts = [owned_bytes(f, s, e, len(content))[0] for s, e in zip(cuts, cuts[1:])]
    assert [s.first_line for s in counted] == [1 + content[:a].count(b"\n") for a in starts]
    assert [_read(s, 4096) for s in counted] == [_read(s, 4096) for s in shards]
    expected = _lines_by_start(content)
    assert [r for s in counted for r in _read(s, 4096)] == [(n, y) for _, n, y in expected]
    whole = Shard(str(path))
    assert numbered([whole], [None]) == [whole]
    told = Shard(str(path), 0, len(content), first_line=1000)   # the number given is used
    assert _read(told, 4096)[0][0] == 999 + expected[0][1]
