"""``train`` and ``predict``: source -> chunks -> task -> learner -> progress -> model.

train is a pipeline of small steps. The options are checked up front, one step each (the task
flags: tasks.choose; an initial model's compatibility: _continued; the hyperparameters:
_hyperparameters), into a Start. A Trainer learns from chunks, whatever they come from: it reads
no file and writes none. train() reads the inputs (ChunkReader, with the FeatureSpace) into it,
reports progressive validation, and writes the model; with --passes it reads them again, each
pass, holding out a set of examples (passes.py). predict: the model's task scores each chunk
on the parser threads, and its lines are written in input order.
"""
import contextlib
import errno
import functools
import os
import sys
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from streamherd import calibration as calibrations
from streamherd import compilation, learners, tasks
from streamherd.errors import Interrupted, StreamherdError, notice, notices_silenced, say
from streamherd.features import normalize as normalization
from streamherd.features.space import DEFAULT_BITS, FeatureSpace
from streamherd.io.reader import DEFAULT_BLOCK_SIZE, TRAINING_WORKERS, ChunkReader
from streamherd.learners import bank
from streamherd.learners.base import UnstableUpdate
from streamherd.model import HERDING_KIND, load_model, model_meta, save_model
from streamherd.outputs import (check_inputs, check_stdout_output, refuse_shared_outputs,
                                replaced_on_success, replaced_together, resolve_output)
from streamherd.passes import (BestPass, PassChunks, Passes, copied, held_out_rows,
                               per_pass_path, replayable)
from streamherd.progress import ProgressiveValidation, Schedule
from streamherd.tasks.base import Scored


@dataclass
class Start:
    """What training starts from, every option checked: the learner's algorithm and
    hyperparameters, the feature space, the task and, continuing a model (-i), its state."""

    algo: str
    options: dict
    space: FeatureSpace
    task: tasks.Task
    chosen_from_labels: bool   # no flag chose the task: the first chunk does (tasks.detect)
    state: "dict | None" = None
    learner_meta: dict = field(default_factory=dict)
    examples: int = 0          # the examples the initial model learned from
    # --calibration (calibration.py): the method, and the initial model's statistics (its meta)
    calibration: str = calibrations.DEFAULT_METHOD
    calibration_meta: "dict | None" = None
    auto: object = None        # -C auto ...: the hyperparameter a bank chooses (learners/bank.py)


def plan(algo=None, options=None, bits=None, bias=None, normalize=None, choice=tasks.Choice(),
         initial_model=None, skip_bad=False, namespaces=None, calibration=None, grid=None):
    """The Start of a new model, or of ``initial_model`` continued (see train's parameters)."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    namespaces = {k: v for k, v in (namespaces or {}).items() if v}
    if bank.AUTO in options.values() and initial_model is not None:
        raise StreamherdError("auto chooses a hyperparameter for a new model; to continue "
                              f"{initial_model} (-i), drop auto: it keeps its own value")
    if initial_model is not None:
        start = _continued(initial_model, algo, options, bits, bias, normalize, choice, skip_bad,
                           calibration)
        _check_namespaces(initial_model, start.space, namespaces)
        return start
    if algo == bank.AUTO:   # --algo auto: banks of several learners; one stands in for checks
        auto = bank.algo_auto(options, grid, choice.kind)
        algo = auto.stand_in
    else:
        algo = learners.canonical_name(algo or learners.DEFAULT_ALGO)
        auto = bank.auto_of(algo, options, grid, choice.kind)
    space = FeatureSpace(DEFAULT_BITS if bits is None else bits, True if bias is None else bias,
                         normalization.L2 if normalize else normalization.NONE, **namespaces)
    options = _hyperparameters(algo, {k: v for k, v in options.items() if v != bank.AUTO},
                               choice.kind)
    method = calibration or ("none" if choice.kind == "regression"
                             else calibrations.DEFAULT_METHOD)
    calibrations.check_method(method, algo, choice.kind, _gaussian(algo))
    if auto is not None and method == "probit":
        # the probit map reads every row's x' Sigma x before its update; a bank gives its
        # members' margins only
        raise StreamherdError(f"--calibration probit reads one learner's variances, and "
                              f"{auto.hyperparameter.flag} auto trains a bank of them; use "
                              f"--calibration isotonic or platt with auto")
    return Start(algo, options, space, choice.new_task(skip_bad), choice.kind is None,
                 calibration=method, auto=auto)


def _gaussian(algo):
    from streamherd.learners.gaussian import GaussianLearner

    return issubclass(learners.learner_class(algo), GaussianLearner)


def _check_namespaces(path, space, namespaces):
    """-i with namespace flags (-q, --ignore ..., --hash all): only those the model was trained
    with. Without any, the model's own continue (its meta holds them), as its bits do."""
    if not namespaces:
        return
    given = FeatureSpace(space.bits, space.bias, space.normalize, **namespaces)
    if given.to_meta() != space.to_meta():
        saved = {k: v for k, v in space.to_meta().items()
                 if k not in ("bits", "bias", "normalize")}
        said = " ".join(_flag_text(k, v) for k, v in saved.items() if v) or "no namespace flags"
        raise StreamherdError(f"{path} was trained with {said}; drop -q/--cubic/--interactions/"
                              f"--ignore/--keep/--ignore_linear/--hash to continue it with its "
                              f"own")


def _flag_text(name, value):
    """A namespace flag of a model's meta as the command line gives it."""
    if name == "hash_all":
        return "--hash all"
    flag = {"quadratic": "-q"}.get(name, f"--{name}")
    return " ".join(f"{flag} {v}" for v in value) if isinstance(value, (list, tuple)) \
        else f"{flag} {value}"


def _continued(path, algo, options, bits, bias, normalize, choice, skip_bad, calibration=None):
    """-i: the model, read whole, and every flag given checked against it; its calibration
    statistics continue (a model saved without any continues without, unless
    ``calibration`` names a method)."""
    meta, state = load_model(path)
    if algo is not None and learners.canonical_name(algo) != meta["algo"]:
        raise StreamherdError(f"{path} was trained with --algo {meta['algo']}, not {algo}; "
                              f"drop --algo to continue training it")
    if bits is not None and bits != meta["bits"]:
        raise StreamherdError(f"{path} has --bits {meta['bits']}, not {bits}; drop --bits to "
                              f"continue training it")
    if bias is not None and bias != meta["bias"]:
        raise StreamherdError(f"{path} was trained with the bias "
                              f"{'on' if meta['bias'] else 'off'}; drop --no-bias to continue")
    space = FeatureSpace.from_meta(meta)
    saved = space.normalize != normalization.NONE
    if normalize is not None and normalize != saved:
        raise StreamherdError(f"{path} was trained {'with' if saved else 'without'} "
                              f"--normalize; continue it {'with' if saved else 'without'} the "
                              f"flag")
    choice.check_continues(meta, path)
    task = tasks.of_model(meta, skip_bad)
    options = _hyperparameters(meta["algo"], {**meta["hyperparameters"], **options}, task.kind)
    saved = meta.get("calibration")
    method = calibration or (saved["method"] if saved else "none")
    if method != "softmax":
        calibrations.check_method(method, meta["algo"], task.kind, _gaussian(meta["algo"]))
    return Start(meta["algo"], options, space, task, False, state, meta.get("learner", {}),
                 meta.get("examples", 0), method, saved)


def _hyperparameters(algo, options, kind):
    """Every hyperparameter of ``algo`` for the task ``kind`` checked (and a flag the learner
    does not take refused) before any input."""
    variant = learners.spec(algo)
    if kind == "regression" and variant.regression is None:
        with_regression = ", ".join(name for name, other in learners.REGISTRY.items()
                                    if other.regression is not None)
        raise StreamherdError(f"{algo} has no squared-loss form; --loss squared works with "
                              f"{with_regression}")
    return variant.options(options, kind or "binary")


class Step(NamedTuple):
    """What learning from one chunk did: its rows (without the bad lines its labels made),
    the progressive loss of each (NaN: unlabeled), the updates made, describe(i), the
    (label, prediction) texts of row i, and the progressive predictions (the task's: margins,
    class ids or values)."""

    chunk: object
    loss: np.ndarray
    updates: int
    describe: object
    predictions: np.ndarray


@dataclass
class Extras:
    """What a training run does besides learning: ``predictions``, a text file for -p's
    progressive predictions (one line per example, as predict writes them); ``examples``:
    --examples, stop after that many examples (over every pass); ``test_only``: -t, predict
    without updating (the table and the loss as a training run's); ``audit``: --audit, each
    example's prediction and features on standard output."""

    predictions: object = None
    examples: "int | None" = None
    test_only: bool = False
    audit: object = None     # --audit: an audit.LearningAudit


# rows learned at a time when the calibration needs what the kernels do not write out (class
# scores, x' Sigma x): each piece is scored first, so its scores are those of the model at most
# PIECE - 1 rows before the row's own prediction
PIECE = 256


class _Piece(NamedTuple):
    """Rows a..b of a chunk, as the tasks' learn and scores read them."""

    importance: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_examples: int


def learn_calibrating(task, learner, calibration, targets, chunk):
    """task.learn, the progressive predictions added to the calibration's statistics: a binary
    model's margins as the kernels write them, else piece by piece (PIECE), each piece the
    calibration reads scored before it is learned (multiclass: only the rows its sample keeps,
    the pieces between learned in one call). The estimators of streamherd.sklearn learn
    through it too."""
    if task.kind == "binary" and not calibration.needs_confidences:
        updates, predictions = task.learn(learner, targets, chunk)
        calibration.observe(predictions, targets, chunk.importance)
        return updates, predictions
    multiclass = task.kind == "multiclass"
    keep = calibration.kept_rows(targets, chunk.importance, len(task.labels)) \
        if multiclass else np.arange(chunk.n_examples)
    done, predictions = [0], []

    def learn(a, b, seen):
        """Rows a..b learned, then observed with what was read of them before."""
        if b <= a:
            return
        piece = _Piece(chunk.importance[a:b], chunk.indptr[a:b + 1], chunk.indices,
                       chunk.values, b - a)
        try:
            updates, predicted = task.learn(learner, targets[a:b], piece)
        except UnstableUpdate as e:
            raise UnstableUpdate(e.index + a, e.what) from None
        done[0] += updates
        predictions.append(predicted)
        if multiclass:
            calibration.observe(seen, targets[a:b], piece.importance)
        else:
            calibration.observe(predicted, targets[a:b], piece.importance, seen)

    learned = 0
    for a in range(0, chunk.n_examples, PIECE):
        b = min(chunk.n_examples, a + PIECE)
        read = keep[(keep >= a) & (keep < b)]
        if not len(read):
            continue
        learn(learned, a, _unread_scores(task, a - learned))
        seen = _progressive_scores(task, learner, chunk, read, a, b)
        learn(a, b, seen)
        learned = b
    learn(learned, chunk.n_examples, _unread_scores(task, chunk.n_examples - learned))
    return done[0], np.concatenate(predictions) if predictions else np.empty(0)


def _unread_scores(task, rows):
    """The class scores of rows the calibration does not read (NaN; binary: none)."""
    return np.full((rows, len(task.labels)), np.nan) if task.kind == "multiclass" else None


def _progressive_scores(task, learner, chunk, read, a, b):
    """What the calibration reads of rows a..b before they are learned, of the rows ``read``
    only (NaN elsewhere): a binary model's x' Sigma x (all rows), or every class's score
    (NaN: a class the learner does not know yet)."""
    piece = chunk.take(read)
    if task.kind == "binary":
        confidences = np.empty(piece.n_examples)
        learner.confidences(piece.indptr, piece.indices, piece.values, confidences)
        return confidences
    learner.grow(len(task.labels))
    scores = _unread_scores(task, b - a)
    scores[read - a] = task.scores(learner, piece)
    scores[:, task.known:] = np.nan
    return scores


class Trainer:
    """Learns from chunks, in order: the task's targets of each, then one online pass of the
    learner over it (a prediction for each row, then its update), the progressive predictions
    into the calibration's statistics. The learner is made at once, so that a hyperparameter it
    refuses fails before any input."""

    def __init__(self, start, test_only=False):
        """``test_only``: -t, every chunk predicted, none learned from."""
        self.start = start
        self.test_only = test_only
        self.task = start.task
        self.undecided = start.chosen_from_labels
        self.learner = self._new_learner(start.state, start.learner_meta)
        self.calibration = self._new_calibration(start.calibration_meta)
        self.calibrating = not test_only   # the first pass's predictions only are progressive

    def _new_calibration(self, saved=None):
        """The calibration the model learns (None: none); with auto, each member of the bank
        learns its own instead (bank.calibrate_members), and the model written takes the
        chosen member's (calibration_now)."""
        if saved is not None or self.start.calibration == "none":
            return calibrations.of_meta({"calibration": saved, "task": self.task.kind},
                                        self.start.calibration)
        calibration = calibrations.new(self.start.calibration, self.task.kind)
        if calibration is not None and isinstance(self.learner, bank.Choosing):
            self.learner.calibrate_members(
                lambda: calibrations.new(self.start.calibration, self.task.kind))
            return None
        return calibration

    def calibration_now(self):
        """The calibration of the model as it is: the chosen member's with auto."""
        if isinstance(self.learner, bank.Choosing):
            return self.learner.member_calibration(self.learner.chosen())
        return self.calibration

    def _new_learner(self, state=None, learner_meta=None):
        """The learner; with auto, a bank of them, once the labels chose the task."""
        start = self.start
        if start.auto is not None and not self.undecided:
            if self.task.kind != "binary" and isinstance(start.auto, bank.AlgoAuto):
                raise StreamherdError(f"--algo auto works for binary tasks only, and the labels "
                                      f"are {self.task.kind}; name one --algo (its "
                                      f"hyperparameter can be auto)")
            return bank.new_bank(self.task, start.algo, start.space.dim, start.options,
                                 start.auto)
        return self.task.new_learner(start.algo, start.space.dim, start.options, state,
                                     learner_meta)

    def learn(self, chunk):
        """One chunk: its Step. A row of negative importance (passes.mark_held_out) is
        predicted, not learned from."""
        self.settle(chunk)
        chunk, targets = self.task.targets(chunk, learning=not self.test_only)
        try:
            updates, predictions = (0, self.task.predict(self.learner, chunk)) if self.test_only \
                else self.learner.learn_chunk(targets, chunk, lambda task, learner, calibration:
                                              self._learn(task, learner, calibration, targets,
                                                          chunk)) \
                if isinstance(self.learner, bank.TaskBank) \
                else self._learn(self.task, self.learner, self.calibration, targets, chunk)
        except UnstableUpdate as e:   # e.index: a row of the chunk the learner saw
            raise StreamherdError(
                f"{chunk.source}:{int(chunk.line_numbers[e.index])}: {e.what}; scale the "
                f"features (--normalize){_gentler(self.learner.options)}; no model was written"
            ) from None
        task = self.task
        return Step(chunk, task.loss(targets, predictions), updates,
                    lambda i: (chunk.label_token(i) or "unknown",
                               task.prediction_text(predictions, i)), predictions)

    def _learn(self, task, learner, calibration, targets, chunk):
        """task.learn of ``learner`` over the chunk, its progressive predictions into
        ``calibration`` on the first pass (learn_calibrating)."""
        if self.calibrating and calibration is not None:
            return learn_calibrating(task, learner, calibration, targets, chunk)
        return task.learn(learner, targets, chunk)

    def settle(self, chunk):
        """The task the labels of ``chunk`` choose, when the first chunk chooses it."""
        if self.undecided:
            self._settle(tasks.detect(chunk, self.task.skip_bad))

    def finish(self):
        """The task of a stream that brought no chunk to choose it: binary."""
        if self.undecided:
            self._settle(tasks.BinaryTask(skip_bad=self.task.skip_bad))

    def _settle(self, task):
        """The task the labels chose; the multiclass learner of an undecided stream holds no
        class block yet, so a binary one replaces it."""
        self.undecided = False
        if task.kind != self.task.kind or self.start.auto is not None:   # auto: now its bank
            self.task = task
            self.learner = self._new_learner()
            self.calibration = self._new_calibration()

    def model_meta(self, examples, progressive_loss):
        """The model's meta, after ``examples`` labeled examples more than the initial model."""
        calibration = self.calibration_now()
        return {"algo": self.start.algo, "hyperparameters": self.learner.options,
                **self.start.space.to_meta(), **self.task.meta(),
                "examples": self.start.examples + examples, "progressive_loss": progressive_loss,
                "learner": self.learner.meta(),
                **({"calibration": calibration.to_meta()} if calibration else {}),
                **(self.learner.model_meta() if self.start.auto is not None else {})}

    def end_pass(self, progress):
        """A pass ended: its holdout loss (the chosen member's, with auto)."""
        if self.start.auto is not None:
            return self.learner.end_pass()
        return progress.end_pass()

    def state(self):
        """The learner's arrays, as a model holds them."""
        return self.learner.state()


def train(paths, algo=None, options=None, bits=None, bias=None, fmt="auto", final_model=None,
          initial_model=None, quiet=False, skip_bad=False, block_size=DEFAULT_BLOCK_SIZE,
          normalize=None, multiclass=None, classes=None, loss=None, allow_empty=False,
          passes=Passes(), progress_every=None, namespaces=None, predictions=None,
          examples=None, test_only=False, audit=False, calibration=None, grid=None,
          save_bank=False):
    """Stream every example through the learner, once per pass; returns the run summary (a
    dict).

    ``namespaces``: the FeatureSpace's namespace flags (quadratic, cubic, interactions,
    ignore, keep, ignore_linear), saved in the model so that ``predict`` crosses the same.

    ``normalize``: scale each example's features to unit L2 norm, the bias kept at 1, before
    predict and update (features/normalize.py); saved in the model, so ``predict`` does the
    same. ``multiclass``: None (binary, or joint multiclass when the data has more than two
    classes, see tasks.detect), "joint", "ova" or "mira" (pa, pa1 and pa2); ``classes``: a fixed class list ("1,2,3");
    ``loss``: "hinge" (classification) or "squared" (regression). ``passes``: a passes.Passes
    (several passes, the holdout set, the best pass's model, --save_per_pass). ``progress_every``:
    -P's text, when the table prints its rows (progress.Schedule). ``predictions``: -p, a
    file for the progressive predictions (written whole or not at all, as the model);
    ``examples``: --examples, at most that many examples over all passes; ``test_only``: -t,
    predict every example with the initial model, learn nothing, write no model; ``audit``:
    --audit, each example's prediction and features with the weights before its update on
    standard output (audit.LearningAudit); ``calibration``: --calibration, the map
    from the progressive predictions to predict --proba's probabilities (calibration.py; None:
    the default, or an initial model's own). A hyperparameter "auto" in ``options``: a bank
    over ``grid`` (--grid's text; None: the default) chooses it (learners/bank.py), the
    calibration learned from the margins of the member leading at each chunk; ``save_bank``:
    also write every member, STEM.bankK.npz beside -f STEM.npz. A run that
    learns from no labeled example fails (exit 2) and writes no model, unless ``allow_empty``:
    then the model (the initial one, or an untrained one) is written. Inputs and the model's
    path are checked before any work; the model is written to a temporary file that replaces
    ``final_model`` only at the end of a successful run.
    """
    paths = list(paths or ["-"])
    choice = tasks.choose(loss, multiclass, classes)
    check_inputs(paths)
    passes.check(final_model)
    _check_test_only(test_only, final_model, passes)
    if examples is not None and examples < 1:
        raise StreamherdError(f"--examples {examples}: give 1 or more")
    schedule = Schedule.parse(progress_every) if progress_every is not None else Schedule()
    # -i and -f may name the same model (continue training in place, as VW's -i m -f m): it is
    # read whole before training and replaced only at the end, so an input file is safe.
    model_path = resolve_output(final_model, paths, "model") if final_model is not None else None
    pass_paths = [resolve_output(per_pass_path(final_model, k), paths, "model")
                  for k in range(1, passes.count + 1)] if passes.save_per_pass else None
    predictions_path = resolve_output(predictions, [*paths, *filter(None, [initial_model])],
                                      "predictions") if predictions is not None else None
    start = plan(algo, options, bits, bias, normalize, choice, initial_model, skip_bad,
                 namespaces, calibration, grid)
    bank_paths = _bank_paths(start, save_bank, final_model, paths, test_only or audit)
    refuse_shared_outputs([("model", final_model, model_path),
                           *(("--save_per_pass model", per_pass_path(final_model, k + 1), path)
                             for k, path in enumerate(pass_paths or ())),
                           *(("--save-bank model", bank.bank_path(final_model, k + 1), path)
                             for k, path in enumerate(bank_paths or ())),
                           ("predictions", predictions, predictions_path)])
    trainer = Trainer(start, test_only)

    def note(text):   # silenced by --quiet, as every notice (notices_silenced below)
        notice(f"streamherd: {text}")

    with contextlib.ExitStack() as stack:
        stack.enter_context(notices_silenced(quiet))
        inputs = stack.enter_context(replayable(paths, passes.count, note))
        extras = Extras(predictions_path and stack.enter_context(
            replaced_on_success(predictions_path, what="predictions")), examples, test_only,
            _learning_audit(start, fmt, skip_bad) if audit else None)

        def new_reader():
            return ChunkReader(inputs, fmt=fmt, features=start.space, skip_bad=skip_bad,
                               block_size=block_size, workers=TRAINING_WORKERS,
                               process=None if start.chosen_from_labels
                               else start.task.check_labels)
        reader = new_reader()
        total = reader.total_bytes
        progress = ProgressiveValidation(quiet=quiet, total_bytes=total and total * passes.count,
                                         compile_watch=compilation.watch(quiet),
                                         schedule=schedule)
        chunks = stack.enter_context(PassChunks(passes, new_reader, reader, note))
        used, best, reader = _run_passes(passes, chunks, trainer, progress,
                                         lambda: _preamble(final_model, trainer, paths, passes,
                                                           extras),
                                         pass_paths, extras)
        _check_skipped(progress.bad_lines, progress.examples, skip_bad, reader.formats_seen,
                       "no model was written")
        if progress.labeled == 0 and not allow_empty:
            raise _nothing_learned(paths, final_model, model_path)
        summary = progress.finish({
            **(_passes_summary(used, best, progress.loss_name) if passes.count > 1 else {}),
            **(trainer.learner.summary(progress.loss_name, _auto_record(best))
               if start.auto is not None else {})})
        if progress.labeled and not progress.updates and not quiet and not test_only:
            progress.note(f"no update was made: every labeled example was predicted with margin "
                          f"to spare or had importance 0, so the model is the "
                          f"{'initial' if initial_model is not None else 'untrained'} one")
        with replaced_together():   # (before -p's predictions replace their file)
            if model_path is not None:
                save_model(model_path, *_chosen_model(trainer, progress, best, used))
            for k, meta, arrays in (trainer.learner.member_models(
                    _model_now(trainer, progress)[0]) if bank_paths else ()):
                save_model(bank_paths[k], meta, arrays)
        _note_failed_members(trainer.learner, bank_paths, progress)
    return summary


def _note_failed_members(learner, bank_paths, progress):
    """--save-bank writes the members that did not fail: say which files were not written
    (a file of that name from an earlier run stays as it was)."""
    if not bank_paths:
        return
    missing = [str(bank_paths[k]) for k in np.flatnonzero(~np.asarray(learner.alive))]
    if missing:
        progress.note(f"--save-bank: {len(missing)} member(s) failed and were not written: "
                      f"{', '.join(missing)} (any such file from an earlier run is left as it "
                      f"was)")


def _bank_paths(start, save_bank, final_model, paths, learns_nothing):
    """--save-bank's files (bank.bank_path), checked as outputs; auto refused with -t and
    --audit (what would it choose, whose weights would it show)."""
    if start.auto is not None and learns_nothing:
        raise StreamherdError(f"{start.auto.hyperparameter.flag} auto trains a bank of models "
                              f"and keeps one; -t learns nothing and --audit shows one model's "
                              f"weights: drop auto (give a value) or -t/--audit")
    if not save_bank:
        return None
    if start.auto is None or final_model is None:
        raise StreamherdError("--save-bank writes every model of an auto bank beside the "
                              "chosen one: give a hyperparameter auto (e.g. -C auto) and -f")
    return [resolve_output(bank.bank_path(final_model, k + 1), paths, "model")
            for k in range(len(start.auto.grid))]


def _learning_audit(start, fmt, skip_bad):
    """train --audit's printer (standard output, as VW's)."""
    from streamherd.audit import LearningAudit

    return LearningAudit(sys.stdout, start.space, fmt, skip_bad)


def _check_test_only(test_only, final_model, passes):
    if test_only and final_model is not None:
        raise StreamherdError("-t predicts without learning, so there is no model to write: "
                              "drop -f (or -t)")
    if test_only and passes.count > 1:
        raise StreamherdError("-t predicts without learning: more passes would predict the "
                              "same again; drop --passes")


def _run_passes(passes, chunks, trainer, progress, preamble, pass_paths, extras):
    """The passes over the inputs (``chunks``: their PassChunks), the preamble printed once,
    each pass's model saved to ``pass_paths`` (if any), until ``extras.examples`` are read;
    returns (passes used, the BestPass or None without a holdout set, the last reader)."""
    best = BestPass(passes.early_terminate) if passes.holdout else None
    reader = chunks.reader
    used = 0
    while used < passes.count and not (best is not None and best.stop):
        progress.start_pass(show_holdout=passes.holdout and used > 0)
        limited = learn_from(chunks.of_pass(used + 1), trainer, progress,
                              None if used else preamble, passes.holdout,
                              lambda: (reader.total_bytes or 0) * used + chunks.bytes_done, extras)
        trainer.finish()
        trainer.calibrating = False
        used += 1
        holdout_loss = trainer.end_pass(progress)
        if pass_paths is not None:
            save_model(pass_paths[used - 1], *_model_now(trainer, progress))
        if best is not None:
            best.record(holdout_loss, lambda: _model_now(trainer, progress, copy=True))
        if limited:
            break
    return used, best, chunks.reader


def _auto_record(best):
    """The "auto" of the model the run writes when it is the best pass's (so that the summary
    describes that model, not the bank as the last pass left it); None: the bank's now."""
    return best.model[0]["auto"] if best is not None and best.model is not None else None


def _chosen_model(trainer, progress, best, used):
    """(meta, arrays) to write: the best pass's with a holdout set (said on stderr), else the
    model as the last pass left it."""
    if best is None:
        return _model_now(trainer, progress)
    if best.model is None:
        progress.note(f"no held-out example was labeled: model from the last pass ({used})")
        return _model_now(trainer, progress)
    progress.note(f"model from pass {best.best_pass} (best holdout {progress.loss_name} "
                  f"{best.best_loss:.6f})")
    return best.model


def _model_now(trainer, progress, copy=False):
    """(meta, arrays) of the model as it is; ``copy``: arrays that later learning leaves as
    they are."""
    meta = trainer.model_meta(progress.labeled, progress.average_loss)
    return meta, copied(trainer.state()) if copy else trainer.state()


def _ordinal(n):
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _passes_summary(used, best, loss_name):
    """The summary lines of several passes: how many ran and, with a holdout set, the holdout
    loss of each and the best."""
    lines = {"passes used": used}
    if best is not None:
        lines[f"holdout {loss_name} per pass"] = ", ".join(f"{x:.6f}" for x in best.losses)
        if best.best_pass is not None:
            lines[f"best holdout {loss_name}"] = best.best_loss
            lines["best pass"] = best.best_pass
    return lines


def learn_from(chunks, trainer, progress, preamble, holdout=False, bytes_done=None,
                extras=Extras()):
    """Every chunk of ``chunks`` through the trainer, into the progress table; ``preamble()``
    (if any) goes before it, once the first example is read. ``holdout``: the chunks' held-out
    rows are marked (passes.mark_held_out); ``bytes_done()``: the input read so far (for the
    progress bar); ``extras``: -p's file, --examples. Returns whether --examples stopped it."""
    announced = preamble is None
    if extras.audit is not None:
        chunks = extras.audit.one_by_one(chunks, trainer.settle)
    for chunk in chunks:
        if extras.examples is not None:
            left = extras.examples - progress.examples
            if left <= 0:
                return True
            if chunk.n_examples > left:
                chunk = chunk.take(np.arange(left))
        if extras.audit is not None:
            extras.audit.before(trainer.learner, chunk)
        step = trainer.learn(chunk)
        if (extras.predictions or extras.audit) is not None and step.chunk.n_examples:
            _write_progressive(trainer, step, extras)
        progress.loss_name = trainer.task.loss_name
        if not announced and step.chunk.n_examples:
            announced = True
            progress.preamble(preamble())
        importance, held_out = step.chunk.importance, None
        if holdout:
            held_out = held_out_rows(importance)
            importance = np.abs(importance)
        progress.add_chunk(importance, step.loss, step.chunk.indptr, step.describe,
                           updates=step.updates, bad_lines=step.chunk.bad_lines,
                           bytes_done=bytes_done and bytes_done(), held_out=held_out)
        if extras.examples is not None and progress.examples >= extras.examples:
            # stop here, not at the next chunk: from a pipe whose writer has paused (all its
            # lines in this chunk) the next chunk would be waited for, for ever
            return True
    return extras.examples is not None and progress.examples >= extras.examples


def _write_progressive(trainer, step, extras):
    """-p's line of each example of ``step`` (the prediction before its update), and with
    --audit that line and the example's features on standard output."""
    progressive = Scored(step.chunk, step.predictions, step.predictions, None, 0)
    lines = _tagged(step.chunk, trainer.task.lines(trainer.learner, progressive, tasks.LABEL))
    if extras.predictions is not None:
        extras.predictions.write("\n".join(lines) + "\n")
    if extras.audit is not None:   # one example at a time
        task = trainer.task
        extras.audit.write(lines[0], task.labels.texts if task.kind == "multiclass" else None)


def _tagged(chunk, values):
    """The output line of each example of ``chunk``: its value, then its VW tag if it has one
    (as VW prints them)."""
    if np.any(chunk.tag_start >= 0):
        return [v if t is None else f"{v} {t}" for v, t in zip(values, chunk.tags())]
    return values


def _nothing_learned(paths, final_model, model_path):
    """The error of a run that read no labeled example (without --allow-empty)."""
    kept = f" ({final_model} was left as it was)" if model_path and \
        os.path.exists(model_path) else ""
    return StreamherdError(
        f"no labeled example was read from {_names(paths)}, so nothing was learned"
        f"{'; no model was written' + kept if final_model is not None else ''}; check the "
        f"input, or pass --allow-empty to write the model anyway")


def _gentler(hyperparameters):
    """The hyperparameter change that makes the learner's steps smaller, if it has one."""
    hints = [hint for name, hint in (("C", "lower -C"), ("r", "raise -r"))
             if name in hyperparameters]
    return f" or {' / '.join(hints)}" if hints else ""


def _names(paths):
    names = ["standard input" if p == "-" else str(p) for p in paths]
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def _check_skipped(skipped, examples, skip_bad, formats, consequence):
    """--skip-bad skips a few damaged lines; when most lines are skipped, the data is not what
    the run thinks it is (another format, a damaged file) and success would be a lie."""
    if skip_bad and skipped > examples:
        raise StreamherdError(
            f"{skipped} of {skipped + examples} example lines were malformed and skipped (more "
            f"than half); {consequence}. Check that the input is "
            f"{'/'.join(sorted(formats)) or 'svmlight or VW'} text (--format), and run without "
            f"--skip-bad to see the first bad line")


def _preamble(final_model, trainer, paths, passes=Passes(), extras=Extras()):
    """What VW prints before its table: where the model goes, the learner, the features, the
    task (as the labels of the first block chose it, and why), the inputs and the passes."""
    lines = []
    if final_model:
        lines.append(("final_regressor", final_model))
    if extras.test_only:
        lines.append(("only testing", "-t: every example predicted, none learned from"))
    settings = trainer.learner.settings() if trainer.start.auto is not None else \
        ", ".join(f"{k} = {v:g}" for k, v in trainer.learner.options.items())
    algo = trainer.learner.preamble_name if trainer.start.auto is not None else trainer.start.algo
    space = trainer.start.space
    task = trainer.task.description()
    if trainer.start.chosen_from_labels:
        task += ", chosen from the labels: pass --multiclass or --loss squared to choose"
    lines += [("algorithm", f"{algo}{' (' + settings + ')' if settings else ''}"),
              ("Num weight bits", space.bits),
              ("constant feature", f"on (slot {space.bias_slot})" if space.bias else "off")]
    if space.normalize != normalization.NONE:
        lines.append(("normalize", "each example to unit L2 norm, the bias kept at 1"))
    lines += [(name, ", ".join(value) if isinstance(value, list) else value)
              for name, value in space.to_meta().items()
              if name not in ("bits", "bias", "normalize")]   # -q, --ignore ...
    lines += [("task", task),
              ("Reading datafile", _names(paths)),
              ("num sources", len(paths))]
    if passes.count > 1:
        holdout = ("off" if not passes.holdout else
                   f"every example after the {_ordinal(passes.holdout_after)}"
                   if passes.holdout_after else
                   f"every {_ordinal(passes.holdout_period)} example")
        lines += [("passes", passes.count), ("holdout", holdout)]
    if extras.examples is not None:
        lines.append(("examples", f"at most {extras.examples}"))
    return lines


def _audit_weights(meta, arrays):
    """predict --audit: the weights the predictions read, one row per class block (one row for
    a binary or regression model)."""
    from streamherd.inspection import prediction_weights

    return prediction_weights(arrays).reshape(-1, 1 << meta["bits"])


def _audited(values, scored, reader, weights, task):
    """Each prediction line followed by VW's audit of the example's features
    (audit.AuditedFeatures.lines), one line per class for a multiclass model."""
    from streamherd.audit import AuditedFeatures, class_heads

    features = AuditedFeatures(scored.chunk, reader.features, reader.fmt, reader.skip_bad)
    if task.kind != "multiclass":
        return [f"{value}\n{features.lines(row, weights)}" for row, value in enumerate(values)]
    return [f"{value}\n{features.lines(row, weights, class_heads(task.labels.texts, scores))}"
            for row, (value, scores) in enumerate(zip(values, scored.scores))]


def predict(model_path, paths, output=None, raw=False, fmt="auto", quiet=False, skip_bad=False,
            block_size=DEFAULT_BLOCK_SIZE, proba=False, scores=False, audit=False):
    """Write one prediction per example; returns (mistakes, labeled examples) (for regression:
    (sum of squared errors, labeled examples)).

    ``proba``: P(y = +1 | x) of a Gaussian binary model, or every class's probability of being
    the model's argmax for a Gaussian multiclass model, instead of the label. ``scores`` (and
    ``raw`` for a multiclass model): every class's score. With ``skip_bad``, each malformed line
    skipped gets an empty output line, so that output line k is still input example k.
    ``output``: written to a temporary file that replaces it at the end of a successful run.
    ``audit``: each prediction line followed by its features' (_audited).
    """
    paths = list(paths or ["-"])
    check_inputs(paths)   # the model: load_model's own messages
    if model_meta(model_path).get("kind") == HERDING_KIND:
        from streamherd import herding

        return herding.predict(model_path, paths, output, raw, fmt, quiet, skip_bad, proba,
                               scores)
    if output is not None:
        output_path = resolve_output(output, [*paths, os.fspath(model_path)], "predictions")
    else:
        check_stdout_output(paths)
    meta, arrays = load_model(model_path)
    algo = learners.canonical_name(meta["algo"])
    task = tasks.of_model(meta, skip_bad)
    task.calibration = calibrations.of_meta(meta)
    learner = task.new_learner(algo, 1 << meta["bits"], meta["hyperparameters"], arrays,
                               meta.get("learner", {}))
    if sum([proba, raw, scores]) > 1:
        raise StreamherdError("--proba, --raw and --scores each choose the output; pass one of them")
    shown = tasks.PROBA if proba else tasks.SCORES if scores else tasks.RAW if raw else tasks.LABEL
    task.check_output(shown, learner, model_path, algo)
    weights = _audit_weights(meta, arrays) if audit else None
    compilation.watch(quiet)
    # the task's targets, scores, predictions and loss of a chunk depend on no chunk before it:
    # the parser threads compute them (the kernels release the GIL)
    reader = ChunkReader(paths, fmt=fmt, features=FeatureSpace.from_meta(meta), skip_bad=skip_bad,
                         block_size=block_size,
                         process=functools.partial(task.score, learner))
    destination = "standard output" if output is None else str(output)
    written = skipped = examples = labeled = loss = 0
    try:
        with (replaced_on_success(output_path) if output is not None
              else contextlib.nullcontext(sys.stdout)) as sink:
            for scored in (chunk.derived for chunk in reader):
                chunk = scored.chunk
                values = task.lines(learner, scored, shown)
                examples += chunk.n_examples
                labeled += scored.labeled
                loss += scored.loss
                values = _tagged(chunk, values)
                if audit:
                    values = _audited(values, scored, reader, weights, task)
                if skip_bad:
                    skipped += chunk.bad_lines
                    values = with_skipped_lines(chunk, values)
                if values:
                    sink.write("\n".join(values) + "\n")
                    written += len(values)
                    if output is None:
                        sink.flush()   # each chunk's answers now: a pipe may pause (tail -f)
            _check_skipped(skipped, examples, skip_bad, reader.formats_seen,
                           f"no predictions were written{' to ' + str(output) if output else ''}")
            if examples == 0:
                raise StreamherdError(
                    f"no example was read from {_names(paths)}, so there is nothing to predict"
                    f"{'; ' + str(output) + ' was left as it was' if output is not None else ''}; "
                    f"check the input")
            sink.flush()
    except KeyboardInterrupt as e:
        raise Interrupted(getattr(e, "exit_code", 130), f"interrupted after {written} "
                          f"predictions{'; ' + str(output) + ' was left as it was' if output else ''}"
                          ) from None
    except BrokenPipeError:
        raise   # the reader of stdout went away ('| head'): the CLI ends quietly
    except OSError as e:
        raise StreamherdError(f"cannot write the predictions to {destination}: "
                              f"{e.strerror or e}; {'free some space' if e.errno == errno.ENOSPC else 'check where they go'}"
                              f"{' (' + str(output) + ' was left as it was)' if output else ''}") from None
    if not quiet and skipped:
        say(f"{skipped} malformed lines skipped (an empty output line for each)")
    if not quiet and labeled:
        say(task.report(loss, labeled))
    return loss, labeled


def with_skipped_lines(chunk, values):
    """The output values with an empty line at the place of each skipped malformed line (rows
    and skipped lines in file line order)."""
    skipped = chunk.bad_line_numbers
    if not len(skipped):
        return values
    order = np.argsort(np.concatenate([chunk.line_numbers, skipped]), kind="stable")
    return np.array([*values, *([""] * len(skipped))], dtype=object)[order].tolist()
