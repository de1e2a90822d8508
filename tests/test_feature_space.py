"""The feature space (features/space.py) and the feature stage (features/stage.py): one object
from the command line to the parser and into the model; the lexers only find tokens."""
import ast
from pathlib import Path

import numpy as np
import pytest

from streamherd.errors import StreamherdError
from streamherd.features import normalize as normalization
from streamherd.features.hashing import VW_CONSTANT_HASH, hashstring
from streamherd.features.options import MAX_BITS
from streamherd.features.space import FeatureSpace

IO = Path(__file__).resolve().parent.parent / "streamherd" / "io"


def test_lexers_do_not_hash():
    """Hashing belongs to the feature stage: no module of io/ imports the hash functions, so a
    new way of making features (crosses, kept or ignored namespaces) leaves the lexers alone."""
    for path in IO.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "streamherd.features.hashing", path.name


@pytest.mark.parametrize("rule", normalization.RULES)
@pytest.mark.parametrize("bias", [True, False])
def test_meta_round_trip(rule, bias):
    space = FeatureSpace(7, bias, rule)
    meta = space.to_meta()
    assert FeatureSpace.from_meta(meta) == space
    assert meta["bits"] == 7 and meta["bias"] is bias


def test_models_from_before_the_l2_rule_keep_scaling_the_bias():
    """A model saved with normalize = true scaled the bias with the features (l2+bias)."""
    assert FeatureSpace.from_meta({"bits": 18, "bias": True, "normalize": True}).normalize == \
        normalization.L2_WITH_BIAS
    assert FeatureSpace.from_meta({"bits": 18, "bias": True}).normalize == normalization.NONE


@pytest.mark.parametrize("bits", [0, MAX_BITS + 1, -3])
def test_bits_out_of_range_is_a_user_error(bits):
    with pytest.raises(StreamherdError, match=f"--bits {bits} is out of range; use 1 to 30"):
        FeatureSpace(bits)


def test_the_bias_slot_is_vw_constant_masked():
    for bits in (1, 4, 18, 30):
        space = FeatureSpace(bits)
        assert space.bias_slot == VW_CONSTANT_HASH & ((1 << bits) - 1)
        assert space.kernel_params() == (space.mask, True, space.bias_slot, (), (), ())


def test_the_reader_applies_the_space(read_rows, tmp_path):
    """Slots as hashed by VW's rules at the space's bits; the bias added or not; rows scaled by
    its rule with the bias kept at 1 (l2)."""
    path = tmp_path / "x.vw"
    path.write_bytes(b"1 |a word 7:3 |b 7:4\n-1 |a 7\n")
    bits = 12
    mask = (1 << bits) - 1
    seed_a = int(hashstring(np.frombuffer(b"a", np.uint8), 0, 1, 0))
    seed_b = int(hashstring(np.frombuffer(b"b", np.uint8), 0, 1, 0))
    word = int(hashstring(np.frombuffer(b"word", np.uint8), 0, 4, seed_a)) & mask
    rows, _, _ = read_rows(path, features=FeatureSpace(bits, bias=False))
    assert rows[0]["x"] == {word: 1.0, (7 + seed_a) & mask: 3.0, (7 + seed_b) & mask: 4.0}
    assert rows[1]["x"] == {(7 + seed_a) & mask: 1.0}
    rows, _, _ = read_rows(path, features=FeatureSpace(bits, True, normalization.L2))
    bias = VW_CONSTANT_HASH & mask
    first = rows[0]["x"]
    assert first[bias] == 1.0
    assert sum(v * v for slot, v in first.items() if slot != bias) == pytest.approx(1.0)
    assert first[(7 + seed_b) & mask] == pytest.approx(4.0 / np.sqrt(1 + 9 + 16))


def test_a_space_without_namespace_flags_keeps_its_plain_kernel_params():
    """The parse kernels compile the crosses' code only for a space that has namespace flags
    (the length of the tuple's crossing part chooses the feature stage's overload)."""
    assert FeatureSpace(12).kernel_params()[3:] == ((), (), ())
    assert FeatureSpace(12).max_crossed_features(np.frombuffer(b"1 |a x y\n", np.uint8)) == 0
    for flags in (dict(quadratic=("ab",)), dict(ignore="a"), dict(keep="b"),
                  dict(ignore_linear="a")):
        assert len(FeatureSpace(12, **flags).kernel_params()[3]) > 0


def test_the_crossed_bound_counts_each_line_tokens_to_the_power_of_each_order():
    """Tokens split at blanks and '|' (finer than the lexers'): t + 1 + sum of t^k a line,
    the (empty) rest after the last newline counted as a line too (its bias); one more for
    the rounding of the count (a float: t^k of a long line would overflow an int64)."""
    block = np.frombuffer(b"1 |a x y |b z\n-1 |a w\n", np.uint8)
    space = FeatureSpace(12, quadratic=("ab",), cubic=(":::",))
    assert space.max_crossed_features(block) == (6 + 1 + 6 ** 2 + 6 ** 3) + (3 + 1 + 9 + 27) + 1 + 1


def test_crosses_too_many_to_hold_are_a_user_error():
    """A line of 100,000 tokens crossed with itself three times: 10^15 features."""
    block = np.frombuffer(b"1 |a" + b" x" * 100_000 + b"\n", np.uint8)
    with pytest.raises(StreamherdError, match="the crosses of a block's lines would make up "
                                              "to 1e[+]15 features"):
        FeatureSpace(12, cubic=("aaa",)).max_crossed_features(block)
