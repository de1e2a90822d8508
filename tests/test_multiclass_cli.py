"""Multiclass and regression end to end: label discovery, string labels, --classes, bad labels,
models, predict's outputs, through the command line on the shared multiclass files (skipped when
the real-data folder, helpers.DATA_DIR, is absent) and on small generated files."""
import gzip
import json

import numpy as np
import pytest

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader
from streamherd.labels import ClassLabels
from streamherd.model import load_model

from helpers import one_line_error


def summary(stderr):
    return dict(line.split(" = ", 1) for line in stderr.splitlines() if " = " in line)


def first_tokens(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.split(None, 1)[0] for line in f if line.strip()]


def in_order_of_appearance(tokens):
    return list(dict.fromkeys(tokens))


def error_rate(stderr):
    return float(stderr.split("error rate = ")[1].split()[0])


# ---------------------------------------------------------------- labels

def chunks_of(path, features=None, **kwargs):
    return list(ChunkReader([str(path)], features=features or FeatureSpace(), **kwargs))


def test_class_ids_in_order_of_first_appearance(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("b 1:1\n7 2:1\n\nb 3:1\n7.0 1:1\nsports 2:1\n-3 1:1\n")
    labels = ClassLabels()
    ids = np.concatenate([labels.observe(c)[1] for c in chunks_of(path, block_size=16)])
    assert labels.texts == ["b", "7", "sports", "-3"]   # names as first written
    np.testing.assert_array_equal(ids, [0, 1, 0, 1, 2, 3])   # 7 and 7.0 are one class


@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
def test_numeric_labels_are_keyed_from_the_parsed_value_as_from_their_text(tmp_path, fmt):
    """The class key of a chunk of numeric labels, taken from the parser's values
    (labels.chunk_label_keys), is the key label_keys reads from the label's text, for every
    spelling of a number; a chunk with a class name or a number that is no class falls back."""
    from streamherd.labels import chunk_label_keys, label_keys

    rng = np.random.default_rng(5)
    spellings = ["1", "+1", "-1", "1.0", "1e0", "0.5", "-0", "0", "10", "1.50", ".5", "5.",
                 "1E2", "-2.5e-3", "007", "123456789012", "3.14159265358979", "-0.0"]
    for extra in ([], ["cat"], ["nan"], ["inf"]):
        tokens = [*rng.choice(spellings, 300).tolist(), *extra]
        path = tmp_path / f"labels.{fmt}"
        line = "{} 1:1\n" if fmt == "svmlight" else "{} |f a:1\n"
        path.write_text("".join(line.format(t) for t in tokens) + ("\n|f a:1\n" if fmt == "vw"
                                                                     else ""))
        for chunk in chunks_of(path, fmt=fmt, block_size=1024):
            labeled = chunk.label_start >= 0
            expected = label_keys(chunk.block, chunk.label_start, chunk.label_end)[labeled]
            np.testing.assert_array_equal(chunk_label_keys(chunk, labeled)[labeled], expected)


@pytest.mark.parametrize("fmt", ["svmlight", "vw"])
def test_a_chunk_of_known_classes_gets_the_ids_of_its_labels_keys(tmp_path, fmt, monkeypatch):
    """A chunk whose every label is a class already: each row the id its label_keys key names,
    -1 unlabeled, for numbers in every spelling and class names, in observe's one pass (its
    general path, chunk_label_keys, not taken)."""
    from streamherd import labels as label_rules
    from streamherd.labels import label_keys

    rng = np.random.default_rng(8)
    spellings = ["1", "+1", "1.0", "1e0", "-0", "0", "0.0", "2.50", "2.5", "cat", "dog", "-3"]
    tokens = rng.choice(spellings, 400).tolist()
    path = tmp_path / f"labels.{fmt}"
    line = "{} 1:1\n" if fmt == "svmlight" else "{} |f a:1\n"
    unlabeled = "\n" if fmt == "svmlight" else "|f a:1\n"
    path.write_text("".join(line.format(t) if k % 7 else unlabeled
                            for k, t in enumerate(tokens)))
    labels = ClassLabels()
    for chunk in ChunkReader([str(path)], fmt=fmt, features=FeatureSpace(), block_size=512):
        labels.observe(chunk)
    assert len(labels.texts) == 6

    def general_path(*args):
        raise AssertionError("observe took its general path for a chunk of known classes")
    monkeypatch.setattr(label_rules, "chunk_label_keys", general_path)
    # (each chunk read while its block is the reader's: a list of chunks would outlive them)
    for chunk in ChunkReader([str(path)], fmt=fmt, features=FeatureSpace(), block_size=512):
        labeled = chunk.label_start >= 0
        keys = label_keys(chunk.block, chunk.label_start, chunk.label_end)
        expected = np.where(labeled, [labels.ids.get(int(k), -9) for k in keys], -1)
        np.testing.assert_array_equal(labels.observe(chunk)[1], expected)


def test_vw_string_labels_and_unlabeled_lines(tmp_path):
    path = tmp_path / "c.vw"
    path.write_text("sports 2 'a|w x y\n|w z\npolitics |w x\nsports|w q\n")
    labels = ClassLabels()
    (chunk,) = chunks_of(path, fmt="vw")
    _, ids = labels.observe(chunk)
    np.testing.assert_array_equal(ids, [0, -1, 1, 0])
    assert labels.texts == ["sports", "politics"]
    assert chunk.importance[0] == 2.0 and chunk.tags()[0] == "a"


def test_fixed_classes_and_a_label_outside_them(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("2 1:1\n1 1:1\n9 2:1\n3 1:1\n")
    labels = ClassLabels.parse("1,2,3")
    (chunk,) = chunks_of(path)
    with pytest.raises(StreamherdError, match=r"c\.svm:3: label '9' is not one of --classes 1,2,3"):
        labels.observe(chunk)
    kept, ids = labels.observe(chunk, skip_bad=True)
    np.testing.assert_array_equal(ids, [1, 0, 2])
    np.testing.assert_array_equal(kept.line_numbers, [1, 2, 4])
    assert kept.bad_lines == 1 and kept.indptr[-1] == len(kept.indices) == 3 * 2  # + the bias
    np.testing.assert_array_equal(kept.indices[::2], [1, 1, 1])
    with pytest.raises(StreamherdError, match="twice"):
        ClassLabels.parse("1,1.0")
    with pytest.raises(StreamherdError, match="comma-separated"):
        ClassLabels.parse("1,,2")


def test_label_with_a_colon_is_still_malformed(tmp_path):
    path = tmp_path / "c.svm"
    path.write_text("1 1:1\n1:2 3:4\n")
    with pytest.raises(StreamherdError, match=r"c\.svm:2: bad label '1:2'"):
        chunks_of(path)


# ---------------------------------------------------------------- train and predict, real data

@pytest.fixture(scope="module")
def dna_model(tmp_path_factory, data_dir, run_cli):
    model = tmp_path_factory.mktemp("dna") / "dna.npz"
    proc = run_cli("train", "--algo", "arow", data_dir / "dna.scale.svm", "-f", model)
    assert proc.returncode == 0, proc.stderr
    return model, proc


def test_dna_is_joint_multiclass_by_default(dna_model, data_dir, run_cli, tmp_path):
    model, proc = dna_model
    stats = summary(proc.stderr)
    assert float(stats["average progressive 0/1 loss"]) < 0.15
    meta, arrays = load_model(model)
    assert meta["task"] == "multiclass" and meta["multiclass"] == "joint"
    assert meta["classes"] == in_order_of_appearance(first_tokens(data_dir / "dna.scale.svm"))
    assert arrays["mean"].shape == (3 << 18,) and arrays["variance"].shape == (3 << 18,)
    out = tmp_path / "p.txt"
    pred = run_cli("predict", "-m", model, data_dir / "dna.scale.t.svm", "-p", out)
    assert pred.returncode == 0, pred.stderr
    predicted = out.read_text().split()
    truth = first_tokens(data_dir / "dna.scale.t.svm")
    assert set(predicted) <= {"1", "2", "3"}
    rate = np.mean(np.array(predicted) != np.array(truth))
    assert rate < 0.12
    assert error_rate(pred.stderr) == pytest.approx(rate, abs=1e-6)


def test_dna_scores_and_proba(dna_model, data_dir, run_cli):
    model, _ = dna_model
    labels = run_cli("predict", "-m", model, data_dir / "dna.scale.t.svm", "--quiet").stdout.split()
    scores = run_cli("predict", "-m", model, data_dir / "dna.scale.t.svm", "--scores").stdout
    proba = run_cli("predict", "-m", model, data_dir / "dna.scale.t.svm", "--proba").stdout
    classes = load_model(model)[0]["classes"]
    S = np.array([[float(p.split(":")[1]) for p in line.split()] for line in scores.splitlines()])
    P = np.array([[float(p.split(":")[1]) for p in line.split()] for line in proba.splitlines()])
    names = [[p.split(":")[0] for p in line.split()] for line in scores.splitlines()[:3]]
    assert names == [classes] * 3
    # --proba's columns in sorted class order, --scores' in the model's
    proba_names = [[p.split(":")[0] for p in line.split()] for line in proba.splitlines()[:3]]
    assert proba_names == [sorted(classes, key=float)] * 3
    P = P[:, [proba_names[0].index(c) for c in classes]]
    assert S.shape == P.shape == (1186, 3)
    np.testing.assert_array_equal(np.array(classes)[np.argmax(S, axis=1)], labels)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-6)
    assert np.mean(np.argmax(P, axis=1) == np.argmax(S, axis=1)) > 0.97


def test_continue_multiclass_training_equals_one_run(data_dir, run_cli, tmp_path):
    lines = (data_dir / "dna.scale.svm").read_text().splitlines(keepends=True)
    first, second = tmp_path / "a.svm", tmp_path / "b.svm"
    first.write_text("".join(line for line in lines[:700] if not line.startswith("3 ")))
    second.write_text("".join(lines[700:]))
    for mode in ("joint", "ova"):
        one, two = tmp_path / f"one_{mode}.npz", tmp_path / f"two_{mode}.npz"
        args = ["--algo", "nherd-full", "-b", "8", "--multiclass", mode, "--quiet"]
        assert run_cli("train", *args, first, second, "-f", one).returncode == 0
        assert run_cli("train", *args, first, "-f", two).returncode == 0
        assert len(load_model(two)[0]["classes"]) == 2   # class 3 appears only in b.svm
        proc = run_cli("train", "--quiet", "-i", two, second, "-f", two)
        assert proc.returncode == 0, proc.stderr
        (m1, a1), (m2, a2) = load_model(one), load_model(two)
        assert m1["classes"] == m2["classes"] and len(m1["classes"]) == 3
        for key in a1:
            np.testing.assert_array_equal(a1[key], a2[key])


@pytest.mark.parametrize("algo,mode", [("pa2", "joint"), ("arow-d", "ova"),
                                       ("scw1", "joint")])
def test_usps_normalized(data_dir, run_cli, tmp_path, algo, mode):
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--quiet", "--normalize", "--algo", algo, "--multiclass", mode,
                   data_dir / "usps.train.svm.gz", "-f", model)
    assert proc.returncode == 0, proc.stderr
    pred = run_cli("predict", "-m", model, data_dir / "usps.test.svm.gz", "-p", tmp_path / "p")
    assert error_rate(pred.stderr) < 0.15
    assert load_model(model)[0]["classes"][:3] == in_order_of_appearance(
        first_tokens(data_dir / "usps.train.svm.gz"))[:3]


def test_r8_with_class_names(data_dir, run_cli, tmp_path):
    names = ["acq", "crude", "earn", "grain", "interest", "money-fx", "ship", "trade"]
    named = {}
    for split in ("train", "test"):
        named[split] = tmp_path / f"r8.{split}.vw"
        with gzip.open(data_dir / f"r8.{split}.vw.gz", "rt") as f:
            named[split].write_text("".join(names[int(line.split(None, 1)[0]) - 1] + " "
                                            + line.split(None, 1)[1] for line in f))
    model = tmp_path / "r8.npz"
    proc = run_cli("train", "--algo", "nherd", "--normalize", named["train"], "-f", model)
    assert proc.returncode == 0, proc.stderr
    assert "earn" in proc.stderr   # the table shows labels as written
    pred = run_cli("predict", "-m", model, named["test"], "-p", tmp_path / "p")
    assert error_rate(pred.stderr) < 0.15
    assert set((tmp_path / "p").read_text().split()) <= set(names)
    assert sorted(load_model(model)[0]["classes"]) == names
    # the numeric copy gives the same model (the same classes, named by number)
    numeric = tmp_path / "r8n.npz"
    assert run_cli("train", "--quiet", "--algo", "nherd", "--normalize",
                   data_dir / "r8.train.vw.gz", "-f", numeric).returncode == 0
    np.testing.assert_array_equal(load_model(numeric)[1]["mean"], load_model(model)[1]["mean"])


# ---------------------------------------------------------------- modes, flags and errors

@pytest.fixture
def three(tmp_path):
    path = tmp_path / "three.svm"
    path.write_text("1 1:1\n-1 2:1\n\n2 3:1\n1 1:1 3:1\n")
    return path


def test_binary_file_with_a_third_label_needs_multiclass(run_cli, three, tmp_path):
    line = one_line_error(run_cli("train", three, "-f", tmp_path / "m.npz"))
    assert f"{three}:4:" in line and "--multiclass" in line
    proc = run_cli("train", "--multiclass", "joint", three, "-f", tmp_path / "m.npz")
    assert proc.returncode == 0, proc.stderr
    assert load_model(tmp_path / "m.npz")[0]["classes"] == ["1", "-1", "2"]


def test_binary_files_stay_binary(run_cli, tmp_path):
    path = tmp_path / "b.svm"
    path.write_text("1 1:1\n0 2:1\n1 1:1 3:1\n")
    assert run_cli("train", "--quiet", path, "-f", tmp_path / "m.npz").returncode == 0
    meta, arrays = load_model(tmp_path / "m.npz")
    assert meta["task"] == "binary" and meta["labels"] == {"negative": 0.0, "positive": 1.0}
    assert arrays["mean"].shape == (1 << 18,)
    text = tmp_path / "t.svm"
    text.write_text("1 1:1\n-1 2:1\nspam 1:1\n")
    line = one_line_error(run_cli("train", "--quiet", "-i", tmp_path / "m.npz", text))
    assert f"{text}:3: bad label 'spam'" in line


def test_format_1_binary_model_still_loads(run_cli, tmp_path):
    path = tmp_path / "b.svm"
    path.write_text("1 1:1\n-1 2:1\n1 1:1 3:1\n")
    model = tmp_path / "old.npz"
    meta = {"format": "streamherd-model", "format_version": 1, "algo": "pa2", "bits": 4,
            "bias": True, "hyperparameters": {"C": 1.0}, "examples": 3,
            "labels": {"negative": -1.0, "positive": 1.0}, "learner": {}}
    mean = np.zeros(16)
    mean[1] = 1.0
    with open(model, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), mean=mean)
    proc = run_cli("predict", "-m", model, path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "-1", "1"]


def test_user_errors(run_cli, tmp_path, three):
    m = tmp_path / "m.npz"
    cases = [
        (["train", "--multiclass", "some", three, "-f", m], "--multiclass"),
        (["train", "--loss", "log", three, "-f", m], "--loss"),
        (["train", "--loss", "squared", "--algo", "cw", three, "-f", m], "cw"),
        (["train", "--loss", "squared", "--multiclass", "ova", three, "-f", m], "--multiclass"),
        (["train", "--epsilon", "0.1", "--algo", "pa", three, "-f", m], "--epsilon"),
        (["train", "--classes", "1,2", three, "-f", m], f"{three}:2:"),
        (["train", "--multiclass", "joint", "--algo", "arow-full", "-b", "16", three, "-f", m],
         "3 classes"),
    ]
    for args, text in cases:
        line = one_line_error(run_cli(*args))
        assert text in line, line
        assert not m.exists()


def test_multiclass_predict_flags(run_cli, tmp_path, three):
    m = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "--algo", "pa", "--multiclass", "ova", three,
                   "--calibration", "none", "-f", m).returncode == 0
    assert "Gaussian" in one_line_error(run_cli("predict", "-m", m, "--proba", three))
    raw = run_cli("predict", "-m", m, "--raw", three).stdout
    assert raw == run_cli("predict", "-m", m, "--scores", three).stdout
    assert raw.splitlines()[0].startswith("1:") and len(raw.splitlines()[0].split()) == 3
    unseen = tmp_path / "unseen.svm"
    unseen.write_text("7 1:1\n1 1:1\n")
    proc = run_cli("predict", "-m", m, unseen)
    assert "(1 mistakes in 2 labeled" in proc.stderr, proc.stderr
    # two labels that cannot be binary (both > 0) make a two-class multiclass model
    assert run_cli("train", "--quiet", "-f", m, unseen).returncode == 0
    assert load_model(m)[0]["classes"] == ["7", "1"]


# ---------------------------------------------------------------- regression

@pytest.fixture
def regression_files(tmp_path):
    rng = np.random.default_rng(7)
    w = rng.normal(size=8)
    files = []
    for name, n in (("train", 2000), ("test", 500)):
        X = rng.normal(size=(n, 8))
        y = X @ w + 2.0 + 0.1 * rng.normal(size=n)
        path = tmp_path / f"reg.{name}.svm"
        path.write_text("".join(f"{y[i]:.6f} " + " ".join(f"{j + 1}:{X[i, j]:.6f}"
                                                            for j in range(8)) + "\n"
                                for i in range(n)))
        files.append((path, y))
    return files


@pytest.mark.parametrize("algo", ["arow", "nherd-full", "pa1"])
def test_regression_end_to_end(run_cli, tmp_path, regression_files, algo):
    (train, _), (test, y) = regression_files
    model = tmp_path / "r.npz"
    proc = run_cli("train", "--loss", "squared", "--algo", algo, "-b", "6", train, "-f", model)
    assert proc.returncode == 0, proc.stderr
    assert float(summary(proc.stderr)["average progressive squared loss"]) < 1.0
    assert load_model(model)[0]["task"] == "regression"
    pred = run_cli("predict", "-m", model, test)
    predicted = np.array(pred.stdout.split(), float)
    mse = np.mean((predicted - y) ** 2)
    assert mse < 0.1
    reported = float(pred.stderr.split("average squared loss = ")[1].split()[0])
    assert reported == pytest.approx(mse, abs=1e-6)   # printed with 6 decimals
    line = one_line_error(run_cli("predict", "-m", model, "--proba", test))
    assert "regression" in line


def test_ova_gaussian_proba_and_unlabeled_first_lines(run_cli, tmp_path, data_dir):
    model = tmp_path / "ova.npz"
    assert run_cli("train", "--quiet", "--algo", "arow-d", "--multiclass", "ova",
                   data_dir / "dna.scale.svm", "-f", model).returncode == 0
    meta, arrays = load_model(model)
    assert meta["multiclass"] == "ova" and arrays["variance"].shape == (3 << 18,)
    proba = run_cli("predict", "-m", model, "--proba", data_dir / "dna.scale.t.svm")
    assert proba.returncode == 0 and error_rate(proba.stderr) < 0.12
    P = np.array([[float(p.split(":")[1]) for p in line.split()]
                  for line in proba.stdout.splitlines()])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-6)
    # a VW stream without labels learns nothing: an error, unless --allow-empty (binary, as
    # before)
    path = tmp_path / "u.vw"
    path.write_text("|f a\n|f b\n")
    assert "no labeled example" in one_line_error(
        run_cli("train", "--quiet", path, "-f", tmp_path / "u.npz"))
    assert not (tmp_path / "u.npz").exists()
    proc = run_cli("train", "--quiet", "--allow-empty", path, "-f", tmp_path / "u.npz")
    assert proc.returncode == 0, proc.stderr
    assert load_model(tmp_path / "u.npz")[0]["task"] == "binary"


def test_unstable_update_after_a_skipped_line_names_its_own_line(run_cli, tmp_path):
    path = tmp_path / "u.svm"
    path.write_text("1 1:1\n3 1:1\n2 1:1e300\n1 1:1\n")
    line = one_line_error(run_cli("train", "--algo", "nherd-e", "--classes", "1,2", "--skip-bad",
                                  path, "-f", tmp_path / "m.npz"))
    assert f"{path}:3: the nherd-e update" in line
