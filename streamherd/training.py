"""``train`` and ``predict``: source -> chunks -> task -> learner -> progress -> model.

train is a pipeline of small steps. The flags are checked up front into an OnlineModel
(model/online.py: a new one, or an initial model continued), which learns from chunks,
whatever they come from: it reads no file and writes none. train() reads the inputs
(ChunkReader, with the model's FeatureSpace) into it, reports progressive validation, and
writes the model; with --passes it reads them again, each pass, holding out a set of examples
(passes.py). predict: the model scores each chunk on the parser threads, and its lines are
written in input order.
"""
import contextlib
import errno
import os
import sys
from dataclasses import dataclass

import numpy as np

from streamherd import compilation, tasks
from streamherd.errors import Interrupted, StreamherdError, notice, notices_silenced, say
from streamherd.features import normalize as normalization
from streamherd.io.linecodes import MAX_LINE_BYTES
from streamherd.io.reader import DEFAULT_BLOCK_SIZE, TRAINING_WORKERS, ChunkReader
from streamherd.model import ModelFlags, OnlineModel, UpdateFailed, for_predicting, save_model
from streamherd.outputs import (beside_model, check_inputs, check_stdout_output,
                                refuse_shared_outputs, replaced_on_success, replaced_together,
                                resolve_output)
from streamherd.passes import BestPass, PassChunks, Passes, copied, held_out_rows, replayable
from streamherd.progress import ProgressiveValidation, Schedule
from streamherd.tasks.base import Scored


@dataclass(frozen=True)
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


def train(paths, algo=None, options=None, bits=None, bias=None, fmt="auto", final_model=None,
          initial_model=None, quiet=False, skip_bad=False, block_size=DEFAULT_BLOCK_SIZE,
          normalize=None, multiclass=None, classes=None, loss=None, allow_empty=False,
          passes=Passes(), progress_every=None, namespaces=None, predictions=None,
          examples=None, test_only=False, audit=False, calibration=None, grid=None,
          race=None, save_bank=False, max_line_bytes=MAX_LINE_BYTES, center=None):
    """Stream every example through the learner, once per pass; returns the run summary (a
    dict).

    The arguments are train's options (cli.py, option_groups.py): ``namespaces``, the
    FeatureSpace's namespace flags, and ``normalize`` (None: an initial model's own) are saved
    in the model so that ``predict`` makes the same features; ``multiclass``, ``classes`` and
    ``loss`` choose the task (tasks.choose; none of them: the labels of the first block do);
    ``passes``: a passes.Passes; ``progress_every``: -P's text (progress.Schedule);
    ``predictions``, ``examples``, ``test_only`` and ``audit``: the run's Extras;
    ``calibration``: the map predict --proba reads (calibration.py; None: the default, or an
    initial model's own). A hyperparameter "auto" in ``options``: a bank over ``grid`` chooses
    it (streamherd.selection), racing its members from ``race`` examples on (None: the
    default; 0 and ``save_bank``: none stop); ``save_bank``: also write every member beside the
    model; ``center``: --center (True) or --no-center (False; None: the learner's default). A
    run that learns from no labeled example fails (exit 2) and writes no model, unless
    ``allow_empty``. Inputs and outputs are checked before any work; the model is written to a
    temporary file that replaces ``final_model`` only at the end of a successful run.
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
    pass_paths = [resolve_output(beside_model(final_model, f"pass{k}"), paths, "model")
                  for k in range(1, passes.count + 1)] if passes.save_per_pass else None
    predictions_path = resolve_output(predictions, [*paths, *filter(None, [initial_model])],
                                      "predictions") if predictions is not None else None
    if race is not None and race < 0:
        raise StreamherdError(f"--race {race}: give the examples after which auto's first "
                              f"half stops (0: none stops)")
    # -t and --audit learn or show one model: no --algo is the default at its default value
    flags = ModelFlags(algo, options or {}, bits, bias, normalize, namespaces or {}, choice,
                       calibration, grid, 0 if save_bank else race,
                       tune=not (test_only or audit), center=center)
    model = OnlineModel.continued(initial_model, flags, skip_bad, learning=not test_only) \
        if initial_model is not None else OnlineModel.new(flags, skip_bad, learning=not test_only)
    bank_paths = _bank_paths(model, save_bank, final_model, paths, test_only, audit)
    refuse_shared_outputs([("model", final_model, model_path),
                           *(("--save_per_pass model", beside_model(final_model, f"pass{k}"), path)
                             for k, path in enumerate(pass_paths or (), 1)),
                           *(("--save-bank model", beside_model(final_model, f"bank{k}"), path)
                             for k, path in enumerate(bank_paths or (), 1)),
                           ("predictions", predictions, predictions_path)])
    def note(text):   # silenced by --quiet, as every notice (notices_silenced below)
        notice(f"streamherd: {text}")

    with contextlib.ExitStack() as stack:
        stack.enter_context(notices_silenced(quiet))
        inputs = stack.enter_context(replayable(paths, passes, note))
        extras = Extras(predictions_path and stack.enter_context(
            replaced_on_success(predictions_path, what="predictions")), examples, test_only,
            _learning_audit(model, fmt, skip_bad) if audit else None)

        def new_reader():
            return ChunkReader(inputs, fmt=fmt, features=model.read_space, skip_bad=skip_bad,
                               block_size=block_size, workers=TRAINING_WORKERS,
                               max_line_bytes=max_line_bytes,
                               process=None if model.task_from_labels
                               else model.task.check_labels)
        reader = new_reader()
        total = reader.total_bytes
        progress = ProgressiveValidation(quiet=quiet, total_bytes=total and total * passes.count,
                                         compile_watch=compilation.watch(quiet),
                                         schedule=schedule)
        chunks = stack.enter_context(PassChunks(passes, new_reader, reader, note))
        used, best, reader = _run_passes(passes, chunks, model, progress,
                                         lambda: _preamble(final_model, model, paths, passes,
                                                           extras),
                                         pass_paths, extras)
        _check_skipped(progress.bad_lines, progress.examples, skip_bad, reader.formats_seen,
                       "no model was written")
        if progress.labeled == 0 and not allow_empty:
            raise _nothing_learned(paths, final_model, model_path)
        summary = progress.finish({
            **({"passes used": used, **(best.summary(progress.loss_name) if best else {})}
               if passes.count > 1 else {}),
            **model.summary(progress.loss_name, _auto_record(best))})
        if progress.labeled and not progress.updates and not quiet and not test_only:
            progress.note(f"no update was made: every labeled example was predicted with margin "
                          f"to spare or had importance 0, so the model is the "
                          f"{'initial' if initial_model is not None else 'untrained'} one")
        with replaced_together():   # (before -p's predictions replace their file)
            if model_path is not None:
                save_model(model_path, *_chosen_model(model, progress, best))
            for k, meta, arrays in (model.member_models(_model_now(model, progress)[0])
                                    if bank_paths else ()):
                save_model(bank_paths[k], meta, arrays)
        _note_failed_members(model, bank_paths, progress)
    return summary


def _note_failed_members(model, bank_paths, progress):
    """--save-bank writes the members that did not fail: say which files were not written
    (a file of that name from an earlier run stays as it was)."""
    if not bank_paths:
        return
    missing = [str(bank_paths[k]) for k in model.failed_members()]
    if missing:
        progress.note(f"--save-bank: {len(missing)} member(s) failed and were not written: "
                      f"{', '.join(missing)} (any such file from an earlier run is left as it "
                      f"was)")


def _bank_paths(model, save_bank, final_model, paths, test_only, audit):
    """--save-bank's files (outputs.beside_model), checked as outputs; auto refused with -t and
    --audit (what would it choose, whose weights would it show)."""
    if test_only or audit:
        model.check_learns_one("-t learns nothing and --audit shows one model's weights")
    if not save_bank:
        return None
    if model.bank_size() is None or final_model is None:
        raise StreamherdError("--save-bank writes every model of an auto bank beside the "
                              "chosen one: give a hyperparameter auto (e.g. -C auto) and -f")
    return [resolve_output(beside_model(final_model, f"bank{k + 1}"), paths, "model")
            for k in range(model.bank_size())]


def _learning_audit(model, fmt, skip_bad):
    """train --audit's printer (standard output, as VW's)."""
    from streamherd.audit import LearningAudit

    return LearningAudit(sys.stdout, model.space, fmt, skip_bad)


def _check_test_only(test_only, final_model, passes):
    if test_only and final_model is not None:
        raise StreamherdError("-t predicts without learning, so there is no model to write: "
                              "drop -f (or -t)")
    if test_only and passes.count > 1:
        raise StreamherdError("-t predicts without learning: more passes would predict the "
                              "same again; drop --passes")


def _run_passes(passes, chunks, model, progress, preamble, pass_paths, extras):
    """The passes over the inputs (``chunks``: their PassChunks), the preamble printed once,
    each pass's model saved to ``pass_paths`` (if any), until ``extras.examples`` are read;
    returns (passes used, the BestPass or None without a holdout set, the last reader)."""
    best = BestPass(passes.early_terminate) if passes.holdout else None
    reader = chunks.reader
    used = 0
    while used < passes.count and not (best is not None and best.stop):
        progress.start_pass(show_holdout=passes.holdout and used > 0)
        limited = learn_from(chunks.of_pass(used + 1), model, progress,
                             None if used else preamble, passes.holdout,
                             lambda done=used: (reader.total_bytes or 0) * done
                             + chunks.bytes_done, extras)
        model.finish()
        used += 1
        holdout_loss = model.end_pass(progress)
        if pass_paths is not None:
            save_model(pass_paths[used - 1], *_model_now(model, progress))
        if best is not None:
            best.record(holdout_loss, lambda: _model_now(model, progress, copy=True))
        if limited:
            break
    return used, best, chunks.reader


def _auto_record(best):
    """The "auto" of the model the run writes when it is the best pass's (so that the summary
    describes that model, not the bank as the last pass left it); None: the bank's now."""
    return best.model[0].get("auto") if best is not None and best.model is not None else None


def _chosen_model(model, progress, best):
    """(meta, arrays) to write: the best pass's with a holdout set (said on stderr), else the
    model as the last pass left it."""
    if best is None:
        return _model_now(model, progress)
    progress.note(best.note(progress.loss_name))
    return best.model or _model_now(model, progress)


def _model_now(model, progress, copy=False):
    """(meta, arrays) of the model as it is; ``copy``: arrays that later learning leaves as
    they are."""
    meta = model.meta(progress.labeled, progress.average_loss)
    return meta, copied(model.arrays()) if copy else model.arrays()


def _ordinal(n):
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def learn_from(chunks, model, progress, preamble=None, holdout=False, bytes_done=None,
               extras=Extras()):
    """Every chunk of ``chunks`` through the OnlineModel, into the progress table; ``preamble()``
    (if any) goes before it, once the first example is read. ``holdout``: the chunks' held-out
    rows are marked (passes.mark_held_out); ``bytes_done()``: the input read so far (for the
    progress bar); ``extras``: -p's file, --examples. Returns whether --examples stopped it."""
    announced = preamble is None
    if extras.audit is not None:
        chunks = extras.audit.one_by_one(chunks, model.settle)
    for chunk in chunks:
        if extras.examples is not None:
            left = extras.examples - progress.examples
            if left <= 0:
                return True
            if chunk.n_examples > left:
                chunk = chunk.take(np.arange(left))
        if extras.audit is not None:
            extras.audit.before(model.learner, chunk)
        try:
            step = model.learn(chunk)
        except UpdateFailed as e:
            raise StreamherdError(
                f"{chunk.source}:{e.line}: {e.what}; scale the features (--normalize)"
                f"{' or ' + ' / '.join(e.gentler) if e.gentler else ''}; no model was written"
            ) from None
        if (extras.predictions or extras.audit) is not None and step.chunk.n_examples:
            _write_progressive(model, step, extras)
        progress.loss_name = model.task.loss_name
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


def _write_progressive(model, step, extras):
    """-p's line of each example of ``step`` (the prediction before its update), and with
    --audit that line and the example's features on standard output."""
    progressive = Scored(step.chunk, step.predictions, step.predictions, None, 0)
    lines = _tagged(step.chunk, model.lines(progressive, tasks.LABEL))
    if extras.predictions is not None:
        extras.predictions.write("\n".join(lines) + "\n")
    if extras.audit is not None:   # one example at a time
        task = model.task
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


def _preamble(final_model, model, paths, passes=Passes(), extras=Extras()):
    """What VW prints before its table: where the model goes, the learner, the features, the
    task (as the labels of the first block chose it, and why), the inputs and the passes."""
    lines = []
    if final_model:
        lines.append(("final_regressor", final_model))
    if extras.test_only:
        lines.append(("only testing", "-t: every example predicted, none learned from"))
    algo, settings = model.describe_learner()
    space = model.space
    task = model.task.description()
    if model.task_from_labels:
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
            block_size=DEFAULT_BLOCK_SIZE, proba=False, scores=False, audit=False,
            max_line_bytes=MAX_LINE_BYTES):
    """Write one prediction per example; returns (mistakes, labeled examples) (for regression:
    (sum of squared errors, labeled examples)). The arguments are predict's options (cli.py);
    ``output`` is written to a temporary file that replaces it at the end of a successful run.
    """
    paths = list(paths or ["-"])
    check_inputs(paths)   # the model: load_model's own messages
    if output is not None:
        output_path = resolve_output(output, [*paths, os.fspath(model_path)], "predictions")
    else:
        check_stdout_output(paths)
    model = for_predicting(model_path, skip_bad)
    task = model.task
    if sum([proba, raw, scores]) > 1:
        raise StreamherdError("--proba, --raw and --scores each choose the output; pass one of "
                              "them")
    shown = tasks.PROBA if proba else tasks.SCORES if scores else tasks.RAW if raw else tasks.LABEL
    model.check_output(shown, model_path)
    weights = model.audit_weights() if audit else None
    compilation.watch(quiet)
    # the task's targets, scores, predictions and loss of a chunk depend on no chunk before it:
    # the parser threads compute them (the kernels release the GIL)
    reader = ChunkReader(paths, fmt=fmt, features=model.space, skip_bad=skip_bad,
                         block_size=block_size, process=model.score,
                         max_line_bytes=max_line_bytes)
    destination = "standard output" if output is None else str(output)
    written = skipped = examples = labeled = loss = 0
    try:
        with (replaced_on_success(output_path, what="predictions") if output is not None
              else contextlib.nullcontext(sys.stdout)) as sink:
            for scored in (chunk.derived for chunk in reader):
                chunk = scored.chunk
                values = model.lines(scored, shown)
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
                          f"predictions"
                          f"{'; ' + str(output) + ' was left as it was' if output else ''}"
                          ) from None
    except BrokenPipeError:
        raise   # the reader of stdout went away ('| head'): the CLI ends quietly
    except OSError as e:
        raise StreamherdError(f"cannot write the predictions to {destination}: "
                              f"{e.strerror or e}; "
                              f"{'free some space' if e.errno == errno.ENOSPC else ''}"
                              f"{'check where they go' if e.errno != errno.ENOSPC else ''}"
                              f"{' (' + str(output) + ' was left as it was)' if output else ''}"
                              ) from None
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
