"""Tasks: what a stream of labelled examples is learned for, shared by train, predict and the
experiment: one object per task (binary.py, multiclass.py, regression.py, on base.py). This
module picks the task: from the command line's flags (``choose``, then ``Choice.new_task``), from
a saved model (``of_model``), or from the first chunk of a stream (``detect``).
"""
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.labels import BinaryLabels, ClassLabels, class_name_rows
from streamherd.tasks.base import LABEL, PROBA, RAW, SCORES, Task
from streamherd.tasks.binary import BinaryTask
from streamherd.tasks.multiclass import MODES, MulticlassTask
from streamherd.tasks.regression import RegressionTask

KINDS = ("binary", "multiclass", "regression")
MULTICLASS_MODES = tuple(MODES)
LOSSES = ("hinge", "squared")

__all__ = ["KINDS", "MULTICLASS_MODES", "LOSSES", "LABEL", "RAW", "PROBA", "SCORES", "Task",
           "BinaryTask", "MulticlassTask", "RegressionTask", "Choice", "choose", "of_model",
           "check_meta", "detect"]


@dataclass(frozen=True)
class Choice:
    """The task the flags choose: ``kind`` "multiclass" (``--multiclass`` MODE, ``--classes``
    SPEC), "regression" (``--loss squared``), or None: chosen from the first chunk (detect)."""

    kind: "str | None" = None
    multiclass: "str | None" = None
    classes: "str | None" = None

    def new_task(self, skip_bad=False):
        """The task of a new model. Until its first chunk decides, a stream whose task the labels
        choose is learned as multiclass with no class yet, whose learner holds nothing."""
        if self.kind == "regression":
            return RegressionTask(skip_bad)
        labels = ClassLabels.parse(self.classes) if self.classes is not None else ClassLabels()
        return MulticlassTask(labels, self.multiclass or "joint", skip_bad)

    def check_continues(self, meta, path):
        """Refuse, in one line, flags that choose another task than the saved model's (``-i``);
        a model's class set is its own."""
        saved, mode = meta.get("task", "binary"), meta.get("multiclass")
        if (self.kind is not None and self.kind != saved) or self.classes is not None or \
                (self.multiclass is not None and self.multiclass != mode):
            raise StreamherdError(
                f"{path} is a {saved}{' ' + mode if mode else ''} model; drop --multiclass, "
                f"--classes and --loss to continue training it")


def choose(loss=None, multiclass=None, classes=None):
    """The Choice of ``--loss``, ``--multiclass`` and ``--classes``, each checked."""
    if loss is not None and loss not in LOSSES:
        raise StreamherdError(f"unknown --loss '{loss}'; use hinge (classification) or squared "
                              f"(regression)")
    if multiclass is not None and multiclass not in MULTICLASS_MODES:
        raise StreamherdError(f"unknown --multiclass '{multiclass}'; use joint, ova or mira")
    if loss == "squared":
        if multiclass is not None or classes is not None:
            raise StreamherdError("--loss squared is regression (real labels); drop --multiclass "
                                  "and --classes")
        return Choice("regression")
    if multiclass is not None or classes is not None:
        return Choice("multiclass", multiclass, classes)
    return Choice()


def check_meta(saved, algo):
    """The task of an ``algo`` model, its keys in the meta checked (``saved``: errors.SavedMeta)."""
    kind = saved.get("task", lambda v: v in KINDS, f"one of {', '.join(KINDS)}",
                     required=False, default="binary")
    if kind != "binary" and saved.meta["format_version"] == 1:
        raise saved.damaged(f"it is a format-1 model, which is binary, but its meta says task "
                            f"{kind!r}")
    {task.kind: task for task in (BinaryTask, MulticlassTask, RegressionTask)}[kind].check_meta(
        saved, algo)
    return of_model(saved.meta)


def of_model(meta, skip_bad=False):
    """The task of a saved model (a format-1 model is binary), with its labels or classes."""
    kind = meta.get("task", "binary")
    if kind == "multiclass":
        return MulticlassTask(ClassLabels.from_meta(meta), meta["multiclass"], skip_bad)
    if kind == "regression":
        return RegressionTask(skip_bad)
    return BinaryTask(BinaryLabels.from_meta(meta), skip_bad)


# The first chunk's distinct whole-number labels read as classes: up to FEW_CLASSES, or up to
# MAX_CLASSES with ROWS_PER_CLASS rows each on average; as values when they are mostly distinct
# (fewer than two rows each) or more than MAX_CLASSES: counts, years, prices.
MAX_CLASSES = 1000
FEW_CLASSES = 20
ROWS_PER_CLASS = 5


def _distinct(values):
    """The distinct values, sorted: np.unique's own steps, without its first call's import of
    numpy.ma (to look for masked arrays), a cost of every run's start-up otherwise."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), np.bool_)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered[first]


def detect(chunk, skip_bad=False):
    """Without --multiclass, --classes or --loss, the first chunk decides, and the preamble says
    what it chose. Class names (labels that are not numbers; a damaged number such as nan or
    1e400 is no class name, see labels.looks_like_number) as many as the numeric labels make a
    multiclass stream, joint. Otherwise the numeric labels decide (the few class names among
    them are then bad lines, reported or skipped with --skip-bad, as the same typo later is):
    - a binary labelling (at most one value > 0 and one <= 0, or a few whole numbers with a
      negative one: a -1 marks a +1/-1 file): binary;
    - a number with a fraction, or whole numbers mostly distinct: values, regression (as VW's
      default squared loss);
    - a few whole numbers (0..9, 1..3, 1 and 7): classes, multiclass, joint;
    - more whole numbers than classes usually are but repeated as values seldom are: neither,
      a one-line error naming the flags that choose."""
    names = int(class_name_rows(chunk).sum())
    labels = _distinct(chunk.labels[~np.isnan(chunk.labels)])
    numeric_rows = int((~np.isnan(chunk.labels)).sum())
    if names and names >= numeric_rows:
        return MulticlassTask(skip_bad=skip_bad)
    whole = bool(np.all(labels == np.floor(labels)))
    few = whole and labels.size <= FEW_CLASSES
    if ((labels > 0).sum() <= 1 and (labels <= 0).sum() <= 1) or \
            (few and labels.size > 0 and labels.min() < 0):
        return BinaryTask(skip_bad=skip_bad)
    if few:
        return MulticlassTask(skip_bad=skip_bad)
    if not whole or labels.size > MAX_CLASSES or 2 * labels.size > numeric_rows:
        return RegressionTask(skip_bad)
    if labels.size <= numeric_rows / ROWS_PER_CLASS:
        return MulticlassTask(skip_bad=skip_bad)
    raise StreamherdError(
        f"{chunk.source}: the labels of the first {numeric_rows:,} examples are {labels.size} "
        f"whole numbers, too many to be classes and too repeated to be values; pass --loss "
        f"squared (values) or --multiclass joint / --classes (classes)")
