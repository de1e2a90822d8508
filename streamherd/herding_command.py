"""``streamherd herd``: read the data, check the options, choose --ratio, train, write the
transductive predictions (-p) and the model (-f). The algorithm is streamherd/herding.py."""
import dataclasses
import math
import os
import time

import numpy as np

from streamherd import compilation, herding
from streamherd.errors import StreamherdError, say
from streamherd.model.herding import save as save_herding
from streamherd.outputs import (check_inputs, refuse_shared_outputs, replaced_on_success,
                                resolve_output)


def parse_ratios(text):
    try:
        ratios = tuple(float(r) for r in text.split(",") if r.strip())
    except ValueError:
        ratios = ()
    if not ratios or any(not np.isfinite(r) or r <= 0 for r in ratios):
        raise StreamherdError(f"--ratio '{text}': give positive numbers separated by commas "
                              f"(e.g. 0.3,1,3,10,30)")
    return ratios


def _check_outputs(train_file, test, predictions, final_model):
    inputs = [train_file, *([test] if test else [])]
    check_inputs(inputs)
    if predictions is not None and test is None:
        raise StreamherdError("-p writes the --test file's predictions; pass --test FILE")
    if predictions is None and final_model is None:
        raise StreamherdError("herd writes nothing without -f MODEL or --test FILE -p PRED; "
                              "pass one of them")
    refuse_shared_outputs([(what, p, resolve_output(p, inputs, what)) for p, what in
                           ((final_model, "model"), (predictions, "predictions"))
                           if p is not None])


def run_herd(train_file, test=None, predictions=None, final_model=None, ratio="1",
             validation=0.2, input_scale=1.0, fmt="auto", quiet=False, **option_values):
    """The command: see cli.herd."""
    tell = (lambda line: None) if quiet else say
    compilation.watch(quiet)   # a first run that compiles the kernels says so, as train does
    ratios = parse_ratios(ratio)
    if len(ratios) > 1 and not 0 < validation < 1:
        raise StreamherdError(f"--validation must be in (0, 1), got {validation}")
    if not (np.isfinite(input_scale) and input_scale > 0):
        raise StreamherdError(f"--input-scale must be a positive number, got {input_scale}")
    _check_outputs(train_file, test, predictions, final_model)
    options = herding.Options(ratio=ratios[0], **option_values)
    chunk = herding.read_file(train_file, fmt)
    features = herding.Features.of(chunk, input_scale)
    rows = features.rows(chunk)
    classes = np.unique(rows.labels)
    if len(classes) < 2:
        raise StreamherdError(f"{train_file}: every example has the label {classes[0]:g}; a "
                              f"classifier needs two classes")
    test_rows = features.rows(herding.read_file(test, fmt)) if test else None
    herding.check_options(options, rows.n_rows, features.n_columns, len(classes),
                          0 if test_rows is None else test_rows.n_rows)
    if len(ratios) > 1:
        chosen = herding.choose_ratio(rows, classes, options, ratios, validation, tell)
        options = dataclasses.replace(options, ratio=chosen)
    started = time.perf_counter()
    runs, votes = herding.train(rows, classes, options, test_rows)
    _summary(tell, runs, options, rows.n_rows, time.perf_counter() - started)
    if votes is not None:
        _write_predictions(predictions, votes, classes, test_rows, tell)
    if final_model is not None:
        save_herding(final_model, runs, features, classes, options,
                     {"examples": rows.n_rows, "iterations": [r.iterations for r in runs]})


def _summary(tell, runs, options, n_rows, seconds):
    iterations = sum(r.iterations for r in runs)
    converged = sum(r.converged for r in runs)
    tell(f"herd {options.mode}: {len(runs)} herder(s), M={options.hidden}, "
         f"ratio={options.ratio:g}, {iterations} iterations "
         f"({iterations / len(runs) / math.ceil(n_rows / options.batch):.1f} epochs each) "
         f"in {seconds:.1f} s; "
         f"{converged} reached an error-free epoch, the others stopped at --max-epochs "
         f"{options.max_epochs} (last epoch's training errors: "
         f"{sum(r.last_epoch_errors for r in runs)})")


def _write_predictions(path, votes, classes, test_rows, tell):
    predicted = classes[np.argmax(votes, axis=1)]
    error = float(np.mean(predicted != test_rows.labels))
    tell(f"test error rate = {error:.6f} ({int(round(error * test_rows.n_rows))} mistakes in "
         f"{test_rows.n_rows} examples)")
    if path is None:
        return
    try:
        with replaced_on_success(os.fspath(path), what="predictions") as sink:
            sink.write("".join(f"{c:g}\n" for c in predicted))
    except OSError as e:
        raise StreamherdError(f"cannot write the predictions to {path}: {e.strerror}") from None
