"""``streamherd experiment``: check the options, load the data, run the grid with a progress bar,
write the CSVs, the tables, the report and the plots."""
import contextlib
import os
import re
import shlex
import sys
import time

from streamherd.errors import StreamherdError
from streamherd.experiment import adapter, report
from streamherd.experiment.cluster import Cluster, Source, client_of, run_on_client
from streamherd.experiment.data import (DEFAULT_BITS_CAP, FULL_COVARIANCE_MAX_BITS, LOAD_BITS,
                                        NORMALIZATIONS, tasks_of)
from streamherd.experiment.plots import MISSING, PLOT_FORMATS, make_plots
from streamherd.experiment.runner import (Grid, Settings, load_datasets, make_jobs,
                                          run_grid)
from streamherd.learners.spec import log_grid
from streamherd.outputs import replaced_on_success

DEFAULT_ALGOS = "nherd-p,nherd-e,nherd-d,arow-p,arow-d,cw,pa2,perceptron"
DEFAULT_NOISE = "0,0.1,0.3"
_POWER = re.compile(r"^2\^(-?\d+)$")


def parse_number(text, what):
    text = text.strip()
    power = _POWER.match(text)
    try:
        return float(2.0 ** int(power.group(1))) if power else float(text)
    except ValueError:
        raise StreamherdError(
            f"{what}: '{text}' is not a number (write e.g. 0.5 or 2^-3)") from None


def parse_values(text, what):
    """``a,b,c`` or a power-of-two range ``2^-4..2^4``, with a step in the exponent
    ``2^-8..2^8:2``."""
    if ".." in text:
        low, _, high = text.partition("..")
        high, _, step = high.partition(":")
        low_power, high_power = _POWER.match(low.strip()), _POWER.match(high.strip())
        if not (low_power and high_power) or not (step.strip() or "1").isdigit():
            raise StreamherdError(f"{what}: a range is written 2^LOW..2^HIGH or "
                                  f"2^LOW..2^HIGH:STEP (STEP a positive integer), got '{text}'")
        low_exponent, high_exponent = int(low_power.group(1)), int(high_power.group(1))
        if low_exponent > high_exponent or int(step.strip() or "1") < 1:
            raise StreamherdError(f"{what}: the range '{text}' is empty; put the low end first "
                                  f"and a step of at least 1")
        return log_grid(low_exponent, high_exponent, int(step.strip() or "1"))
    values = tuple(parse_number(v, what) for v in text.split(",") if v.strip())
    if not values:
        raise StreamherdError(f"{what}: no values given")
    return values


def parse_grids(algos, grid_options):
    """One Grid per algorithm: its tuned hyperparameter with the --grid values for that name,
    else the default values."""
    tunable = adapter.tunable()
    values_of = {name: h.grid for name, h in tunable.items()}   # the declared default grids
    for option in grid_options or []:
        name, sep, text = option.partition("=")
        name = name.strip()
        if not sep or name not in tunable:
            raise StreamherdError(f"--grid '{option}': write NAME=VALUES with NAME one of "
                                  f"{', '.join(tunable)}, e.g. C=2^-4..2^4")
        values_of[name] = parse_values(text, f"--grid {name}")
    grids = []
    for algo in algos:
        hyperparameter = adapter.tuned_hyperparameter(algo)
        values = values_of[hyperparameter] if hyperparameter else (None,)
        try:
            adapter.validate(algo, hyperparameter, values)
        except StreamherdError as e:
            raise StreamherdError(f"--grid {hyperparameter}: {e}") from None
        grids.append(Grid(algo, hyperparameter, tuple(values)))
    return tuple(grids)


def parse_algos(text):
    algos = []
    for name in (n.strip() for n in text.split(",")):
        if name:
            algo = adapter.canonical_algo(name)
            if algo in algos:
                raise StreamherdError(f"--algos names {algo} twice")
            algos.append(algo)
    if not algos:
        raise StreamherdError("--algos: name at least one algorithm")
    return algos


def parse_noise(text):
    levels = parse_values(text, "--noise")
    for level in levels:
        if not 0.0 <= level < 1.0:
            raise StreamherdError(f"--noise {level:g}: a noise rate is a probability in [0, 1)")
    if len(set(levels)) != len(levels):
        raise StreamherdError(f"--noise '{text}' repeats a level")
    return levels


def check_settings(folds, max_passes, validation, max_train, processes, bits):
    if not 1 <= bits <= LOAD_BITS:
        raise StreamherdError(f"--bits {bits} is out of range; use 1 to {LOAD_BITS}")
    if folds < 2:
        raise StreamherdError(f"--folds {folds}: cross-validation needs at least 2 folds")
    if max_passes < 1:
        raise StreamherdError(f"--max-passes {max_passes}: make at least 1 pass")
    if not 0.0 < validation < 1.0:
        raise StreamherdError(f"--validation {validation:g}: the held-out fraction must be "
                              f"strictly between 0 and 1")
    if max_train is not None and max_train < 2:
        raise StreamherdError(f"--max-train {max_train}: keep at least 2 training examples")
    if processes < 1:
        raise StreamherdError(f"-j {processes}: run at least 1 process")


def prepare_out(folder):
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise StreamherdError(f"--out {folder} is a file; name a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise StreamherdError(f"--out {folder}: cannot create the folder ({e.strerror})") from None
    if not os.access(folder, os.W_OK):
        raise StreamherdError(f"--out {folder} is not writable")


def run_experiment(datasets, algos=DEFAULT_ALGOS, grid=None, noise=DEFAULT_NOISE, folds=10,
                   max_passes=10, validation=0.2, max_train=None, all_pairs=False,
                   multiclass="joint", seed=0,
                   processes=1, out="experiment", bits=DEFAULT_BITS_CAP, normalize="l2",
                   fmt="auto", curve_task=None, scatter=None, plots=True, plot_format="png",
                   quiet=False, argv=None, cluster=Cluster()):
    started = time.perf_counter()
    if not datasets:
        raise StreamherdError("name at least one dataset: FILE (split into --folds) or TRAIN,TEST")
    if normalize not in NORMALIZATIONS:
        raise StreamherdError(f"--normalize {normalize}: use one of {', '.join(NORMALIZATIONS)}")
    if plot_format not in PLOT_FORMATS:
        raise StreamherdError(f"--plot-format {plot_format}: use one of {', '.join(PLOT_FORMATS)}")
    check_settings(folds, max_passes, validation, max_train, processes, bits)
    cluster.check(processes)
    algo_list = parse_algos(algos)
    adapter.check_multiclass(multiclass, algo_list)
    settings = Settings(parse_grids(algo_list, grid), parse_noise(noise), folds, max_passes,
                        validation, max_train, seed)
    scatter_pair = _scatter_pair(scatter, algo_list)
    prepare_out(out)
    load_options = {"fmt": fmt, "bits_cap": bits, "normalize": normalize}
    loaded = load_datasets(datasets, **load_options)
    tasks = [task for dataset in loaded.values()
             for task in tasks_of(dataset, all_pairs, multiclass)]
    _check_full_covariance(loaded, tasks, algo_list)
    curve_task = _curve_task(curve_task, tasks)
    jobs = make_jobs(loaded, tasks, settings)
    with client_of(cluster) as client, _progress_bar(len(jobs), quiet) as advance:
        if client:
            results = run_on_client(client, Source.of(datasets, load_options, loaded), jobs,
                                    settings, advance)
        else:
            results = run_grid(loaded, datasets, load_options, jobs, settings, processes,
                               advance)
    where = cluster.describe() if cluster else f"with -j {processes}"
    seconds = time.perf_counter() - started
    summary = (f"{len(tasks)} tasks from {len(loaded)} datasets; {len(algo_list)} algorithms; "
               f"noise {', '.join(f'{n:g}' for n in settings.noise)}; {folds} folds for datasets "
               f"without a test file; up to {max_passes} passes; multiclass {multiclass}; "
               f"validation fraction "
               f"{validation:g}; " + (f"at most {max_train} training examples per run; "
                                      if max_train else "")
               + f"seed {seed}. {len(results)} runs "
               f"({sum(r.row['status'] != 'ok' for r in results)} diverged) in {seconds:.0f} s "
               f"wall time {where}.")
    command = "streamherd experiment " + " ".join(shlex.quote(a) for a in (argv or []))
    _write_outputs(results, tasks, algo_list, settings, out, plots, plot_format, curve_task,
                   scatter_pair, quiet, summary, command)
    return results, seconds


def _write_outputs(results, tasks, algo_list, settings, out, plots, plot_format, curve_task,
                   scatter_pair, quiet, summary, command):
    """The CSVs, the tables (terminal and report.md), the claims and the plots."""
    from rich.console import Console

    report.write_runs_csv(os.path.join(out, "runs.csv"), results)
    report.write_validation_csv(os.path.join(out, "validation.csv"), results)
    levels = report.tournament(results, algo_list, settings.noise)
    tables = [report.rank_table(levels, algo_list)]
    tables += [report.win_table(level, algo_list) for level in levels]
    tables.append(report.choice_table(results, settings.grids, settings.noise))
    checks = report.claim_checks(levels, algo_list)
    if not quiet:
        report.print_tables(tables, checks, Console(file=sys.stdout, width=160))
    written = None
    if plots:
        written = make_plots(results, levels, tasks, algo_list, settings.noise, out, plot_format,
                             curve_task, scatter_pair)
        if written is None:
            print(f"streamherd: {MISSING}", file=sys.stderr)
    with replaced_on_success(os.path.join(out, "report.md"), what="report") as f:
        f.write(report.markdown_report(tables, checks, written or [], command, summary))
    if not quiet:
        print(f"{summary}\nwrote {out}/runs.csv, validation.csv, report.md"
              + (f" and {len(written)} plots" if written else ""), file=sys.stderr)


def _scatter_pair(scatter, algos):
    if scatter is None:
        if "nherd-p" in algos and "arow-p" in algos:
            return "nherd-p", "arow-p"
        return (algos[0], algos[1]) if len(algos) > 1 else None
    names = [n.strip() for n in scatter.split(",")]
    if len(names) != 2:
        raise StreamherdError(f"--scatter '{scatter}': name two algorithms, e.g. nherd-p,arow-p")
    pair = tuple(adapter.canonical_algo(n) for n in names)
    for name in pair:
        if name not in algos:
            raise StreamherdError(f"--scatter: {name} is not in --algos")
    return pair


def _curve_task(name, tasks):
    if name is None:
        return tasks[0].name
    if name not in {t.name for t in tasks}:
        shown = ", ".join(t.name for t in tasks[:8]) + (", ..." if len(tasks) > 8 else "")
        raise StreamherdError(f"--curve-task {name} is not a task of this experiment; "
                              f"tasks are: {shown}")
    return name


def _check_full_covariance(datasets, tasks, algos):
    """A full-covariance learner keeps a matrix over all its slots (K class blocks of 2^b for a
    multiclass task): refuse, before the grid starts, a task whose matrix would be too big."""
    full = [a for a in algos if adapter.needs_full_covariance(a)]
    if not full:
        return
    for task in tasks:
        dataset = datasets[task.dataset]
        blocks = task.problem.blocks
        if blocks << dataset.bits <= 1 << FULL_COVARIANCE_MAX_BITS:
            continue
        if blocks == 1:
            raise StreamherdError(
                f"{dataset.paths[0]}: its features need {dataset.bits} bits (2^{dataset.bits} "
                f"slots), too many for {full[0]}'s full covariance (at most "
                f"{FULL_COVARIANCE_MAX_BITS} bits); drop that dataset or use the diagonal variant")
        raise StreamherdError(
            f"{dataset.paths[0]}: its {blocks} classes of 2^{dataset.bits} slots are too "
            f"many for {full[0]}'s joint multiclass full covariance (at most "
            f"2^{FULL_COVARIANCE_MAX_BITS} slots in all); drop that dataset, use the diagonal "
            f"variant, or --all-pairs")


@contextlib.contextmanager
def _progress_bar(total, quiet):
    """A rich progress bar over runs on stderr (nothing with --quiet); yields the callback."""
    if quiet:
        yield None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    bar = Progress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), TextColumn("{task.description}"),
                   console=Console(file=sys.stderr), transient=False)
    task = bar.add_task("", total=total)
    bar.start()

    def advance(result):
        job = result.job
        bar.update(task, advance=1, description=f"{job.task.name} {job.algo} noise {job.noise:g}")
    try:
        yield advance
    finally:
        bar.stop()
