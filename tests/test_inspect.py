"""``streamherd inspect``: every non-zero weight of a model, checked against the model's arrays
read independently (load_model), for each kind of state a learner keeps."""
import json

import numpy as np
import pytest

from streamherd.model import load_model

from helpers import VW_CONSTANT, one_line_error

CASES = [  # algo, extra train flags, data
    ("pa2", [], "samples/sample.svm"),
    ("nherd-p", [], "samples/sample.svm"),
    ("nherd-full", ["-b", "6"], "samples/sample.svm"),
    ("avg-perceptron", [], "samples/sample.svm"),
    ("arow-p", ["--multiclass", "joint"], "multi"),
    ("arow-full", ["--multiclass", "ova", "-b", "5"], "multi"),
]


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    path = tmp_path_factory.mktemp("inspect") / "multi.svm"
    rng = np.random.default_rng(3)
    path.write_text("".join(f"{['red', 'green', 'blue'][i % 3]} {1 + i % 3}:1 "
                            f"{4 + rng.integers(5)}:{rng.normal():.3f}\n" for i in range(60)))
    return path


def expected_rows(meta, arrays):
    """(slot, class index, weight, variance or None), largest |weight| first, from the arrays."""
    dim = 1 << meta["bits"]
    weights = arrays.get("average", arrays["mean"])
    if "variance" in arrays:
        variances = list(arrays["variance"])
    elif "covariance" in arrays:
        c = arrays["covariance"]
        variances = [c[k, k % c.shape[1]] if c.shape[0] != c.shape[1] else c[k, k]
                     for k in range(len(weights))]
    else:
        variances = [None] * len(weights)
    rows = [(k % dim, k // dim, float(w), variances[k]) for k, w in enumerate(weights) if w != 0]
    return sorted(rows, key=lambda r: (-abs(r[2]), r[1], r[0]))


@pytest.mark.parametrize("algo, flags, data", CASES, ids=[c[0] + "".join(c[1][:2]) for c in CASES])
def test_inspect_lists_every_nonzero_weight(run_cli, tmp_path, multi, algo, flags, data):
    model = tmp_path / "m.npz"
    source = multi if data == "multi" else data
    assert run_cli("train", "--quiet", "--algo", algo, *flags, source, "-f", model).returncode == 0
    meta, arrays = load_model(model)
    proc = run_cli("inspect", model, "--json")
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    want = expected_rows(meta, arrays)
    assert len(got) == len(want) > 0
    assert any(row["feature"] == "Constant" for row in got)
    classes = meta.get("classes")
    bias_slot = VW_CONSTANT & ((1 << meta["bits"]) - 1)
    for row, (slot, block, weight, variance) in zip(got, want):
        assert row["slot"] == slot and row["weight"] == weight
        assert row["feature"] == ("Constant" if slot == bias_slot else "")
        assert row.get("variance") == variance
        if classes and meta["task"] == "multiclass":
            assert row["class"] == str(classes[block])
        else:
            assert "class" not in row


def test_top_and_the_formats_agree(run_cli, tmp_path):
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "--algo", "arow-p", "samples/sample.svm",
                   "-f", model).returncode == 0
    rows = [json.loads(line) for line in run_cli("inspect", model, "--json", "--top", "7")
            .stdout.splitlines()]
    assert len(rows) == 7
    tsv = run_cli("inspect", model, "--tsv", "--top", "7").stdout.splitlines()
    assert tsv[0].split("\t") == ["slot", "feature", "weight", "variance"]
    for line, row in zip(tsv[1:], rows):
        slot, feature, weight, variance = line.split("\t")
        assert (int(slot), feature, float(weight), float(variance)) == \
            (row["slot"], row["feature"], row["weight"], row["variance"])
    table = run_cli("inspect", model, "--top", "7").stdout.splitlines()
    assert table[0].split() == ["slot", "feature", "weight", "variance"]
    assert [float(line.split()[-2]) for line in table[1:]] == [r["weight"] for r in rows]


@pytest.mark.parametrize("args, says", [
    (["--json", "--tsv"], "pass one of them"),
    (["--top", "0"], "--top must be at least 1"),
])
def test_inspect_usage_errors(run_cli, tmp_path, args, says):
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "samples/sample.svm", "-f", model).returncode == 0
    assert says in one_line_error(run_cli("inspect", model, *args))


def test_inspect_a_missing_model(run_cli, tmp_path):
    assert "does not exist" in one_line_error(run_cli("inspect", tmp_path / "absent.npz"))
