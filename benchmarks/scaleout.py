"""dist-train's evidence (issue 22 §3): agreement with one stream on a real 2-worker cluster,
and the scale-out to N workers simulated in-process against the cost model
T_N = P'·(n/(N·r) + T_mix(N) + T_sched(N)).

    python benchmarks/scaleout.py [--rounds 5] [--write-readme]

A. Agreement. LocalCluster(n_workers=2, threads_per_worker=1), 2 shards (byte ranges), P
   rounds (driver.dist_train, the command's code) against ``train --passes P --holdout_off``
   (training.train: one stream, every example every pass; dist-train has no holdout set
   unless asked), same data and flags, for nherd-p and arow-p (--mix prec) and avg-perceptron
   (--mix mean), on a9a, the three 20 Newsgroups pairs, rcv1_small and a 500k-line generated
   stream (the first 500,000 lines of the 1M-line benchmark file; test: its last 100,000).
   Test error of each model on the test file, and McNemar's test on the two models'
   per-example test mistakes (b = stream right and dist-train wrong, c = the reverse): exact
   (binomial, scipy.stats.binomtest) and chi-square with continuity correction.
B. Scale-out. The 1M-line file (900,000 lines to train, 100,000 to test, -b 20) cut into
   N = 1, 2, 4, 8, 16 shards; each round runs the real shard task (epoch.train_shard) on
   every shard one after the other in this process, timed each: the round's parallel time is
   the slowest shard's, plus the mix (driver.mixed, timed) plus T_sched(N), the cluster's
   overhead per round. Time-to-accuracy: the time until the test error is within 0.5 point of
   the single stream's after P passes (N = 1, round P). The terms: r, the rows per second of
   one shard task (N = 1); T_mix(N), measured here; T_sched(N) = a + b·N from real
   LocalCluster rounds (scheduling_overhead: a round's wall time minus its slowest task's
   compute time; b, the model sent to a worker and its state gathered back, grows with N).
Run once; the figures are one run each.
"""
import argparse
import contextlib
import datetime
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import make_data  # noqa: E402
from dist_train import SHARED, plain, split  # noqa: E402
from throughput import machine, machine_line, replace_section  # noqa: E402

from streamherd import tasks, training  # noqa: E402
from streamherd.distributed.driver import (Cluster, Mix, dist_train, mixed,  # noqa: E402
                                          run_round, starting_model)
from streamherd.distributed.epoch import (Settings, UserError, reader_of,  # noqa: E402
                                         start_of, train_shard)
from streamherd.distributed.shards import (Shard, numbered, owned_lines,  # noqa: E402
                                          plan_shards)
from streamherd.model import load_model  # noqa: E402
from streamherd.passes import Passes  # noqa: E402

START, END = "<!-- scaleout:start -->", "<!-- scaleout:end -->"
LEARNERS = (("nherd-p", "prec"), ("arow-p", "prec"), ("avg-perceptron", "mean"))
NEWS20 = ("comp_ibm_vs_mac", "sci_elec_vs_med", "talk_guns_vs_mideast")
SIMULATED_WORKERS = (1, 2, 4, 8, 16)
SIMULATED_LEARNERS = (("arow-p", "prec"), ("avg-perceptron", "mean"))
SIMULATION_BITS = 20
WITHIN = 0.5   # time-to-accuracy: test error within this many points of the single stream's
log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731


# ------------------------------------------------------------------ test error, McNemar

def test_chunks(path, model):
    """The parsed chunks of the test file ``path`` in the model's feature space (copies)."""
    space = start_of(*model).space
    return [chunk.copy() for chunk in reader_of(Shard(str(path)), space, Settings())]


def mistakes(model, chunks):
    """Each test example's 0/1 mistake of ``model`` (meta, arrays): the task's own loss of a
    prediction without learning (train -t)."""
    trainer = training.Trainer(start_of(*model), test_only=True)
    losses = np.concatenate([trainer.learn(chunk).loss for chunk in chunks])
    return losses[~np.isnan(losses)] > 0


def mcnemar(stream_wrong, dist_wrong):
    """(b, c, exact p, chi-square p) of the paired mistakes."""
    b = int(np.sum(~stream_wrong & dist_wrong))
    c = int(np.sum(stream_wrong & ~dist_wrong))
    if b + c == 0:
        return b, c, 1.0, 1.0
    exact = stats.binomtest(b, b + c, 0.5).pvalue
    chi2 = (abs(b - c) - 1) ** 2 / (b + c)
    return b, c, float(exact), float(stats.chi2.sf(chi2, 1))


# ------------------------------------------------------------------ A. agreement

def agreement_sets(folder, synth):
    """name -> (train file (uncompressed: dist-train cuts it), test file, bits)."""
    sets = {}
    if SHARED.is_dir():
        sets["a9a"] = (plain(SHARED / "a9a.svm.gz", folder), SHARED / "a9a.t.svm.gz", None)
        for pair in NEWS20:
            sets[f"20NG {pair}"] = (plain(SHARED / f"news20_{pair}.train.svm.gz", folder),
                                    SHARED / f"news20_{pair}.test.svm.gz", None)
        sets["rcv1_small"] = (plain(SHARED / "rcv1_small.train.vw.gz", folder),
                              SHARED / "rcv1_small.test.vw.gz", None)
    sets["synth 500k"] = (*split(synth, folder, 500_000, 900_000, "synth500k"),
                          SIMULATION_BITS)
    return sets


@contextlib.contextmanager
def local_client(workers):
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield client


def agreement(client, sets, rounds, folder):
    rows = []
    for name, (train, test, bits) in sets.items():
        chunks = None
        for algo, rule in LEARNERS:
            one, dist = folder / "one.npz", folder / "dist.npz"
            training.train([str(train)], algo=algo, bits=bits, final_model=one, quiet=True,
                           passes=Passes(rounds, holdout_off=True))
            dist_train([str(train)], dist, rounds=rounds, cluster=Cluster(shards="2"),
                       mix=Mix(rule), client=client, quiet=True, algo=algo, bits=bits)
            stream, distributed = load_model(one), load_model(dist)
            chunks = chunks or test_chunks(test, stream)
            wrong = mistakes(stream, chunks), mistakes(distributed, chunks)
            rows.append((name, algo, rule, 100 * wrong[0].mean(), 100 * wrong[1].mean(),
                         *mcnemar(*wrong)))
            log(agreement_row(rows[-1]))
    return rows


def agreement_row(row):
    name, algo, rule, stream, dist, b, c, exact, chi2 = row
    verdict = "yes" if abs(dist - stream) <= 1 and exact >= 0.05 else "**no**"
    return (f"| {name} | {algo} | {rule} | {stream:.2f} | {dist:.2f} | {dist - stream:+.2f} | "
            f"{b} / {c} | {exact:.3f} | {chi2:.3f} | {verdict} |")


AGREEMENT_HEADER = [
    "| data | learner | mix | train % | dist-train % | difference (points) | b / c | "
    "McNemar exact p | chi-square p | within 1 point, p >= 0.05 |",
    "|:---|:---|:---|---:|---:|---:|---:|---:|---:|:---|"]


# ------------------------------------------------------------------ B. scale-out

def planned(train, workers):
    """The shards of ``train`` for ``workers``, numbered as the driver numbers them (each
    byte range's lines counted once, here)."""
    shards = plan_shards([str(train)], workers)
    return numbered(shards, [owned_lines(s) if s.ranged else None for s in shards])


def first_model(algo, shards):
    start = training.plan(algo=algo, bits=SIMULATION_BITS, choice=tasks.choose())
    return starting_model(None, start, shards, Settings(), "simulated")[1]


def simulate(train, chunks, algo, rule, workers, rounds):
    """Per round of N = ``workers`` shards: (slowest shard's seconds, mix seconds, test error %),
    and the rows of the shards (the task's rows per second come from N = 1)."""
    shards = planned(train, workers)
    names = [s.describe() for s in shards]
    model = first_model(algo, shards)
    per_round = []
    for _ in range(rounds):
        results, seconds = [], []
        for shard in shards:
            began = time.perf_counter()
            result = train_shard(shard, model)
            seconds.append(time.perf_counter() - began)
            if isinstance(result, UserError):
                result.raise_it()
            results.append(result)
        began = time.perf_counter()
        model, counters = mixed(model, results, rule, "uniform", names)
        mix_seconds = time.perf_counter() - began
        per_round.append((max(seconds), mix_seconds, 100 * mistakes(model, chunks).mean(),
                          counters.examples))
    return per_round


def task_compute_seconds(stream, name):
    """The slowest shard task's compute time of round ``name``, from Dask's task stream."""
    return max(sum(s["stop"] - s["start"] for s in task["startstops"]
                   if s["action"] == "compute")
               for task in stream if f"{name}-shard-" in str(task["key"]))


def scheduling_overhead(train, algo, rule, rounds):
    """T_sched(N) = a + b·N from real LocalCluster rounds: a round's overhead is its wall time
    (the model scattered, the tasks run, their states gathered: driver.run_round) minus its
    slowest task's compute time (Dask's task stream), the median over rounds 2.. (round 1
    loads the kernels in the workers). b, what each worker adds: the client sends it the model
    and gets its state back, measured as twice a scatter of the model to one worker; a: the
    1-worker overhead less b. Returns (a, b, {N: the overhead measured with N workers}) for
    N = 1, 2 (N = 2 on this 2-core machine: the two workers and the client share the cores)."""
    from dask.distributed import get_task_stream
    overhead, transfer = {}, []
    for workers in (1, 2):
        with local_client(workers) as client:
            shards = planned(train, workers)
            names = [s.describe() for s in shards]
            model, token, seen = first_model(algo, shards), uuid.uuid4().hex, []
            for number in range(rounds):
                name = f"{token}-{number}"
                with get_task_stream(client) as stream:
                    began = time.perf_counter()
                    results = run_round(client, shards, model, Settings(), name)
                    wall = time.perf_counter() - began
                seen.append(wall - task_compute_seconds(stream.data, name))
                model = mixed(model, results, rule, "uniform", names)[0]
                if workers == 1:
                    began = time.perf_counter()
                    client.scatter({f"{name}-transfer": model}, broadcast=True)
                    transfer.append(time.perf_counter() - began)
            overhead[workers] = float(np.median(seen[1:]))
            log(f"T_sched({workers}) = {overhead[workers]:.3f} s (rounds: "
                f"{', '.join(f'{x:.3f}' for x in seen)})")
    per_worker = 2 * float(np.median(transfer[1:]))
    return max(0.0, overhead[1] - per_worker), per_worker, overhead


def rounds_to_target(per_round, target):
    """P': the first round whose test error is within WITHIN points of ``target`` (None)."""
    return next((k + 1 for k, row in enumerate(per_round) if row[2] <= target + WITHIN), None)


def scale_out(train, test, rounds, passes, sched):
    """The rows of the scale-out table and, per (learner, N), (r, T_mix(N) + T_sched(N)); the
    target: N = 1's test error after ``passes`` rounds (train --passes P, one stream)."""
    rows, terms = [], {}
    for algo, rule in SIMULATED_LEARNERS:
        chunks, results = None, {}
        for workers in SIMULATED_WORKERS:
            if chunks is None:
                chunks = test_chunks(test, first_model(algo, [Shard(str(train))]))
            results[workers] = simulate(train, chunks, algo, rule, workers, rounds)
            log(f"{algo} N={workers}: " + ", ".join(f"{s:.2f}+{m:.3f}s {e:.2f}%"
                                                    for s, m, e, _ in results[workers]))
        n = results[1][0][3]
        rate = n / float(np.median([row[0] for row in results[1]]))
        target = results[1][passes - 1][2]
        for workers, per_round in results.items():
            mix = float(np.median([row[1] for row in per_round]))
            t_sched = sched[0] + sched[1] * workers
            used = rounds_to_target(per_round, target)
            measured = None if used is None else \
                sum(row[0] + row[1] for row in per_round[:used]) + used * t_sched
            model = None if used is None else used * (n / (workers * rate) + mix + t_sched)
            rows.append([algo, rule, workers, per_round[-1][2], used, mix, t_sched,
                         float(np.median([row[0] for row in per_round])), measured, model])
            terms[(algo, workers)] = (rate, mix + t_sched)
        for row in rows:
            if row[0] == algo:
                base = next(r for r in rows if r[0] == algo and r[2] == 1)
                row.append(None if row[8] is None else base[8] / row[8])
                row.append(None if row[9] is None else base[9] / row[9])
        log(f"{algo}: r = {rate:,.0f} rows/s, target {target:.2f}% + {WITHIN}")
    return rows, terms


def _value(x, fmt):
    return "not reached" if x is None else format(x, fmt)


def scale_row(row):
    (algo, rule, workers, error, used, mix, t_sched, slowest, measured, model,
     speed, model_speed) = row
    return (f"| {algo} | {workers} | {error:.2f} | {_value(used, 'd')} | {slowest:.3f} | "
            f"{mix:.3f} | {t_sched:.3f} | {_value(measured, '.2f')} | {_value(model, '.2f')} | "
            f"{_value(speed, '.2f')} | {_value(model_speed, '.2f')} |")


SCALE_HEADER = [
    "| learner | N | test error % after the rounds | P' (rounds to within 0.5 point) | "
    "slowest shard s (median round) | T_mix(N) s | T_sched(N) s | time to accuracy s "
    "(measured) | T_N s (model) | speed-up (measured) | speed-up (model) |",
    "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def minimum_rows(rate, c_one, c_n, workers):
    """The fewest training rows n for a speed-up >= 0.8·N at equal P': (n/r + c_1) >=
    0.8·N·(n/(N·r) + c_N), i.e. n >= r·(4·N·c_N - 5·c_1)."""
    return max(0.0, rate * (4 * workers * c_n - 5 * c_one))


def threshold_lines(terms):
    lines = ["| learner | N | r (rows/s of a shard task) | T_mix(N) + T_sched(N) s | "
             "rows n for speed-up >= 0.8·N |", "|:---|---:|---:|---:|---:|"]
    for (algo, workers), (rate, cost) in terms.items():
        if workers > 1:
            rows = minimum_rows(rate, terms[(algo, 1)][1], cost, workers)
            lines.append(f"| {algo} | {workers} | {rate:,.0f} | {cost:.3f} | {rows:,.0f} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--simulated-rounds", type=int, default=8)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    synth = make_data.ensure(make_data.Spec(lines=1_000_000), gz=False).svm
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        with local_client(2) as client:
            agreement_rows = agreement(client, agreement_sets(folder, synth), args.rounds,
                                       folder)
        train, test = split(synth, folder, 900_000)
        sched = scheduling_overhead(train, "arow-p", "prec", 4)
        scale_rows, terms = scale_out(train, test, args.simulated_rounds, args.rounds,
                                     sched)
    lines = [*AGREEMENT_HEADER, *map(agreement_row, agreement_rows), "",
             f"T_sched(N) = a + b·N = {sched[0]:.3f} + {sched[1]:.3f}·N s (arow-p, "
             f"-b {SIMULATION_BITS}: a 16 MB model); measured on LocalCluster rounds: "
             + ", ".join(f"{sched[2][n]:.3f} s with {n} worker{'s' * (n > 1)}"
                         for n in sorted(sched[2])) + ".", "", *SCALE_HEADER, *map(scale_row, scale_rows), "",
             *threshold_lines(terms)]
    print("\n".join(lines))
    if args.write_readme:
        replace_section(START, END, "\n".join([
            START, "## Distributed training: agreement and scale-out (`scaleout.py`)", "",
            f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; one "
            f"run (`python benchmarks/scaleout.py --write-readme`). How: the script's "
            f"docstring.", "", *lines, END]))


if __name__ == "__main__":
    main()
