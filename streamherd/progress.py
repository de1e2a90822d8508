"""Progressive validation: the loss of each prediction made before its update, and VW's table.

Rows are printed as VW prints them (one row at most per example): when the weighted count of
labeled examples reaches 1, then twice the count at the last row (1, 2, 4, 8, ... with unit
weights); with ``-P N`` (an integer) at N, then N more than the count at the last row; with
``-P F`` (a number with a point, F > 1) at 1, then F times the count at the last row. With a
holdout set (passes.py), held-out examples count
apart: from the second pass on, a row shows the average holdout loss so far and since the last
row, marked " h", as VW does (the counter still counts every example, held-out ones included).
One numba pass per chunk (``_account_chunk``) sums the
weights and losses and finds those rows: the accounting runs on the learner's thread, between two
learner kernels, so it is one call rather than a dozen numpy passes over the chunk.
"""
import sys
import time
from typing import NamedTuple

import numpy as np
from numba import njit

HEADER = ("average  since         example        example        current        current  current\n"
          "loss     last          counter         weight          label        predict features")


def format_row(average, since, counter, weight, label, predict, features, holdout=False):
    return (f"{average:<8.6f} {since:<8.6f} {counter:>12d} {weight:>14.1f} "
            f"{label:>14} {predict:>14} {features:>8d}{' h' if holdout else ''}")


class Schedule(NamedTuple):
    """When rows are printed (module docstring): ``step`` > 0 adds, else ``factor`` multiplies."""

    step: float = 0.0
    factor: float = 2.0

    @property
    def first_row(self):
        return self.step if self.step > 0 else 1.0

    @staticmethod
    def parse(text):
        """The schedule of ``-P TEXT``: an integer N >= 1 adds N, a number F > 1 written with a
        point (or an exponent) multiplies by F, as VW's -P."""
        from streamherd.errors import StreamherdError

        try:
            if text.strip().lstrip("+").isdigit():
                step = int(text)
                if step >= 1:
                    return Schedule(step=float(step))
            else:
                factor = float(text)
                if factor > 1.0 and np.isfinite(factor):
                    return Schedule(factor=factor)
        except ValueError:
            pass
        raise StreamherdError(f"-P {text}: give a whole number of examples (a row every N, as "
                              f"-P 1000) or a factor above 1 with a point (as -P 2.0)")


@njit(cache=True, nogil=True)
def _account_chunk(importance, loss, weighted, loss_sum, next_row, find_rows, rows, row_weights,
                   row_losses, step, factor):
    """Sums of one chunk, given the totals before it (weighted, loss_sum).

    Labeled rows (loss not NaN) add their importance to the weight and loss x importance to the
    loss. With find_rows, each row i where the running weight reaches next_row goes to rows (with
    the running weight and loss there), and the next row is the running weight there plus
    ``step`` (step > 0) or times ``factor`` (Schedule). Returns (rows found, chunk weight,
    chunk loss, labeled, nonzero losses of weight > 0, next_row).
    """
    chunk_weight = 0.0
    chunk_loss = 0.0
    labeled = 0
    nonzero = 0
    found = 0
    for i in range(len(loss)):
        if not np.isnan(loss[i]):
            chunk_weight += importance[i]
            chunk_loss += loss[i] * importance[i]
            labeled += 1
            # a mistake is one the weighted loss counts: an example of importance 0 is none
            nonzero += loss[i] > 0.0 and importance[i] > 0.0
        if find_rows and weighted + chunk_weight >= next_row:
            rows[found] = i
            row_weights[found] = weighted + chunk_weight
            row_losses[found] = loss_sum + chunk_loss
            found += 1
            next_row = (weighted + chunk_weight + step if step > 0.0
                        else (weighted + chunk_weight) * factor)
    return found, chunk_weight, chunk_loss, labeled, nonzero, next_row


class ProgressiveValidation:
    def __init__(self, quiet=False, total_bytes=None, stream=None, loss_name="0/1 loss",
                 compile_watch=None, schedule=Schedule()):
        """``compile_watch``: a compilation.CompileWatch; the time spent compiling kernels
        during the run is not counted in its elapsed seconds and throughput. ``schedule``: when
        rows are printed (Schedule)."""
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.compile_watch = compile_watch
        self._compile_before = compile_watch.seconds if compile_watch is not None else 0.0
        self.loss_name = loss_name
        self.examples = 0
        self.labeled = 0
        self.weighted = 0.0
        self.loss_sum = 0.0
        self.mistakes = 0
        self.updates = 0
        self.features = 0
        self.bad_lines = 0
        self.schedule = schedule
        self._next_row = schedule.first_row
        self._row_loss = 0.0
        self._row_weight = 0.0
        self.holdout_loss_sum = 0.0   # every held-out labeled example so far, weighted
        self.holdout_weight = 0.0
        self._pass_holdout = (0.0, 0.0)   # (loss, weight) of the current pass
        self._row_holdout = (0.0, 0.0)    # the totals at the last row printed
        self.show_holdout = False
        self._started = time.perf_counter()
        self._header_done = False
        self._bar = None
        self._task = None
        if not quiet and total_bytes and hasattr(self.stream, "isatty") and self.stream.isatty():
            self._start_bar(total_bytes)

    def _start_bar(self, total_bytes):
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                                   TimeRemainingColumn, TransferSpeedColumn)

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                             TransferSpeedColumn(), TextColumn("{task.fields[rate]}"),
                             TimeRemainingColumn(), console=Console(file=self.stream),
                             transient=True)
        self._task = self._bar.add_task("training", total=total_bytes, rate="")
        self._bar.start()

    def _print(self, text):
        """Progress is a courtesy: when its reader is gone (``2>&1 | head -1``) or stderr is
        closed, the run goes on without it (and still writes its model)."""
        if self.quiet:
            return
        try:
            if self._bar is not None:
                self._bar.console.print(text, markup=False, highlight=False)
            else:
                print(text, file=self.stream, flush=True)
        except (OSError, ValueError, AttributeError):   # AttributeError: sys.stderr is None
            self.quiet = True
            self._bar = None

    def preamble(self, lines):
        """What the run is about to do, as VW prints before its table: (name, value) pairs."""
        self._print("\n".join(f"{name} = {value}" for name, value in lines))

    def note(self, text):
        """A line of its own after the summary."""
        self._print(f"streamherd: {text}")

    def _elapsed(self):
        """Wall seconds since the start, without the time spent compiling kernels."""
        compiled = (self.compile_watch.seconds - self._compile_before
                    if self.compile_watch is not None else 0.0)
        return max(time.perf_counter() - self._started - compiled, 1e-9), compiled

    def start_pass(self, show_holdout):
        """A new pass: its rows show the holdout loss when ``show_holdout``."""
        self.show_holdout = show_holdout
        self._pass_holdout = (0.0, 0.0)

    def end_pass(self):
        """The holdout loss of the pass that ended (NaN: no held-out labeled example)."""
        loss, weight = self._pass_holdout
        return loss / weight if weight > 0 else float("nan")

    def _holdout_sums(self, importance, loss, held_out):
        """The weighted losses of the held-out labeled rows (0 elsewhere), and their weights;
        the chunk's progressive losses without the held-out rows."""
        counted = held_out & ~np.isnan(loss)
        weights = np.where(counted, importance, 0.0)
        losses = np.where(counted, loss, 0.0) * weights
        return losses, weights, np.where(held_out, np.nan, loss)

    def add_chunk(self, importance, loss, indptr, describe, updates=0, bad_lines=0,
                  bytes_done=None, held_out=None):
        """Account one chunk.

        loss: the progressive loss of each example (NaN for an unlabeled line); indptr: the
        chunk's row pointers (features per row); describe(i): the (label, prediction) texts of
        example i, called only for the rows printed; held_out: the mask of the rows held out
        (scored apart, not learned from).
        """
        n = len(loss)
        holdout = None
        if held_out is not None:
            h_losses, h_weights, loss = self._holdout_sums(importance, loss, held_out)
            holdout = (np.cumsum(h_losses), np.cumsum(h_weights))
        rows = np.empty(n, np.int64)   # at most one row per example
        row_weights = np.empty(n)
        row_losses = np.empty(n)
        found, chunk_weight, chunk_loss, labeled, nonzero, self._next_row = _account_chunk(
            importance, loss, self.weighted, self.loss_sum, self._next_row, not self.quiet, rows,
            row_weights, row_losses, *self.schedule)
        for k in range(found):
            i = int(rows[k])
            if holdout is not None and self.show_holdout:
                self._holdout_row(i, holdout[0][i], holdout[1][i], float(row_weights[k]),
                                  int(indptr[i + 1] - indptr[i]), describe)
            else:
                self._row(i, float(row_weights[k]), float(row_losses[k]),
                          int(indptr[i + 1] - indptr[i]), describe)
        if holdout is not None and n:
            chunk_h_loss, chunk_h_weight = float(holdout[0][-1]), float(holdout[1][-1])
            self.holdout_loss_sum += chunk_h_loss
            self.holdout_weight += chunk_h_weight
            self._pass_holdout = (self._pass_holdout[0] + chunk_h_loss,
                                  self._pass_holdout[1] + chunk_h_weight)
        self.weighted += chunk_weight
        self.loss_sum += chunk_loss
        self.examples += n
        self.labeled += labeled
        self.mistakes += nonzero
        self.features += int(indptr[n] - indptr[0])
        self.updates += updates
        self.bad_lines += bad_lines
        if self._bar is not None and bytes_done is not None:
            elapsed, _ = self._elapsed()
            try:
                self._bar.update(self._task, completed=bytes_done,
                                 rate=f"{self.examples / elapsed:,.0f} ex/s")
            except (OSError, ValueError):
                self.quiet, self._bar = True, None

    def _row(self, i, weight, loss, features, describe):
        since = (loss - self._row_loss) / max(weight - self._row_weight, 1e-300)
        self._print_row(i, loss / weight, since, weight, features, describe, False)
        self._row_loss, self._row_weight = loss, weight

    def _holdout_row(self, i, chunk_loss, chunk_weight, weight, features, describe):
        """A row of a pass after the first: the holdout losses up to row i of the chunk."""
        loss = self.holdout_loss_sum + chunk_loss
        held = self.holdout_weight + chunk_weight
        since_loss, since_weight = loss - self._row_holdout[0], held - self._row_holdout[1]
        self._print_row(i, loss / held if held > 0 else float("nan"),
                        since_loss / since_weight if since_weight > 0 else float("nan"),
                        weight, features, describe, True)
        self._row_holdout = (loss, held)

    def _print_row(self, i, average, since, weight, features, describe, holdout):
        if not self._header_done:
            self._print(HEADER)
            self._header_done = True
        label, predict = describe(i)
        self._print(format_row(average, since, self.examples + i + 1, weight, label, predict,
                               features, holdout))

    @property
    def average_loss(self):
        return self.loss_sum / self.weighted if self.weighted > 0 else float("nan")

    def finish(self, extra=None):
        """Close the bar and print the summary, with the lines of ``extra`` (a dict) after the
        weighted example sum; returns the summary as a dict."""
        elapsed, compiled = self._elapsed()
        if self._bar is not None:
            try:
                self._bar.stop()
            except (OSError, ValueError):
                self.quiet, self._bar = True, None
        summary = {
            "number of examples": self.examples,
            "weighted example sum": self.weighted,
            **(extra or {}),
            f"average progressive {self.loss_name}": self.average_loss,
            "mistakes": self.mistakes,
            "updates": self.updates,
            "bad lines skipped": self.bad_lines,
            "total feature number": self.features,
            "elapsed seconds": elapsed,
            "examples per second": self.examples / elapsed if elapsed > 0 else float("nan"),
        }
        if compiled > 0:   # the first run after an install
            summary["kernel compilation seconds"] = compiled
        if not self.quiet:
            lines = ["", "finished run"]
            for key, value in summary.items():
                if isinstance(value, float):
                    text = f"{value:.6f}" if key != "examples per second" else f"{value:,.0f}"
                else:
                    text = str(value)
                lines.append(f"{key} = {text}")
            self._print("\n".join(lines))
        return summary
