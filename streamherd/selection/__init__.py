"""Model selection in the same pass: ``-C auto`` (``-r``, ``--eta``, ``-a``, ``--narow-b``
auto) and ``--algo auto``.

The words, each for one thing:

- a **Grid** is one learner's hyperparameter and the values tried (``--grid``, or its default);
- a **Search** is what auto chooses among: one Grid (``-C auto``), or one per learner
  (``--algo auto``: each learner of LEARNER_GRIDS that has a form for the task: binary and
  multiclass take every one, ``--multiclass mira`` the Passive-Aggressive family's, ``--loss
  squared`` those with a squared-loss form);
- a **Member** is one value of one Grid, learned by an ordinary learner of that value;
- a **Bank** is a Search's members learning together from every example, and the choice
  among them. A PackedBank (packed.py) runs binary learners whose family has a bank kernel in
  one loop for all members of a grid (its MemberGroups, one per thread); a TaskBank
  (task_bank.py) runs any other learner or task (--algo auto's learners of a multiclass or
  regression task too) by learning each member in turn over each chunk, through the task, and
  chooses on the task's loss alone.

Every member predicts each example before it learns from it, so each member's progressive loss
(its mistakes on examples it had not yet learned from) is an unbiased estimate of its error.
The bank chooses on the later half of the first pass (its most recent RECENT labeled rows at
most): the progressive loss of the whole stream favours the members that learn fast early over
those whose final model is best, while the later half still scores each member's recent models
on examples they had not seen. Among the members whose 0/1 loss there is within one standard
error of the lowest (indistinguishable on it; the error of a proportion, over the window's
effective size (sum w)^2 / sum w^2), it keeps the one of the highest AUC of its progressive
margins: a loss that uses every margin, not only its sign, and is blind to its scale (which
differs with C). benchmarks/README.md compares this rule with the others tried. Ties go to the
value nearest the learner's default (as a ratio), then to the smaller value.

With several passes and a holdout set, the holdout 0/1 loss of the pass decides instead (the
lowest; training keeps the best pass, as without auto); with several passes and no holdout, the
first pass's rows (the only ones not already learned from). The model written is an ordinary
model of the chosen value; its meta's "auto" records what was tried, each member's loss and
AUC.

While learning, the bank's own predictions (the progress table, -p) are those of the member of
the lowest progressive 0/1 loss on the examples before each chunk (cheap to keep; the AUC is
computed once, at the end): the progressive loss of the whole procedure, honestly. The
calibration (--proba's map) is each member's own, from its own progressive margins
(Bank.calibrate_members), so that the model written, and each --save-bank file, is the model
``train`` with that value alone writes, its map included.
"""
from streamherd.learners.packing import bank_entry_point
from streamherd.selection.bank import Bank
from streamherd.selection.packed import PackedBank
from streamherd.selection.search import (
    AUTO,
    LEARNER_GRIDS,
    Grid,
    Member,
    Search,
    default_grid,
    has_form,
    parse_grid,
    search_hyperparameter,
    search_learners,
)
from streamherd.selection.task_bank import TaskBank

__all__ = ["AUTO", "LEARNER_GRIDS", "Bank", "Grid", "Member", "PackedBank", "Search",
           "TaskBank", "bank_entry_point", "default_grid", "has_form", "new_bank", "parse_grid",
           "search_hyperparameter", "search_learners"]


def new_bank(task, search, dim, options):
    """The Bank a Search trains on ``task`` over ``dim`` slots, its members sharing ``options``
    (but the hyperparameter each grid varies): a PackedBank of binary learners with a bank
    kernel, else a TaskBank. A search of learners (--algo auto) keeps those that have a form
    for the task (Search.for_task), each at its defaults."""
    if search.of_learners:
        search, options = search.for_task(task.kind, getattr(task, "mode", None)), {}
    if task.kind == "binary" and all(bank_entry_point(grid.algo) is not None
                                     for grid in search.grids):
        return PackedBank(task, search, dim, options)
    return TaskBank(task, search, dim, options)
