"""dist-train's evidence (issue 22 §3): agreement with one stream on a real 2-worker cluster,
and the scale-out to N workers simulated in-process against the cost model
T_N = P'·(n/(N·r) + T_mix(N) + T_sched(N)).

    python benchmarks/scaleout.py [--rounds 5] [--orders 5] [--agreement-only] [--write-readme]

A. Agreement. LocalCluster(n_workers=2, threads_per_worker=1), 2 shards (byte ranges), P
   rounds (driver.dist_train, the command's code) against ``train --passes P --holdout_off``
   (training.train: one stream, every example every pass; dist-train has no holdout set
   unless asked), same data and flags, for nherd-p and arow-p (--mix prec) and avg-perceptron
   (--mix mean), on a9a, the three 20 Newsgroups pairs, rcv1_small and a 500k-line generated
   stream (the first 500,000 lines of the 1M-line benchmark file; test: its last 100,000).
   Test error of each model on the test file, and McNemar's test on the two models'
   per-example test mistakes (b = stream right and dist-train wrong, c = the reverse): exact
   (binomial, scipy.stats.binomtest) and chi-square with continuity correction. Then what
   explains a difference: (1) the same comparison in --orders orders of each training file
   (the file's, then random.Random(k).shuffle of its lines): how much of a difference the order
   alone makes; (2) for the Gaussian learners, the precision each model gained over its start
   Σ₀ = a·I, Σ(σ⁻¹ − 1/a), and dist-train with --mix sum (N = 2: every shard's precision
   counted in full, where prec's mean counts each round's once for N shards): whether the
   narrower precision of prec is the cause, and the test error after 1 pass and 1 round;
   (3) every two of the orders' one-stream models mixed by the learner's rule
   (mixing.mix_states, as dist-train mixes two shards' models): what averaging two models
   that saw the same examples in other orders does by itself;
   (4) the value train's -C auto (nherd-p) or -r auto (arow-p) picks on the training file
   (one pass, the default grid), given to both in every order: whether the difference is the
   default value's.
   Each miss of the first table gets a line of these figures. --agreement-only runs part A
   alone; its --write-readme keeps part B of the section as it is.
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
import itertools
import logging
import os
import random
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
from throughput import README, machine, machine_line, replace_section  # noqa: E402

from streamherd import tasks, training  # noqa: E402
from streamherd.distributed.driver import (Cluster, Mix, dist_train, mixed,  # noqa: E402
                                          run_round, starting_model)
from streamherd.distributed.mixing import (Counters, Rule, ShardResult,  # noqa: E402
                                          mix_states)
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


def ordered_copies(train, folder, count):
    """``train`` itself (the file's order) and ``count`` - 1 copies of it, each in another
    order (random.Random(k).shuffle of its lines, k = 1, 2, ...)."""
    copies = [train]
    if count > 1:
        with open(train, "rb") as f:
            lines = f.readlines()
        for seed in range(1, count):
            order = list(lines)
            random.Random(seed).shuffle(order)
            copy = folder / f"{Path(train).stem}.order{seed}{Path(train).suffix}"
            with open(copy, "wb") as f:
                f.writelines(order)
            copies.append(copy)
    return copies


def one_stream(train, folder, rounds, **flags):
    """``train --passes P --holdout_off`` (one stream, every example every pass): its model."""
    path = folder / "one.npz"
    training.train([str(train)], final_model=path, quiet=True,
                   passes=Passes(rounds, holdout_off=True), **flags)
    return load_model(path)


def distributed(client, train, folder, rounds, rule, **flags):
    """dist-train on 2 shards for P rounds, mixed by ``rule``: its model."""
    path = folder / "dist.npz"
    dist_train([str(train)], path, rounds=rounds, cluster=Cluster(shards="2"), mix=Mix(rule),
               client=client, quiet=True, **flags)
    return load_model(path)


def compared(stream_wrong, dist_wrong):
    """(stream's test error %, dist-train's, b, c, exact p, chi-square p)."""
    return (100 * stream_wrong.mean(), 100 * dist_wrong.mean(), *mcnemar(stream_wrong,
                                                                       dist_wrong))


def precision_gained(model):
    """The precision a Gaussian model gained over its start Σ₀ = a·I, Σ(σ⁻¹ − 1/a) over every
    slot."""
    meta, state = model
    return float(np.sum(1.0 / state["variance"] - 1.0 / meta["hyperparameters"]["a"]))


def ensemble(models, rule, chunks):
    """The test error % of two one-stream models (the same data in two orders) mixed by
    ``rule``, as dist-train mixes two shards' models, minus their mean test error."""
    results = [ShardResult(state, {}, {}, Counters()) for _, state in models]
    start = {k: np.ones_like(v) if k == "variance" else np.zeros_like(v)
             for k, v in models[0][1].items()}   # only sum reads the start
    mixed_state = mix_states(Rule(rule, start), results)
    return 100 * (mistakes((models[0][0], mixed_state), chunks).mean()
                  - np.mean([mistakes(m, chunks).mean() for m in models]))


def in_orders(client, copies, test, folder, rounds, rule, chunks, **flags):
    """One stream against dist-train in each order of ``copies``: (each order's compared(),
    the one-stream models, the test chunks, the file's order's (stream, dist-train) models)."""
    runs, streams = [], []
    for path in copies:
        stream = one_stream(path, folder, rounds, **flags)
        dist = distributed(client, path, folder, rounds, rule, **flags)
        chunks = chunks or test_chunks(test, stream)
        runs.append(compared(mistakes(stream, chunks), mistakes(dist, chunks)))
        streams.append(stream)
        if len(streams) == 1:
            first = (stream, dist)
    return runs, streams, chunks, first


def agreement(client, sets, rounds, folder, orders):
    """Per data set and learner: the comparison in the file's order (a row of the first
    table), the same in ``orders`` orders of the training file (with the tuned value too,
    for a Gaussian learner), and the controls (rows of the others)."""
    rows, spread, checks = [], [], []
    for name, (train, test, bits) in sets.items():
        chunks, copies = None, ordered_copies(train, folder, orders)
        for algo, rule in LEARNERS:
            runs, streams, chunks, first = in_orders(client, copies, test, folder, rounds,
                                                     rule, chunks, algo=algo, bits=bits)
            rows.append((name, algo, rule, *runs[0]))
            log(agreement_row(rows[-1]))
            spread.append((name, algo, rule, runs))
            log(spread_row(spread[-1]))
            pairs = list(itertools.combinations(streams, 2))
            gain = float(np.mean([ensemble(pair, rule, chunks) for pair in pairs])) \
                if pairs else float("nan")
            control = None
            if rule == "prec":
                hyper, value = TUNED[algo], picked(train, folder, algo, bits)
                tuned = in_orders(client, copies, test, folder, rounds, rule, chunks,
                                  algo=algo, bits=bits, options={hyper: value})[0]
                spread.append((name, f"{algo} -{hyper} {value:g}", rule, tuned))
                log(spread_row(spread[-1]))
                control = controls(client, train, folder, rounds, algo, bits, chunks,
                                   *first) + (hyper, value, tuned)
            checks.append((name, algo, rule, gain, runs, control))
            log(f"{name} {algo}: two orders mixed {gain:+.2f}; {control}")
    return rows, spread, checks


TUNED = {"nherd-p": "C", "arow-p": "r"}   # the hyperparameter that -C/-r auto picks


def picked(train, folder, algo, bits):
    """The value train's -C auto (nherd-p) or -r auto (arow-p) picks on ``train`` (one pass,
    the default grid)."""
    path = folder / "auto.npz"
    training.train([str(train)], algo=algo, bits=bits, options={TUNED[algo]: "auto"},
                   final_model=path, quiet=True)
    return load_model(path)[0]["hyperparameters"][TUNED[algo]]


def controls(client, train, folder, rounds, algo, bits, chunks, stream, dist):
    """A Gaussian learner's controls in the file's order: --mix sum at N = 2, which counts
    every shard's precision in full (the precision gained over the start, dist-train's prec and
    sum models over the stream's), and the test error % after one pass and one round. Returns
    (sum's difference in points, its exact p, precision gained by prec / stream's, by sum /
    stream's, train % after 1 pass, dist-train % after 1 round)."""
    stream_wrong = mistakes(stream, chunks)
    summed = distributed(client, train, folder, rounds, "sum", algo=algo, bits=bits)
    sum_wrong = mistakes(summed, chunks)
    gained = precision_gained(stream)
    first_pass = mistakes(one_stream(train, folder, 1, algo=algo, bits=bits), chunks)
    first_round = mistakes(distributed(client, train, folder, 1, "prec", algo=algo,
                                       bits=bits), chunks)
    return (100 * (sum_wrong.mean() - stream_wrong.mean()), mcnemar(stream_wrong, sum_wrong)[2],
            precision_gained(dist) / gained, precision_gained(summed) / gained,
            100 * first_pass.mean(), 100 * first_round.mean())


def met(stream, dist, exact):
    return abs(dist - stream) <= 1 and exact >= 0.05


def agreement_row(row):
    name, algo, rule, stream, dist, b, c, exact, chi2 = row
    verdict = "yes" if met(stream, dist, exact) else "**no**"
    return (f"| {name} | {algo} | {rule} | {stream:.2f} | {dist:.2f} | {dist - stream:+.2f} | "
            f"{b} / {c} | {exact:.3f} | {chi2:.3f} | {verdict} |")


AGREEMENT_HEADER = [
    "| data | learner | mix | train % | dist-train % | difference (points) | b / c | "
    "McNemar exact p | chi-square p | within 1 point, p >= 0.05 |",
    "|:---|:---|:---|---:|---:|---:|---:|---:|---:|:---|"]


def _spread(values, signed=False):
    values = np.asarray(values, float)
    sd = values.std(ddof=1) if len(values) > 1 else float("nan")
    return f"{values.mean():{'+' if signed else ''}.2f} ± {sd:.2f}"


def spread_row(row):
    name, algo, rule, runs = row
    stream, dist = [r[0] for r in runs], [r[1] for r in runs]
    return (f"| {name} | {algo} | {rule} | {_spread(stream)} | {_spread(dist)} | "
            f"{_spread(np.subtract(dist, stream), signed=True)} | "
            f"{', '.join(f'{d - s:+.2f}' for s, d in zip(stream, dist))} | "
            f"{sum(met(r[0], r[1], r[4]) for r in runs)} of {len(runs)} |")


SPREAD_HEADER = [
    "| data | learner | mix | train % (mean ± SD over the orders) | dist-train % | difference "
    "(points) | difference in each order (the file's first) | orders within 1 point, "
    "p >= 0.05 |", "|:---|:---|:---|---:|---:|---:|:---|---:|"]


def control_row(row):
    name, algo, rule, gain, runs, control = row
    if control is None:
        return f"| {name} | {algo} | {rule} | - | - | - | - | - | {gain:+.2f} | - |"
    (sum_diff, sum_p, prec_share, sum_share, first_pass, first_round, hyper, value,
     tuned) = control
    stream, dist = runs[0][:2]
    differences = [r[1] - r[0] for r in tuned]
    return (f"| {name} | {algo} | {rule} | {prec_share:.2f} | {sum_share:.2f} | "
            f"{sum_diff:+.2f} (p {sum_p:.3f}) | {first_pass:.2f} → {stream:.2f} | "
            f"{first_round:.2f} → {dist:.2f} | {gain:+.2f} | -{hyper} {value:g}: "
            f"{_spread(differences, signed=True)} |")


def control_header(rounds):
    return [
        "| data | learner | mix | precision gained, prec / train | precision gained, sum / "
        "train | --mix sum (N = 2): difference | train %: 1 pass → " + str(rounds) +
        " | dist-train %: 1 round → " + str(rounds) + " | two one-stream models mixed, minus "
        "one stream (points) | tuned (train's auto pick): difference over the orders |",
        "|:---|:---|:---|---:|---:|---:|---:|---:|---:|:---|"]


def explanations(rows, checks):
    """One line per miss of the first table: what the controls show, decided from the
    figures by the rules stated in the lines."""
    lines = []
    for row, (_, _, _, gain, runs, control) in zip(rows, checks):
        name, algo, rule, stream, dist, _, _, exact, _ = row
        if met(stream, dist, exact):
            continue
        diff = dist - stream
        differences = [r[1] - r[0] for r in runs]
        parts = [f"- {name}, {algo}: {diff:+.2f} (p {exact:.3f})."]
        if control is not None:
            sum_diff, _, prec_share, sum_share, first_pass, first_round, hyper, value, \
                tuned = control
            counted = "not the cause" if abs(sum_diff - diff) <= 0.5 or \
                abs(sum_diff) >= abs(diff) else "part of it"
            parts.append(f"Precision count: {counted} (`sum` gains {sum_share:.2f}x the "
                         f"stream's precision against `prec`'s {prec_share:.2f}x, and differs "
                         f"by {sum_diff:+.2f}).")
            parts.append(f"The stream goes {first_pass:.2f} → {stream:.2f} from 1 pass to the "
                         f"last, dist-train {first_round:.2f} → {dist:.2f}.")
        parts.append(f"Averaging: two one-stream models (two orders of the whole file) mixed "
                     f"by `{rule}`: {gain:+.2f} against one stream"
                     f"{', the same direction' if gain * diff > 0 else ''}.")
        parts.append(f"Order: over {len(runs)} orders the difference is "
                     f"{_spread(differences, signed=True)} ("
                     f"{sum(met(r[0], r[1], r[4]) for r in runs)} of {len(runs)} met"
                     f"{', the mean within 1 point' if abs(np.mean(differences)) <= 1 else ''}).")
        if control is not None:
            tuned_differences = [r[1] - r[0] for r in tuned]
            tuned_mean = float(np.mean(tuned_differences))
            parts.append(f"Tuned (-{hyper} {value:g}): "
                         f"{_spread(tuned_differences, signed=True)} over the orders ("
                         f"{sum(met(r[0], r[1], r[4]) for r in tuned)} of {len(tuned)} met"
                         f"{', the mean within 1 point' if abs(tuned_mean) <= 1 else ''}).")
        lines.append(" ".join(parts))
    return lines


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


AGREEMENT_TITLE = "### A. Agreement with one stream"
SCALE_TITLE = "### B. Scale-out to N workers"


def measured_line(loads, part):
    return (f"Measured {datetime.date.today().isoformat()} on {machine_line(machine())}; one run "
            f"(`python benchmarks/scaleout.py{part} --write-readme`); 1-minute load average "
            f"{loads[0]:.1f} at the start, {loads[1]:.1f} at the end. How: the script's "
            f"docstring.")


def agreement_lines(args, rows, spread, checks, loads):
    part = " --agreement-only" if args.agreement_only else ""
    return [AGREEMENT_TITLE, "", measured_line(loads, part), "",
            f"In the file's order ({args.rounds} rounds against `train --passes {args.rounds} "
            f"--holdout_off`, default hyperparameters):", "",
            *AGREEMENT_HEADER, *map(agreement_row, rows), "",
            f"The same in {args.orders} orders of each training file (the file's, then "
            f"`random.Random(k).shuffle` of its lines, k = 1 to {args.orders - 1}): "
            f"mean ± SD over the orders; a Gaussian learner also with the value its `-C auto` "
            f"/ `-r auto` picks (train, one pass, the default grid) given to both.", "",
            *SPREAD_HEADER, *map(spread_row, spread), "",
            "Controls, in the file's order: the precision each model gained over its start, "
            "Σ(σ⁻¹ − σ₀⁻¹), over the stream's; `--mix sum` at N = 2 (every shard's precision "
            "counted in full); the test error after one pass and one round. And every two of "
            "the orders' one-stream models mixed by the learner's rule, as dist-train mixes "
            "two shards' (the mixed model's test error minus the two models' mean, averaged "
            "over the pairs).", "",
            *control_header(args.rounds), *map(control_row, checks), "",
            "What each miss of the first table comes with (the rules: the precision count is "
            "not the cause when `sum`'s difference is within 0.5 point of `prec`'s or larger):",
            "", *(explanations(rows, checks) or ["- none"])]


def scale_lines(args, sched, scale_rows, terms, loads):
    return [SCALE_TITLE, "", measured_line(loads, ""), "",
            f"T_sched(N) = a + b·N = {sched[0]:.3f} + {sched[1]:.3f}·N s (arow-p, "
            f"-b {SIMULATION_BITS}: a 16 MB model); measured on LocalCluster rounds: "
            + ", ".join(f"{sched[2][n]:.3f} s with {n} worker{'s' * (n > 1)}"
                        for n in sorted(sched[2])) + ".", "", *SCALE_HEADER,
            *map(scale_row, scale_rows), "", *threshold_lines(terms)]


def kept_scale_out(readme):
    """The scale-out part of the README's section as it stands (--agreement-only keeps it)."""
    text = readme.read_text()
    section = text.split(START, 1)[1].split(END, 1)[0] if START in text else ""
    if SCALE_TITLE not in section:
        raise SystemExit(f"{readme} has no '{SCALE_TITLE}' in its scaleout section: run "
                         f"without --agreement-only")
    return [SCALE_TITLE + section.split(SCALE_TITLE, 1)[1].rstrip("\n")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--orders", type=int, default=5,
                        help="orders of each training file in the agreement's spread")
    parser.add_argument("--simulated-rounds", type=int, default=8)
    parser.add_argument("--agreement-only", action="store_true",
                        help="run part A only; --write-readme keeps part B as it is")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    synth = make_data.ensure(make_data.Spec(lines=1_000_000), gz=False).svm
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        loads = [os.getloadavg()[0]]
        with local_client(2) as client:
            agreement_figures = agreement(client, agreement_sets(folder, synth), args.rounds,
                                          folder, args.orders)
        loads.append(os.getloadavg()[0])
        lines = agreement_lines(args, *agreement_figures, loads)
        if args.agreement_only:
            scale = kept_scale_out(README) if args.write_readme else []
        else:
            loads = [os.getloadavg()[0]]
            train, test = split(synth, folder, 900_000)
            sched = scheduling_overhead(train, "arow-p", "prec", 4)
            scale_rows, terms = scale_out(train, test, args.simulated_rounds, args.rounds,
                                         sched)
            loads.append(os.getloadavg()[0])
            scale = scale_lines(args, sched, scale_rows, terms, loads)
    print("\n".join([*lines, "", *scale]))
    if args.write_readme:
        replace_section(START, END, "\n".join([
            START, "## Distributed training: agreement and scale-out (`scaleout.py`)", "",
            *lines, "", *scale, END]))


if __name__ == "__main__":
    main()
