"""The README's "Python" section runs as written: its shell lines (streamherd commands) and its
Python blocks in order, in one namespace, in a folder holding the repository's samples."""
import re

import numpy as np
import pytest

from helpers import REPO

pytest.importorskip("sklearn")


def _blocks(language):
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_python_section_runs(tmp_path, monkeypatch, run_cli):
    (tmp_path / "samples").symlink_to(REPO / "samples")
    monkeypatch.chdir(tmp_path)
    commands = [line for block in _blocks("sh") for line in block.splitlines()]
    assert commands and all(line.startswith("streamherd ") for line in commands)
    for line in commands:
        proc = run_cli(*line.split()[1:], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    namespace = {}
    blocks = _blocks("python")
    assert len(blocks) == 5   # the fifth: streamherd.river's loop
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["model"].score(namespace["X_test"], namespace["y_test"]) > 0.6
    assert (tmp_path / "from_python.npz").exists()
    proc = run_cli("predict", "-m", "from_python.npz", "samples/sample.svm", "--quiet",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    predicted = namespace["stream"].predict(namespace["X"])
    assert [float(v) for v in proc.stdout.split()] == predicted.tolist()
    # the saved calibration: predict --proba prints predict_proba's numbers
    proc = run_cli("predict", "-m", "from_python.npz", "samples/sample.svm", "--quiet",
                   "--proba", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose([float(v) for v in proc.stdout.split()],
                               namespace["stream"].predict_proba(namespace["X"])[:, 1],
                               atol=1e-8)
    assert namespace["river_model"].predict_one({"cheap": 1.0}) is True
