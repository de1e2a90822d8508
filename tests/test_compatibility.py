"""Model files written by earlier versions (tests/compat, made by its make_models.py with the
version named in expected.json) still load and predict what that version predicted: every
algorithm, every task (binary, joint and one-versus-all multiclass, regression), format 1 and
format 2, every output (label, raw value, class scores, probabilities); and format 3 (sparse
arrays) for every task of the learners make_models.FORMAT_3 names."""
import json
from pathlib import Path

import numpy as np
import pytest

from streamherd.training import predict

COMPAT = Path(__file__).parent / "compat"
EXPECTED = json.loads((COMPAT / "expected.json").read_text())["models"]
FLAGS = {"label": {}, "raw": {"raw": True}, "scores": {"scores": True}, "proba": {"proba": True}}


def test_every_algorithm_and_task_has_a_committed_model():
    from streamherd import learners

    for algo, variant in learners.REGISTRY.items():
        kinds = ["binary", "format1", "joint", "ova"] + \
            (["regression"] if variant.regression is not None else [])
        missing = [k for k in kinds if f"{algo}.{k}.npz" not in EXPECTED]
        # a learner added after the files were made has none yet: make_models.py adds them
        assert not missing or not any(name.startswith(f"{algo}.") for name in EXPECTED), \
            (algo, missing)


def test_format_3_files_of_every_task_and_array_kind():
    """Format-3 files of a vector-only learner, a Gaussian one, sop, the averaged perceptron and
    full-matrix ones (covariance and inverse), each task; the older files are formats 1 and 2."""
    from streamherd import learners

    versions = {}
    for name in EXPECTED:
        with np.load(COMPAT / name, allow_pickle=False) as archive:
            versions[name] = json.loads(archive["meta"].item())["format_version"]
    format_3 = {name for name, version in versions.items() if version == 3}
    assert format_3 == {name for name in EXPECTED if name.endswith(".format3.npz")}
    assert {versions[name] for name in EXPECTED if name.endswith(".format1.npz")} == {1}
    assert set(versions.values()) == {1, 2, 3}
    algos = {name.split(".")[0] for name in format_3}
    assert {"pa2", "nherd-p", "sop", "avg-perceptron", "arow-full", "sop-full"} <= algos
    for algo in algos:
        kinds = ["binary", "joint", "ova"] + \
            (["regression"] if learners.spec(algo).regression is not None else [])
        assert all(f"{algo}.{kind}.format3.npz" in format_3 for kind in kinds), algo


def _numbers(lines):
    """Each output line as its numbers (a 'class:value' pair gives its value; a VW tag none),
    'class:value' pairs in the order of their class names: --proba's columns were in the order
    of the classes' first appearance, and are sorted now."""
    return [[float(token.rsplit(":", 1)[-1])
             for token in sorted(line.split(), key=lambda t: t.rsplit(":", 1)[0])]
            for line in lines]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_old_model_predicts_as_it_did(name, tmp_path):
    expected = EXPECTED[name]
    data = COMPAT / expected["data"]
    for kind, flags in FLAGS.items():
        if kind not in expected:
            continue
        out = tmp_path / f"{kind}.txt"
        predict(COMPAT / name, [str(data)], output=str(out), quiet=True, **flags)
        lines = out.read_text().splitlines()
        if kind == "label":
            assert lines == expected[kind], kind
        else:
            got, want = _numbers(lines), _numbers(expected[kind])
            assert len(got) == len(want) and all(len(g) == len(w) for g, w in zip(got, want))
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=kind)
