"""experiment on Dask (issue 22 §2): wall time of one small experiment with ``--workers 2`` (a
local Dask cluster of 2 processes, started and closed by the command) against ``-j 2`` (the
local process pool), run alternately.

    python benchmarks/experiment_dask.py [--repeats 3] [--write-readme]

Data: agaricus (train/test), spambase (train/test) and dna (one file, all pairs of classes,
--folds 3) of /work/shared/data. Wall time of the whole command, median of the repeats,
after one untimed run of each (the kernels cached, the files in the page cache).
"""
import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))   # this checkout's streamherd
from throughput import machine, machine_line, replace_section, streamherd  # noqa: E402

START, END = "<!-- experiment-dask:start -->", "<!-- experiment-dask:end -->"
AFTER = "<!-- dist-train:end -->"   # the section goes right after dist-train's
SHARED = Path("/work/shared/data")
WAYS = {"-j 2": ["-j", "2"], "--workers 2": ["--workers", "2"]}


def experiment_args():
    return [f"{SHARED}/agaricus.train.svm,{SHARED}/agaricus.test.svm",
            f"{SHARED}/spambase.train.svm,{SHARED}/spambase.test.svm",
            f"{SHARED}/dna.scale.svm", "--all-pairs", "--folds", "3",
            "--algos", "nherd-p,arow-p,pa2,perceptron", "--noise", "0,0.2",
            "--max-passes", "3", "--max-train", "1000", "--no-plots", "--quiet"]


def timed(way, out):
    began = time.perf_counter()
    streamherd("experiment", *experiment_args(), *WAYS[way], "--out", out)
    return time.perf_counter() - began


def cluster_alone():
    """Seconds to start and close the local cluster --workers 2 uses, with nothing run on it
    (the same helper as the command's, in this process)."""
    from streamherd.distributed.driver import dask_client

    began = time.perf_counter()
    with dask_client(None, 2):
        pass
    return time.perf_counter() - began


def measure(repeats):
    seconds = {way: [] for way in (*WAYS, "cluster alone")}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as folder:
        for way in WAYS:   # untimed
            timed(way, Path(folder) / "warm")
        for _ in range(repeats):
            for way in WAYS:
                seconds[way].append(timed(way, Path(folder) / "out"))
                loads.append(os.getloadavg()[0])
            seconds["cluster alone"].append(cluster_alone())
    return {way: statistics.median(values) for way, values in seconds.items()}, seconds, loads


def section(medians, seconds, loads, repeats):
    runs = (1 + 1 + 3 * 3) * 2 * 4   # agaricus + spambase + dna's 3 pairs x 3 folds
    jobs, dask = medians["-j 2"], medians["--workers 2"]
    return "\n".join([
        START,
        "### experiment on Dask (`--workers 2` against `-j 2`)",
        "",
        f"Measured {datetime.date.today()} on {machine_line(machine())}; "
        f"`python benchmarks/experiment_dask.py --repeats {repeats} --write-readme`. One small "
        f"experiment ({runs} runs: agaricus, spambase, dna's 3 pairs in 3 folds; 4 learners, "
        f"noise 0 and 0.2, up to 3 passes, at most 1000 training rows), run alternately, "
        f"load average {min(loads):.1f} to {max(loads):.1f} (other work on the machine), "
        f"median wall time of the whole command: `-j 2` {jobs:.1f} s, `--workers 2` "
        f"{dask:.1f} s ({dask / jobs:.2f}x; every run: -j 2 "
        f"{', '.join(f'{s:.1f}' for s in seconds['-j 2'])} s, --workers 2 "
        f"{', '.join(f'{s:.1f}' for s in seconds['--workers 2'])} s). The outputs are the "
        f"same (tests/test_experiment_dask.py). Starting and closing that local cluster with "
        f"nothing run on it takes {medians['cluster alone']:.1f} s (median, in the same "
        f"alternation) of the {dask - jobs:.1f} s difference, which a running cluster "
        f"(`--scheduler`) does not pay; the rest (Dask's scheduling of each run, its workers' "
        f"start) is not broken down here. On 2 cores neither way can run more runs at once: "
        f"the cluster is for more machines, or for an experiment that outlasts its start.",
        END,
    ])


def write_readme(block):
    readme = HERE / "README.md"
    text = readme.read_text()
    if START not in text and AFTER in text:
        readme.write_text(text.replace(AFTER, AFTER + "\n\n" + block, 1))
    else:
        replace_section(START, END, block, readme)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-readme", action="store_true")
    options = parser.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED} is absent: the benchmark reads its datasets there")
    medians, seconds, loads = measure(options.repeats)
    block = section(medians, seconds, loads, options.repeats)
    print(block)
    if options.write_readme:
        write_readme(block)


if __name__ == "__main__":
    main()
