"""Crosses of namespaces (-q, --cubic, --interactions) and kept or ignored namespaces: every slot
and value streamherd's reader makes equals what VW 9 itself reports (``--audit``) for the same
lines and flags, on real data (helpers.DATA_DIR), and a model keeps its crosses for predict."""
import gzip
import itertools

import numpy as np
import pytest

from streamherd.errors import StreamherdError
from streamherd.features.space import FeatureSpace
from streamherd.model import load_model

from helpers import one_line_error, vw_audit_slots

BITS = 18


def streamherd_slots(read_rows, path, bias=False, **flags):
    rows, _, _ = read_rows(path, features=FeatureSpace(BITS, bias, **flags))
    return [row["x"] for row in rows]


def assert_same_slots(ours, vws):
    assert len(ours) == len(vws)
    for line, (mine, theirs) in enumerate(zip(ours, vws), 1):
        mine = {s: v for s, v in mine.items() if v != 0}
        theirs = {s: v for s, v in theirs.items() if v != 0}
        assert mine.keys() == theirs.keys(), f"line {line}"
        for slot in mine:   # VW prints 6 significant digits of float32 products
            assert mine[slot] == pytest.approx(theirs[slot], rel=2e-5), f"line {line} {slot}"


CASES = [
    (dict(quadratic=("wO",)), ["-q", "wO"]),
    (dict(quadratic=("Ow", "wO", "nw")), ["-q", "Ow", "-q", "wO", "-q", "nw"]),
    (dict(quadratic=("ww",)), ["-q", "ww"]),
    (dict(quadratic=(" w",)), ["-q", " w"]),
    (dict(quadratic=("wo",)), ["-q", "wo"]),   # lowercase o: no such namespace
    (dict(quadratic=("::",)), ["-q", "::"]),
    (dict(quadratic=("::", "Ow")), ["-q", "::", "-q", "Ow"]),
    (dict(cubic=("wOn",)), ["--cubic", "wOn"]),
    (dict(cubic=("www",)), ["--cubic", "www"]),
    (dict(cubic=(":::",)), ["--cubic", ":::"]),
    (dict(cubic=(":::", "Own", "wwn")), ["--cubic", ":::", "--cubic", "Own", "--cubic", "wwn"]),
    (dict(interactions=("::::",)), ["--interactions", "::::"]),
    (dict(interactions=("wO,wwO",)), ["--interactions", "wO", "--interactions", "wwO"]),
    (dict(interactions=("nOww",)), ["--interactions", "nOww"]),
    # a namespace named twice apart ('aba'): VW sorts it ('aab', whose pair then takes each
    # unordered pair once), as must_be_left_sorted says of the sorted letters
    (dict(cubic=("wOw",)), ["--cubic", "wOw"]),
    (dict(interactions=("OwO",)), ["--interactions", "OwO"]),
    (dict(interactions=("wnOw",)), ["--interactions", "wnOw"]),
    (dict(interactions=("words|Other",)),
     ["--experimental_full_name_interactions", "words|Other"]),
    (dict(interactions=("wide|words", "wide|wide")),
     ["--experimental_full_name_interactions", "wide|words",
      "--experimental_full_name_interactions", "wide|wide"]),
    (dict(ignore="w"), ["--ignore", "w"]),
    (dict(ignore="wO", quadratic=("wn", " n")), ["--ignore", "wO", "-q", "wn", "-q", " n"]),
    (dict(keep="wn"), ["--keep", "wn"]),
    (dict(keep="Ow", quadratic=("Ow", "wn")), ["--keep", "Ow", "-q", "Ow", "-q", "wn"]),
    (dict(ignore_linear="w", quadratic=("wO",)), ["--ignore_linear", "w", "-q", "wO"]),
    (dict(ignore_linear="O n", cubic=("wOn",)),
     ["--ignore_linear", "O", "--ignore_linear", " ", "--ignore_linear", "n", "--cubic", "wOn"]),
]


@pytest.mark.parametrize("flags,vw_flags", CASES, ids=[" ".join(c[1]) for c in CASES])
def test_slots_equal_vw_on_namespaced_text(read_rows, namespaced_sms, flags, vw_flags):
    assert_same_slots(streamherd_slots(read_rows, namespaced_sms, **flags),
                      vw_audit_slots(namespaced_sms, vw_flags,
                                     ignore_linear=flags.get("ignore_linear", "")))


def test_the_constant_is_not_crossed(read_rows, namespaced_sms):
    assert_same_slots(streamherd_slots(read_rows, namespaced_sms, bias=True, quadratic=("::",)),
                      vw_audit_slots(namespaced_sms, ["-q", "::"], bias=True))


def test_real_valued_self_cross_equals_vw(read_rows, data_dir, tmp_path):
    """RCV1 (one namespace f, numeric names, TF-IDF values): -q ff, the benchmark's cross."""
    path = tmp_path / "rcv1.vw"
    with gzip.open(data_dir / "rcv1_small.train.vw.gz", "rt") as f:
        path.write_text("".join(itertools.islice(f, 200)))
    assert_same_slots(streamherd_slots(read_rows, path, bias=True, quadratic=("ff",)),
                      vw_audit_slots(path, ["-q", "ff"], bias=True))


def test_svmlight_is_the_default_namespace(read_rows, data_dir, tmp_path):
    """An svmlight file is one namespace, VW's default (' '): -q :: crosses it as VW crosses the
    same features written '| index:value'."""
    svm = tmp_path / "a9a.svm"
    with gzip.open(data_dir / "a9a.svm.gz", "rt") as f:
        svm.write_text("".join(itertools.islice(f, 200)))
    vw = tmp_path / "a9a.vw"
    vw.write_text("".join(f"{label} | {' '.join(rest)}\n" for label, *rest in
                          (line.split() for line in svm.read_text().splitlines())))
    vws = vw_audit_slots(vw, ["-q", "::"])
    assert_same_slots(streamherd_slots(read_rows, svm, quadratic=("::",)), vws)
    assert_same_slots(streamherd_slots(read_rows, svm, quadratic=("  ",)), vws)


def test_long_lines_get_room_for_their_crosses(read_rows, data_dir, tmp_path):
    """Crosses grow as a power of a line's features: a block of long lines (Amazon reviews,
    about 240 words) with --cubic makes far more features than tokens (the output bound)."""
    path = tmp_path / "books.vw"
    with gzip.open(data_dir / "amazon_books.vw.gz", "rt") as f:
        path.write_text("".join(itertools.islice(f, 3)))
    assert_same_slots(streamherd_slots(read_rows, path, cubic=("www",)),
                      vw_audit_slots(path, ["--cubic", "www"]))


def _crossed_entries(path, **flags):
    from streamherd.io.reader import ChunkReader

    chunks = list(ChunkReader([str(path)], features=FeatureSpace(BITS, True, **flags)))
    return [(c.indptr.copy(), c.indices[:c.indptr[-1]].copy(), c.values[:c.indptr[-1]].copy())
            for c in chunks]


@pytest.mark.parametrize("letters", ["ab", "aa"])
def test_pairs_of_letters_cross_as_the_general_interactions_do(tmp_path, letters):
    """-q of two letters (a way of its own, that groups no features by namespace) makes the
    rows --interactions of the same two full names makes (the general crosses), entry for
    entry in the same order (learners sum in row order), on short lines and on a line whose
    namespace a has more features than that way takes (FeatureSpace.CROSSED_ROW_SCRATCH)."""
    from streamherd.features.space import CROSSED_ROW_SCRATCH

    rng = np.random.default_rng(7)
    lines = [f"1 |a {' '.join(f'w{i}:{rng.integers(1, 4)}' for i in range(5))} |b x y:2 z\n",
             "-1 |b y |a w1 w3 w1\n", "1 |a w1\n", "-1 |b x\n", "1 | x |a x w2 |b x\n",
             f"1 |b x:3 |a {' '.join(f'w{i}' for i in range(CROSSED_ROW_SCRATCH + 5))} |b y\n"]
    path = tmp_path / "pairs.vw"
    path.write_text("".join(lines))
    usual = _crossed_entries(path, quadratic=(letters,))
    general = _crossed_entries(path, interactions=("|".join(letters),))
    assert len(usual) == len(general)
    for ours, theirs in zip(usual, general):
        for mine, other in zip(ours, theirs):
            np.testing.assert_array_equal(mine, other)


def test_a_line_longer_than_the_usual_crosses_take_crosses_as_vw(read_rows, tmp_path):
    from streamherd.features.space import CROSSED_ROW_SCRATCH

    path = tmp_path / "long.vw"
    path.write_text(f"1 |a {' '.join(f'w{i}:2' for i in range(CROSSED_ROW_SCRATCH + 5))} "
                    f"|b x y:0.5\n-1 |b x |a w1\n")
    assert_same_slots(streamherd_slots(read_rows, path, quadratic=("ab",)),
                      vw_audit_slots(path, ["-q", "ab"]))


def test_the_crossed_bound_counts_tokens_in_any_bytes():
    """The output bound (t + 1 + t^k a line, t its runs of bytes above 0x20 other than '|')
    on random blocks of any bytes and lengths, against the count written out in Python."""
    rng = np.random.default_rng(11)
    alphabet = np.frombuffer(b"ab1:|\n \t\x00\x7f\x80\xff\x20\x21\x7c\x7d\x0b", np.uint8)
    space = FeatureSpace(12, quadratic=("ab",), cubic=("abc",))
    for trial in range(400):
        n = int(rng.integers(0, 120))
        block = (rng.choice(alphabet, n) if trial % 2 else rng.integers(0, 256, n)).astype(
            np.uint8)
        expected = 1   # (FeatureSpace's one more, for the rounding of the float count)
        for line in bytes(block).split(b"\n"):
            tokens = _tokens(line)
            expected += tokens + 1 + tokens ** 2 + tokens ** 3
        assert space.max_crossed_features(block) == expected, bytes(block)


def _tokens(line):
    """The runs of bytes above 0x20 other than '|' in ``line``."""
    count, inside = 0, False
    for c in line:
        token_byte = c > 32 and c != ord("|")
        count += token_byte and not inside
        inside = token_byte
    return count


@pytest.mark.parametrize("flags,message", [
    (dict(quadratic=("abc",)), "-q 'abc' names 3 namespaces, not 2"),
    (dict(cubic=("ab",)), "--cubic 'ab' names 2 namespaces, not 3"),
    (dict(interactions=("a",)), "--interactions 'a' names one namespace"),
    (dict(quadratic=("a:",)), "':' stands for every namespace only as a whole interaction"),
    (dict(quadratic=("aé",)), "namespace letters must be ASCII"),
    (dict(interactions=("user|",)), "a full-name interaction is at least two namespace names"),
])
def test_bad_interactions_are_user_errors(flags, message):
    with pytest.raises(StreamherdError, match=message):
        FeatureSpace(**flags)


def test_namespace_flags_round_trip_in_the_meta():
    space = FeatureSpace(12, True, quadratic=("ab", "::"), cubic=("abc",),
                         interactions=("ab,user|item",), ignore="x", keep="", ignore_linear="a")
    assert FeatureSpace.from_meta(space.to_meta()) == space
    assert "quadratic" not in FeatureSpace(12).to_meta()


def test_a_model_predicts_with_its_crosses(run_cli, namespaced_sms, tmp_path):
    """train -q with --ignore_linear saves the flags; predict scores with the same crosses:
    its scores equal the trained weights dotted with VW's slots of each line (the crosses
    alone carry the ignored namespace)."""
    model = tmp_path / "m.npz"
    preds = tmp_path / "p.txt"
    trained = run_cli("train", str(namespaced_sms), "-q", "wO", "--ignore_linear", "w", "-f",
                      model, "--algo", "pa", "--quiet")
    assert trained.returncode == 0, trained.stderr
    predicted = run_cli("predict", str(namespaced_sms), "-m", model, "-p", preds, "--raw")
    assert predicted.returncode == 0, predicted.stderr
    weights = load_model(model)[1]["mean"]
    slots = vw_audit_slots(namespaced_sms, ["-q", "wO"], bias=True, ignore_linear="w")
    expected = [sum(weights[s] * v for s, v in row.items()) for row in slots]
    scores = [float(line.split()[0]) for line in preds.read_text().splitlines()]
    assert scores == pytest.approx(expected, rel=1e-6, abs=1e-9)
    linear = vw_audit_slots(namespaced_sms, [], bias=True, ignore_linear="w")
    crossed = {s for row, plain in zip(slots, linear) for s in row.keys() - plain.keys()}
    assert any(weights[s] != 0 for s in crossed)


def test_continuing_a_model_with_other_crosses_is_a_user_error(run_cli, namespaced_sms,
                                                               tmp_path):
    model = tmp_path / "m.npz"
    assert run_cli("train", str(namespaced_sms), "-q", "wO", "-f", model,
                   "--quiet").returncode == 0
    result = run_cli("train", str(namespaced_sms), "-i", str(model), "-q", "nw", "--quiet")
    assert result.returncode == 2
    assert "was trained with -q wO; drop -q" in one_line_error(result)


@pytest.mark.parametrize("flags", [["-q", "wO"], ["--keep", "w"], ["--ignore_linear", "w", "-q",
                                                                    "wO"], ["--hash", "all"]])
def test_continuing_a_model_without_its_flags_keeps_them(run_cli, namespaced_sms, tmp_path,
                                                         flags):
    """-i without namespace or --hash flags continues with the model's own, as with its bits
    (it was refused: "trained with --quadratic ['wO']; drop -q ...", with no -q given): the
    two runs make the model one run over both halves makes, and -t -i reads them too."""
    lines = namespaced_sms.read_text().splitlines(keepends=True)
    first, second = tmp_path / "a.vw", tmp_path / "b.vw"
    half = len(lines) // 2
    first.write_text("".join(lines[:half]))
    second.write_text("".join(lines[half:]))
    whole, part, continued = tmp_path / "whole.npz", tmp_path / "part.npz", tmp_path / "c.npz"
    # (one learner and value: the default would tune its value on each part)
    assert run_cli("train", "--algo", "pa2", first, second, *flags, "-f", whole,
                   "--quiet").returncode == 0
    assert run_cli("train", "--algo", "pa2", first, *flags, "-f", part, "--quiet").returncode == 0
    done = run_cli("train", second, "-i", part, "-f", continued, "--quiet")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(load_model(continued)[1]["mean"], load_model(whole)[1]["mean"])
    assert run_cli("train", "-t", "-i", continued, second, "--quiet").returncode == 0
    # the model's own flags given again are no change
    again = run_cli("train", second, "-i", part, *flags, "-f", tmp_path / "d.npz", "--quiet")
    assert again.returncode == 0, again.stderr
