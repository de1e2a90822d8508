"""Several passes: ``streamherd train --passes 3`` against VW's ``-c --passes 3`` (issue 18).

    python benchmarks/passes.py [--lines 1000000] [--bits 20] [--repeat 3] [--write-readme]
    python benchmarks/passes.py --memory [--write-readme]

streamherd reads its input again each pass (no cache); VW builds its cache file on the first
pass (``-c -k`` with the cache in a fresh temporary folder: the cache build is included) and
reads it on the later ones. Both hold out every 10th example and stop early after 3 passes
without improvement (their defaults), so neither can stop before its third pass. VW runs its default
learner (it has no NHERD), as in throughput.py; streamherd runs nherd-p and pa2 on the svmlight
file and on the VW-format twin. Each figure is the median wall time of ``--repeat`` rounds of
every command once (a warm-up round first), whole commands as subprocesses (throughput.run_once);
"vs VW" is VW's time over the row's (2.00x: twice VW's speed; the target is >= 2x).

``--memory``: the peak resident memory of ``train --passes 3 --shuffle --shuffle_memory 16`` on
the first quarter of the file and on all of it (svmlight and VW format), beside the same run
without ``--shuffle``: an input larger than the window is shuffled block-wise, and its peak must
not grow with the input's length (issue 18). One run each (peak RSS from the launcher's wait4).
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
from throughput import head, machine, machine_line, replace_section, run_once  # noqa: E402

START, END = "<!-- passes:start -->", "<!-- passes:end -->"
MEMORY_START, MEMORY_END = "<!-- passes-memory:start -->", "<!-- passes-memory:end -->"
SHUFFLE_MEMORY_MIB = 16
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


def shuffle_memory_rows(data, lines, work):
    """(input, lines, flags) -> command: the whole files and their first ``lines // 4`` lines."""
    rows = {}
    for kind, path in (("svmlight", data.svm), ("VW format", data.vw)):
        quarter = head(path, Path(work) / f"quarter{path.suffix}", lines // 4)
        for n, source in ((lines // 4, quarter), (lines, path)):
            for flags in ([], ["--shuffle", "--shuffle_memory", str(SHUFFLE_MEMORY_MIB)]):
                rows[kind, n, " ".join(flags) or "(no shuffle)"] = [
                    sys.executable, "-m", "streamherd", "train", "--passes", "3", "--algo",
                    "pa2", *flags, str(source)]
    return rows


def memory_table(rows, log):
    lines = ["| input | lines | flags | peak RSS MiB | wall s |", "|:---|---:|:---|---:|---:|"]
    for (kind, n, flags), cmd in rows.items():
        log(f"{kind} {n:,} {flags}")
        seconds, rss_kb, code, text, _ = run_once(cmd)
        if code != 0:
            raise SystemExit(f"{cmd} failed ({code}):\n{text}")
        lines.append(f"| {kind} | {n:,} | {flags} | {rss_kb / 1024:.0f} | {seconds:.2f} |")
    return lines


def write_memory_readme(lines, data):
    section = "\n".join([
        MEMORY_START, "### Peak memory of `--shuffle` beyond its window", "",
        f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; input: "
        f"`{data.svm.name}` and its VW twin, their first quarter and all of them; "
        f"`streamherd train --passes 3 --algo pa2 [--shuffle --shuffle_memory "
        f"{SHUFFLE_MEMORY_MIB}] FILE`, one run each. With `--shuffle` the first pass copies "
        f"the parsed blocks to a temporary file and the later passes read them back in a "
        f"permuted order, {SHUFFLE_MEMORY_MIB} MiB of parsed rows at a time: the peak does not "
        f"grow with the input. Regenerate with `python benchmarks/passes.py --memory "
        f"--write-readme`.", "", *lines, MEMORY_END])
    replace_section(MEMORY_START, MEMORY_END, section)


def main_memory(args):
    data = make_data.ensure(make_data.Spec(lines=args.lines), gz=False)
    with tempfile.TemporaryDirectory() as work:
        lines = memory_table(shuffle_memory_rows(data, args.lines, work),
                             lambda text: print(text, file=sys.stderr))
    print("\n".join(lines))
    if args.write_readme:
        write_memory_readme(lines, data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory of --shuffle beyond its window, not the speed")
    args = parser.parse_args()
    if args.memory:
        return main_memory(args)
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
