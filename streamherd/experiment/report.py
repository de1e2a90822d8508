"""What an experiment writes: the tidy CSVs, the tournament tables (terminal and markdown), and
the check of the seed papers' claims.

Tables are built once as plain rows of strings and rendered twice: with rich on the terminal
and as markdown in ``report.md``.
"""
import csv
from dataclasses import dataclass

import numpy as np

from streamherd.experiment import stats
from streamherd.outputs import replaced_on_success

CSV_FIELDS = ("dataset", "task", "kind", "algo", "noise", "fold", "hyperparameter", "value",
              "passes", "validation_error", "test_error", "train_examples", "test_examples",
              "updates", "status", "seconds")
VALIDATION_FIELDS = ("task", "algo", "noise", "fold", "hyperparameter", "value", "passes",
                     "validation_error")


@dataclass
class NoiseLevel:
    """The tournament at one noise level: ``errors[t, a]`` is the test error of algorithm a on
    task t (the mean over folds; NaN if a run diverged), ``correct[t][a]`` its per-example
    correctness over the task's test examples (all folds, in fold order)."""

    noise: float
    tasks: list
    errors: np.ndarray
    correct: list


@dataclass
class Table:
    title: str
    header: list
    rows: list
    note: str = ""


def write_runs_csv(path, results):
    with replaced_on_success(path, what="runs") as f:
        writer = csv.DictWriter(f, CSV_FIELDS)
        writer.writeheader()
        for result in results:
            writer.writerow({k: _csv_value(result.row[k]) for k in CSV_FIELDS})


def write_validation_csv(path, results):
    """Every grid point of every run: the validation error after each number of passes."""
    with replaced_on_success(path, what="validation errors") as f:
        writer = csv.writer(f)
        writer.writerow(VALIDATION_FIELDS)
        for result in results:
            job = result.job
            for value, passes, error in result.validation:
                writer.writerow([job.task.name, job.algo, _csv_value(job.noise), job.fold,
                                 result.row["hyperparameter"], _csv_value(value), passes,
                                 _csv_value(error)])


def _csv_value(value):
    if isinstance(value, float):
        return "" if np.isnan(value) else repr(float(value))
    return "" if value is None else value


def tournament(results, algos, noise_levels):
    """One NoiseLevel per noise rate, over every task that has runs."""
    by_key = {}
    task_names = []
    for result in results:
        job = result.job
        if job.task.name not in task_names:
            task_names.append(job.task.name)
        by_key.setdefault((job.task.name, job.noise, job.algo), []).append(result)
    levels = []
    for noise in noise_levels:
        errors = np.full((len(task_names), len(algos)), np.nan)
        correct = []
        for t, task in enumerate(task_names):
            per_algo = []
            for a, algo in enumerate(algos):
                runs = sorted(by_key.get((task, noise, algo), []), key=lambda r: r.job.fold)
                usable = runs and all(r.correct is not None for r in runs)
                if usable:
                    errors[t, a] = np.mean([r.row["test_error"] for r in runs])
                per_algo.append(np.concatenate([r.correct for r in runs]) if usable else None)
            correct.append(per_algo)
        levels.append(NoiseLevel(noise, task_names, errors, correct))
    return levels


def rank_table(levels, algos):
    """AROW Table 1: mean rank (and mean test error) of each algorithm at each noise level."""
    ranks = [stats.mean_ranks(level.errors) for level in levels]
    mean_errors = [np.nanmean(level.errors, axis=0) for level in levels]
    rows = [[algo] + [f"{r[a]:.2f}" for r in ranks] + [f"{e[a]:.4f}" for e in mean_errors]
            for a, algo in enumerate(algos)]
    header = (["algorithm"] + [f"rank, noise {level.noise:g}" for level in levels]
              + [f"error, noise {level.noise:g}" for level in levels])
    tasks = len(levels[0].tasks) if levels else 0
    return Table("Mean rank (1 = best) and mean test error", header, rows,
                 f"over {tasks} tasks; ranks as in Crammer, Kulesza & Dredze (2009), Table 1")


def win_table(level, algos):
    """NHERD Fig. 4: W[row, column], with McNemar's count of significant wins in brackets."""
    wins = stats.win_fractions(level.errors)
    better, tested = stats.mcnemar_tally(level.correct)
    rows = []
    for a, algo in enumerate(algos):
        rows.append([algo] + ["—" if a == b else f"{wins[a, b]:.2f} ({better[a, b]})"
                             for b in range(len(algos))])
    tested_tasks = int(tested.max()) if tested.size else 0
    return Table(f"Win fraction, noise {level.noise:g}", ["row beats column"] + algos,
                 rows,
                 f"fraction of the {len(level.tasks)} tasks where the row algorithm has a lower "
                 f"test error than the column one; in brackets, on how many tasks the row "
                 f"algorithm is better by McNemar's exact test at p < {stats.SIGNIFICANCE} "
                 f"(tested on {tested_tasks} tasks)")


def choice_table(results, grids, noise_levels):
    """How often the chosen value is an end of the grid (then the grid may be too narrow), and
    the mean number of passes chosen."""
    rows = []
    for grid in grids:
        cells = []
        for noise in noise_levels:
            chosen = [r.row for r in results
                      if r.job.algo == grid.algo and r.job.noise == noise and r.row["passes"]]
            passes = np.mean([row["passes"] for row in chosen]) if chosen else np.nan
            if grid.hyperparameter and len(grid.values) > 1 and chosen:
                low = np.mean([row["value"] == min(grid.values) for row in chosen])
                high = np.mean([row["value"] == max(grid.values) for row in chosen])
                cells.append(f"{low:.0%} / {high:.0%} / {passes:.1f}")
            else:
                cells.append(f"— / {passes:.1f}")
        rows.append([grid.algo, grid.hyperparameter or "—"] + cells)
    header = ["algorithm", "tuned"] + [f"noise {n:g}" for n in noise_levels]
    return Table("Chosen configurations: at the low end / at the high end of the grid / "
                 "mean passes", header, rows,
                 "share of runs whose chosen value is the grid's smallest or largest; "
                 "many at an end suggest widening --grid")


# The seed papers' claims "winner beats loser"; a claim is checked when both algorithms ran.
CLAIMS = (
    ("NHERD_P beats AROW_P (Crammer & Lee 2010, Fig. 4 and 5)", "nherd-p", "arow-p"),
    ("NHERD_D beats AROW_D (Crammer & Lee 2010, Fig. 4)", "nherd-d", "arow-d"),
    ("Project beats Exact, for NHERD (Crammer & Lee 2010, Fig. 4)", "nherd-p", "nherd-e"),
    ("Exact beats Drop, for NHERD (Crammer & Lee 2010, Fig. 4)", "nherd-e", "nherd-d"),
    ("Project beats Drop, for NHERD (Crammer & Lee 2010, Fig. 4)", "nherd-p", "nherd-d"),
    ("Project beats Drop, for AROW (Crammer & Lee 2010, Fig. 4)", "arow-p", "arow-d"),
    ("AROW beats CW (Crammer, Kulesza & Dredze 2009, Table 1 and Fig. 3)", "arow-p", "cw"),
    ("AROW beats PA (Crammer, Kulesza & Dredze 2009, Table 1)", "arow-p", "pa2"),
)
LEAD_CLAIMS = (
    ("NHERD_P's lead over AROW_P grows with noise (Crammer & Lee 2010, Fig. 5)",
     "nherd-p", "arow-p"),
    ("AROW's lead over CW grows with noise (Crammer, Kulesza & Dredze 2009, Table 1)",
     "arow-p", "cw"),
)


def claim_checks(levels, algos):
    """Each claim whose algorithms both ran: the evidence per noise level and the verdict.

    "a beats b" at a noise level: a wins on more tasks than b (W[a, b] > W[b, a]). A lead grows
    with noise when the net win fraction W[a, b] - W[b, a] does not fall from one noise level
    to the next and is higher at the highest level than at the lowest.
    """
    index = {algo: i for i, algo in enumerate(algos)}
    checks = []
    for description, a, b in CLAIMS:
        if a not in index or b not in index:
            continue
        i, j = index[a], index[b]
        evidence, held = [], []
        for level in levels:
            wins = stats.win_fractions(level.errors)
            held.append(wins[i, j] > wins[j, i])
            evidence.append(f"noise {level.noise:g}: {a} {wins[i, j]:.2f} vs {b} "
                            f"{wins[j, i]:.2f}" + (" (holds)" if held[-1] else " (does not hold)"))
        checks.append((description, evidence, _verdict(held)))
    for description, a, b in LEAD_CLAIMS:
        if a not in index or b not in index or len(levels) < 2:
            continue
        i, j = index[a], index[b]
        leads = [w[i, j] - w[j, i]
                 for w in (stats.win_fractions(level.errors) for level in levels)]
        grows = all(y >= x for x, y in zip(leads, leads[1:])) and leads[-1] > leads[0]
        evidence = [f"net win fraction {a} over {b}: " + ", ".join(
            f"{lead:+.2f} at noise {level.noise:g}"
            for lead, level in zip(leads, levels))]
        checks.append((description, evidence, "agrees" if grows else "does not agree"))
    return checks


def _verdict(held):
    if all(held):
        return "agrees"
    if any(held):
        return "agrees at some noise levels only"
    return "does not agree"


def print_tables(tables, checks, console):
    from rich.table import Table as RichTable

    for table in tables:
        rich_table = RichTable(title=table.title, caption=table.note, caption_justify="left")
        for i, column in enumerate(table.header):
            rich_table.add_column(column, justify="left" if i == 0 else "right")
        for row in table.rows:
            rich_table.add_row(*row)
        console.print(rich_table)
    for description, evidence, verdict in checks:
        console.print(f"[bold]{description}[/bold]: {verdict}", highlight=False)
        for line in evidence:
            console.print(f"  {line}", highlight=False)


def markdown_table(table):
    lines = [f"**{table.title}**", "", "| " + " | ".join(table.header) + " |",
             "|" + "|".join("---" for _ in table.header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines)


def markdown_report(tables, checks, plots, command, summary):
    """The report: the command, what ran, the tables, the claims and the plots (relative
    paths)."""
    parts = ["# Experiment results", "", "```", command, "```", "", summary, ""]
    for table in tables:
        parts += [markdown_table(table), ""]
    if checks:
        parts += ["## The papers' claims", ""]
        for description, evidence, verdict in checks:
            parts.append(f"- **{description}**: {verdict}.")
            parts += [f"  - {line}" for line in evidence]
        parts.append("")
    if plots:
        parts += ["## Plots", ""]
        parts += [f"![{caption}]({path})" + "\n" for caption, path in plots]
    return "\n".join(parts)
