"""--normalize (features/normalize.py): one rule for train, predict and experiment: each example's
features to unit L2 norm, the bias kept at 1; models from before keep their rule."""
import numpy as np
import pytest

from streamherd.experiment.data import normalize_features
from streamherd.features import normalize as normalization
from streamherd.features.hashing import VW_CONSTANT_HASH
from streamherd.features.space import FeatureSpace
from streamherd.io.reader import ChunkReader
from streamherd.model import load_model

from helpers import one_line_error


def reference(indptr, indices, values, kept_slot):
    """Row by row in plain numpy: the entries not at kept_slot divided by their L2 norm."""
    out = values.copy()
    for i in range(len(indptr) - 1):
        row = slice(indptr[i], indptr[i + 1])
        scaled = indices[row] != kept_slot
        norm = np.sqrt(np.sum(values[row][scaled] ** 2))
        if norm > 0:
            out[row] = np.where(scaled, values[row] / norm, values[row])
    return out


@pytest.mark.parametrize("kept_slot", [5, -1])
def test_unit_norm_rows_matches_the_definition(kept_slot):
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 6, size=50)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, 8, size=indptr[-1]).astype(np.int32)
    values = rng.normal(scale=10, size=indptr[-1])
    values[:3] = 0.0   # all-zero rows stay zero
    got = values.copy()
    normalization.unit_norm_rows(indptr, indices, got, kept_slot)
    np.testing.assert_allclose(got, reference(indptr, indices, values, kept_slot), rtol=1e-14)


@pytest.mark.parametrize("magnitude", [1e200, 1e-170, 1e-310, 1e307])
def test_rows_whose_squares_overflow_or_underflow_get_unit_norm(magnitude):
    """Values whose squares overflow (>= ~1e154) summed to inf and scaled the row to zeros, so
    that a model learned only its bias; those whose squares underflow lost digits (or the row
    was left as it was). Each row is now a unit vector in the direction of its values, as
    Python's math.hypot (which scales by the largest value) computes it."""
    import math

    rows = [[3.0, 4.0], [1.0, -2.0, 2.0], [5.0, 0.0]]
    indptr = np.cumsum([0] + [len(r) + 1 for r in rows]).astype(np.int64)
    values = np.concatenate([[*(magnitude * x for x in r), 1.0] for r in rows])
    indices = np.concatenate([[*range(len(r)), 9] for r in rows]).astype(np.int32)
    got = values.copy()
    normalization.unit_norm_rows(indptr, indices, got, 9)
    for i, r in enumerate(rows):
        row = got[indptr[i]:indptr[i + 1]]
        norm = math.hypot(*r)
        np.testing.assert_allclose(row[:-1], [x / norm for x in r], rtol=1e-12, atol=1e-300)
        assert row[-1] == 1.0


def test_huge_values_are_learned_from_with_normalize(run_cli, tmp_path):
    data = tmp_path / "huge.svm"
    data.write_text("+1 1:1e200\n-1 2:1e200\n+1 1:2e200\n")
    small = tmp_path / "small.svm"
    small.write_text("+1 1:1\n-1 2:1\n+1 1:2\n")
    for name in ("huge", "small"):
        assert run_cli("train", tmp_path / f"{name}.svm", "--normalize", "-f",
                       tmp_path / f"{name}.npz", "--quiet").returncode == 0
    np.testing.assert_array_equal(load_model(tmp_path / "huge.npz")[1]["mean"],
                                  load_model(tmp_path / "small.npz")[1]["mean"])


def test_train_and_experiment_normalize_alike(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:3 2:4\n-1 3:10\n1 4:0.5 1:2 7:1\n-1\n")
    bits = 10
    (chunk,) = list(ChunkReader([str(path)], features=FeatureSpace(bits), workers=0))
    as_experiment = normalize_features(chunk.copy(), bits)
    normalization.normalize(normalization.L2, chunk.indptr, chunk.indices, chunk.values,
                            VW_CONSTANT_HASH & ((1 << bits) - 1))
    np.testing.assert_array_equal(chunk.values, as_experiment.values)
    bias = chunk.indices == (VW_CONSTANT_HASH & ((1 << bits) - 1))
    np.testing.assert_array_equal(chunk.values[bias], 1.0)   # the bias kept
    np.testing.assert_allclose(chunk.values[:2], [0.6, 0.8])


def test_a_normalized_model_records_its_rule_and_keeps_it(run_cli, tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:3 2:4\n-1 3:10\n1 1:2 2:1\n-1 3:7 2:0.5\n" * 5)
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "--normalize", path, "-f", model).returncode == 0
    assert load_model(model)[0]["normalize"] == "l2"
    proc = run_cli("train", "--quiet", "-i", model, path, "-f", model)
    assert proc.returncode == 0, proc.stderr
    assert load_model(model)[0]["normalize"] == "l2"
    assert run_cli("train", "--quiet", "-i", model, "--normalize", path).returncode == 0
    plain = tmp_path / "plain.npz"
    assert run_cli("train", "--quiet", path, "-f", plain).returncode == 0
    assert load_model(plain)[0]["normalize"] is False
    line = one_line_error(run_cli("train", "--quiet", "-i", plain, "--normalize", path))
    assert "trained without --normalize" in line


def test_rule_of_old_and_new_meta():
    assert normalization.rule_of_meta(True) == normalization.L2_WITH_BIAS
    assert normalization.rule_of_meta(False) == normalization.rule_of_meta(None) == "none"
    assert normalization.rule_of_meta("l2") == normalization.L2
    for rule in normalization.RULES:
        assert normalization.rule_of_meta(normalization.meta_of_rule(rule)) == rule
