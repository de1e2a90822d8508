"""A damaged model file read through the Python API: every face shares the command line's check,
so each single-bit flip of a good model either loads (a flip the format does not notice, e.g. in
a compressed member's padding, or one that leaves a valid model) or is the one "damaged" error,
never an exception from inside zipfile or numpy."""
import random

import pytest

from helpers import run_cli
from streamherd.errors import StreamherdError
from streamherd.sklearn import load_model as load_estimator

FLIPS = 200


@pytest.fixture(scope="module")
def good_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "good.npz"
    proc = run_cli("train", "--algo", "arow-p", "-b", "10", "--quiet", "samples/sample.svm",
                   "-f", path)
    assert proc.returncode == 0, proc.stderr
    return path.read_bytes()


def test_every_bit_flip_of_a_model_loads_or_is_the_damaged_error(good_model, tmp_path):
    rng = random.Random(20261128)
    path = tmp_path / "flipped.npz"
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(FLIPS):
        data = bytearray(good_model)
        bit = rng.randrange(len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(data))
        try:
            load_estimator(path)
            outcomes["loaded"] += 1
        except StreamherdError as e:
            assert str(path) in str(e) and "\n" not in str(e), e
            outcomes["refused"] += 1
    assert outcomes["refused"] > FLIPS // 2, outcomes
