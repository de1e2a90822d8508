"""Several passes over the inputs (``train --passes N``), with a holdout set as VW's.

Each pass reads the input files again (the parser is faster than a cache file would be);
standard input and FIFOs, which cannot be read twice, are copied to a temporary file first
(``replayable``).

Holdout (only with N > 1, as VW): the examples of a pass are counted from 1, in input order, over
every file; an "example" is a line the parser accepts (unlabeled lines count, skipped malformed
lines, blank lines and comments do not; a line the task then drops, a class name in binary
data under --skip-bad, still counts), as VW's example counter. With
``--holdout_period K`` (default 10) the K-th, 2K-th, ... example of every pass is held out; with
``--holdout_after N`` every example after the N-th is. A held-out example is predicted by the
model of that moment and scored, but not learned from. The holdout loss of a pass is the weighted
average loss of
its held-out labeled examples; ``--early_terminate K`` stops after K passes in a row without a
lower one, and the model written is that of the pass with the lowest (the last pass's when
no held-out example was labeled). A held-out row travels as its importance negated (the parser
never gives a negative one, and the learners skip importance <= 0), so that the mark survives
the task's dropping of rows.

``--shuffle`` (seeded by ``--random_seed``): each pass in its own order. The inputs are read
into windows of at most ``--shuffle_memory`` MiB of parsed rows; when the whole input fits in one
(the first pass tells), the shuffle is exact (a permutation of all the rows, drawn from numpy's
default_rng([seed, pass])) and the later passes come from memory. Beyond, the shuffle is
block-wise: the first pass reads the windows in input order and permutes the rows inside each;
it also writes each parsed block (a chunk of the reader, ``--block-size`` bytes of input) to a
temporary file (the "spill", under the system temporary folder, said on stderr, removed at the
end, also on an error or Ctrl-C). Each later pass k permutes the order of the blocks
(default_rng([seed, k])), reads them back from the spill in that order, a window of at most
``--shuffle_memory`` MiB of them at a time, and permutes the rows of each window with the same
generator. Why a spill of parsed blocks rather than seeking into the inputs: it serves every
input alike (compressed files and the spilled stdin cannot seek), and the later passes skip
parsing; it costs disk (about the size of the input plus 12 bytes per feature). Memory stays
about twice the window (the blocks read, then joined), whatever the input's length. The holdout
set is the same examples in every pass: they are counted in input order in the first pass,
before the shuffle, and the mark (a negated importance) is spilled with the rows.
"""
import contextlib
import dataclasses
import math
import os
import shutil
import stat
import sys
from dataclasses import dataclass

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.io.csr import Chunk
from streamherd.outputs import remove_temporary, spill_file

DEFAULT_HOLDOUT_PERIOD = 10
DEFAULT_EARLY_TERMINATE = 3
DEFAULT_SHUFFLE_MEMORY_MIB = 1024
SHUFFLED_ROWS = 1 << 14   # rows of each chunk of a shuffled pass


@dataclass(frozen=True)
class Passes:
    """The checked --passes / holdout / --save_per_pass options."""

    count: int = 1
    holdout_period: int = DEFAULT_HOLDOUT_PERIOD
    holdout_after: int = 0          # 0: by period
    holdout_off: bool = False
    early_terminate: int = DEFAULT_EARLY_TERMINATE
    save_per_pass: bool = False
    shuffle: bool = False
    random_seed: int = 0
    shuffle_memory_mib: int = DEFAULT_SHUFFLE_MEMORY_MIB

    @property
    def holdout(self):
        return self.count > 1 and not self.holdout_off

    def check(self, final_model):
        """The options, or a one-line error for the first that is out of range."""
        problems = (
            (self.count < 1, f"--passes {self.count}: give at least 1 pass"),
            (self.holdout_period < 2, f"--holdout_period {self.holdout_period} would hold out "
                                      f"every example; give 2 or more (or --holdout_off)"),
            (self.holdout_after < 0, f"--holdout_after {self.holdout_after}: give a number of "
                                     f"examples, 1 or more"),
            (self.early_terminate < 1, f"--early_terminate {self.early_terminate}: give 1 or "
                                       f"more passes without improvement"),
            (self.shuffle_memory_mib < 1, f"--shuffle_memory {self.shuffle_memory_mib}: give 1 "
                                          f"MiB or more"),
            (self.save_per_pass and final_model is None, "--save_per_pass writes "
             "STEM.passK.npz next to the model: give the model's path with -f"))
        for failed, message in problems:
            if failed:
                raise StreamherdError(message)
        return self

    def held_out(self, first, n):
        """The mask of the rows first+1 .. first+n (1-based example numbers in the pass) that
        are held out."""
        numbers = np.arange(first + 1, first + n + 1)
        if self.holdout_after:
            return numbers > self.holdout_after
        return numbers % self.holdout_period == 0


def mark_held_out(chunk, held_out):
    """The chunk with its held-out rows marked: their importance negated."""
    return dataclasses.replace(chunk, importance=np.where(held_out, -chunk.importance,
                                                         chunk.importance))


def held_out_rows(importance):
    """The mask of the held-out rows, from the sign of their importance (-0.0 included)."""
    return np.signbit(importance)


class PassChunks:
    """The chunks of each pass, held-out rows marked (with a holdout set) and shuffled (with
    --shuffle); ``reader``: the reader of the last pass read from the inputs. A context manager:
    the spill of a block-wise shuffle (if any) is removed on the way out."""

    def __init__(self, passes, new_reader, reader, note=lambda text: None):
        self.passes = passes
        self.new_reader = new_reader
        self.reader = reader
        self.note = note
        self._in_memory = None    # the whole input, when it fits one shuffle window
        self._spill = None        # the parsed blocks of the first pass, beyond one window
        self._spilled_bytes_done = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._spill is not None:
            self._spill.remove()

    @property
    def bytes_done(self):
        if self._spill is not None and self._spill.complete:
            return self._spilled_bytes_done
        return self.reader.bytes_done

    def of_pass(self, k):
        """The chunks of pass k (1-based)."""
        if not self.passes.shuffle:
            if k > 1:
                self.reader = self.new_reader()
            return self._marked(self.reader)
        if k == 1:
            return self._first_shuffled()
        if self._in_memory is not None:
            return self._rows_permuted([self._in_memory], self._rng(k))
        if self._spill is not None:
            return self._from_spill(k)
        self.reader = self.new_reader()   # a single pass asked for more: windows again
        return self._rows_permuted(self._windows(map(Chunk.copy, self._marked(self.reader))),
                                   self._rng(k))

    def _rng(self, k):
        return np.random.default_rng([self.passes.random_seed, k])

    def _marked(self, chunks):
        """``chunks`` with their held-out rows marked, counted in order from 1."""
        seen = 0
        for chunk in chunks:
            if self.passes.holdout:
                chunk = mark_held_out(chunk, self.passes.held_out(seen, chunk.n_examples))
            seen += chunk.n_examples
            yield chunk

    def _rows_permuted(self, windows, rng):
        """The rows of each window in an order drawn from ``rng``, in chunks of SHUFFLED_ROWS."""
        for window in windows:
            order = rng.permutation(window.n_examples)
            for start in range(0, len(order), SHUFFLED_ROWS):
                part = window.take(order[start:start + SHUFFLED_ROWS])
                if start:   # the window's skipped lines, counted once
                    part = dataclasses.replace(part, bad_lines=0,
                                               bad_line_numbers=np.zeros(0, np.int64))
                yield part

    def _first_shuffled(self):
        """Pass 1: windows in input order, rows permuted inside each. With later passes, an
        input that fits one window is kept in memory, and a larger one is spilled block by
        block from the moment the first window fills."""
        if self.passes.count == 1:
            windows = self._windows(map(Chunk.copy, self._marked(self.reader)))
            yield from self._rows_permuted(windows, self._rng(1))
            return
        seen = []   # the first window, and whether there are more

        def noted(windows):
            for window in windows:
                seen[:] = [window] if not seen else [None, None]
                yield window

        yield from self._rows_permuted(noted(self._windows(self._spilled(
            self._marked(self.reader)))), self._rng(1))
        if len(seen) == 1 and self._spill is None:
            self._in_memory = seen[0]
        if self._spill is not None:
            self._spill.complete = True

    def _spilled(self, chunks):
        """``chunks`` (copies, of their own), written to the spill once the first window is
        full (the chunks held until then written first)."""
        limit = self.passes.shuffle_memory_mib << 20
        held, size, done = [], 0, 0
        for chunk in chunks:
            chunk = chunk.copy()
            raw_bytes, done = self.reader.bytes_done - done, self.reader.bytes_done
            if self._spill is None:
                held.append((chunk, raw_bytes))
                size += chunk_nbytes(chunk)
                if size >= limit:
                    self._spill = BlockSpill(self.note, self.passes.count)
                    for block, block_raw_bytes in held:
                        self._spill.write(block, block_raw_bytes)
                    held = None
            else:
                self._spill.write(chunk, raw_bytes)
            yield chunk

    def _from_spill(self, k):
        """Pass k (> 1) of a block-wise shuffle: the spilled blocks in a permuted order, read a
        window at a time, the rows of each window permuted."""
        rng = self._rng(k)
        order = rng.permutation(self._spill.n_blocks)
        self._spilled_bytes_done = 0

        def blocks():
            for i in order:
                self._spilled_bytes_done += self._spill.raw_bytes[i]
                yield self._spill.read(i)
        return self._rows_permuted(self._windows(blocks()), rng)

    def _windows(self, chunks):
        """``chunks`` (with arrays of their own) joined into windows of at most
        --shuffle_memory MiB of parsed rows each."""
        limit = self.passes.shuffle_memory_mib << 20
        held, size = [], 0
        for chunk in chunks:
            held.append(chunk)
            size += chunk_nbytes(chunk)
            if size >= limit:
                window, held, size = Chunk.concatenate(held), [], 0
                yield window
        if held:
            window, held = Chunk.concatenate(held), []
            yield window


def chunk_nbytes(chunk):
    """The bytes of a chunk's arrays."""
    return sum(a.nbytes for a in vars(chunk).values() if isinstance(a, np.ndarray))


SPILLED_ARRAYS = ("block", "labels", "importance", "line_numbers", "indptr", "indices", "values",
                  "tag_start", "tag_end", "label_start", "label_end", "bad_line_numbers")


class BlockSpill:
    """Parsed blocks in a temporary file (np.save of each array, one block after another), read
    back in any order by the byte offset of each; removed by ``remove``."""

    def __init__(self, note, passes):
        fd, self.path = spill_file("streamherd-shuffle-", ".spill",
                                   "the shuffle's copy of the input")
        self.file = os.fdopen(fd, "w+b")
        note(f"the input is larger than --shuffle_memory: its parsed blocks are copied to "
             f"{self.path} for the block-wise shuffle of the {passes} passes (removed at the end)")
        self.offsets, self.scalars, self.raw_bytes = [], [], []
        self.complete = False

    def write(self, chunk, raw_bytes):
        self.file.seek(0, os.SEEK_END)
        self.offsets.append(self.file.tell())
        try:
            for name in SPILLED_ARRAYS:
                np.save(self.file, getattr(chunk, name), allow_pickle=False)
            self.file.flush()   # a full disk said here, not at a later pass's seek
        except OSError as e:
            raise StreamherdError(f"cannot write the shuffle's copy of the input to {self.path}: "
                                  f"{e.strerror}; free space in {os.path.dirname(self.path)}, "
                                  f"set TMPDIR, or raise --shuffle_memory") from None
        self.scalars.append((chunk.source, chunk.n_lines, chunk.bad_lines, chunk.n_bytes))
        self.raw_bytes.append(raw_bytes)

    @property
    def n_blocks(self):
        return len(self.offsets)

    def read(self, i):
        """Block ``i`` (in spill order) as a chunk."""
        self.file.seek(self.offsets[i])
        arrays = {name: np.load(self.file, allow_pickle=False) for name in SPILLED_ARRAYS}
        source, n_lines, bad_lines, n_bytes = self.scalars[i]
        return Chunk(source=source, n_lines=n_lines, bad_lines=bad_lines, n_bytes=n_bytes,
                     **arrays)

    def remove(self):
        try:
            with contextlib.suppress(OSError):   # its last write failed (a full disk): said
                self.file.close()
        finally:
            remove_temporary(self.path)


def read_once(path):
    """Whether ``path`` can be read only once: standard input ('-') or a FIFO (a named pipe)."""
    try:
        return path == "-" or stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:   # a missing input: check_inputs names it
        return False


@contextlib.contextmanager
def replayable(paths, passes, note):
    """``paths`` with each input that can be read only once (read_once) replaced by a
    temporary copy of it (under the system temporary folder, removed on the way out, also on an
    error or Ctrl-C) when the Passes ``passes`` read the inputs more than once; ``note(text)``
    says so. A FIFO under --shuffle is read once as it is: the later passes come from memory or
    the shuffle's spill."""
    copies = {}
    try:
        for path in dict.fromkeys(paths if passes.count > 1 else ()):
            if not read_once(path) or (path != "-" and passes.shuffle):
                continue
            kind, name = ("stdin", "standard input") if path == "-" else ("fifo", path)
            fd, copies[path] = spill_file(f"streamherd-{kind}-", ".spill", f"a copy of {name}")
            note(f"{name} is copied to {copies[path]} for the {passes.count} passes (removed at "
                 f"the end)")
            try:   # (the close's last write included)
                with os.fdopen(fd, "wb") as f, \
                        (open(path, "rb") if path != "-"
                         else contextlib.nullcontext(sys.stdin.buffer)) as stream:
                    shutil.copyfileobj(stream, f, 1 << 20)
            except OSError as e:
                raise StreamherdError(
                    f"cannot copy {name} to {copies[path]}: {e.strerror}; free space in "
                    f"{os.path.dirname(copies[path])} or set TMPDIR") from None
        yield [copies.get(p, p) for p in paths]
    finally:
        for spill in copies.values():
            remove_temporary(spill)


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

    def summary(self, loss_name, unit="pass"):
        """The summary's lines of the holdout losses: each pass's (or round's), and the best."""
        lines = {f"holdout {loss_name} per {unit}": ", ".join(f"{x:.6f}" for x in self.losses)}
        if self.best_pass is not None:
            lines[f"best holdout {loss_name}"] = self.best_loss
            lines[f"best {unit}"] = self.best_pass
        return lines

    def note(self, loss_name, unit="pass"):
        """Which pass's (or round's) model the run writes: the best, or the last when no
        held-out example was labeled."""
        if self.model is None:
            return f"no held-out example was labeled: model from the last {unit} " \
                   f"({len(self.losses)})"
        return f"model from {unit} {self.best_pass} (best holdout {loss_name} " \
               f"{self.best_loss:.6f})"


def copied(arrays):
    """The learner's arrays copied (the learner goes on updating its own in place)."""
    return {name: np.array(value, copy=True) for name, value in arrays.items()}
