"""Compile the kernels of the usual commands into numba's on-disk cache, ahead of the first run.

    python -m streamherd.precompile [--all] [--processes N]

The wheel build runs it (setup.py, on the built package, whose ``__pycache__`` folders then
ship in the wheel; ``pip install -e`` runs it on the source tree), and it can be run after any
install, e.g. with NUMBA_CACHE_DIR set as the runs will have it. It runs the real ``train`` and
``predict`` on a few generated lines, so that the kernels get exactly the argument types of a
real run (numba caches one entry per signature: a run whose types differ compiles again). The
cache goes where numba puts it for any run: NUMBA_CACHE_DIR when set, else ``__pycache__``
beside each module when writable, else numba's user-wide cache folder. The generated lines,
models and predictions go to a scratch folder inside that same cache folder (the system's
temporary folder if numba has none), removed at the end.

numba keys a cache entry by its own version, the CPU it compiles for, the Python version and a
hash of the module's source (not its file time, which installing changes): a wheel built by
``pip install`` on the machine that runs it matches; one built elsewhere, or run beside another
numba, compiles on first use, as without this.

Default: the README's commands (``train`` and ``predict`` on svmlight and on VW input, the
parser of the format most of their compile time), the same on VW input with ``-q ab`` (the
parser of a space that crosses namespaces), every binary learner but the ``-full``
ones, multiclass ``--multiclass mira``, the voted perceptron's joint multiclass and ``herd``
(both modes) with ``predict`` of their models, and ``-C auto``'s bank and one-versus-all's of
nherd-p, arow-p and pa2 (README_BANKS). ``--all`` adds the ``-full`` learners, regression,
joint and one-versus-all multiclass, ``--normalize``, the other ``predict`` outputs (``--raw``,
``--proba``, ``--scores``) and the banks of the other families. (``--audit``'s feature names
and ``--hash all`` are parse kernels of their own too, left to their first run:
benchmarks/README.md weighs them against the install's time.) The progress lines give each
run's time.

The README's ``train`` and ``predict`` run first, in this process: they compile the parsers and
the other kernels every later run shares. The other runs are spread over one process per core
(``--processes``), which save into the cache under the lock every command holds for it
(numba_runtime.lock_cache_saves: numba adds an entry to a function's cache by rewriting its
index file, and two processes rewriting one index at once would lose an entry). Two processes
may still compile the same kernel (time lost, nothing else).

Exit status 0 when every run compiled; 1 when one failed (the others still ran): a command
whose kernels failed to compile here compiles on first use, as it would have without this.
"""
import argparse
import contextlib
import functools
import io
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback

# A few lines of each task and format. Only the argument types of the kernels matter (the same
# in every real run), not which of their branches these lines take. Labels as most data writes
# them (+1/-1, 1/0, class numbers, reals), features as both formats write them.
DATA = {
    "svmlight": {
        "binary": b"+1 1:0.5 3:1 7:2.25\n-1 2:1 3:0.5 10:1\n+1 4:1e-2 9:-1 # c\n-1 5:1 5:2\n",
        "binary10": b"1 1:1 2:0.5\n0 2:1 3:2\n1 3:1 4:1\n0 1:0.25 4:1\n",
        "multiclass": b"1 1:1 2:1\n2 2:1 3:1\n3 3:1 1:1\n1 1:1 3:0.5\n",
        "regression": b"0.5 1:1 2:1\n-1.25 2:1 3:1\n2 3:1\n0 1:2\n",
    },
    "vw": {
        "binary": b"1 'a| 1:0.5 3 7:2.25\n-1 'b| 2 3:0.5 10\n1 |f x y:2 |g z\n-1 2.0 |ns w:3\n",
        "binary10": b"1 |f 1 2:0.5\n0 |f 2 3:2\n1 |f 3 4\n0 |f 1:0.25 4\n",
        "multiclass": b"1 |f 1 2\n2 |f 2 3\n3 |f 3 1\n1 |f 1 3:0.5\n",
        "regression": b"0.5 |f 1 2\n-1.25 |f 2 3\n2 |f 3\n0 |f 1:2\n",
    },
}


# the learners whose -C auto bank the default compiles: the README's two and train's default
README_BANKS = ("nherd-p", "arow-p", "pa2")


def jobs(everything=False):
    """The runs, in order: (description, function of the scratch folder, the learner whose
    kernels it compiles, or None for a run whose kernels are its own: the README's commands,
    herd, a bank)."""
    from streamherd import learners

    names = [name for name in learners.REGISTRY if everything or not name.endswith("-full")]
    # a full covariance is (2^bits)^2: 2^8 slots keep it small (the kernels' argument types do
    # not depend on bits; with the default 18 the learner would refuse the state's size)
    bits = {name: 8 if name.endswith("-full") else None for name in names}
    out = []
    for fmt in DATA:   # the README's train and predict first, in each format
        out.append((f"train and predict, {fmt}", _binary(fmt, "pa2", ("binary", "binary10")),
                    None))
    # VW's crosses: a space that crosses namespaces is a parse kernel of its own (its arguments'
    # types, FeatureSpace.kernel_params), which a first -q run would compile without this
    out.append(("train and predict -q ab, vw",
                _binary("vw", "pa2", ("binary",), namespaces={"quadratic": ("ab",)}), None))
    for name in names:
        out.append((f"train and predict --algo {name}",
                    _binary("svmlight", name, ("binary",), bits=bits[name]), name))
    # the multiclass learners whose kernels no other run here compiles
    out.append(("train and predict --algo pa2 --multiclass mira",
                _binary("svmlight", "pa2", ("multiclass",), multiclass="mira"), "pa2"))
    out.append(("train and predict --algo voted-perceptron --multiclass joint",
                _binary("svmlight", "voted-perceptron", ("multiclass",), multiclass="joint"),
                "voted-perceptron"))
    out.append(("herd (joint and ova) and predict", _herd("svmlight"), None))
    # auto's bank kernels (one per family, for the group size of this machine's cores:
    # learners/packing.py group_sizes): the README's, then (--all) every family
    for name in banked_learners(everything):
        auto = learners.spec(name).hyperparameters[0].name
        out.append((f"train --algo {name}, {auto} auto",
                    _train("svmlight", "binary", name, options={auto: "auto"}), None))
    # one-versus-all's bank (its classes' labels apart: a kernel of its own), the README's
    # learners (--all: below, every learner's one-versus-all)
    if not everything:
        for name in README_BANKS:
            out.append((f"train --algo {name} --multiclass ova",
                        _binary("svmlight", name, ("multiclass",), multiclass="ova"), name))
    if everything:
        for name in names:
            out.append((f"train --algo {name} --normalize",
                        _train("svmlight", "binary", name, bits=bits[name], normalize=True),
                        name))
            out.append((f"train --algo {name} --loss squared",
                        _binary("svmlight", name, ("regression",), bits=bits[name],
                                loss="squared"), name))
            for mode in ("joint", "ova"):
                out.append((f"train --algo {name} --multiclass {mode}",
                            _binary("svmlight", name, ("multiclass",), bits=bits[name],
                                    multiclass=mode), name))
    return out


def banked_learners(everything=False):
    """README_BANKS, then (``everything``) a learner of each other family with a bank kernel
    (selection.bank_entry_point) and a hyperparameter to give auto."""
    from streamherd import learners, selection

    names = list(README_BANKS)
    if everything:
        kernels = {selection.bank_entry_point(name) for name in names}
        for name, variant in learners.REGISTRY.items():
            kernel = selection.bank_entry_point(name)
            if kernel is not None and kernel not in kernels and variant.hyperparameters:
                kernels.add(kernel)
                names.append(name)
    return names


def _binary(fmt, algo, tasks, **train_options):
    """Train on each file of ``tasks``, then predict with the model (every output with --all)."""
    def run(folder, everything, refusals):
        from streamherd.training import predict

        for task in tasks:
            model = _train(fmt, task, algo, **train_options)(folder, everything, refusals)
            if model is None:
                continue
            data = _data(folder, fmt, task)
            outputs = [{}]
            if everything:
                outputs += [{"raw": True}, {"proba": True}, {"scores": True}]
            for output in outputs:
                try:
                    predict(model, [data], output=os.path.join(folder, "predictions"),
                            **output)
                except _refused():   # --proba of a model without probabilities, --scores of a
                    pass             # binary model...: expected, these are tried on every model
    return run


def _herd(fmt):
    """``streamherd herd`` in both modes, transductive (--test, -p) and saving a model, which
    predict then reads; the smallest sizes (the kernels' argument types do not depend on them)."""
    def run(folder, everything, refusals):
        from streamherd.herding import MODES
        from streamherd.herding_command import run_herd
        from streamherd.training import predict

        data = _data(folder, fmt, "multiclass")
        model = os.path.join(folder, "herd.npz")
        for mode in MODES:
            run_herd(data, test=data, predictions=os.path.join(folder, "herd-predictions"),
                     final_model=model, ratio="1,3", hidden=4, batch=2, burn_in=2,
                     max_epochs=3, snapshots=2, mode=mode, quiet=True)
            predict(model, [data], output=os.path.join(folder, "predictions"))
    return run


def _train(fmt, task, algo, **options):
    def run(folder, everything, refusals):
        from streamherd.training import train

        model = os.path.join(folder, f"{algo}-{task}.npz")
        try:
            train([_data(folder, fmt, task)], algo=algo, final_model=model, **options)
        except _refused() as e:   # e.g. --loss squared with a learner that has no squared loss
            refusals.append(f"train: {e}")
            return None
        return model
    return run


def _refused():
    from streamherd.errors import StreamherdError

    return StreamherdError


def _data(folder, fmt, task):
    path = os.path.join(folder, f"{task}.{'svm' if fmt == 'svmlight' else 'vw'}")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(DATA[fmt][task])
    return path


def cache_folder():
    """The folder numba caches streamherd's kernels in (this module's, as it chooses for each
    module: NUMBA_CACHE_DIR, else __pycache__ when writable, else its user-wide cache), or None
    when it has none."""
    from numba.core import caching

    for locator_class in getattr(caching.CacheImpl, "_locator_classes", ()):
        try:
            locator = locator_class.from_function(main, os.path.abspath(__file__))
        except Exception:   # numba internals changed: no folder known
            return None
        if locator is not None:
            return locator.get_cache_path()
    return None


def _audit_line_count():
    """Compile io.block.count_newlines, which --audit runs (audit.py) and no job below does."""
    import numpy as np

    from streamherd.io.block import count_newlines

    count_newlines(np.zeros(1, np.uint8), 1)


def precompile(everything=False, log=None, processes=None):
    """Run the jobs; returns the descriptions of those that failed.

    The first jobs (the README's train and predict in each format, which compile the parsers and
    the other kernels every job shares) run in this process, the rest on ``processes`` processes
    (default: one per core) in groups that share kernels (_kernel_groups), each job in a scratch
    folder of its own."""
    from streamherd import numba_runtime
    from streamherd.learners.threads import usable_cores

    folder = cache_folder()
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
    failed = []
    scratch = tempfile.mkdtemp(prefix="streamherd-precompile-", dir=folder)
    try:
        _prepare()
        for index in range(len(DATA)):
            _report(_run_job(index, everything, scratch), log, failed)
        groups = _kernel_groups(jobs(everything), first=len(DATA))
        processes = min(processes or usable_cores(), len(groups))
        run = functools.partial(_run_jobs, everything=everything, scratch=scratch)
        if processes <= 1 or not numba_runtime.cache_saves_locked():
            for results in map(run, groups):
                for result in results:
                    _report(result, log, failed)
        else:
            # spawned, not forked: a fork of a process whose LLVM is initialised is not safe
            context = multiprocessing.get_context("spawn")
            with context.Pool(processes, initializer=_prepare) as pool:
                for results in pool.imap_unordered(run, groups):
                    for result in results:
                        _report(result, log, failed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return failed


def _prepare():
    """Set a process up as a command sets itself up: numba's runtime library cached too, and
    its saves into numba's cache locked (numba_runtime.install)."""
    from streamherd import compilation, numba_runtime

    numba_runtime.install()
    compilation.watch(quiet=True)
    numba_runtime.start_target()   # as start_up.end
    _audit_line_count()


def _kernel_groups(all_jobs, first):
    """The indices of the jobs from index ``first`` on in groups that run in one process each:
    a learner's runs on every task with those of the learners that share its kernels (its
    module's diagonal or full-covariance form), so that two processes do not compile one
    kernel; largest group first."""
    from streamherd import learners

    groups = {}
    for index in range(first, len(all_jobs)):
        description, _, learner = all_jobs[index]
        if learner is None:   # kernels of its own
            key = description
        else:
            spec = learners.spec(learner)
            key = (spec.module, spec.covariance)
        groups.setdefault(key, []).append(index)
    return sorted(groups.values(), key=len, reverse=True)


def _run_jobs(indices, everything, scratch):
    return [_run_job(index, everything, scratch) for index in indices]


def _run_job(index, everything, scratch):
    """Run job ``index`` in a folder of its own; (description, seconds, seconds compiling,
    refusals, the traceback of its failure or None)."""
    from streamherd import compilation

    description, run, _ = jobs(everything)[index]
    folder = os.path.join(scratch, f"job-{index}")
    os.makedirs(folder, exist_ok=True)
    watch = compilation.watch(quiet=True)
    started, compiling = time.perf_counter(), watch.seconds
    refusals = []
    # the commands' own output (progress, notices) is not this one's
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            run(folder, everything, refusals)
        except Exception:
            error = traceback.format_exc()
        else:
            error = None
    return (description, time.perf_counter() - started, watch.seconds - compiling, refusals,
            error)


def _report(result, log, failed):
    description, seconds, compiling, refusals, error = result
    if log is not None:
        print(f"  {description}: {seconds:.1f} s ({compiling:.1f} s compiling)"
              + "".join(f"; refused ({refusal})" for refusal in refusals), file=log, flush=True)
    if error is not None:
        failed.append(description)
        print(f"streamherd.precompile: {description} failed:\n{error}", file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m streamherd.precompile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true",
                        help="also -full learners, regression, multiclass, --normalize and "
                             "every predict output")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--processes", type=int, metavar="N",
                        help="compile on N processes (default: one per core)")
    parser.add_argument("--into", metavar="DIR",
                        help="compile only if the cache goes inside DIR (the build's package: "
                             "setup.py passes it, so that a build writes nowhere else)")
    args = parser.parse_args(argv)
    if args.into is not None:
        folder = cache_folder()
        inside = folder is not None and os.path.commonpath(
            [os.path.realpath(folder), os.path.realpath(args.into)]) == os.path.realpath(args.into)
        if not inside:
            print(f"streamherd.precompile: numba's cache folder {folder} is not inside "
                  f"{args.into}; nothing compiled", file=sys.stderr)
            return 1
    started = time.perf_counter()
    failed = precompile(args.all, log=None if args.quiet else sys.stdout,
                        processes=args.processes)
    if not args.quiet:
        print(f"streamherd: kernels compiled into {cache_folder()} in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
    if failed:
        print(f"streamherd.precompile: failed: {', '.join(failed)} (their kernels compile on "
              f"first use)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
