"""train's VW habits: -p (progressive predictions), -t (test only), --examples, the preamble."""
import numpy as np
import pytest

from streamherd.model import load_model

from helpers import one_line_error

LINES = {
    "binary": [f"{1 if (i * 7) % 5 > 1 else -1} 1:{i % 4} 2:{(i * 3) % 5} 3:1\n"
               for i in range(40)],
    "multiclass": [f"{['a', 'b', 'c'][(i * 5) % 3]} 1:{i % 4} {2 + i % 3}:1\n"
                   for i in range(40)],
    "regression": [f"{(i % 7) / 3 - 1:.3f} 1:{i % 4} 2:{(i * 3) % 5} 3:1\n" for i in range(40)],
}
FLAGS = {"binary": [], "multiclass": ["--multiclass", "joint"], "regression": ["--loss",
                                                                              "squared"]}


def write(path, lines):
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("kind", list(LINES))
def test_progressive_predictions_are_the_predictions_of_the_model_so_far(run_cli, tmp_path,
                                                                         kind):
    """Line k of -p is what the model trained on the k - 1 lines before predicts for line k."""
    lines = LINES[kind]
    data = write(tmp_path / "all.svm", lines)
    out = tmp_path / "progressive.txt"
    proc = run_cli("train", "--quiet", "--algo", "pa2", *FLAGS[kind], data, "-p", out)
    assert proc.returncode == 0, proc.stderr
    progressive = out.read_text().splitlines()
    assert len(progressive) == len(lines)
    for k in (3, 11, 26, 40):
        model = tmp_path / f"first{k}.npz"
        before = write(tmp_path / f"first{k}.svm", lines[:k - 1])
        assert run_cli("train", "--quiet", "--algo", "pa2", *FLAGS[kind], before, "-f",
                       model).returncode == 0
        one = write(tmp_path / f"line{k}.svm", lines[k - 1:k])
        alone = run_cli("predict", "--quiet", "-m", model, one)
        assert alone.returncode == 0, alone.stderr
        assert progressive[k - 1] == alone.stdout.strip(), k


def test_progressive_predictions_carry_the_tags_and_are_written_whole(run_cli, tmp_path):
    data = write(tmp_path / "tagged.vw", ["1 'first| a b\n", "-1 | c\n", "1 'third| a\n"])
    out = tmp_path / "p.txt"
    assert run_cli("train", "--quiet", data, "-p", out).returncode == 0
    assert [line.split(" ", 1)[1:] for line in out.read_text().splitlines()] == \
        [["first"], [], ["third"]]
    out.write_text("kept\n")
    bad = write(tmp_path / "bad.vw", ["1 | a\n", "x:y:z | b\n"])
    one_line_error(run_cli("train", "--quiet", bad, "-p", out))
    assert out.read_text() == "kept\n"
    assert "input" in one_line_error(run_cli("train", "--quiet", data, "-p", data))


def test_test_only_predicts_as_predict_and_learns_nothing(run_cli, tmp_path):
    data = write(tmp_path / "all.svm", LINES["binary"])
    model = tmp_path / "m.npz"
    assert run_cli("train", "--quiet", data, "-f", model).returncode == 0
    out = tmp_path / "t.txt"
    tested = run_cli("train", "-t", "-i", model, data, "-p", out)
    assert tested.returncode == 0, tested.stderr
    predicted = run_cli("predict", "-m", model, data)
    assert out.read_text() == predicted.stdout
    mistakes = int(predicted.stderr.split("(")[1].split()[0])
    assert f"mistakes = {mistakes}\n" in tested.stderr and "updates = 0\n" in tested.stderr
    assert "-t predicts without learning" in one_line_error(
        run_cli("train", "-t", "-i", model, data, "-f", tmp_path / "x.npz"))
    assert not (tmp_path / "x.npz").exists()


def test_examples_stops_after_n_over_all_passes(run_cli, tmp_path):
    lines = LINES["binary"]
    data = write(tmp_path / "all.svm", lines)
    limited, head = tmp_path / "limited.npz", tmp_path / "head.npz"
    assert run_cli("train", "--quiet", data, "--examples", 15, "-f", limited).returncode == 0
    assert run_cli("train", "--quiet", write(tmp_path / "head.svm", lines[:15]),
                   "-f", head).returncode == 0
    np.testing.assert_array_equal(load_model(limited)[1]["mean"], load_model(head)[1]["mean"])
    twice = tmp_path / "twice.npz"
    # (one learner and value: the default, a bank, chooses its value on the first pass)
    proc = run_cli("train", "--algo", "pa2", data, "--passes", 2, "--holdout_off", "--examples",
                   55, "-f", twice)
    assert proc.returncode == 0, proc.stderr
    assert "number of examples = 55\n" in proc.stderr
    concatenated = tmp_path / "concatenated.npz"
    assert run_cli("train", "--quiet", "--algo", "pa2", write(tmp_path / "c.svm",
                   (lines + lines)[:55]), "-f", concatenated).returncode == 0
    np.testing.assert_array_equal(load_model(twice)[1]["mean"],
                                  load_model(concatenated)[1]["mean"])


def test_the_preamble_says_what_the_run_does(run_cli, tmp_path):
    data = write(tmp_path / "m.svm", LINES["multiclass"])
    proc = run_cli("train", data, "--passes", 2, "--holdout_period", 4, "--examples", 70)
    assert proc.returncode == 0, proc.stderr
    for line in ("constant feature = on (slot", "task = multiclass joint (3 classes so far",
                 "chosen from the labels", "passes = 2", "holdout = every 4th example",
                 "examples = at most 70"):
        assert line in proc.stderr, line
    plain = run_cli("train", "--no-bias", data)
    assert "constant feature = off" in plain.stderr and "passes =" not in plain.stderr
