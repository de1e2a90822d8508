"""train --audit and the audit of multiclass models (audit.py):
names, slots and values against VW 9's own --audit on real data (binary, and --oaa K whose
interleaved slot is ours times 2^ceil(log2 K) plus the class); the weights against models
trained here on the lines before each example (the weights before its update), and the
prediction lines against -p's."""
import gzip
import math
import subprocess
import sys

import numpy as np
import pytest

from streamherd.model import load_model

BITS = 18
CHECKED = (0, 1, 7, 29)   # examples whose weights are checked against a model of the lines before


def vw_audit(path, *flags):
    """VW's --audit output (training) lines."""
    return subprocess.run([sys.executable, "-m", "vowpalwabbit", "--audit", "--quiet", "-b",
                           str(BITS), "-d", str(path), *flags], capture_output=True, text=True,
                          check=True, timeout=300).stdout.splitlines()


def items(line):
    """[(name, slot, value, weight)] of an audit line (after its head; VW's weight@state
    read as its weight)."""
    return [(name, int(slot), float(value), float(weight.split("@")[0]))
            for name, slot, value, weight in
            (item.rsplit(":", 3) for item in line.split("\t")[1:])]


def assert_same_features(mine, theirs):
    """The same (name, slot) pairs, with the same values (VW prints 6 digits)."""
    mine, theirs = sorted(mine), sorted(theirs)
    assert [key[:-1] for key in mine] == [key[:-1] for key in theirs]
    np.testing.assert_allclose([key[-1] for key in mine], [key[-1] for key in theirs],
                               rtol=1e-5)


def examples(text):
    """[(prediction line, [audit lines])] of a --audit output."""
    out = []
    for line in text.splitlines():
        if "\t" in line:
            out[-1][1].append(line)
        else:
            out.append((line, []))
    return out


# one learner and value, as --audit shows (with no --algo, train's default would tune its
# value on the head models, which --audit's run at the default value does not)
ONE_LEARNER = ["--algo", "pa2"]


def head_model(run_cli, path, n, tmp_path, flags):
    """The arrays of a model trained on the first n lines of ``path`` (None for n = 0)."""
    if n == 0:
        return None
    part = tmp_path / f"head{n}{path.suffix}"
    part.write_text("".join(path.read_text().splitlines(True)[:n]))
    model = tmp_path / f"head{n}.npz"
    proc = run_cli("train", "--quiet", *flags, part, "-f", model)
    assert proc.returncode == 0, proc.stderr
    return load_model(model)[1]["mean"].reshape(-1, 1 << BITS)


@pytest.mark.parametrize("flags", [[], ["-q", "wO"]], ids=["linear", "crossed"])
def test_train_audit_is_vws_features_with_the_weights_before_each_update(
        run_cli, namespaced_sms, tmp_path, flags):
    predictions = tmp_path / "p.txt"
    proc = run_cli("train", "--quiet", "--audit", *ONE_LEARNER, "-b", BITS, *flags,
                   namespaced_sms, "-p", predictions)
    assert proc.returncode == 0, proc.stderr
    ours = examples(proc.stdout)
    assert [line for line, _ in ours] == predictions.read_text().splitlines()
    vw = vw_audit(namespaced_sms, *flags)[1::2]
    assert len(ours) == len(vw) == len(namespaced_sms.read_text().splitlines())
    for (_, [line]), theirs in zip(ours, vw):
        assert_same_features([(n, s, v) for n, s, v, _ in items(line)],
                             [(n, s, v) for n, s, v, _ in items(theirs)])
    for n in CHECKED:
        weights = head_model(run_cli, namespaced_sms, n, tmp_path,
                             [*ONE_LEARNER, "-b", BITS, *flags])
        for _, slot, _, weight in items(ours[n][1][0]):
            assert weight == (0.0 if weights is None else weights[0, slot])


@pytest.fixture(scope="module")
def r8(data_dir, tmp_path_factory):
    """The first 40 lines of R8 (8 classes, labels 1-8, text in namespace w)."""
    path = tmp_path_factory.mktemp("audit") / "r8.vw"
    with gzip.open(data_dir / "r8.train.vw.gz", "rt") as f:
        path.write_text("".join(line for _, line in zip(range(40), f)))
    return path


@pytest.mark.parametrize("mode", ["joint", "ova"])
def test_multiclass_train_audit_has_a_line_per_class(run_cli, r8, tmp_path, mode):
    """A line per class known after the example, ``class:score`` first: the features, values
    and names of VW's --oaa 8 --audit line of that class, VW's slot ours x 8 + class (masked),
    the weights and score those of the class's block in a model of the lines before (a class
    first seen in the example: 0)."""
    flags = [*ONE_LEARNER, "-b", BITS, "--multiclass", mode]
    proc = run_cli("train", "--quiet", "--audit", *flags, r8)
    assert proc.returncode == 0, proc.stderr
    ours = examples(proc.stdout)
    vw = vw_audit(r8, "--oaa", "8")[1::2]
    assert len(vw) == 8 * len(ours)
    classes = []
    for k, (_, lines) in enumerate(ours):
        classes += [c for c in (line.split(":")[0] for line in lines) if c not in classes]
        assert [line.split(":")[0] for line in lines] == classes
        for line in lines:
            c = int(line.split(":")[0]) - 1
            theirs = items(vw[8 * k + c])
            mine = items(line)
            assert_same_features([(n, v) for n, _, v, _ in mine],
                                 [(n, v) for n, _, v, _ in theirs])
            assert sorted(((s << 3) + c) & ((1 << BITS) - 1) for _, s, _, _ in mine) == \
                sorted(s for _, s, _, _ in theirs)
    for n in CHECKED:
        weights = head_model(run_cli, r8, n, tmp_path, flags)
        for block, line in enumerate(ours[n][1]):
            mine = items(line)
            expected = [0.0 if weights is None or block >= len(weights) else
                        weights[block, slot] for _, slot, _, _ in mine]
            assert [w for _, _, _, w in mine] == expected
            score = float(line.split("\t")[0].split(":")[1])
            assert score == pytest.approx(math.fsum(v * w for _, _, v, w in mine), abs=1e-6)


@pytest.mark.parametrize("mode", ["joint", "ova"])
def test_multiclass_predict_audit_is_each_class_block(run_cli, r8, tmp_path, mode):
    """predict --audit of a multiclass model: after each prediction, a line per class in the
    model's order, ``class:score`` as --scores prints it, the class block's weight at each
    slot."""
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "-b", BITS, "--multiclass", mode, r8, "-f",
                   model).returncode == 0
    audit = run_cli("predict", "--audit", "-m", model, r8)
    plain = run_cli("predict", "-m", model, r8)
    scores = run_cli("predict", "--scores", "-m", model, r8)
    assert audit.returncode == plain.returncode == scores.returncode == 0, audit.stderr
    ours = examples(audit.stdout)
    assert [line for line, _ in ours] == plain.stdout.splitlines()
    weights = load_model(model)[1]["mean"].reshape(-1, 1 << BITS)
    for (_, lines), score_line in zip(ours, scores.stdout.splitlines(), strict=True):
        printed = dict(pair.split(":") for pair in score_line.split())
        assert len(lines) == len(weights) == len(printed)
        for block, line in enumerate(lines):
            head = line.split("\t")[0]
            name, score = head.split(":")
            assert float(score) == pytest.approx(float(printed[name]), abs=1e-6)
            assert all(w == weights[block, slot] for _, slot, _, w in items(line))
