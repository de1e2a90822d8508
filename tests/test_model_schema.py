"""The model schema: load_model checks a model whole (every meta key with its type and range,
every array with its name, dtype, shape and values), so a damaged model is a one-line error of
``predict -m`` and ``train -i``, never a traceback; every model streamherd writes still loads,
exactly as saved."""
import json
import os
import tempfile
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st

from streamherd import learners
from streamherd.errors import StreamherdError
from streamherd.model import load_model

from helpers import run_cli_here

KINDS = ("binary", "joint", "ova", "regression")
BITS = 3
DATA = {"binary": "binary.svm", "joint": "multi.svm", "ova": "multi.svm",
        "regression": "regression.svm"}
TRAIN_OPTIONS = {"binary": {}, "joint": {"multiclass": "joint"}, "ova": {"multiclass": "ova"},
                 "regression": {"loss": "squared"}}


def _has_regression(algo):
    return learners.spec(algo).regression is not None


EVERY_MODEL = [(algo, kind) for algo in learners.REGISTRY for kind in KINDS
               if kind != "regression" or _has_regression(algo)]


def _rows(rng, labels):
    lines = []
    for label in labels:
        slots = sorted(set(rng.integers(1, 20, size=4).tolist()))
        lines.append(f"{label} " + " ".join(f"{j}:{rng.normal():.3f}" for j in slots))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with three small data files: binary (1/-1), classes a/b/c, real labels."""
    folder = tmp_path_factory.mktemp("schema")
    rng = np.random.default_rng(7)
    (folder / DATA["binary"]).write_text(_rows(rng, rng.choice(["1", "-1"], 40)))
    (folder / DATA["joint"]).write_text(_rows(rng, rng.choice(["a", "b", "c"], 40)))
    (folder / DATA["regression"]).write_text(
        _rows(rng, [f"{v:.3f}" for v in rng.normal(size=40)]))
    return folder


@pytest.fixture(scope="module")
def model(folder):
    """model(algo, kind) -> the path of a model trained on the kind's data file (cached)."""
    from streamherd.training import train

    made = {}

    def make(algo, kind):
        if (algo, kind) not in made:
            path = folder / f"{algo}-{kind}.npz"
            train([str(folder / DATA[kind])], algo=algo, bits=BITS, final_model=str(path),
                  quiet=True, **TRAIN_OPTIONS[kind])
            made[algo, kind] = path
        return made[algo, kind]

    return make


def _raw(path):
    """(meta, members) read with numpy and json alone, no check: what the file holds."""
    with np.load(path, allow_pickle=False) as archive:
        meta = json.loads(archive["meta"].item())
        arrays = {name: archive[name] for name in archive.files if name != "meta"}
    return meta, arrays


# the voted perceptron's update list (README's "Model files"): name -> its length in one
# learner's model, from that learner's meta (one-versus-all: the classes' lists, concatenated)
UPDATE_LIST = {
    "support_indptr": lambda m: m["support"] + 1,
    "support_indices": lambda m: m["support_nonzeros"],
    "support_values": lambda m: m["support_nonzeros"],
    "support_coefficients": lambda m: m["support"],
    "support_counts": lambda m: m["support"],
    "support_labels": lambda m: m["support"],
    "support_rivals": lambda m: m["support"],
    "vote_totals": lambda m: 2,
}


def _shapes(meta):
    """name -> the dense shape of each array of a model (README's "Model files")."""
    d = 1 << meta["bits"]
    rows = d * (len(meta["classes"]) if meta.get("task") == "multiclass" else 1)
    columns = d if meta.get("multiclass") == "ova" else rows
    learner = meta.get("learner", {})
    learners_meta = learner.get("ova", [learner])
    return {name: (rows, columns) if name in ("covariance", "inverse") else
            (sum(UPDATE_LIST[name](m) for m in learners_meta),) if name in UPDATE_LIST else
            (rows,) for name in meta["fill"]}


def _dense(path):
    """(meta, arrays) of a format-3 file decoded with numpy alone (README's "Model files"):
    each vector its fill but at its indices; each square block of a matrix its fill on the
    diagonal, 0 elsewhere, but on its slots' rows and columns, which the values hold row by row.
    An older file's arrays are dense already."""
    meta, members = _raw(path)
    if meta["format_version"] < 3:
        return meta, members
    arrays = {}
    for name, shape in _shapes(meta).items():
        fill, values = meta["fill"][name], members[f"{name}.values"]
        if len(shape) == 1:
            arrays[name] = np.full(shape, float(fill))
            arrays[name][members[f"{name}.indices"]] = values
            continue
        rows, columns = shape
        dense = np.zeros(shape)
        slots, start = members[f"{name}.slots"], 0
        for first in range(0, rows, columns):
            dense[first:first + columns] += np.eye(columns) * fill
            kept = slots[(slots >= first) & (slots < first + columns)]
            block = values[start:start + len(kept) ** 2].reshape(len(kept), len(kept))
            dense[np.ix_(kept, kept - first)] = block
            start += len(kept) ** 2
        assert start == len(values)
        arrays[name] = dense
    return meta, arrays


def _as_format_2(path):
    """(meta, dense arrays) of the model as format 2 held it."""
    meta, arrays = _dense(path)
    meta = {**meta, "format_version": 2}
    del meta["fill"]
    return meta, arrays


def _write(path, meta, arrays, meta_text=None):
    entry = np.array(json.dumps(meta) if meta_text is None else meta_text)
    with open(path, "wb") as f:
        np.savez(f, meta=entry, **arrays)
    return path


# ---------------------------------------------------------------- every model streamherd writes

@pytest.mark.parametrize("algo, kind", EVERY_MODEL, ids=[f"{a}-{k}" for a, k in EVERY_MODEL])
def test_every_model_streamherd_writes_loads_exactly_as_saved(model, algo, kind):
    path = model(algo, kind)
    meta, arrays = load_model(path)
    raw_meta, raw_arrays = _dense(path)
    assert meta == raw_meta and meta["format_version"] == 3
    cls = learners.learner_class(algo)
    assert set(arrays) == set(raw_arrays) == set(cls.saved_arrays(learners.spec(algo).covariance))
    for name, array in raw_arrays.items():
        assert arrays[name].dtype == array.dtype and arrays[name].shape == array.shape
        assert _same_bits(arrays[name], array), name
    # the shapes of README's "Model files"
    d = 1 << BITS
    k = len(meta["classes"]) if kind in ("joint", "ova") else 1
    for name, array in arrays.items():
        if name in UPDATE_LIST:
            assert array.shape == _shapes(meta)[name]
        elif name in ("covariance", "inverse"):
            assert array.shape == ((k * d, d) if kind == "ova" else (k * d, k * d))
        else:
            assert array.shape == (k * d,)


def _same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _scrambled(meta, arrays, rng):
    """The arrays with random slots changed to values of every sign, a -0.0, a subnormal and
    the fresh value itself; a matrix's blocks in random rows and columns, not symmetric; the
    entries that must stay positive kept positive."""
    from streamherd.model import initial_values

    fills = initial_values(meta)
    changed = {}
    for name, array in arrays.items():
        array = array.copy()
        if name in UPDATE_LIST:   # its structure is checked on loading: kept as trained
            changed[name] = array
            continue
        flat = array.reshape(-1) if array.ndim == 1 else array
        if array.ndim == 1:
            slots = rng.choice(len(array), size=min(len(array), 9), replace=False)
            flat[slots] = rng.normal(size=len(slots))
            flat[slots[:3]] = [-0.0, 5e-324, fills[name]]
            if name in ("variance", "diagonal"):
                flat[slots] = np.abs(flat[slots]) + 0.5
        else:
            columns = array.shape[1]
            for first in range(0, array.shape[0], columns):
                kept = rng.choice(columns, size=3, replace=False)
                block = array[first:first + columns]
                block[np.ix_(kept, kept)] += rng.normal(scale=0.1, size=(3, 3))
                block[kept, kept] = np.abs(block[kept, kept]) + 0.5
                block[kept[0], kept[1]] = -0.0
        changed[name] = array
    return changed


@pytest.mark.parametrize("algo, kind", EVERY_MODEL, ids=[f"{a}-{k}" for a, k in EVERY_MODEL])
def test_any_state_of_every_learner_and_task_round_trips_bit_for_bit(model, tmp_path, algo,
                                                                     kind):
    """save_model then load_model gives back the arrays saved, bit for bit, and the file holds
    them (decoded with numpy alone)."""
    from streamherd.model import save_model

    meta, arrays = load_model(model(algo, kind))
    meta = {k: v for k, v in meta.items()
            if k not in ("format", "format_version", "streamherd_version", "fill")}
    arrays = _scrambled(meta, arrays, np.random.default_rng(len(algo) * 7 + len(kind)))
    path = tmp_path / "m.npz"
    save_model(path, meta, arrays)
    _, loaded = load_model(path)
    _, decoded = _dense(path)
    for name, array in arrays.items():
        assert _same_bits(loaded[name], array), name
        assert _same_bits(decoded[name], array), name


@pytest.mark.parametrize("algo, kind, names", [("nherd-p", "binary", ("mean", "variance")),
                                               ("arow-d", "joint", ("mean", "variance")),
                                               ("sop", "joint", ("label_sum", "diagonal"))])
def test_the_learner_takes_the_loaded_arrays_without_a_copy(model, algo, kind, names):
    """load_model writes the vectors a learner keeps side by side (Learner.interleaved) into
    the columns of one array, which the learner takes as they are: predicting holds the dense
    model once. A joint learner that keeps each feature's classes side by side
    (Learner.classes_side_by_side) rearranges them into arrays of its own instead, and keeps no
    reference to the loaded ones (they are freed once loaded)."""
    from streamherd import tasks

    meta, arrays = load_model(model(algo, kind))
    learner = tasks.of_model(meta, False).new_learner(
        algo, 1 << meta["bits"], meta["hyperparameters"], dict(arrays), meta.get("learner", {}))
    if learner.classes_side_by_side and learner.blocks > 1:
        for name in names:
            assert not np.shares_memory(getattr(learner, name), arrays[name])
            np.testing.assert_array_equal(learner.state()[name], arrays[name])
        return
    for name in names:
        assert getattr(learner, name) is arrays[name]
    assert arrays[names[0]].base is arrays[names[1]].base


def _predict(path, data, tmp, **flags):
    from streamherd.training import predict

    out = os.path.join(tmp, "out.txt")
    predict(str(path), [str(data)], output=out, quiet=True, **flags)
    with open(out) as f:
        return f.read()


@pytest.mark.parametrize("algo, kind", [("avg-perceptron", "ova"), ("sop", "binary"),
                                        ("arow-full", "joint"), ("pa1", "regression"),
                                        ("cw-full", "ova"), ("nherd-d", "regression"),
                                        ("scw2", "joint"), ("sop-full", "ova")])
def test_predict_is_the_same_as_without_the_checks(model, folder, monkeypatch, tmp_path, algo,
                                                   kind):
    """predict through load_model, and through a loader that only reads the file (the numpy and
    json reads load_model did before it checked the schema), print the same."""
    from streamherd.model import online

    path = model(algo, kind)
    flags = [{}, {"scores": True} if kind in ("joint", "ova") else {"raw": True}]
    checked = [_predict(path, folder / DATA[kind], tmp_path, **f) for f in flags]
    monkeypatch.setattr(online, "load_model", lambda p: _dense(p))
    unchecked = [_predict(path, folder / DATA[kind], tmp_path, **f) for f in flags]
    assert checked == unchecked
    assert all(checked)


def test_format_1_binary_model_loads_and_predicts_as_before(model, folder, tmp_path):
    """A format-1 file (before multiclass: no task, multiclass keys nor normalize)."""
    meta, arrays = _as_format_2(model("avg-perceptron", "binary"))
    old = {key: value for key, value in meta.items() if key not in ("task", "normalize")}
    old["format_version"] = 1
    path = _write(tmp_path / "old.npz", old, arrays)
    assert load_model(path)[0] == old
    assert _predict(path, folder / DATA["binary"], tmp_path, raw=True) == \
        _predict(model("avg-perceptron", "binary"), folder / DATA["binary"], tmp_path, raw=True)


@pytest.mark.parametrize("read", [_raw, _as_format_2], ids=["format-3", "format-2"])
def test_optional_keys_of_older_files_may_be_absent(model, tmp_path, read):
    meta, arrays = read(model("pa2", "binary"))
    for key in ("normalize", "task", "examples", "progressive_loss", "labels",
                "streamherd_version"):
        del meta[key]
    meta["hyperparameters"] = {}   # a missing hyperparameter is its default
    load_model(_write(tmp_path / "m.npz", meta, arrays))


def test_require_arrays_still_names_a_missing_array(model):
    from streamherd.model import require_arrays

    path = model("arow-p", "binary")
    _, arrays = load_model(path)
    require_arrays(path, arrays, ["mean", "variance"])
    with pytest.raises(StreamherdError, match="no 'covariance' array"):
        require_arrays(path, arrays, ["covariance"])


# ---------------------------------------------------------------- damaged models

def _delete(key):
    def change(meta, arrays):
        del meta[key]
    return change


def _set(*keys, value):
    def change(meta, arrays):
        target = meta
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


def _array(name, make):
    def change(meta, arrays):
        arrays[name] = make(arrays[name]) if name in arrays else make(arrays["mean"])
    return change


def _drop_array(name):
    def change(meta, arrays):
        del arrays[name]
    return change


def _with_diagonal(value):
    def make(matrix):
        matrix = matrix.copy()
        matrix[1, 1] = value
        return matrix
    return make


def _with_entry(index, value):
    def make(vector):
        vector = vector.copy()
        vector[index] = value
        return vector
    return make


# (id, (algo, kind) of the real model it starts from, change of (meta, arrays) in place,
#  words of the message)
DAMAGE = [
    ("no-algo", ("pa2", "binary"), _delete("algo"), "no 'algo'"),
    ("no-hyperparameters", ("pa2", "binary"), _delete("hyperparameters"), "no 'hyperparameters'"),
    ("no-bias", ("pa2", "binary"), _delete("bias"), "no 'bias'"),
    ("no-bits", ("pa2", "binary"), _delete("bits"), "no 'bits'"),
    ("algo-unknown", ("pa2", "binary"), _set("algo", value="svm"), "'algo'"),
    ("algo-number", ("pa2", "binary"), _set("algo", value=3), "'algo'"),
    ("algo-alias", ("arow-p", "binary"), _set("algo", value="arow"), "'algo'"),
    ("version-number", ("pa2", "binary"), _set("streamherd_version", value=1),
     "'streamherd_version'"),
    ("bits-bool", ("pa2", "binary"), _set("bits", value=True), "'bits'"),
    ("bits-string", ("pa2", "binary"), _set("bits", value="3"), "'bits'"),
    ("bits-float", ("pa2", "binary"), _set("bits", value=3.0), "'bits'"),
    ("bits-too-many", ("pa2", "binary"), _set("bits", value=40), "'bits'"),
    ("bits-other", ("pa2", "binary"), _set("bits", value=BITS + 1), "array 'mean' has shape"),
    ("hyperparameters-list", ("pa2", "binary"), _set("hyperparameters", value=[1.0]),
     "'hyperparameters'"),
    ("hyperparameter-string", ("pa2", "binary"), _set("hyperparameters", "C", value="1"),
     "hyperparameter C"),
    ("hyperparameter-bool", ("nherd-p", "binary"), _set("hyperparameters", "a", value=True),
     "hyperparameter a"),
    ("hyperparameter-nan", ("arow-p", "binary"), _set("hyperparameters", "r", value=float("nan")),
     "hyperparameter r"),
    ("hyperparameter-huge", ("pa2", "binary"), _set("hyperparameters", "C", value=2 ** 2000),
     "hyperparameter C"),
    ("hyperparameter-negative", ("pa2", "binary"), _set("hyperparameters", "C", value=-1.0),
     "out of range"),
    ("hyperparameter-unknown", ("pa2", "binary"), _set("hyperparameters", "r", value=1.0),
     "does not take"),
    ("epsilon-in-binary", ("pa", "binary"), _set("hyperparameters", "epsilon", value=0.1),
     "does not take"),
    ("epsilon-negative", ("pa", "regression"), _set("hyperparameters", "epsilon", value=-0.1),
     "out of range"),
    ("eta-out-of-range", ("cw", "binary"), _set("hyperparameters", "eta", value=1.5),
     "out of range"),
    ("bias-string", ("pa2", "binary"), _set("bias", value="yes"), "'bias'"),
    ("bias-int", ("pa2", "binary"), _set("bias", value=1), "'bias'"),
    ("normalize-string", ("pa2", "binary"), _set("normalize", value="no"), "'normalize'"),
    ("normalize-null", ("pa2", "binary"), _set("normalize", value=None), "'normalize'"),
    ("task-unknown", ("pa2", "binary"), _set("task", value="ranking"), "'task'"),
    ("task-multiclass-in-format-1", ("pa2", "joint"), _set("format_version", value=1),
     "format-1"),
    ("regression-without-form", ("cw", "binary"), _set("task", value="regression"),
     "no squared-loss form"),
    ("multiclass-mode-unknown", ("pa2", "joint"), _set("multiclass", value="all-pairs"),
     "'multiclass'"),
    ("multiclass-mode-missing", ("pa2", "ova"), _delete("multiclass"), "no 'multiclass'"),
    ("multiclass-mode-in-binary", ("pa2", "binary"), _set("multiclass", value="ova"),
     "'multiclass'"),
    ("classes-missing", ("pa2", "joint"), _delete("classes"), "no 'classes'"),
    ("classes-string", ("pa2", "joint"), _set("classes", value="a,b,c"), "'classes'"),
    ("classes-empty", ("pa2", "joint"), _set("classes", value=[]), "'classes'"),
    ("class-number", ("pa2", "joint"), _set("classes", 1, value=2), "class list"),
    ("class-blank", ("pa2", "joint"), _set("classes", 1, value="b c"), "class list"),
    ("class-empty", ("pa2", "joint"), _set("classes", 1, value=""), "class list"),
    ("class-twice", ("pa2", "joint"), _set("classes", value=["1", "1.0", "c"]), "twice"),
    ("class-not-utf8", ("pa2", "joint"), _set("classes", 1, value="\ud800"), "class list"),
    ("fixed-classes-string", ("pa2", "joint"), _set("fixed_classes", value="yes"),
     "'fixed_classes'"),
    ("labels-list", ("pa2", "binary"), _set("labels", value=[-1, 1]), "'labels'"),
    ("label-positive-not-positive", ("pa2", "binary"), _set("labels", "positive", value=0.0),
     "positive label"),
    ("label-negative-positive", ("pa2", "binary"), _set("labels", "negative", value=2.0),
     "negative label"),
    ("label-nan", ("pa2", "binary"), _set("labels", "negative", value=float("nan")),
     "negative label"),
    ("labels-extra", ("pa2", "binary"), _set("labels", "neutral", value=0.0), "'neutral'"),
    ("label-string", ("pa2", "binary"), _set("labels", "positive", value="1"),
     "positive label"),
    ("examples-negative", ("pa2", "binary"), _set("examples", value=-1), "'examples'"),
    ("examples-string", ("pa2", "binary"), _set("examples", value="40"), "'examples'"),
    ("progressive-loss-string", ("pa2", "binary"), _set("progressive_loss", value="low"),
     "'progressive_loss'"),
    ("learner-list", ("pa2", "binary"), _set("learner", value=[]), "'learner'"),
    ("learner-unknown-scalar", ("nherd-p", "binary"), _set("learner", "steps", value=3),
     "learner's meta"),
    ("examples-seen-string", ("avg-perceptron", "binary"),
     _set("learner", "examples_seen", value="40"), "examples_seen"),
    ("examples-seen-negative", ("avg-perceptron", "joint"),
     _set("learner", "examples_seen", value=-4), "examples_seen"),
    ("examples-seen-missing", ("avg-perceptron", "binary"), _set("learner", value={}),
     "learner's meta"),
    ("ova-learners-too-few", ("avg-perceptron", "ova"),
     lambda meta, arrays: meta["learner"]["ova"].pop(), "one entry per class"),
    ("ova-learner-bad", ("avg-perceptron", "ova"),
     _set("learner", "ova", 0, "examples_seen", value=1.5), "examples_seen"),
    ("format-version-bool", ("pa2", "binary"), _set("format_version", value=True),
     "format version"),
    # arrays
    ("mean-rank-2", ("pa2", "binary"), _array("mean", lambda a: np.zeros((len(a), 3))),
     "array 'mean' has shape"),
    ("mean-too-short", ("arow-p", "joint"), _array("mean", lambda a: a[:-1]),
     "array 'mean' has shape"),
    ("variance-missing", ("arow-p", "binary"), _drop_array("variance"), "no 'variance' array"),
    ("average-missing", ("avg-perceptron", "joint"), _drop_array("average"),
     "no 'average' array"),
    ("array-unknown", ("pa2", "binary"), _array("weights", lambda a: a), "unknown array"),
    ("array-of-another-learner", ("pa2", "binary"), _array("variance", np.ones_like),
     "unknown array"),
    ("mean-float32", ("pa2", "binary"), _array("mean", lambda a: a.astype(np.float32)),
     "dtype float32"),
    ("covariance-vector", ("arow-full", "binary"),
     _array("covariance", lambda a: np.diagonal(a).copy()), "array 'covariance' has shape"),
    ("covariance-ova-shape-in-joint", ("nherd-full", "joint"),
     _array("covariance", lambda a: a[:, :1 << BITS].copy()), "array 'covariance' has shape"),
    ("covariance-joint-shape-in-ova", ("nherd-full", "ova"),
     lambda meta, arrays: arrays.update(covariance=np.eye(len(arrays["mean"]))),
     "array 'covariance' has shape"),
    ("mean-infinite", ("pa2", "binary"), _array("mean", _with_entry(2, np.inf)), "infinity"),
    ("variance-zero", ("scw1", "joint"), _array("variance", _with_entry(3, 0.0)), "<= 0"),
    ("covariance-diagonal-negative", ("cw-full", "binary"),
     _array("covariance", _with_diagonal(-1.0)), "<= 0"),
    ("covariance-diagonal-zero-ova", ("arow-full", "ova"),
     _array("covariance", _with_diagonal(0.0)), "<= 0"),
    ("sop-diagonal-zero", ("sop", "binary"), _array("diagonal", _with_entry(0, 0.0)), "<= 0"),
    ("sop-inverse-diagonal-negative", ("sop-full", "joint"),
     _array("inverse", _with_diagonal(-2.0)), "<= 0"),
    ("average-overflows", ("avg-perceptron", "binary"),
     _array("average", _with_entry(1, -1e308)), "overflows"),
]

# the cases above that change the dense arrays (or the shape they must have): on format 2
DENSE_DAMAGE = {"bits-other"} | {case[0] for case in DAMAGE[DAMAGE.index(next(
    case for case in DAMAGE if case[0] == "mean-rank-2")):]}


def _member(name, make):
    def change(meta, members):
        members[name] = make(members[name].copy())
    return change


def _set_entry(index, value):
    def make(array):
        array[index] = value
        return array
    return make


def _swap_first_two(array):
    array[[0, 1]] = array[[1, 0]]
    return array


def _block_diagonal_entry(value):
    """The first kept diagonal entry of the first block of a matrix's values."""
    def change(meta, members):
        name = "covariance" if "covariance.values" in members else "inverse"
        members[f"{name}.values"] = members[f"{name}.values"].copy()
        members[f"{name}.values"][0] = value
    return change


# format 3: the sparse members and the fills (id, base model, change of (meta, members), words)
SPARSE_DAMAGE = [
    ("index-out-of-range", ("pa2", "binary"), _member("mean.indices", _set_entry(-1, 1 << BITS)),
     "out of range"),
    ("index-negative", ("pa2", "joint"), _member("mean.indices", _set_entry(0, -1)),
     "out of range"),
    ("indices-unsorted", ("pa2", "binary"), _member("mean.indices", _swap_first_two),
     "not strictly increasing"),
    ("index-twice", ("arow-p", "binary"), _member("variance.indices", _set_entry(1, 0)),
     "not strictly increasing"),
    ("indices-float", ("pa2", "binary"), _member("mean.indices", lambda a: a.astype(float)),
     "array 'mean.indices' has shape"),
    ("indices-int32", ("pa2", "binary"), _member("mean.indices", lambda a: a.astype(np.int32)),
     "dtype int32"),
    ("indices-too-many", ("pa2", "binary"),
     lambda meta, m: m.update({"mean.indices": np.arange(9), "mean.values": np.ones(9)}),
     "at most 8"),
    ("values-float32", ("pa2", "ova"), _member("mean.values", lambda a: a.astype(np.float32)),
     "dtype float32"),
    ("values-too-few", ("pa2", "binary"), _member("mean.values", lambda a: a[:-1]),
     "entries for"),
    ("values-missing", ("pa2", "binary"), lambda meta, m: m.pop("mean.values"),
     "no 'mean.values' array"),
    ("value-nan", ("pa2", "regression"), _member("mean.values", _set_entry(0, np.nan)),
     "NaN or infinity"),
    ("value-infinite", ("sop", "joint"), _member("label_sum.values", _set_entry(1, -np.inf)),
     "NaN or infinity"),
    ("variance-value-zero", ("arow-p", "binary"), _member("variance.values", _set_entry(0, 0.0)),
     "<= 0"),
    ("dense-mean", ("pa2", "binary"), lambda meta, m: m.update(mean=np.zeros(1 << BITS)),
     "unknown array"),
    ("fill-missing", ("pa2", "binary"), _delete("fill"), "no 'fill'"),
    ("fill-list", ("pa2", "binary"), _set("fill", value=[0.0]), "'fill'"),
    ("fill-unknown-array", ("pa2", "binary"), _set("fill", "weights", value=0.0), "'fill'"),
    ("fill-nan", ("pa2", "binary"), _set("fill", "mean", value=float("nan")), "fill of 'mean'"),
    ("fill-string", ("nherd-p", "binary"), _set("fill", "mean", value="0"), "fill of 'mean'"),
    ("fill-variance-zero", ("arow-p", "joint"), _set("fill", "variance", value=0.0),
     "fill of 'variance'"),
    ("fill-inverse-negative", ("sop-full", "binary"), _set("fill", "inverse", value=-1.0),
     "fill of 'inverse'"),
    ("slot-out-of-range", ("arow-full", "binary"),
     _member("covariance.slots", _set_entry(-1, 1 << BITS)), "out of range"),
    ("slots-unsorted", ("cw-full", "joint"), _member("covariance.slots", _swap_first_two),
     "not strictly increasing"),
    ("slots-values-too-few", ("sop-full", "ova"), _member("inverse.values", lambda a: a[:-1]),
     "slots need"),
    ("slots-missing", ("nherd-full", "binary"), lambda meta, m: m.pop("covariance.slots"),
     "no 'covariance.slots' array"),
    ("covariance-diagonal-zero", ("cw-full", "binary"), _block_diagonal_entry(0.0), "<= 0"),
    ("inverse-diagonal-negative", ("sop-full", "joint"), _block_diagonal_entry(-2.0), "<= 0"),
]

# files whose meta is not a JSON object of ours, or whose arrays cannot be read
_NESTED = "[" * 100_000 + "]" * 100_000


def _raw_meta_text(text):
    def write(meta, arrays, path):
        return _write(path, meta, arrays, meta_text=text)
    return write


def _meta_entry(entry):
    def write(meta, arrays, path):
        with open(path, "wb") as f:
            np.savez(f, meta=entry(meta), **arrays)
        return path
    return write


def _deeply_nested(meta, arrays, path):
    text = json.dumps(meta)[:-1] + ', "nested": ' + _NESTED + "}"
    return _write(path, meta, arrays, meta_text=text)


def _huge_array_header(name):
    """``name`` whose .npy header claims 2^40 entries, with none behind it."""
    def write(meta, arrays, path):
        _write(path, meta, {k: v for k, v in arrays.items() if k != name})
        header = np.lib.format.header_data_from_array_1_0(arrays[name])
        header["shape"] = (1 << 40,)
        with zipfile.ZipFile(path, "a") as z, z.open(f"{name}.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, header)
        return path
    return write


def _truncated_array(name):
    """``name`` with the right header but half its data."""
    def write(meta, arrays, path):
        _write(path, meta, {k: v for k, v in arrays.items() if k != name})
        with zipfile.ZipFile(path, "a") as z, z.open(f"{name}.npy", "w") as f:
            np.lib.format.write_array_header_1_0(
                f, np.lib.format.header_data_from_array_1_0(arrays[name]))
            f.write(arrays[name][: len(arrays[name]) // 2].tobytes())
        return path
    return write


def _text_member(meta, arrays, path):
    """A zip member that is no .npy array."""
    _write(path, meta, arrays)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("notes.txt", "hello")
    return path


def _object_array(meta, arrays, path):
    return _write(path, meta, {**arrays, "mean": arrays["mean"].astype(object)})


WRITTEN = [
    ("meta-deeply-nested", _deeply_nested, "not a streamherd model"),
    ("meta-only-nesting", _raw_meta_text(_NESTED), "not a streamherd model"),
    ("meta-1d", _meta_entry(lambda meta: np.array([json.dumps(meta)])), "not a streamherd model"),
    ("meta-bytes-not-utf8",   # UTF-8 bytes are the meta as written; these are not UTF-8
     _meta_entry(lambda meta: np.array(b"\xff" + json.dumps(meta).encode())),
     "not a streamherd model"),
    ("meta-number", _meta_entry(lambda meta: np.array(5)), "not a streamherd model"),
    ("meta-not-utf8",   # a lone surrogate: no UTF-8 text holds one
     _meta_entry(lambda meta: np.array(json.dumps(meta)[:-1] + ', "x": "\ud800"}')), "not UTF-8"),
    ("array-huge-header", _huge_array_header("mean"), "array 'mean' has shape"),
    ("array-truncated", _truncated_array("mean"), "array 'mean' cannot be read"),
    ("values-huge-header", _huge_array_header("mean.values"), "array 'mean.values' has shape"),
    ("indices-huge-header", _huge_array_header("mean.indices"),
     "array 'mean.indices' has shape"),
    ("values-truncated", _truncated_array("mean.values"), "array 'mean.values' cannot be read"),
    ("indices-truncated", _truncated_array("mean.indices"),
     "array 'mean.indices' cannot be read"),
    ("member-not-npy", _text_member, "unknown array"),
    ("array-object", _object_array, "array 'mean' has shape"),
]


def _damaged_file(model, tmp_path, case):
    name, base, change, _ = case
    meta, arrays = (_as_format_2 if name in DENSE_DAMAGE else _raw)(model(*base))
    change(meta, arrays)
    return _write(tmp_path / f"{name}.npz", meta, arrays)


def _written_file(model, tmp_path, case):
    """The case's file from pa2's model: format 3, or format 2 when it damages dense 'mean'."""
    name, write, _ = case
    path = model("pa2", "binary")
    meta, arrays = _as_format_2(path) if name.startswith("array-") else _raw(path)
    return write(meta, arrays, tmp_path / f"{name}.npz")


def _one_line(proc):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _check_everywhere(run, folder, path, kind, words):
    """load_model, predict -m and train -i (each command through ``run``: in this process, or
    as a process of its own): one line naming the file and the damage."""
    with pytest.raises(StreamherdError) as info:
        load_model(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message and words in message, message
    assert "is damaged" in message or "is not a streamherd model" in message \
        or "format version" in message, message
    data = folder / DATA[kind]
    for args in (["predict", "-m", path, data], ["train", "--quiet", "-i", path, data]):
        line = _one_line(run(*args))
        assert message in line, line


# The commands run in this process (the CLI's entry point, as `streamherd` calls it); a case of
# each kind runs them as processes of their own too, as a user's shell does.
END_TO_END = [DAMAGE[0], SPARSE_DAMAGE[0], WRITTEN[0], WRITTEN[-1]]


@pytest.mark.parametrize("case", DAMAGE + SPARSE_DAMAGE,
                         ids=[c[0] for c in DAMAGE + SPARSE_DAMAGE])
def test_damaged_meta_or_arrays_is_a_one_line_error(model, folder, tmp_path, case):
    path = _damaged_file(model, tmp_path, case)
    _check_everywhere(run_cli_here, folder, path, case[1][1], case[3])


@pytest.mark.parametrize("case", WRITTEN, ids=[c[0] for c in WRITTEN])
def test_unreadable_meta_or_array_is_a_one_line_error(model, folder, tmp_path, case):
    path = _written_file(model, tmp_path, case)
    _check_everywhere(run_cli_here, folder, path, "binary", case[2])


@pytest.mark.parametrize("case", END_TO_END, ids=[c[0] for c in END_TO_END])
def test_a_damaged_model_is_a_one_line_error_of_the_command(run_cli, model, folder, tmp_path,
                                                            case):
    if len(case) == 3:   # WRITTEN's
        path, kind, words = _written_file(model, tmp_path, case), "binary", case[2]
    else:
        path, kind, words = _damaged_file(model, tmp_path, case), case[1][1], case[3]
    _check_everywhere(run_cli, folder, path, kind, words)


# ---------------------------------------------------------------- mutations of the meta

PROPERTY_BASES = [("pa2", "binary"), ("avg-perceptron", "ova"), ("arow-full", "joint"),
                  ("nherd-p", "regression"), ("cw", "binary"), ("sop", "joint")]

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
    | st.sampled_from([0, 1, 2, 3, BITS, 30, 31, -1, 0.5, 0.9, 1.5, 1e-320, 1e308, -0.0])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "binary", "multiclass", "regression", "joint", "ova", "pa2", "arow-p",
                       "avg-perceptron", "a", "b c", "\ud800", "C", "examples_seen"])
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=6)


def _paths(value, prefix=()):
    """Every key path into a JSON value (dict keys, list indices)."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, prefix + (index,))


def _mutate(meta, draw, nests):
    """One random change: delete a key, replace a value (by any JSON value, a nearby number, a
    deep nesting), or add a key. A nesting is a placeholder string, spelled out in the JSON text
    (``_text``): json.dumps cannot write one 50,000 levels deep."""
    paths = [p for p in _paths(meta) if p]
    if not paths:
        return
    where = draw(st.sampled_from(paths))
    parent = meta
    for key in where[:-1]:
        parent = parent[key]
    old = parent[where[-1]]
    action = draw(st.sampled_from(["delete", "replace", "number", "nest", "add"]))
    if action == "delete":
        del parent[where[-1]]
    elif action == "replace":
        parent[where[-1]] = draw(_json_values)
    elif action == "number" and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[where[-1]] = draw(st.sampled_from([-old, old + 1, old - 1, old * 1e300, 0,
                                                  float(old), float("nan"), float("inf")]))
    elif action == "nest":
        placeholder = f"@nest{len(nests)}@"
        nests[placeholder] = (draw(st.sampled_from([1, 2, 50, 5000, 50_000])), old)
        parent[where[-1]] = placeholder
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=4))] = draw(_json_values)


def _text(meta, nests):
    text = json.dumps(meta)
    for placeholder, (depth, old) in reversed(list(nests.items())):
        text = text.replace(json.dumps(placeholder), "[" * depth + json.dumps(old) + "]" * depth)
    return text


@pytest.fixture(scope="module")
def bases(model):
    return [(kind, _raw(model(algo, kind))) for algo, kind in PROPERTY_BASES]


@seed(20261124)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_meta_loads_as_a_valid_model_or_is_a_one_line_error(bases, folder, data):
    """Whatever a change of the meta gives, load_model returns a model that predict can use, or
    raises StreamherdError; never another exception."""
    kind, (meta, arrays) = bases[data.draw(st.integers(0, len(bases) - 1))]
    meta = json.loads(json.dumps(meta))
    nests = {}
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(meta, data.draw, nests)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(os.path.join(tmp, "m.npz"), meta, arrays, meta_text=_text(meta, nests))
        try:
            load_model(path)
        except StreamherdError as e:
            assert "\n" not in str(e) and path in str(e)
            event("refused")
            return
        event("loaded")
        try:   # a model that loads is one predict can use
            _predict(path, folder / DATA[kind], tmp)
        except StreamherdError as e:
            assert "\n" not in str(e)
