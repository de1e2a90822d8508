"""Several passes over the inputs (``train --passes N``), with a holdout set as VW's.

Each pass reads the input files again (the parser is faster than a cache file would be);
standard input, which cannot be read twice, is copied to a temporary file first (``replayable``).

Holdout (only with N > 1, as VW): the examples of a pass are counted from 1, in input order, over
every file; an "example" is a line the parser and the task accept (unlabeled lines count,
skipped malformed lines, blank lines and comments do not), as VW's example counter. With
``--holdout_period K`` (default 10) the K-th, 2K-th, ... example of every pass is held out; with
``--holdout_after N`` every example after the N-th is. A held-out example is predicted by the
model of that moment and scored, but not learned from (it goes through the learner with
importance 0, which makes no update). The holdout loss of a pass is the weighted average loss of
its held-out labeled examples; ``--early_terminate K`` stops after K passes in a row without a
lower one, and the model written is that of the pass with the lowest (the last pass's when
no held-out example was labeled).
"""
import contextlib
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError

DEFAULT_HOLDOUT_PERIOD = 10
DEFAULT_EARLY_TERMINATE = 3


@dataclass(frozen=True)
class Passes:
    """The checked --passes / holdout / --save_per_pass options."""

    count: int = 1
    holdout_period: int = DEFAULT_HOLDOUT_PERIOD
    holdout_after: int = 0          # 0: by period
    holdout_off: bool = False
    early_terminate: int = DEFAULT_EARLY_TERMINATE
    save_per_pass: bool = False

    @property
    def holdout(self):
        return self.count > 1 and not self.holdout_off

    def check(self, final_model):
        if self.count < 1:
            raise StreamherdError(f"--passes {self.count}: give at least 1 pass")
        if self.holdout_period < 2:
            raise StreamherdError(f"--holdout_period {self.holdout_period} would hold out every "
                                  f"example; give 2 or more (or --holdout_off)")
        if self.holdout_after < 0:
            raise StreamherdError(f"--holdout_after {self.holdout_after}: give a number of "
                                  f"examples, 1 or more")
        if self.early_terminate < 1:
            raise StreamherdError(f"--early_terminate {self.early_terminate}: give 1 or more "
                                  f"passes without improvement")
        if self.save_per_pass and final_model is None:
            raise StreamherdError("--save_per_pass writes STEM.passK.npz next to the model: "
                                  "give the model's path with -f")
        return self

    def new_pass(self):
        """The ``hold_out(n)`` of one pass (Trainer.learn): the mask of its next n examples
        held out; None without a holdout set."""
        if not self.holdout:
            return None
        seen = 0

        def hold_out(n):
            nonlocal seen
            mask = self.held_out(seen, n)
            seen += n
            return mask
        return hold_out

    def held_out(self, first, n):
        """The mask of the rows first+1 .. first+n (1-based example numbers in the pass) that
        are held out."""
        numbers = np.arange(first + 1, first + n + 1)
        if self.holdout_after:
            return numbers > self.holdout_after
        return numbers % self.holdout_period == 0


def per_pass_path(final_model, k):
    """Where --save_per_pass writes pass k: model.npz -> model.passK.npz (beside it)."""
    path = os.fspath(final_model)
    stem = path[:-4] if path.endswith(".npz") else path
    return f"{stem}.pass{k}.npz"


@contextlib.contextmanager
def replayable(paths, passes, note):
    """``paths`` with standard input ('-') replaced by a temporary copy of it (under the system
    temporary folder, removed on the way out, also on an error or Ctrl-C) when there are
    several passes; ``note(text)`` says so."""
    if passes < 2 or "-" not in paths:
        yield paths
        return
    fd, spill = tempfile.mkstemp(prefix="streamherd-stdin-", suffix=".spill")
    try:
        note(f"standard input is copied to {spill} for the {passes} passes (removed at the end)")
        try:
            with os.fdopen(fd, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
        except OSError as e:
            raise StreamherdError(f"cannot copy standard input to {spill}: {e.strerror}; free "
                                  f"space in {os.path.dirname(spill)} or set TMPDIR") from None
        yield [spill if p == "-" else p for p in paths]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(spill)


class BestPass:
    """The holdout loss of each pass, the best pass's model (a copy, in memory) and whether
    early termination stops the run."""

    def __init__(self, early_terminate):
        self.early_terminate = early_terminate
        self.losses = []
        self.best_pass = None
        self.best_loss = math.inf
        self.model = None          # (meta, arrays) of the best pass
        self._no_win = 0

    def record(self, loss, snapshot):
        """The holdout ``loss`` of the next pass (NaN: no held-out labeled example);
        ``snapshot()`` gives its model, taken only when it is the best so far."""
        self.losses.append(loss)
        if loss < self.best_loss:
            self.best_loss, self.best_pass = loss, len(self.losses)
            self.model = snapshot()
            self._no_win = 0
        elif not (math.isnan(loss) and self.best_pass is None):   # as VW: no holdout, no stop
            self._no_win += 1

    @property
    def stop(self):
        return self._no_win >= self.early_terminate


def copied(arrays):
    """The learner's arrays copied (the learner goes on updating its own in place)."""
    return {name: np.array(value, copy=True) for name, value in arrays.items()}
