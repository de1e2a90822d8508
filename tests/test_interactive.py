"""Input from a pipe or a terminal whose writer pauses (``tail -f log | streamherd predict``):
each example is answered as its line arrives, not when a block fills or the input ends; a pipe
that does not pause reads as a file does."""
import os
import select
import subprocess
import sys

import pytest

from helpers import REPO

# How long a prediction may take to come out while stdin stays open: a guard against hanging
# the test run, not a measure of speed (the answer takes milliseconds).
PATIENCE = 120


@pytest.fixture(scope="module")
def model(tmp_path_factory, run_cli):
    work = tmp_path_factory.mktemp("interactive")
    data = work / "train.svm"
    data.write_text("".join(f"{1 if i % 3 else -1} 1:{i % 7} 2:{(i * 5) % 11} 3:1\n"
                            for i in range(300)))
    model = work / "model.npz"
    proc = run_cli("train", "--quiet", data, "-f", model)
    assert proc.returncode == 0, proc.stderr
    return model


def _answers_while_open(model, lines):
    """Write ``lines`` to ``streamherd predict`` one at a time, each only after the answer to the
    one before has come out; returns the answers and the process's exit status and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "predict", "-m", str(model)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    answers = []
    try:
        for line in lines:
            proc.stdin.write(line)
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], PATIENCE)
            assert ready, f"no answer to {line!r} while the input stayed open"
            answers.append(proc.stdout.readline().decode())
        proc.stdin.close()
        rest = proc.stdout.read().decode()
        return answers, rest, proc.wait(PATIENCE), proc.stderr.read().decode()
    finally:
        proc.kill()


@pytest.mark.parametrize("lines", [
    [b"1 1:3 2:1 3:1\n", b"-1 1:0 2:5 3:1\n", b"1 2:4\n"],
    [b"1 1:1\n", b"-1 2:1\n"],                 # a first line shorter than the longest magic
    [b"1 |f 1:3 2:1 3:1\n", b"-1 |f 1:0 2:5\n", b"|f 2:4\n"],   # VW, the last unlabeled
], ids=["svmlight", "short-first-line", "vw"])
def test_predict_answers_each_line_as_it_arrives(model, lines, run_cli, tmp_path):
    answers, rest, status, stderr = _answers_while_open(model, lines)
    assert status == 0, stderr
    assert rest == ""
    whole = tmp_path / "whole.txt"
    whole.write_bytes(b"".join(lines))
    batch = run_cli("predict", "--quiet", "-m", model, whole)
    assert batch.returncode == 0, batch.stderr
    assert "".join(answers) == batch.stdout


def test_a_line_split_across_pauses_is_one_example(model, run_cli, tmp_path):
    """A pause in the middle of a line does not end it: its answer comes with its newline."""
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "predict", "-m", str(model)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO)
    try:
        proc.stdin.write(b"1 1:3 ")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        assert not ready, "an answer came before the line was complete"
        proc.stdin.write(b"2:1 3:1\n")
        proc.stdin.close()
        out = proc.stdout.read().decode()
        assert proc.wait(PATIENCE) == 0, proc.stderr.read()
    finally:
        proc.kill()
    alone = tmp_path / "one.svm"
    alone.write_bytes(b"1 1:3 2:1 3:1\n")
    assert out == run_cli("predict", "--quiet", "-m", model, alone).stdout


def test_a_piped_file_trains_the_model_of_the_file(data_dir, run_cli, tmp_path):
    """A pipe of text (zcat) gives the model of the file it comes from."""
    from streamherd.model import load_model

    source = data_dir / "a9a.svm.gz"
    from_file = tmp_path / "file.npz"
    assert run_cli("train", "--quiet", source, "-f", from_file).returncode == 0
    from_pipe = tmp_path / "pipe.npz"
    proc = subprocess.run(f"gzip -dc {source} | {sys.executable} -m streamherd train --quiet "
                          f"-f {from_pipe}", shell=True, cwd=REPO, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    (_, a), (_, b) = load_model(from_file), load_model(from_pipe)
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name] == b[name]).all(), name
