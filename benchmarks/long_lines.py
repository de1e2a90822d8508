"""How long ``streamherd train`` takes to refuse an input without line ends (/dev/zero) at
--max-line-bytes N, for N = 32, 64, 128 and 256 MiB: linear in N while a long line grows in
place and only the bytes just read are searched for its end (a copy of the whole line per block
read made it quadratic). Each the median of 3 runs, with the machine's load.

    python benchmarks/long_lines.py [--write-readme]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
START, END = "<!-- long-lines:start -->", "<!-- long-lines:end -->"


def seconds_to_refuse(limit, folder):
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "streamherd", "train", "/dev/zero", "--quiet",
                           "--max-line-bytes", str(limit), "-f", str(folder / "m.npz")],
                          capture_output=True, text=True)
    took = time.perf_counter() - started
    assert proc.returncode == 2 and "a line longer than" in proc.stderr, proc.stderr
    return took


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        seconds_to_refuse(1 << 20, Path(folder))   # the caches warm
        for mib in (32, 64, 128, 256):
            rows.append((mib, statistics.median(seconds_to_refuse(mib << 20, Path(folder))
                                                for _ in range(3))))
    base = rows[0][1] / rows[0][0]
    lines = [START, "## A line without end (`--max-line-bytes`)", "",
             f"`python benchmarks/long_lines.py`, {time.strftime('%Y-%m-%d')}, load average "
             f"{os.getloadavg()[0]:.1f} ({os.cpu_count()} cores): `train /dev/zero` refused at "
             f"--max-line-bytes N, the median of 3 runs (start-up included).", "",
             "| N | seconds | seconds per MiB over 32 MiB's |", "|---|---|---|",
             *(f"| {mib} MiB | {took:.2f} | {took / mib / base:.2f}x |" for mib, took in rows),
             END]
    block = "\n".join(lines)
    print(block)
    if args.write_readme:
        readme = HERE / "README.md"
        text = readme.read_text()
        if START in text:
            before, rest = text.split(START, 1)
            text = before + block + rest.split(END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        readme.write_text(text)


if __name__ == "__main__":
    main()
