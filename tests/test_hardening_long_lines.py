"""A line longer than a block grows in place and parses as any line; a line without end stops
at --max-line-bytes (the time it takes: benchmarks/long_lines.py)."""
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


def test_a_line_without_end_is_one_line_at_the_limit(tmp_path):
    """(how long it takes to get there is benchmarks/long_lines.py's)"""
    line = one_line_error(run_cli("train", "/dev/zero", "-f", tmp_path / "m.npz", "--quiet",
                                  "--max-line-bytes", 8 << 20))
    assert f"a line longer than {8 << 20} bytes" in line
    assert not (tmp_path / "m.npz").exists()
