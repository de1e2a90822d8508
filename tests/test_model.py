"""Model files: .npz round trip, atomic writes, and a one-line error for every kind of bad file."""
import json
import os
import zipfile

import numpy as np
import pytest

from streamherd.errors import StreamherdError
from streamherd.model import FORMAT_VERSION, load_model, save_model
from streamherd.model import container as model_module

BITS = 5


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return {"mean": rng.normal(size=1 << BITS), "average": rng.normal(size=1 << BITS)}


def _meta():
    return {"algo": "avg-perceptron", "bits": BITS, "bias": True,
            "hyperparameters": {}, "labels": {"negative": 0.0, "positive": 1.0},
            "learner": {"examples_seen": 17}}


def test_round_trip(tmp_path):
    path = tmp_path / "m.npz"
    arrays = _arrays()
    save_model(path, _meta(), arrays)
    meta, loaded = load_model(path, expected_arrays=["average"])
    for key, value in _meta().items():
        assert meta[key] == value
    assert meta["format_version"] == FORMAT_VERSION
    assert set(loaded) == {"mean", "average"}
    for name in arrays:
        np.testing.assert_array_equal(loaded[name], arrays[name])
        assert loaded[name].dtype == np.float64
    # It is a plain npz: numpy alone can read it, without pickle; format 3 holds the slots that
    # differ from a fresh learner's (the averaged perceptron's: 0), as indices and values.
    with np.load(path, allow_pickle=False) as archive:
        meta = json.loads(archive["meta"].item())
        assert meta["algo"] == "avg-perceptron" and meta["fill"] == {"mean": 0.0, "average": 0.0}
        mean = np.zeros(1 << BITS)
        mean[archive["mean.indices"]] = archive["mean.values"]
        np.testing.assert_array_equal(mean, arrays["mean"])
        assert archive["mean.indices"].dtype == np.int64


def test_only_the_slots_that_differ_from_the_fresh_value_are_stored(tmp_path):
    """-0.0 differs from the fresh 0.0 (bit for bit); slots equal to it are not stored."""
    path = tmp_path / "m.npz"
    mean = np.zeros(1 << BITS)
    mean[[3, 7, 8]] = [1.5, -0.0, 2.0 ** -1074]
    save_model(path, _meta(), {"mean": mean, "average": np.zeros(1 << BITS)})
    with np.load(path, allow_pickle=False) as archive:
        assert archive["mean.indices"].tolist() == [3, 7, 8]
        assert len(archive["average.indices"]) == len(archive["average.values"]) == 0
    loaded = load_model(path)[1]["mean"]
    assert loaded.view(np.int64).tolist() == mean.view(np.int64).tolist()


def test_a_model_of_every_slot_and_a_big_one_round_trip(tmp_path, monkeypatch):
    """Every slot differing (the sparse form then holds them all), read in pieces smaller than
    the array (loading reads a member a piece at a time)."""
    monkeypatch.setattr(model_module, "_PIECE", 7)
    path = tmp_path / "m.npz"
    arrays = _arrays(3)
    save_model(path, _meta(), arrays)
    _, loaded = load_model(path)
    for name in arrays:
        assert loaded[name].view(np.int64).tolist() == arrays[name].view(np.int64).tolist()


def test_str_path_and_overwrite(tmp_path):
    path = str(tmp_path / "m.npz")
    save_model(path, _meta(), _arrays(1))
    save_model(path, _meta(), _arrays(2))
    _, loaded = load_model(path)
    np.testing.assert_array_equal(loaded["mean"], _arrays(2)["mean"])
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]  # no temporary files left behind


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt(),
                                   OSError(28, "No space left on device")],
                         ids=["runtime-error", "interrupt", "disk-full"])
def test_failed_save_leaves_the_existing_model_untouched(tmp_path, monkeypatch, error):
    path = tmp_path / "m.npz"
    save_model(path, _meta(), _arrays(1))
    before = path.read_bytes()

    def failing_write(file, *args, **kwargs):
        file.write(b"half a model")
        raise error

    monkeypatch.setattr(np.lib.format, "write_array", failing_write)
    expected = StreamherdError if isinstance(error, OSError) else type(error)
    with pytest.raises(expected) as info:
        save_model(path, _meta(), _arrays(2))
    if expected is StreamherdError:
        assert "m.npz" in str(info.value) and "\n" not in str(info.value)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]
    np.testing.assert_array_equal(load_model(path)[1]["mean"], _arrays(1)["mean"])


def test_failed_save_of_a_new_model_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(np.lib.format, "write_array",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    with pytest.raises(RuntimeError):
        save_model(tmp_path / "new.npz", _meta(), _arrays())
    assert os.listdir(tmp_path) == []


def test_save_into_missing_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(StreamherdError) as info:
        save_model(tmp_path / "no" / "such" / "m.npz", _meta(), _arrays())
    assert "m.npz" in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------- bad files

def _npz(path, **entries):
    with open(path, "wb") as f:
        np.savez(f, **entries)
    return path


def _meta_entry(**overrides):
    """A meta of format 2 (dense arrays), the layout the bad files below damage."""
    meta = {"format": "streamherd-model", "format_version": 2, **_meta(), **overrides}
    return np.array(json.dumps(meta))


def _bad_files(tmp_path):
    good = _arrays()
    files = {}
    files["text"] = tmp_path / "text.npz"
    files["text"].write_text("this is not a model\n")
    files["empty"] = tmp_path / "empty.npz"
    files["empty"].write_bytes(b"")
    files["npy"] = tmp_path / "array.npy"
    np.save(files["npy"], good["mean"])
    files["zip-not-npz"] = tmp_path / "plain.zip"
    with zipfile.ZipFile(files["zip-not-npz"], "w") as z:
        z.writestr("hello.txt", "hi")
    files["truncated"] = tmp_path / "truncated.npz"
    save_model(files["truncated"], _meta(), good)
    files["truncated"].write_bytes(files["truncated"].read_bytes()[:300])
    files["no-meta"] = _npz(tmp_path / "nometa.npz", **good)
    files["meta-not-json"] = _npz(tmp_path / "notjson.npz", meta=np.array("{not json"), **good)
    files["meta-list"] = _npz(tmp_path / "list.npz", meta=np.array("[1, 2]"), **good)
    files["meta-not-utf8"] = _npz(tmp_path / "latin1.npz", meta=np.array(json.dumps(
        {"format": "streamherd-model", "format_version": 2, **_meta(), "note": "\u00e9"},
        ensure_ascii=False).encode("latin-1")), **good)
    files["meta-numbers"] = _npz(tmp_path / "numbers.npz", meta=np.arange(3), **good)
    files["wrong-marker"] = _npz(tmp_path / "marker.npz", meta=_meta_entry(format="other-tool"),
                                 **good)
    files["no-marker"] = _npz(tmp_path / "nomarker.npz",
                              meta=np.array(json.dumps({"bits": BITS})), **good)
    files["future-version"] = _npz(tmp_path / "future.npz",
                                   meta=_meta_entry(format_version=FORMAT_VERSION + 1), **good)
    files["version-missing"] = _npz(tmp_path / "nover.npz", meta=np.array(json.dumps(
        {"format": "streamherd-model", **_meta()})), **good)
    files["bad-bits"] = _npz(tmp_path / "bits.npz", meta=_meta_entry(bits="18"), **good)
    files["no-mean"] = _npz(tmp_path / "nomean.npz", meta=_meta_entry(), average=good["average"])
    files["wrong-shape"] = _npz(tmp_path / "shape.npz", meta=_meta_entry(),
                                mean=np.zeros((1 << BITS) + 1), average=good["average"])
    files["wrong-shape-2"] = _npz(tmp_path / "shape2.npz", meta=_meta_entry(bits=BITS + 1), **good)
    files["wrong-dtype"] = _npz(tmp_path / "dtype.npz", meta=_meta_entry(),
                                mean=good["mean"].astype(np.float32), average=good["average"])
    files["nan"] = _npz(tmp_path / "nan.npz", meta=_meta_entry(),
                        mean=np.full(1 << BITS, np.nan), average=good["average"])
    files["object-array"] = tmp_path / "object.npz"
    with open(files["object-array"], "wb") as f:
        np.savez(f, meta=_meta_entry(), mean=np.array([{"a": 1}] * (1 << BITS), dtype=object))
    return files


BAD_KINDS = ["text", "empty", "npy", "zip-not-npz", "truncated", "no-meta", "meta-not-json",
             "meta-list", "meta-not-utf8", "meta-numbers", "wrong-marker", "no-marker",
             "future-version", "version-missing",
             "bad-bits", "no-mean", "wrong-shape", "wrong-shape-2", "wrong-dtype", "nan",
             "object-array"]


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_bad_model_file_is_a_one_line_error(tmp_path, kind):
    path = _bad_files(tmp_path)[kind]
    with pytest.raises(StreamherdError) as info:
        load_model(path)
    message = str(info.value)
    assert str(path) in message
    assert "\n" not in message


def test_meta_is_written_as_utf8_and_read_in_either_encoding(tmp_path):
    path = tmp_path / "m.npz"
    save_model(path, {**_meta(), "note": "caf\u00e9"}, _arrays())
    with np.load(path) as archive:
        entry = archive["meta"]
    assert entry.dtype.kind == "S"
    assert json.loads(entry.item().decode("utf-8"))["note"] == "caf\u00e9"
    # the files written before hold the meta as a NumPy unicode string
    older = _npz(tmp_path / "older.npz", meta=np.array(entry.item().decode("utf-8")),
                 **{name: value for name, value in np.load(path).items() if name != "meta"})
    assert load_model(older)[0] == load_model(path)[0]
    assert load_model(older)[0]["note"] == "caf\u00e9"


def test_bad_meta_encodings_say_what_is_wrong(tmp_path):
    files = _bad_files(tmp_path)
    with pytest.raises(StreamherdError, match="not UTF-8 text"):
        load_model(files["meta-not-utf8"])
    with pytest.raises(StreamherdError, match="not a JSON text"):
        load_model(files["meta-numbers"])


def test_missing_expected_array(tmp_path):
    # the learner's arrays are required by load_model itself; expected_arrays adds names
    path = tmp_path / "m.npz"
    save_model(path, _meta(), {"mean": _arrays()["mean"]})
    with pytest.raises(StreamherdError, match="average"):
        load_model(path)
    save_model(path, _meta(), _arrays())
    load_model(path, expected_arrays=["average"])
    with pytest.raises(StreamherdError, match="'extra'"):
        load_model(path, expected_arrays=["extra"])


def test_missing_model_file(tmp_path):
    with pytest.raises(StreamherdError) as info:
        load_model(tmp_path / "absent.npz")
    assert "absent.npz" in str(info.value) and "\n" not in str(info.value)


def test_future_version_message_names_both_versions(tmp_path):
    path = _bad_files(tmp_path)["future-version"]
    with pytest.raises(StreamherdError, match=str(FORMAT_VERSION + 1)):
        load_model(path)


def test_model_module_writes_through_a_temporary_file(tmp_path, monkeypatch):
    # The final name must appear only complete: the rename happens after the data is written.
    seen = []
    real_replace = os.replace

    def spy_replace(src, dst):
        seen.append((os.path.basename(src), os.path.exists(dst), os.path.getsize(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(model_module.os, "replace", spy_replace)
    save_model(tmp_path / "m.npz", _meta(), _arrays())
    assert len(seen) == 1
    name, existed, size = seen[0]
    assert name != "m.npz" and not existed and size > 0
