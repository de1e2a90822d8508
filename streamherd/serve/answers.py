"""The model work of a server: lines in, one answer line per example out, in order.

One ``Answerer`` holds the one model (an OnlineModel, or for --no-learn whatever ``predict``
holds) and is called by one thread only, so that learning has a single writer and every
prediction reads a whole model state. Its answers are the lines ``predict`` prints for the
same examples (label, --raw, --proba, --scores, then the VW tag) and, when the model learns,
those of ``train -p`` (each prediction made before its example's update); a learning stream
updates the model as ``train -i`` does, chunk after chunk.
"""
import copy
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from streamherd import tasks
from streamherd.errors import StreamherdError
from streamherd.io.reader import detect_format, line_format
from streamherd.io.text_block import Outputs, parse_text
from streamherd.model import (HERDING_KIND, OnlineModel, UpdateFailed, for_predicting,
                              model_meta)
from streamherd.passes import copied
from streamherd.progress import ProgressiveValidation
from streamherd.tasks.base import Scored

ERROR_PREFIX = "error: "
# the advice of train's and predict's messages about a malformed line; a server answers such
# a line and goes on, so the advice is dropped from its answer
_SKIP_BAD_ADVICE = ". Fix the line, or pass --skip-bad to skip such lines"


class Snapshot(NamedTuple):
    """The model at one moment: its file's meta and arrays, and the progressive validation
    then (``progress``: what a model that goes back to it counts from)."""

    meta: dict
    arrays: dict
    progress: ProgressiveValidation


@dataclass
class Stream:
    """What the Answerer keeps of one client's stream: its name in messages (``source``),
    its format ("svmlight" or "vw"; None until a line tells), whether that format was guessed
    (a line of the other one is then malformed, as in train) and the number of its next line."""

    source: str
    fmt: "str | None" = None
    guessed: bool = False
    next_line: int = 1


@dataclass
class Tally:
    """What answering a block did: examples answered, of them labeled, examples learned
    from, malformed lines (each answered with an error line)."""

    examples: int = 0
    labeled: int = 0
    learned: int = 0
    errors: int = 0


class Answerer:
    """The served model and what it has learned since it was loaded."""

    def __init__(self, model_path, learning=True, shown=tasks.LABEL, fmt="auto"):
        """``shown``: tasks.LABEL, RAW, PROBA or SCORES (predict's flags); ``fmt``: auto,
        svmlight or vw. Learning, the answers are the progressive predictions, which are
        labels or, for a binary or regression model, margins (--raw)."""
        self.model_path = model_path
        self.learning = learning
        self.shown = shown
        self.fmt = fmt
        if learning:
            if model_meta(model_path).get("kind") == HERDING_KIND:
                raise StreamherdError(f"{model_path} is a conditional herding model, which "
                                      f"learns in 'streamherd herd' only: serve it with "
                                      f"--no-learn")
            self.model = OnlineModel.from_file(model_path)
            if not (shown == tasks.LABEL or shown == tasks.RAW
                    and self.model.task.kind != "multiclass"):
                flag = {tasks.RAW: "--raw", tasks.PROBA: "--proba",
                        tasks.SCORES: "--scores"}[shown]
                raise StreamherdError(
                    f"{flag} answers from a model that does not change: add --no-learn (a "
                    f"learning server answers each example with the prediction made before "
                    f"its update, as train -p: the label, or a binary or regression model's "
                    f"margin with --raw)")
        else:
            self.model = for_predicting(model_path)
        self.model.check_output(shown, model_path)
        self.merge_table = self.model.space.new_merge_table()
        self.outputs = Outputs()   # the parsed rows of the block being answered
        self.progress = ProgressiveValidation(quiet=True)
        self.predicted_mistakes = 0.0   # --no-learn: the loss of the labeled examples
        self.predicted_labeled = 0
        self.last_good = None
        self.remember()

    # ------------------------------------------------------------ answering

    def answer(self, stream, data):
        """The answer lines (str, without line ends) of ``data`` (bytes: whole lines of
        ``stream``, each ending with a line feed but perhaps the last), in order: one per
        example, an error line per malformed line; blank and comment lines have none, as in
        predict. Returns (lines, Tally)."""
        block = np.frombuffer(bytearray(data), np.uint8)
        if stream.fmt is None:
            self._choose_format(stream, data)
        fmt = stream.fmt or "svmlight"
        answers, tally = [], Tally()
        start = 0
        while start < len(block):
            chunk, malformed = parse_text(block[start:], fmt, self.model.space, stream.next_line,
                                          stream.source, self.merge_table, stream.guessed,
                                          self.outputs)
            stream.next_line += chunk.n_lines
            if chunk.n_examples:
                self._answer_rows(chunk, answers, tally)
            if malformed is None:
                break
            answers.append(ERROR_PREFIX + malformed.message)
            tally.errors += 1
            start += malformed.end
        return answers, tally

    def _choose_format(self, stream, data):
        """A stream's format: --format's, or the one its first lines tell (detect_format);
        until a line tells one, none is chosen."""
        if self.fmt != "auto":
            stream.fmt = self.fmt
        elif any(line_format(line) for line in data.split(b"\n")):
            stream.fmt, stream.guessed = detect_format(data), True

    def _answer_rows(self, chunk, answers, tally):
        """The answers of a chunk's rows; a row the task refuses (a label it never takes) is
        answered with its error, the others as if it were not there; a row whose update fails
        (UpdateFailed) too, the model gone back to its last snapshot (_recover)."""
        try:
            answers.extend(self._rows(chunk, tally))
        except UpdateFailed as e:
            self._recover(chunk, e, answers, tally)
        except StreamherdError:   # one of the rows: answered one by one, so that it is found
            for row in range(chunk.n_examples):
                try:
                    answers.extend(self._rows(chunk.take([row]), tally))
                except UpdateFailed as e:
                    self._recover(chunk.take([row]), e, answers, tally)
                except StreamherdError as e:
                    answers.append(ERROR_PREFIX + str(e).replace(_SKIP_BAD_ADVICE, ""))
                    tally.errors += 1

    def _recover(self, chunk, failed, answers, tally):
        """An update of ``chunk`` made the learner's state non-finite (``failed``): the model
        goes back to its last snapshot, learns the rows before the failed one again, answers
        that one with the error, and goes on with the rest."""
        row = int(np.searchsorted(chunk.line_numbers, failed.line))
        dropped = self.progress.labeled - self.last_good.progress.labeled
        self._restore()
        if row:
            self._answer_rows(chunk.take(np.arange(row)), answers, tally)
        gentler = "".join(f" or {hint}" for hint in failed.gentler)
        answers.append(f"{ERROR_PREFIX}{chunk.source}:{failed.line}: {failed.what}; the model "
                       f"went back to its last snapshot (the {dropped} example(s) learned "
                       f"since then are no longer in it); scale the features (--normalize when "
                       f"training the model){gentler}")
        tally.errors += 1
        self.remember()
        if row + 1 < chunk.n_examples:
            self._answer_rows(chunk.take(np.arange(row + 1, chunk.n_examples)), answers, tally)

    def _rows(self, chunk, tally):
        """The answer lines of rows none of which is refused (else a StreamherdError, the
        model as it was) and whose updates do not fail (else an UpdateFailed, the model half
        updated: _recover)."""
        model = self.model
        if self.learning:
            step = model.learn(chunk)
            self.progress.add_chunk(step.chunk.importance, step.loss, step.chunk.indptr,
                                    step.describe, updates=step.updates)
            rows = step.chunk
            scored = Scored(rows, step.predictions, step.predictions, None, 0)
            labeled = int(np.count_nonzero(~np.isnan(step.loss)))
            tally.learned += labeled
        else:
            scored = model.score(chunk)
            rows = scored.chunk
            labeled = scored.labeled
            self.predicted_mistakes += scored.loss
            self.predicted_labeled += labeled
        tally.examples += rows.n_examples
        tally.labeled += labeled
        return tagged(rows, model.lines(scored, self.shown))

    # ------------------------------------------------------------ the model's state

    @property
    def examples_learned(self):
        """The labeled examples learned from since the model was loaded."""
        return self.progress.labeled

    @property
    def progressive_loss(self):
        """The average progressive loss since the model was loaded (NaN: none yet); with
        --no-learn, the loss of the predictions of labeled examples."""
        if self.learning:
            return self.progress.average_loss
        return (self.predicted_mistakes / self.predicted_labeled if self.predicted_labeled
                else float("nan"))

    def snapshot(self):
        """A Snapshot of the model as it is now: (meta, arrays) as train writes them, arrays
        of their own, which later learning leaves as they are."""
        meta = self.model.meta(self.progress.labeled, self.progress.average_loss)
        return Snapshot(meta, copied(self.model.arrays()), copy.copy(self.progress))

    def remember(self, snapshot=None):
        """Keep ``snapshot`` (None: the model as it is now), for an update that fails to go
        back to."""
        if self.learning:
            self.last_good = snapshot or self.snapshot()

    def _restore(self):
        meta, arrays, progress = self.last_good
        model = OnlineModel.from_meta(meta, copied(arrays))
        model.examples = self.model.examples   # (its meta counts those learned since)
        self.model, self.progress = model, copy.copy(progress)


def tagged(chunk, values):
    """The answer of each example of ``chunk``: its value, then its VW tag if it has one (as
    predict prints them)."""
    if np.any(chunk.tag_start >= 0):
        return [v if t is None else f"{v} {t}" for v, t in zip(values, chunk.tags())]
    return values
