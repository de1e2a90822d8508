"""Regenerate docs/results.md: the seed papers' tournament (issue 5) over every binary task of
../shared/data and the all-pairs tasks of USPS and MNIST-5k.

    python docs/make_results.py [-j 2]

Runs ``streamherd experiment`` once (from the repository root, so the command printed in the
page is the one to type), times it, keeps its plots and runs.csv under docs/results/, and writes
docs/results.md around the report the command wrote. Nothing in the page is typed by hand but
the description of the setup below.
"""
import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = "../shared/data"
OUT = "docs/results"
# Binary datasets: a TRAIN,TEST pair where the data has one, else one file (10 folds).
BINARY = [
    "rcv1_small.train.vw.gz,rcv1_small.test.vw.gz",
    "amazon_books.vw.gz", "amazon_dvd.vw.gz", "amazon_electronics.vw.gz", "amazon_kitchen.vw.gz",
    "news20_comp_ibm_vs_mac.train.svm.gz,news20_comp_ibm_vs_mac.test.svm.gz",
    "news20_sci_elec_vs_med.train.svm.gz,news20_sci_elec_vs_med.test.svm.gz",
    "news20_talk_guns_vs_mideast.train.svm.gz,news20_talk_guns_vs_mideast.test.svm.gz",
    "sms_spam.vw",
    "spambase.train.svm,spambase.test.svm",
    "w8a.svm.gz",
    "a9a.svm.gz,a9a.t.svm.gz",
    "agaricus.train.svm,agaricus.test.svm",
]
# Multiclass OCR data, as all pairs of digits (NHERD and AROW papers): 45 tasks each.
ALL_PAIRS = ["usps.train.svm.gz,usps.test.svm.gz", "mnist5k.svm.gz"]
SETTINGS = ["--all-pairs", "--algos", "nherd-p,nherd-e,nherd-d,arow-p,arow-d,cw,pa2,perceptron",
            "--noise", "0,0.1,0.3", "--folds", "10", "--max-passes", "10", "--validation", "0.2",
            "--max-train", "2000", "--seed", "0", "--curve-task", "mnist5k:3v5",
            "--scatter", "nherd-p,arow-p"]

SETUP = """\
## Setup, and how it differs from the papers

- **Tasks.** {tasks}. The NHERD paper had 155 tasks (36 binary text tasks, 100 OCR tasks: the
  45 pairs of USPS and of MNIST and 10 one-vs-rest MNIST tasks, 9 multi-category text sets,
  10 phoneme pairs); the AROW paper had 136. Our text tasks are other binary problems on related
  corpora (the 20 Newsgroups and RCV1 files here, Amazon *sentiment*, SMS and Spambase spam) plus
  three LIBSVM sets (w8a, a9a, agaricus); MNIST is its 5000-image subset.
- **Splits.** A dataset with a train/test pair (as the papers' OCR sets) is scored on its test
  file; a single file (Amazon, SMS spam, w8a, MNIST-5k) by stratified 10-fold cross-validation
  (as the papers' text sets), its test error the mean over the folds. McNemar's test pools the
  folds: each example is tested once.
- **Training size.** At most 2000 training examples per run, a random stratified subset, as the
  AROW paper used 2000 instances per dataset; this caps a9a, w8a and the larger USPS pairs.
- **Scaling.** Each example's features are scaled to unit L2 norm, the bias feature kept at 1
  (the data's README advises it for these learners; the papers do not say how they scaled).
- **Hyperparameters and passes.** As in both papers, the hyperparameter (C for NHERD and PA-II,
  r for AROW, eta for CW) and the number of passes (up to 10, the AROW paper's limit; the NHERD
  paper allowed 20) are chosen together on one random split: 20% of the (noisy) training data
  held out, every pass in a new random order. The chosen configuration is then trained on all the
  training data and scored on the test data once. The grid is 2^-8, 2^-6, ..., 2^8 (eta: 0.55 to
  0.95 by 0.05); ties go to fewer passes, then to the value nearest the learner's default.
- **Noise.** Each training label is flipped with probability 0, 0.1 or 0.3 (test labels stay
  clean); the flipped examples at 0.1 are among those flipped at 0.3.
- **Algorithms.** NHERD with the three diagonal forms (Project, Exact, Drop), AROW Project and
  Drop, CW (the diagonal variance version), PA-II and the perceptron. The full-covariance versions
  are not in this grid (the text tasks have up to 2^18 hashed features).
"""


def verdict_summary(claims):
    """One line per verdict, listing the claims (from the report's "- **claim**: verdict.")."""
    by_verdict = {}
    for claim, verdict in re.findall(r"^- \*\*(.+?) \(.*?\)\*\*: (.+?)\.$", claims, re.M):
        by_verdict.setdefault(verdict, []).append(claim)
    return "\n".join(f"- *{verdict[0].upper() + verdict[1:]}*: {'; '.join(names)}."
                     for verdict, names in by_verdict.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", default="2")
    parser.add_argument("--note", default="", help="A sentence about the machine while it ran.")
    args = parser.parse_args()
    datasets = [",".join(f"{DATA}/{f}" for f in spec.split(",")) for spec in BINARY + ALL_PAIRS]
    command = ["streamherd", "experiment", *datasets, *SETTINGS, "-j", args.jobs, "--out", OUT]
    load_before = os.getloadavg()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", *command], cwd=REPO, check=True)
    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = REPO / OUT
    (out / "validation.csv").unlink()   # every grid point of every run: too large to keep
    report = (out / "report.md").read_text()
    (out / "report.md").unlink()
    # The report: title, command block, summary, tables, "## The papers' claims", "## Plots".
    after_command = report.split("```", 2)[2].strip()
    tables, _, rest = after_command.partition("## The papers' claims")
    claims, _, plots = rest.partition("## Plots")
    summary_line, _, tables = tables.partition("\n")
    plots = plots.replace("](", f"]({Path(OUT).name}/")
    cpu = usage.ru_utime + usage.ru_stime
    timing = (f"**Time.** The whole grid took **{wall / 60:.1f} minutes** of wall time with "
              f"`-j {args.jobs}` on this {os.cpu_count()}-core machine ({cpu:.0f} s of CPU time "
              f"in all processes; load average {load_before[0]:.2f} before the run, "
              f"{load_after[0]:.2f} at its end). {args.note}").rstrip()
    page = "\n".join([
        "# Results: the seed papers' tournament under label noise",
        "",
        "Generated by `python docs/make_results.py` (do not edit by hand), which ran, from the "
        "repository root:",
        "",
        "```",
        " ".join(shlex.quote(part) for part in command),
        "```",
        "",
        summary_line,
        "",
        timing,
        "",
        "## Findings: the papers' claims against our numbers",
        "",
        "A claim \"a beats b\" holds at a noise level when a has the lower test error on more "
        "tasks than b (the win fractions below); checked automatically from the runs.",
        "",
        verdict_summary(claims),
        claims.rstrip(),
        "",
        SETUP.format(tasks=summary_line.split(";")[0].rstrip(".")),
        f"The runs, one row each, are in [`{Path(OUT).name}/runs.csv`]({Path(OUT).name}/runs.csv).",
        "",
        "## Tables",
        "",
        tables.strip(),
        "",
        "## Plots",
        plots.rstrip(),
        "",
    ])
    path = REPO / "docs" / "results.md"
    path.write_text(page + _kept_sections(path))
    print(f"wrote docs/results.md ({wall:.0f} s)")


if __name__ == "__main__":
    main()


def _kept_sections(path, names=("herding-table",)):
    """The sections other scripts generate into the page (between their begin and end
    markers, e.g. benchmarks/herding_table.py's), kept as they are."""
    import re

    old = path.read_text() if path.exists() else ""
    kept = [m.group(0) for name in names for m in
            re.finditer(rf"<!-- {name}: begin -->.*?<!-- {name}: end -->\n?", old, re.S)]
    return "".join("\n" + section for section in kept)
