"""Feature names: ``inspect --names DATA`` names every slot by the features of the data
that hash there, each name and slot as VW 9's own ``--audit`` prints them on real data, with and
without crosses; ``--hash all`` makes VW's slots and is kept by the model for predict."""
import json
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

from streamherd.audit import feature_names
from streamherd.features.space import FeatureSpace
from streamherd.model import load_model

from helpers import one_line_error, vw_audit_slots

BITS = 18
LINES = 120   # each line's names are checked alone: more lines add time, not cases


def vw_audit_names(path, flags, bias=True, bits=BITS):
    """{slot: set of names} over every feature VW's --audit prints for the file."""
    command = [sys.executable, "-m", "vowpalwabbit", "--audit", "-t", "--quiet", "-b", str(bits),
               "-d", str(path), *flags] + ([] if bias else ["--noconstant"])
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    names = defaultdict(set)
    for line in out.splitlines():
        for item in line.split("\t")[1:]:
            name, slot, _, _ = item.rsplit(":", 3)
            names[int(slot)].add(name)
    return names


@pytest.fixture(scope="module")
def sms(data_dir, tmp_path_factory):
    """The first lines of SMS spam: one namespace w, words and numbers as names."""
    path = tmp_path_factory.mktemp("names") / "sms.vw"
    path.write_text("".join((data_dir / "sms_spam.vw").read_text().splitlines(True)[:LINES]))
    return path


CASES = [
    ("sms", {}, []),
    ("sms", dict(quadratic=("ww",)), ["-q", "ww"]),
    ("namespaced", {}, []),
    ("namespaced", dict(quadratic=("wO", " n")), ["-q", "wO", "-q", " n"]),
    ("namespaced", dict(quadratic=("::",)), ["-q", "::"]),
    ("namespaced", dict(cubic=("wOn",), keep="wOn"), ["--cubic", "wOn", "--keep", "wOn"]),
    ("namespaced", dict(interactions=("words|Other",)),
     ["--experimental_full_name_interactions", "words|Other"]),
    ("namespaced", dict(hash_all=True, quadratic=("nw",)), ["--hash", "all", "-q", "nw"]),
]


@pytest.mark.parametrize("data, flags, vw_flags", CASES,
                         ids=[f"{c[0]} {' '.join(c[2])}" for c in CASES])
def test_names_and_slots_equal_vw_audit(sms, namespaced_sms, data, flags, vw_flags):
    path = sms if data == "sms" else namespaced_sms
    found = feature_names([path], FeatureSpace(BITS, **flags))
    want = vw_audit_names(path, vw_flags)
    assert {slot: set(names) for slot, names in found.items()} == want
    assert all(names == sorted(names) for names in found.values())
    if flags.get("quadratic") or flags.get("cubic"):
        assert any("*" in name for names in found.values() for name in names)


def test_only_the_wanted_slots_are_named(sms):
    everything = feature_names([sms], FeatureSpace(BITS, quadratic=("ww",)))
    slots = sorted(everything)[::7]
    wanted = np.zeros(1 << BITS, bool)
    wanted[slots] = True
    assert feature_names([sms], FeatureSpace(BITS, quadratic=("ww",)), wanted=wanted) == {
        slot: everything[slot] for slot in slots}


def test_colliding_names_are_all_listed(tmp_path):
    """At 2 bits most names share a slot: each slot lists every name hashing there, sorted."""
    path = tmp_path / "few.vw"
    path.write_text("1 |a x y z 3 |b x w\n-1 |  7 q\n")
    found = feature_names([path], FeatureSpace(2))
    want = vw_audit_names(path, [], bits=2)
    assert {slot: set(names) for slot, names in found.items()} == want
    assert max(len(names) for names in found.values()) > 1


def test_svmlight_indices_are_names_of_the_default_namespace(tmp_path):
    path = tmp_path / "x.svm"
    path.write_text("1 3:1 10:0.5\n-1 7:2 3:1\n")
    assert feature_names([path], FeatureSpace(BITS)) == {
        3: ["3"], 10: ["10"], 7: ["7"], FeatureSpace(BITS).bias_slot: ["Constant"]}
    hashed = feature_names([path], FeatureSpace(BITS, hash_all=True))
    assert sorted(n for names in hashed.values() for n in names) == ["10", "3", "7", "Constant"]
    assert 3 not in hashed   # "3" hashed as a string


def test_hash_all_slots_equal_vw(read_rows, namespaced_sms):
    """--hash all: names of digits hashed as strings, as VW's (the 'n' namespace holds them)."""
    rows, _, _ = read_rows(namespaced_sms, features=FeatureSpace(BITS, False, hash_all=True))
    vws = vw_audit_slots(namespaced_sms, ["--hash", "all"])
    assert len(rows) == len(vws)
    for row, vw in zip(rows, vws):   # one dict at a time: pytest >= 9.2 compares no nested ones
        assert row["x"] == pytest.approx(vw)
    plain, _, _ = read_rows(namespaced_sms, features=FeatureSpace(BITS, False))
    assert [row["x"] for row in plain] != [row["x"] for row in rows]


def test_inspect_names_a_crossed_model_end_to_end(run_cli, sms, tmp_path):
    """train -q ww, then inspect --names: every row's names hash to its slot (VW's audit), the
    crosses named w^x*w^y, the weights the model's."""
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "-q", "ww", sms, "-f", model).returncode == 0
    proc = run_cli("inspect", model, "--names", sms, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    audit = vw_audit_names(sms, ["-q", "ww"])
    _, arrays = load_model(model)
    assert len(rows) == np.count_nonzero(arrays["mean"])
    for row in rows:
        assert set(row["feature"].split(" ")) == audit[row["slot"]], row
        assert row["weight"] == arrays["mean"][row["slot"]]
    crossed = [row for row in rows if "*" in row["feature"]]
    assert crossed and all(name.count("w^") == 2 for row in crossed
                           for name in row["feature"].split(" ") if "*" in name)


def test_hash_all_is_kept_by_the_model_for_predict(run_cli, namespaced_sms, tmp_path):
    """A model trained with --hash all predicts with VW's --hash all slots: its margins are
    the weights at those slots times the values."""
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", "--hash", "all", namespaced_sms, "-f",
                   model).returncode == 0
    meta, arrays = load_model(model)
    assert meta["hash_all"] is True
    proc = run_cli("predict", "--raw", "-m", model, namespaced_sms)
    assert proc.returncode == 0, proc.stderr
    margins = [float(line) for line in proc.stdout.split()]
    weights = arrays["mean"]
    want = [sum(weights[slot] * value for slot, value in row.items())
            for row in vw_audit_slots(namespaced_sms, ["--hash", "all"], bias=True)]
    assert margins == pytest.approx(want, rel=1e-5, abs=1e-9)


def test_a_wrong_hash_mode_is_a_one_line_error(run_cli, sms, tmp_path):
    line = one_line_error(run_cli("train", "--hash", "numbers", sms, "-f", tmp_path / "m.npz"))
    assert "--hash all" in line
    assert not (tmp_path / "m.npz").exists()


def parse_audit(text):
    """(prediction lines, each example's [(name, slot, value, weight)]) of predict --audit."""
    lines = text.split("\n")[:-1]
    predictions, features = lines[0::2], []
    for line in lines[1::2]:
        items = [item.rsplit(":", 3) for item in line.split("\t")[1:]]
        features.append([(name, int(slot), float(value), float(weight))
                         for name, slot, value, weight in items])
    return predictions, features


def test_crosses_of_an_ignore_linear_namespace_are_named_as_vw(run_cli, namespaced_sms,
                                                                tmp_path):
    """--ignore_linear w -q wO: the w features are no features of their own but members of
    the crosses; the crosses took other features' names (inspect --names: 'Other^x' for
    'words^y*Other^x'; predict --audit: the last name read). VW's audit lists the ignored
    linear features too, so only the crosses compare, and ours name no linear w feature."""
    flags = ["--ignore_linear", "w", "-q", "wO"]
    found = feature_names([namespaced_sms], FeatureSpace(BITS, ignore_linear="w",
                                                         quadratic=("wO",)))
    vw = vw_audit_names(namespaced_sms, flags)
    crosses = {(slot, name) for slot, names in found.items() for name in names if "*" in name}
    assert crosses and crosses == {(slot, name) for slot, names in vw.items() for name in names
                                   if "*" in name}
    assert not any(name.startswith(("words^", "wide^")) and "*" not in name
                   for names in found.values() for name in names)
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", *flags, namespaced_sms, "-f", model).returncode == 0
    audit = run_cli("predict", "--audit", "-m", model, namespaced_sms)
    assert audit.returncode == 0, audit.stderr
    vw_lines = subprocess.run([sys.executable, "-m", "vowpalwabbit", "--audit", "-t", "--quiet",
                               "-b", str(BITS), "-d", str(namespaced_sms), *flags],
                              capture_output=True, text=True, check=True,
                              timeout=300).stdout.split("\n")[1::2]
    for ours, theirs in zip(parse_audit(audit.stdout)[1], vw_lines, strict=True):
        theirs = [i.rsplit(":", 3) for i in theirs.split("\t")[1:]]
        assert sorted((n, s) for n, s, _, _ in ours if "*" in n) == sorted(
            (n, int(s)) for n, s, _, _ in theirs if "*" in n)


@pytest.mark.parametrize("flags", [[], ["-q", "wO", "--cubic", "wOn"]], ids=["linear", "crossed"])
def test_predict_audit_is_weights_times_values_of_vws_features(
        run_cli, namespaced_sms, tmp_path, flags):
    """predict --audit: after each prediction line, its features as VW's --audit names and
    slots them, each with the model's weight at its slot; their sum of weight x value is the
    --raw margin."""
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", *flags, namespaced_sms, "-f", model).returncode == 0
    audit = run_cli("predict", "--audit", "-m", model, namespaced_sms)
    plain = run_cli("predict", "-m", model, namespaced_sms)
    raw = run_cli("predict", "--raw", "-m", model, namespaced_sms)
    assert audit.returncode == plain.returncode == raw.returncode == 0, audit.stderr
    predictions, features = parse_audit(audit.stdout)
    assert predictions == plain.stdout.split("\n")[:-1]
    weights = load_model(model)[1]["mean"]
    vw = subprocess.run([sys.executable, "-m", "vowpalwabbit", "--audit", "-t", "--quiet", "-b",
                         str(BITS), "-d", str(namespaced_sms), *flags], capture_output=True,
                        text=True, check=True, timeout=300).stdout.split("\n")[1::2]
    margins = [float(m) for m in raw.stdout.split()]
    for ours, theirs, margin in zip(features, vw, margins, strict=True):
        assert sorted((n, s) for n, s, _, _ in ours) == sorted(
            (n, int(s)) for n, s, _, _ in (i.rsplit(":", 3) for i in theirs.split("\t")[1:]))
        assert all(weight == weights[slot] for _, slot, _, weight in ours)
        assert sum(w * v for _, _, v, w in ours) == pytest.approx(margin, rel=1e-6, abs=1e-9)
