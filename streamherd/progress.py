"""Progressive validation: the loss of each prediction made before its update, and VW's table.

Rows are printed when the weighted count of labeled examples reaches 1, 2, 4, 8, ... exactly as
VW does (one row at most per example), found per chunk with a cumulative sum and a binary search,
so there is no Python work per example.
"""
import sys
import time

import numpy as np

HEADER = ("average  since         example        example        current        current  current\n"
          "loss     last          counter         weight          label        predict features")


def format_row(average, since, counter, weight, label, predict, features):
    return (f"{average:<8.6f} {since:<8.6f} {counter:>12d} {weight:>14.1f} "
            f"{label:>14} {predict:>14} {features:>8d}")


class ProgressiveValidation:
    def __init__(self, quiet=False, total_bytes=None, stream=None, loss_name="0/1 loss"):
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.loss_name = loss_name
        self.examples = 0
        self.labeled = 0
        self.weighted = 0.0
        self.loss_sum = 0.0
        self.mistakes = 0
        self.updates = 0
        self.features = 0
        self.bad_lines = 0
        self._next_row = 1.0
        self._row_loss = 0.0
        self._row_weight = 0.0
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
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream)

    def add_chunk(self, importance, loss, n_features, describe, updates=0, bad_lines=0,
                  bytes_done=None):
        """Account one chunk.

        loss: the progressive loss of each example (NaN for an unlabeled line); describe(i):
        the (label, prediction) texts of example i, called only for the rows printed.
        """
        n = len(loss)
        labeled = ~np.isnan(loss)
        weights = np.where(labeled, importance, 0.0)
        weighted_loss = np.where(labeled, loss * importance, 0.0)
        cumulative_weight = self.weighted + np.cumsum(weights)
        cumulative_loss = self.loss_sum + np.cumsum(weighted_loss)
        if not self.quiet:
            start = 0
            while start < n:
                i = start + int(np.searchsorted(cumulative_weight[start:], self._next_row))
                if i >= n:
                    break
                self._row(i, cumulative_weight[i], cumulative_loss[i], n_features[i], describe)
                start = i + 1
        if n:
            self.weighted = float(cumulative_weight[-1])
            self.loss_sum = float(cumulative_loss[-1])
        self.examples += n
        self.labeled += int(labeled.sum())
        self.mistakes += int(np.count_nonzero(loss[labeled] > 0))
        self.features += int(n_features.sum())
        self.updates += updates
        self.bad_lines += bad_lines
        if self._bar is not None and bytes_done is not None:
            elapsed = max(time.perf_counter() - self._started, 1e-9)
            self._bar.update(self._task, completed=bytes_done,
                             rate=f"{self.examples / elapsed:,.0f} ex/s")

    def _row(self, i, weight, loss, features, describe):
        if not self._header_done:
            self._print(HEADER)
            self._header_done = True
        label, predict = describe(i)
        since = (loss - self._row_loss) / max(weight - self._row_weight, 1e-300)
        self._print(format_row(loss / weight, since, self.examples + i + 1, weight, label, predict,
                               int(features)))
        self._row_loss, self._row_weight = loss, weight
        self._next_row *= 2.0

    @property
    def average_loss(self):
        return self.loss_sum / self.weighted if self.weighted > 0 else float("nan")

    def finish(self):
        """Close the bar and print the summary; returns the summary as a dict."""
        elapsed = time.perf_counter() - self._started
        if self._bar is not None:
            self._bar.stop()
        summary = {
            "number of examples": self.examples,
            "weighted example sum": self.weighted,
            f"average progressive {self.loss_name}": self.average_loss,
            "mistakes": self.mistakes,
            "updates": self.updates,
            "bad lines skipped": self.bad_lines,
            "total feature number": self.features,
            "elapsed seconds": elapsed,
            "examples per second": self.examples / elapsed if elapsed > 0 else float("nan"),
        }
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
