"""Bank: the members of a Search learning together from every example, and the choice among
them (streamherd.selection). What the two ways of learning (PackedBank, TaskBank) share: each
member's losses, the window, the holdout, the choice, the members' calibrations, and what a
face asks of a learner."""
import math
from abc import ABC, abstractmethod

import numpy as np

from streamherd.learners.base import UnstableUpdate, check_memory
from streamherd.selection.scores import RECENT, RecentRows, Scores

# successive halving (Bank.race): every this many first-pass examples, the worse half of the
# members still learning stop. A choice on the later half of 2^14 rows tells apart 0/1 losses
# about 1.5 points apart at 30% error, and each later one reads more rows. The checkpoints are
# evenly spaced, not doubling as in successive halving's usual schedule: a bank's cost per row
# is its cache lines, whatever the members still learning, so the saving is in how soon one
# member is left, learning at one learner's speed (11 members: after 4 x 2^14 rows).
# benchmarks/README.md measures the choices against the whole bank's.
RACE_FROM = 1 << 14


class Bank(ABC):
    """The members of ``search`` (a Search), each a learner of ``task`` (``learners``, in the
    order of ``search.members``), and the choice among them.

    A face holds a bank where it holds a learner: ``options``, ``meta()`` and ``state()`` are
    the chosen member's (the methods below say what else a face asks).

    A subclass makes ``learners``, learns (``learn_chunk``, which passes each chunk's losses to
    ``_account``) and gives ``window_scores`` (the choice on the window's rows)."""

    def __init__(self, task, search):
        self.task = task
        self.search = search
        self.members = search.members
        count = len(self.members)
        self.learners = []
        self.alive = np.ones(count, np.bool_)
        self.failed_at = np.full(count, -1, np.int64)
        self.progressive = np.zeros(count)        # weighted losses, first pass
        self.progressive_weight = 0.0
        self.recent = RecentRows(RECENT, count)   # the first pass's latest learned rows
        self.calibrations = None                  # each member's (calibrate_members)
        self.holdout = np.zeros(count)            # this pass's held-out rows
        self.holdout_weight = 0.0
        self.pass_holdout = None                  # the last pass's holdout loss per member
        self.passes_done = 0
        self.values = tuple(m.value for m in self.members)
        self.defaults = tuple(m.hyperparameter.default for m in self.members)
        self.labels = search.labels()
        self._scored = (None, None)   # (the state of the bank, its Scores)
        self.race_from = RACE_FROM            # 0: every member learns to the end
        self.next_race = RACE_FROM
        self.rows_learned = 0                 # learned rows of the first pass
        self.dropped_at = np.full(count, -1, np.int64)   # the race's: rows learned then
        self.dropped_loss = np.full(count, np.nan)       # its loss on the choice's rows then

    @property
    def name(self):
        """The learner's name (a search of learners: "auto")."""
        return self.search.name

    # ------------------------------------------------------------ learning

    @abstractmethod
    def learn_chunk(self, targets, chunk, learn_member):
        """Every live member over one chunk of the task's ``targets``, where
        ``learn_member(task, learner, calibration or None)`` is how the face learns one learner
        over it, returning (updates, predictions) as the task's learn does; returns those the
        bank gives (the member leading on the chunks before). The last member failing is an
        UnstableUpdate."""

    def _account(self, y, importance, losses, window):
        """Each member's weighted ``losses`` (rows x members) on the chunk's learned rows (first
        pass only: and their ``window`` values, into the recent window) and on its held-out
        rows (importance < 0, passes.mark_held_out); the rows are labeled."""
        learned, held = np.maximum(importance, 0.0), np.maximum(-importance, 0.0)
        if self.passes_done == 0:
            self.progressive += learned @ losses
            self.progressive_weight += learned.sum()
            rows = learned > 0
            if rows.all():
                self.recent.add(y, learned, window)
            else:
                self.recent.add(y[rows], learned[rows], window[rows])
            self.rows_learned += int(rows.sum())
            self.race()
        if held.any():
            self.holdout += held @ losses
            self.holdout_weight += held.sum()

    def race_after(self, rows):
        """Start the race after ``rows`` learned rows (0: no member stops)."""
        self.race_from = self.next_race = rows

    def race(self):
        """Successive halving on the first pass: once ``rows_learned`` reaches the next
        checkpoint (every ``race_from`` rows: RACE_FROM), the worse half of the members
        still learning stop (the choice's own rule on the later half of the rows so far:
        window_scores' ranking), so that the bank costs about one learner's time on a long
        stream. Those kept learn on exactly as before; a member stopped keeps its place (its
        loss then, and when, in the summary), is never chosen and is not --save-bank'd."""
        if not self.race_from or self.rows_learned < self.next_race:
            return
        while self.next_race <= self.rows_learned:
            self.next_race += self.race_from
        live = int(self.alive.sum())
        if live < 2:
            return
        scores = self.window_scores(*self.recent.later_half(), self.alive)
        kept = -(-live // 2)
        for k in self.ranking_of(scores)[kept:live]:
            self.alive[k] = False
            self.dropped_at[k] = self.rows_learned
            self.dropped_loss[k] = scores.losses[k]

    def _every_member_failed(self, alive_before, what):
        """The UnstableUpdate of a chunk that made the last live members fail (those alive
        before it): at the last of their failures."""
        if self.search.of_learners:
            what = "the update of every learner failed for every value of its grid"
        else:
            what = f"the {self.name} update failed for every value of the grid: {what}"
        return UnstableUpdate(int(self.failed_at[alive_before].max()), what)

    def _fits(self, size, held=0):
        """Refuse, in one line, a bank of ``size`` bytes, ``held`` of them allocated already,
        larger than the available memory."""
        count = len(self.members)
        if self.search.of_learners:
            check_memory(size, f"{self.search.flag} auto's banks of {count} models need",
                         "use a smaller -b, or name one --algo and give its hyperparameter auto",
                         held)
        else:
            check_memory(size, f"{self.search.flag} auto's bank of {count} {self.name} models "
                               f"needs", "use a smaller -b or fewer --grid values", held)

    def calibrate_members(self, new_calibration):
        """Each member learns a calibration (``new_calibration()``'s) from its own progressive
        predictions on the first pass."""
        self.calibrations = [new_calibration() for _ in self.members]

    def member_calibration(self, k):
        """Member k's calibration (None: none learned)."""
        return None if self.calibrations is None else self.calibrations[k]

    def end_pass(self):
        """A pass ended: its holdout loss per member becomes what the bank chooses on (when it
        had held-out examples). Returns the chosen member's (NaN: none held out)."""
        self.passes_done += 1
        if self.holdout_weight > 0:
            self.pass_holdout = self.holdout / self.holdout_weight
        self.holdout, self.holdout_weight = np.zeros(len(self.members)), 0.0
        return float(self.pass_holdout[self.chosen()]) if self.pass_holdout is not None \
            else math.nan

    # ------------------------------------------------------------ the choice

    def scores(self):
        """The final choice's Scores, computed once per state of the bank (the AUCs sort the
        window): the last pass's holdout losses, else the window's."""
        key = (self.progressive_weight, self.passes_done, tuple(self.alive))
        if self._scored[0] != key:
            if self.pass_holdout is not None:
                scores = Scores(np.where(self.alive, self.pass_holdout, np.inf),
                                np.full(len(self.members), math.nan), 0.0, "holdout")
            else:
                scores = self.window_scores(*self.recent.later_half(), self.alive)
            self._scored = (key, scores)
        return self._scored[1]

    @abstractmethod
    def window_scores(self, y, weight, window, alive):
        """The Scores of the window's rows (``window``: each member's values there)."""

    def leading_scores(self):
        """The lowest loss on the examples so far (the last pass's holdout, else the first
        pass's progressive): the cheap choice the learning follows."""
        if self.pass_holdout is not None:
            return self.scores()
        losses = self.progressive / self.progressive_weight if self.progressive_weight > 0 \
            else np.zeros(len(self.members))
        return Scores(np.where(self.alive, losses, np.inf), np.full(len(self.members), math.nan))

    def ranking_of(self, scores):
        """Member indices, best first, by ``scores`` (those of members not learning last)."""
        return scores.ranking(self.values, self.defaults)

    def ranking(self):
        return self.ranking_of(self.scores())

    def chosen(self):
        return int(self.ranking()[0])

    def leader(self):
        """The member whose predictions the bank gives while learning: the one the race left
        learning alone, else the best on the examples so far."""
        live = np.flatnonzero(self.alive)
        if len(live) == 1:
            return int(live[0])
        return int(self.ranking_of(self.leading_scores())[0])

    # ------------------------------------------------------------ what a face asks

    @property
    def options(self):
        return self.learners[self.chosen()].options

    def meta(self):
        return self.learners[self.chosen()].meta()

    def state(self):
        return self.learners[self.chosen()].state()

    @property
    def preamble_name(self):
        return self.name

    def settings(self):
        """The preamble's learner settings."""
        if self.search.of_learners:
            return "banks of " + ", ".join(
                f"{grid.algo} ({grid.hyperparameter.flag} over {len(grid.values)} values)"
                for grid in self.search.grids)
        grid = self.search.grids[0]
        others = ", ".join(f"{k} = {v:g}" for k, v in self.learners[0].options.items()
                           if k != grid.name)
        return f"{grid.describe()}{', ' + others if others else ''}"

    def model_meta(self, k=None):
        """The model meta's "auto" (what was tried and why the member was chosen; member
        ``k``: a --save-bank file's) and "algo" (the chosen member's)."""
        scores, ranking = self.scores(), self.ranking()

        def number(x):
            return float(x) if math.isfinite(x) else None
        stopped = self.dropped_at >= 0
        losses = np.where(stopped, self.dropped_loss, scores.losses)
        return {"algo": self.members[ranking[0]].algo, "auto": {
            **self.search.to_meta(), "losses": [number(x) for x in losses],
            **({"race_from": self.race_from, "stopped_at": [
                int(n) if n >= 0 else None for n in self.dropped_at]} if stopped.any() else {}),
            "aucs": [number(x) for x in scores.aucs], "spread": scores.spread,
            "chosen_on": scores.on, "chosen": self.values[ranking[0]],
            "chosen_label": self.labels[ranking[0]],
            **({"runner_up_label": self.labels[ranking[1]]}
               if len(ranking) > 1 and math.isfinite(scores.losses[ranking[1]]) else {}),
            **({"member": k + 1} if k is not None else {})}}

    def summary(self, loss_name, record=None):
        """The summary's lines, from ``record`` (the "auto" of the model written: with passes,
        the best pass's; default: the bank's now): the member chosen, the runner-up, every
        member's loss and AUC."""
        record = record or self.model_meta()["auto"]
        flag = self.search.flag
        what = f"{record['chosen_on']} {loss_name}"
        if record["chosen_on"] == "progressive":
            what = f"recent {what}"   # the later half of the first pass (streamherd.selection)
        stopped_at = record.get("stopped_at") or [None] * len(self.labels)
        scores = {label: (loss, auc) for label, loss, auc in
                  zip(self.labels, record["losses"], record["aucs"])}
        stopped = dict(zip(self.labels, stopped_at))

        def score(label):
            loss, auc = scores[label]
            if loss is None:
                return "failed"
            return f"{what} {loss:.6f}" + (f", AUC {auc:.6f}" if auc is not None else "")

        def loss_of(label):
            loss = scores[label][0]
            if loss is None:
                return "failed"
            return f"{loss:.6f}" + (f" (stopped at {stopped[label]})"
                                    if stopped[label] is not None else "")
        lines = {f"auto {flag} chosen": f"{record['chosen_label']} "
                                        f"({score(record['chosen_label'])})"}
        if "runner_up_label" in record:
            lines[f"auto {flag} runner-up"] = f"{record['runner_up_label']} " \
                                              f"({score(record['runner_up_label'])})"
        lines[f"auto {what} per {flag}"] = ", ".join(
            f"{label}: {loss_of(label)}" for label in self.labels)
        if any(n is not None for n in stopped_at):
            lines["auto race"] = (f"the worse half of the {flag} values still learning stopped "
                                  f"every {record['race_from']} examples (--race 0: all learn "
                                  f"to the end)")
        if record["chosen_on"] == "progressive" and any(a is not None for a in record["aucs"]):
            lines[f"auto recent AUC per {flag}"] = ", ".join(
                f"{label}: " + ("-" if scores[label][1] is None else f"{scores[label][1]:.6f}")
                for label in self.labels)
        return lines

    def member_models(self, meta):
        """(k, meta, arrays) of each live member (--save-bank) as the run left it, ``meta``
        the model's; a member's "progressive_loss" and calibration are its own (on the first
        pass)."""
        weight = self.progressive_weight
        for k, learner in enumerate(self.learners):
            if self.alive[k]:
                calibration = self.member_calibration(k)
                yield k, {**meta, "hyperparameters": learner.options, "learner": learner.meta(),
                          "progressive_loss": self.progressive[k] / weight if weight > 0
                          else math.nan, **self.model_meta(k), "algo": self.members[k].algo,
                          **({"calibration": calibration.to_meta()} if calibration else {})}, \
                    learner.state()
