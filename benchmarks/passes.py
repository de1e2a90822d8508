"""Several passes: ``streamherd train --passes 3`` against VW's ``-c --passes 3`` (issue 18).

    python benchmarks/passes.py [--lines 1000000] [--bits 20] [--repeat 3] [--write-readme]

streamherd reads its input again each pass (no cache); VW builds its cache file on the first
pass (``-c -k`` with the cache in a fresh temporary folder: the cache build is included) and
reads it on the later ones. Both hold out every 10th example and stop early after 3 passes
without improvement (their defaults), so neither can stop before its third pass. VW runs its default
learner (it has no NHERD), as in throughput.py; streamherd runs nherd-p and pa2 on the svmlight
file and on the VW-format twin. Each figure is the median wall time of ``--repeat`` rounds of
every command once (a warm-up round first), whole commands as subprocesses (throughput.run_once);
"vs VW" is VW's time over the row's (2.00x: twice VW's speed; the target is >= 2x).
"""
import argparse
import datetime
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_data  # noqa: E402
from throughput import machine, machine_line, replace_section, run_once  # noqa: E402

START, END = "<!-- passes:start -->", "<!-- passes:end -->"
TARGET = 2.0


def commands(data, bits, cache_dir):
    streamherd = [sys.executable, "-m", "streamherd", "train", "-b", bits, "--passes", "3"]
    rows = {f"streamherd {algo} --passes 3 ({kind})": streamherd + ["--algo", algo, str(path)]
            for algo in ("nherd-p", "pa2") for kind, path in (("svmlight", data.svm),
                                                              ("VW format", data.vw))}
    rows["VW -c --passes 3 (cache build included)"] = [
        sys.executable, "-m", "vowpalwabbit", "-d", str(data.vw), "-b", bits, "-c", "-k",
        "--cache_file", str(Path(cache_dir) / "vw.cache"), "--passes", "3"]
    return rows


def measure(rows, repeat, log):
    times = {name: [] for name in rows}
    for round_index in range(repeat + 1):   # round 0: the warm-up
        log(f"round {round_index} of {repeat}{' (warm-up)' if round_index == 0 else ''}")
        for name, cmd in rows.items():
            seconds, _, code, text, _ = run_once(cmd)
            if code != 0:
                raise SystemExit(f"{name} failed ({code}):\n{text}")
            if round_index:
                times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def table(medians, vw_name):
    vw = medians[vw_name]
    lines = ["| command | wall s (median) | vs VW |", "|:---|---:|---:|"]
    for name, seconds in medians.items():
        lines.append(f"| {name} | {seconds:.2f} | {vw / seconds:.2f}x |")
    return lines


def display(cmd, cache_dir):
    """The command as a reader would type it: python, paths from the repository root, the
    temporary cache folder as $TMP."""
    text = " ".join(["python", *map(str, cmd[1:])])
    return text.replace(f"{HERE.parent}/", "").replace(str(cache_dir), "$TMP")


def write_readme(lines, rows, args, data, cache_dir):
    section = "\n".join([
        START, "## Several passes (`--passes 3`)", "",
        f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; input: "
        f"`{data.svm.name}` and its VW twin ({args.lines:,} lines), -b {args.bits}; the median "
        f"of {args.repeat} rounds (see `benchmarks/passes.py`). Target: >= {TARGET:.0f}x VW. "
        f"Regenerate with `python benchmarks/passes.py --write-readme`.",
        "", *lines, "", "Exact commands ($TMP: a fresh temporary folder):", "",
        *[f"- {name}: `{display(cmd, cache_dir)}`" for name, cmd in rows.items()],
        END])
    replace_section(START, END, section)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    data = make_data.ensure(make_data.Spec(lines=args.lines), gz=False)
    with tempfile.TemporaryDirectory() as cache_dir:
        rows = commands(data, args.bits, cache_dir)
        medians = measure(rows, args.repeat, lambda text: print(text, file=sys.stderr))
        lines = table(medians, next(name for name in rows if name.startswith("VW")))
        print("\n".join(lines))
        if args.write_readme:
            write_readme(lines, rows, args, data, cache_dir)


if __name__ == "__main__":
    main()
