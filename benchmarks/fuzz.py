"""A fuzzing campaign against ``python -m streamherd``: the generator, mutator, reference grammar
and oracle of tests/test_fuzz.py (tests/fuzzing.py), run for longer, with other seeds.

Each case is a small mutated svmlight or VW file (maybe compressed, maybe with damaged
compressed bytes) and its options; the oracle runs train, train --skip-bad, train on the file
with the reference's malformed lines blanked, predict --skip-bad and, for long numbers, train on
a canonical rewrite, and checks exit codes (0 or 2), one-line errors without traceback, models
(loadable, finite, written only on success), the malformed line named, and --skip-bad against
the cleaned file (same model, same count). See tests/fuzzing.py for the grammar's decisions.

Prints the files tried, the exits of every kind of run by code, and the failures by class; saves
up to --keep cases of each class under OUT/failures/<class>/<case>/ (the input, repro.sh with the
commands, failures.txt, case.json). --minimize then shrinks one case of each class (lines, then
tokens) while the same class of failure remains, and saves it as OUT/minimal/<class>/.

    python benchmarks/fuzz.py --seconds 600                 # ten minutes, seed 1
    python benchmarks/fuzz.py --seed 7 --files 500 --minimize
    python benchmarks/fuzz.py --seed 20240611 --case 12     # one case (of the test's seed), verbose
    python benchmarks/fuzz.py --streamherd-path /tmp/head   # fuzz another copy of the package

Cases are deterministic (the same --seed and case number give the same bytes and options); the
runs are one process at a time unless --jobs.
"""
import argparse
import json
import os
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fuzzing  # noqa: E402  (tests/fuzzing.py)


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text)[:120]


def family(signature):
    """Failures of one kind whatever the other malformed lines of the file: the signature, but
    for the --skip-bad comparisons and predict only their kind (their suffix lists every
    reason), and every failure of a file with lone CRs one class (its line numbers differ)."""
    if signature.endswith(" [lone CR]"):
        return "lone CR"
    head = signature.split(":", 1)[0]
    if head in ("skip-bad-model", "skip-bad-count", "skip-bad-exit", "traceback", "timeout"):
        return head + (":" + signature.rsplit(":", 1)[1] if head == "traceback" else "")
    return signature


def save_case(folder, case, failures, runs):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / case.filename).write_bytes(case.raw)
    script = ["#!/bin/sh", f"# case {case.name}: {'; '.join(case.mutations) or 'no mutation'}",
              "# cleaned.* and canonical.* are written by the oracle (benchmarks/fuzz.py --case)",
              'cd "$(dirname "$0")"', "rm -f plain.npz skip.npz clean.npz canonical.npz"]
    if case.existing_model:
        script.append("printf '%s\\n' " + repr(fuzzing.SENTINEL.decode().rstrip("\n")) +
                      " > plain.npz   # a file a failed run must leave as it is")
    script += [run.command() + f"   # {run.what}: exit {run.code}" for run in runs]
    (folder / "repro.sh").write_text("\n".join(script) + "\n")
    (folder / "failures.txt").write_text("\n\n".join(str(f) for f in failures) + "\n")
    (folder / "case.json").write_text(json.dumps({
        "name": case.name, "format": case.fmt, "file": case.filename,
        "train_args": case.train_args, "predict_args": case.predict_args, "task": case.task,
        "classes": case.classes, "stdin": case.stdin, "existing_model": case.existing_model,
        "mutations": case.mutations,
        "bytes": case.raw.decode("latin-1")}, indent=1, ensure_ascii=True))


def minimize(case, target, workdir, timeout, budget):
    """Shrink the case while a failure of family ``target`` remains: the decompressed text
    instead of compressed bytes (when that still fails), then chunks of lines (ddmin), then
    single tokens. Returns (case, failures, runs, checks)."""
    deadline = time.monotonic() + budget
    checks = 0
    best = None

    def fails(candidate):
        nonlocal checks, best
        checks += 1
        failures, runs, _ = fuzzing.check_case(candidate, workdir, timeout)
        hit = [f for f in failures if family(f.signature) == target]
        if hit:
            best = (candidate, hit, runs)
        return bool(hit)

    if not fails(case):
        return case, [], [], checks
    kind, data, _ = fuzzing.decompress(case.raw)
    if kind is not None and data is not None:
        plain = replace(case, raw=data, suffix=case.suffix.rsplit(".", 1)[0])
        if fails(plain):
            case = plain
        else:
            fails(case)
    if fuzzing.decompress(case.raw)[0] is None:
        pieces = re.split(b"(?<=\n)", case.raw)
        pieces = [p for p in pieces if p]
        n = 2
        while len(pieces) > 1 and time.monotonic() < deadline:
            size = max(1, len(pieces) // n)
            removed = False
            for start in range(0, len(pieces), size):
                trial = pieces[:start] + pieces[start + size:]
                if trial and fails(replace(case, raw=b"".join(trial))):
                    pieces, removed = trial, True
                    n = max(n - 1, 2)
                    break
                if time.monotonic() > deadline:
                    break
            if not removed:
                if size == 1:
                    break
                n = min(n * 2, len(pieces))
        for i in range(len(pieces)):   # then tokens, one at a time
            spans = [m.span() for m in re.finditer(rb"[^ \t\r\n]+", pieces[i])]
            for s, e in reversed(spans):
                if time.monotonic() > deadline:
                    break
                trial = pieces[i][:s] + pieces[i][e:]
                candidate = pieces[:i] + [trial] + pieces[i + 1:]
                if fails(replace(case, raw=b"".join(candidate))):
                    pieces = candidate
        for i in range(len(pieces)):   # and runs of blanks made one space
            tidy = re.sub(rb"[ \t]+(?=\r?\n|$)", b"", re.sub(rb"[ \t]{2,}", b" ", pieces[i]))
            if tidy != pieces[i] and time.monotonic() < deadline:
                candidate = pieces[:i] + [tidy] + pieces[i + 1:]
                if fails(replace(case, raw=b"".join(candidate))):
                    pieces = candidate
        fails(replace(case, raw=b"".join(pieces)))
    candidate, hit, runs = best
    return candidate, hit, runs, checks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--files", type=int, default=None, help="cases to try (default: until "
                        "--seconds)")
    parser.add_argument("--seconds", type=float, default=None, help="stop starting cases after "
                        "this long (default 600 without --files)")
    parser.add_argument("--start", type=int, default=0, help="first case number")
    parser.add_argument("--case", type=int, default=None, help="run this one case, verbosely")
    parser.add_argument("--only", default=None, help="comma-separated case numbers to try "
                        "(instead of --start/--files)")
    parser.add_argument("--max-lines", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--jobs", type=int, default=1, help="cases at a time")
    parser.add_argument("--keep", type=int, default=3, help="cases saved per failure class")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the failures (default /tmp/streamherd-fuzz-SEED)")
    parser.add_argument("--minimize", action="store_true",
                        help="shrink one case of each failure class at the end")
    parser.add_argument("--minimize-seconds", type=float, default=180.0,
                        help="time for shrinking each class")
    parser.add_argument("--streamherd-path", type=Path, default=None,
                        help="a folder holding another streamherd package to fuzz (prepended "
                             "to PYTHONPATH of the runs)")
    args = parser.parse_args()
    if args.streamherd_path is not None:
        path = str(args.streamherd_path.resolve())
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [path, os.environ.get(
            "PYTHONPATH")]))
    out = args.out or Path(f"/tmp/streamherd-fuzz-{args.seed}")
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    print(f"streamherd fuzz: seed {args.seed}, results in {out}", flush=True)
    fuzzing.warm_up(work / "warm-up")

    if args.case is not None:
        case = fuzzing.make_case(args.seed, args.case, max_lines=args.max_lines)
        folder = out / "cases" / case.name
        shutil.rmtree(folder, ignore_errors=True)
        failures, runs, info = fuzzing.check_case(case, folder, args.timeout)
        save_case(folder, case, failures, runs)
        print(f"case {case.name}: {case.filename} {case.raw[:600]!r}")
        print(f"mutations: {'; '.join(case.mutations) or 'none'}")
        print(f"reference: {info}")
        for run in runs:
            print(f"  {run.command()}  -> exit {run.code} ({run.seconds:.2f} s)")
            if run.stderr.strip():
                print("     stderr: " + run.stderr.strip()[-400:].replace("\n", "\n             "))
        print("\n".join(f"FAIL {f}" for f in failures) or "no failure")
        print(f"saved in {folder}")
        return 1 if failures else 0

    seconds = args.seconds if args.seconds is not None or args.files is not None or args.only \
        else 600.0
    started = time.monotonic()
    exits = defaultdict(Counter)
    by_signature = defaultdict(list)     # signature -> [(size, case name)]
    by_family = Counter()
    tried = failing = compressed = corrupt = runs_total = 0
    run_seconds = 0.0
    reasons = Counter()
    examples = {}                        # family -> (case, failures) of the smallest case

    def indices():
        if args.only:
            yield from (int(i) for i in args.only.split(","))
            return
        i = args.start
        while args.files is None or i < args.start + args.files:
            if seconds is not None and time.monotonic() - started > seconds:
                return
            yield i
            i += 1

    def one(index):
        case = fuzzing.make_case(args.seed, index, max_lines=args.max_lines)
        folder = work / f"job-{index % max(args.jobs, 1)}"
        failures, runs, info = fuzzing.check_case(case, folder, args.timeout)
        return case, failures, runs, info

    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        pending = []
        for index in indices():
            pending.append(pool.submit(one, index))
            if len(pending) < args.jobs:
                continue
            done, pending = pending[0], pending[1:]
            tried, failing = _record(done.result(), exits, by_signature, by_family, examples,
                                     reasons, args, out, tried, failing)
            case_info = done.result()[3]
            compressed += case_info["compressed"] is not None
            corrupt += case_info["corrupt"]
            runs_total += len(done.result()[2])
            run_seconds += sum(r.seconds for r in done.result()[2])
            if tried % 25 == 0:
                print(f"  {tried} files, {failing} failing, {time.monotonic() - started:.0f} s",
                      flush=True)
        for done in pending:
            tried, failing = _record(done.result(), exits, by_signature, by_family, examples,
                                     reasons, args, out, tried, failing)
            compressed += done.result()[3]["compressed"] is not None
            corrupt += done.result()[3]["corrupt"]
            runs_total += len(done.result()[2])
            run_seconds += sum(r.seconds for r in done.result()[2])

    elapsed = time.monotonic() - started
    lines = [f"seed {args.seed}: {tried} files tried in {elapsed:.0f} s ({runs_total} runs, "
             f"{run_seconds / max(runs_total, 1):.2f} s each); {compressed} compressed, {corrupt} "
             f"of them not decompressible; {failing} files with a failure", "",
             "exits by run and code:"]
    for what in ("train", "train-skip-bad", "train-cleaned", "predict", "train-canonical"):
        if exits[what]:
            codes = ", ".join(f"{code}: {n}" for code, n in sorted(exits[what].items(),
                                                                 key=lambda kv: str(kv[0])))
            lines.append(f"  {what:16} {codes}")
    lines += ["", "malformed lines in the files, by the reference's reason:"]
    lines += [f"  {n:5}  {reason}" for reason, n in reasons.most_common()]
    lines += ["", "failures by class (files):"]
    lines += [f"  {n:5}  {fam}" for fam, n in by_family.most_common()]
    lines += ["", "failure signatures (files, smallest case):"]
    for signature, hits in sorted(by_signature.items(), key=lambda kv: -len(kv[1])):
        size, name = min(hits)
        lines.append(f"  {len(hits):5}  {signature}   [{name}, {size} bytes]")
    report = "\n".join(lines)
    print("\n" + report)
    (out / "summary.txt").write_text(report + "\n")

    if args.minimize and examples:
        print("\nminimizing one case per failure class:")
        minimal = []
        for fam, (case, _) in sorted(examples.items()):
            folder = out / "minimal" / slug(fam)
            shutil.rmtree(folder, ignore_errors=True)
            small, hit, runs, checks = minimize(case, fam, work / "minimize",
                                                args.timeout, args.minimize_seconds)
            if not hit:
                print(f"- {fam}: did not fail again (flaky?)")
                continue
            save_case(folder, small, hit, runs)
            failing_runs = [r.command() for r in runs if r.command() in hit[0].detail] or \
                [r.command() for r in runs]
            text = (f"- {fam} ({checks} checks, from {case.name}): {small.filename} = "
                    f"{small.raw!r}\n    options: {' '.join(small.train_args) or '(none)'}"
                    f"{'  (train reads it on stdin)' if small.stdin else ''}\n"
                    f"    run: {failing_runs[0]}\n    {hit[0].detail[:600]}")
            print(text, flush=True)
            minimal.append(text)
        (out / "minimal.txt").write_text("\n".join(minimal) + "\n")
    return 1 if failing else 0


def _record(result, exits, by_signature, by_family, examples, reasons, args, out, tried,
            failing):
    case, failures, runs, info = result
    tried += 1
    for run in runs:
        exits[run.what]["timeout" if run.code is None else run.code] += 1
    for reason in info.get("reasons", []):
        reasons[reason] += 1
    if failures:
        failing += 1
        signatures = sorted({f.signature for f in failures})
        for signature in signatures:
            by_signature[signature].append((len(case.raw), case.name))
            if len(by_signature[signature]) <= args.keep:
                save_case(out / "failures" / slug(signature) / case.name, case, failures, runs)
        for fam in sorted({family(s) for s in signatures}):
            by_family[fam] += 1
            if fam not in examples or len(case.raw) < len(examples[fam][0].raw):
                examples[fam] = (case, failures)
    return tried, failing


if __name__ == "__main__":
    sys.exit(main())
