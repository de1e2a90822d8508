"""A line longer than a block is read in time linear in its length (it grows in place,
geometrically, and only the bytes read are searched for its end), and parses as any line."""
import time

import numpy as np
from helpers import one_line_error, read_rows, run_cli


def test_long_lines_parse_as_with_blocks_larger_than_them(tmp_path):
    rng = np.random.default_rng(4)
    lines = []
    for k in range(40):
        features = 3 if k % 10 else 400_000   # every tenth line: some 5 MB, five blocks
        slots = rng.integers(1, 1 << 20, features)
        lines.append(f"{1 if k % 3 else -1} " + " ".join(f"{j}:{(j % 7) / 4}" for j in slots))
    path = tmp_path / "long.svm"
    path.write_text("\n".join(lines) + "\r\n")   # the last line ends with CR LF
    small, _, _ = read_rows(path, bits=22, block_size=1 << 20)
    large, _, _ = read_rows(path, bits=22, block_size=1 << 26)
    assert len(small) == 40
    assert small == large


def reading_seconds(tmp_path, limit):
    started = time.monotonic()
    proc = run_cli("train", "/dev/zero", "-f", tmp_path / "m.npz", "--quiet",
                   "--max-line-bytes", limit)
    took = time.monotonic() - started
    assert f"a line longer than {limit} bytes" in one_line_error(proc)
    return took


def test_reading_a_line_without_end_takes_time_linear_in_its_length(tmp_path):
    """Four times the bytes, far less than sixteen times the time (a copy of the whole line
    per block read made it quadratic: minutes for 256 MiB)."""
    reading_seconds(tmp_path, 1 << 20)   # (the start-up's caches warm)
    short = min(reading_seconds(tmp_path, 32 << 20) for _ in range(2))
    long = min(reading_seconds(tmp_path, 128 << 20) for _ in range(2))
    assert long < 6 * short, (short, long)
