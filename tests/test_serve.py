"""streamherd serve end to end, over real sockets on 127.0.0.1: its answers are predict's (a
model that does not learn) and train -p's (a learning one), a learning stream leaves the model
train -i leaves, bit for bit, concurrent clients each get their own answers in order, and the
HTTP face counts what was answered. The faults are in test_serve_faults.py, which shares the
helpers here (Served, the data)."""
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

from helpers import REPO, one_line_error, run_cli

SERVE_START_SECONDS = 30    # a loaded machine; the usual start takes a fraction of a second
ANSWER_SECONDS = 60


class Served:
    """A ``streamherd serve`` process on 127.0.0.1 and a free port (--port 0 --port-file); its
    log lines are collected as they come."""

    def __init__(self, folder, *args):
        folder.mkdir(parents=True, exist_ok=True)
        self.port_file = folder / f"port-{time.monotonic_ns()}"
        env = {**os.environ}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamherd", "serve", "--port", "0", "--port-file",
             str(self.port_file), *map(str, args)], stderr=subprocess.PIPE, cwd=REPO, env=env)
        self.lines = []
        self.reader = threading.Thread(target=self._read_log, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + SERVE_START_SECONDS
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.reader.join(5)
                raise AssertionError(f"serve did not start: {self.log()}")
            time.sleep(0.01)
        self.port = int(self.port_file.read_text())

    def _read_log(self):
        for line in self.proc.stderr:
            self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def log(self):
        return "\n".join(self.lines)

    def wait_for_log(self, text, seconds=ANSWER_SECONDS):
        deadline = time.monotonic() + seconds
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline, f"no log line with {text!r}:\n{self.log()}"
            time.sleep(0.01)
        return next(line for line in self.lines if text in line)

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_SECONDS)

    def ask(self, data, seed=0, largest_write=4000):
        """Send ``data`` in writes of random sizes (cutting lines anywhere), close the sending
        side, and return every answer line."""
        with self.connect() as connection:
            send_in_pieces(connection, data, seed, largest_write)
            connection.shutdown(socket.SHUT_WR)
            return read_all(connection).decode().splitlines()

    def http(self, path, method="GET", port=None):
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
        try:
            with urllib.request.urlopen(request, timeout=ANSWER_SECONDS) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self, signum=signal.SIGTERM):
        """Send ``signum``; returns the exit code."""
        self.proc.send_signal(signum)
        code = self.proc.wait(ANSWER_SECONDS)
        self.reader.join(10)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)


def send_in_pieces(connection, data, seed=0, largest_write=4000):
    chooser = random.Random(seed)
    start = 0
    while start < len(data):
        end = start + chooser.randint(1, largest_write)
        connection.sendall(data[start:end])
        start = end


def read_all(connection):
    parts = []
    while True:
        part = connection.recv(1 << 16)
        if not part:
            return b"".join(parts)
        parts.append(part)


def load(path):
    from streamherd.model import load_model

    return load_model(path)


def assert_same_model(path, reference):
    """The two model files hold the same meta and the same arrays, bit for bit."""
    meta, arrays = load(path)
    reference_meta, reference_arrays = load(reference)
    assert meta == reference_meta
    assert arrays.keys() == reference_arrays.keys()
    for name, array in arrays.items():
        assert array.dtype == reference_arrays[name].dtype, name
        assert array.tobytes() == reference_arrays[name].tobytes(), name


def trained_on(folder, model, lines, name):
    """train -i ``model`` on ``lines`` (bytes): (its model file, its -p lines)."""
    data, out, predictions = (folder / f"{name}.data", folder / f"{name}.npz",
                              folder / f"{name}.pred")
    data.write_bytes(lines)
    proc = run_cli("train", "-i", model, data, "-f", out, "-p", predictions, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out, predictions.read_text().splitlines()


def svmlight_lines(count, seed):
    """Two noisy classes over 200 features, 20 of them per line."""
    chooser = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        label = int(chooser.choice([-1, 1]))
        slots = np.sort(chooser.choice(np.arange(1, 200), 20, replace=False))
        values = chooser.random(20) + 0.6 * ((slots % 7 == 0) == (label > 0))
        lines.append(f"{label} " + " ".join(f"{s}:{v:.4f}" for s, v in zip(slots, values)))
    return ("\n".join(lines) + "\n").encode()


def vw_lines(count, seed):
    """VW lines with tags (on some), two namespaces, weights on some features."""
    chooser = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(60)]
    lines = []
    for i in range(count):
        label = int(chooser.choice([-1, 1]))
        picked = chooser.choice(words, 8, replace=False)
        lean = [w for w in picked if (int(w[1:]) % 5 == 0) == (label > 0)]
        tag = f" 'row{i}" if i % 3 else ""
        lines.append(f"{label}{tag} |a {' '.join(picked)} |b {' '.join(lean)}:0.5 n:{i % 4}")
    return ("\n".join(lines) + "\n").encode()


def make_data(folder):
    """Models trained with an explicit learner (not train's default) and the lines to serve:
    {"folder": folder, "svm": (model, lines), "vw": (model, lines)}."""
    made = {"folder": folder}
    for name, lines, learner in (("svm", svmlight_lines, ["--algo", "arow-p", "-r", "1"]),
                                 ("vw", vw_lines, ["--algo", "pa2", "-C", "1"])):
        train, stream = folder / f"{name}.train", folder / f"{name}.stream"
        train.write_bytes(lines(1200, 1))
        stream.write_bytes(lines(600, 2))
        model = folder / f"{name}.npz"
        proc = run_cli("train", *learner, train, "-f", model, "--quiet")
        assert proc.returncode == 0, proc.stderr
        made[name] = (model, stream)
    return made


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("serve"))


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize("kind, flags", [("svm", []), ("svm", ["--raw"]), ("svm", ["--proba"]),
                                         ("vw", []), ("vw", ["--raw"])])
def test_answers_without_learning_are_predicts_lines(data, kind, flags):
    model, stream = data[kind]
    expected = run_cli("predict", "-m", model, stream, *flags, "--quiet")
    assert expected.returncode == 0, expected.stderr
    with Served(data["folder"], "-m", model, "--no-learn", *flags) as served:
        answers = served.ask(stream.read_bytes(), seed=len(flags))
        assert answers == expected.stdout.splitlines()
        assert served.stop() == 0
    if kind == "vw":   # the tags follow the value
        assert sum(" row" in answer for answer in answers) == 400


@pytest.mark.parametrize("kind, flags", [("svm", []), ("vw", ["--raw"])])
def test_a_learning_stream_gives_train_p_answers_and_train_model_bit_for_bit(data, kind, flags,
                                                                              tmp_path):
    model, stream = data[kind]
    out = tmp_path / "served.npz"
    reference, predictions = trained_on(tmp_path, model, stream.read_bytes(), "reference")
    with Served(tmp_path, "-m", model, "-f", out, *flags) as served:
        answers = served.ask(stream.read_bytes(), seed=7)
        assert served.stop() == 0
    if not flags:
        assert answers == predictions
    else:   # train -p prints labels; the margins' signs are those labels
        labels = {"1": 1.0, "-1": -1.0}
        assert [1.0 if float(a.split()[0]) > 0 else -1.0 for a in answers] == \
            [labels[p.split()[0]] for p in predictions]
    assert_same_model(out, reference)
    meta, _ = load(out)
    assert meta["examples"] == load(model)[0]["examples"] + 600


def test_sixteen_concurrent_clients_each_get_their_own_answers_in_order(data):
    model, stream = data["svm"]
    lines = stream.read_bytes().splitlines(keepends=True)
    expected = run_cli("predict", "-m", model, stream, "--raw", "--quiet").stdout.splitlines()
    orders = [np.random.default_rng(k).permutation(len(lines))[:300] for k in range(16)]
    answers = [None] * 16
    start = threading.Barrier(16)

    def client(k, served):
        start.wait()
        answers[k] = served.ask(b"".join(lines[i] for i in orders[k]), seed=k, largest_write=300)

    with Served(data["folder"], "-m", model, "--no-learn", "--raw") as served:
        threads = [threading.Thread(target=client, args=(k, served)) for k in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(ANSWER_SECONDS)
        assert served.stop() == 0
    for k in range(16):
        assert answers[k] == [expected[i] for i in orders[k]], k


def test_concurrent_learning_clients_each_learn_every_line_once(data, tmp_path):
    """Learning from 8 clients at once, in whatever interleaving: every line answered once and
    learned once (the model's count), and the model is whole."""
    model, stream = data["svm"]
    lines = stream.read_bytes().splitlines(keepends=True)
    answers = [None] * 8
    out = tmp_path / "served.npz"

    def client(k, served):
        answers[k] = served.ask(b"".join(lines[k::8]), seed=k, largest_write=500)

    with Served(tmp_path, "-m", model, "-f", out) as served:
        threads = [threading.Thread(target=client, args=(k, served)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(ANSWER_SECONDS)
        assert served.stop() == 0
    assert [len(a) for a in answers] == [len(lines[k::8]) for k in range(8)]
    assert all(answer in ("1", "-1") for a in answers for answer in a)
    meta, arrays = load(out)
    assert meta["examples"] == load(model)[0]["examples"] + len(lines)
    assert all(np.isfinite(array).all() for array in arrays.values())


def test_http_face_counts_answers_and_saves(data, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    model, stream = data["svm"]
    out = tmp_path / "served.npz"
    first = b"".join(stream.read_bytes().splitlines(keepends=True)[:250])
    with Served(tmp_path, "-m", model, "-f", out, "--http-port", "0") as served:
        http_port = int(served.wait_for_log("HTTP: ").split("HTTP: ")[1].split(")")[0])
        assert served.http("/health", port=http_port) == (200, "ok\n")
        answers = served.ask(first)
        status, text = served.http("/metrics", port=http_port)
        assert status == 200
        metrics = {sample.name: sample.value for family in text_string_to_metric_families(text)
                   for sample in family.samples if not sample.labels}
        assert metrics["streamherd_answers_total"] == 250
        assert metrics["streamherd_examples_learned_total"] == 250
        labels = [line.split()[0] for line in first.decode().splitlines()]
        mistakes = sum(a != y for a, y in zip(answers, labels))
        assert metrics["streamherd_progressive_loss"] == pytest.approx(mistakes / 250)
        assert served.http("/save", method="POST", port=http_port) == (200, f"saved {out}\n")
        assert served.http("/nothing", port=http_port)[0] == 404
        reference, _ = trained_on(tmp_path, model, first, "first")
        assert_same_model(out, reference)
        assert served.stop() == 0


# ---------------------------------------------------------------- the command line


def test_answers_as_soon_as_it_says_it_listens(data):
    """(its start-up time is benchmarks/serve.py's)"""
    model, _ = data["svm"]
    with Served(data["folder"], "-m", model) as served:
        assert served.ask(b"1 3:1\n") in (["1"], ["-1"])
        assert served.stop() == 0


@pytest.mark.parametrize("args, words", [
    (["--proba"], "--proba answers from a model that does not change: add --no-learn"),
    (["--no-learn", "-f", "x.npz"], "drop -f (or --no-learn)"),
    (["--save-every", "10"], "give -f"),
    (["--port", "70000"], "--port 70000: give a port number"),
    (["--raw", "--proba"], "pass one of them"),
])
def test_user_errors_are_one_line(data, tmp_path, args, words):
    model, _ = data["svm"]
    line = one_line_error(run_cli("serve", "-m", model, *args, cwd=tmp_path))
    assert words in line


def test_a_port_in_use_is_one_line(data):
    model, _ = data["svm"]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = one_line_error(run_cli("serve", "-m", model, "--port", port))
    assert f"cannot listen on 127.0.0.1:{port}" in line


def test_vw_daemon_flags_are_accepted_or_hinted(data, tmp_path):
    model, _ = data["svm"]
    pid_file = tmp_path / "serve.pid"
    with Served(data["folder"], "-i", model, "--num_children", "4", "-t", "--pid_file",
                pid_file) as served:
        assert served.ask(b"1 3:1\n") in (["1"], ["-1"])
        assert pid_file.read_text() == f"{served.proc.pid}\n"
        assert served.stop() == 0
    assert "--num_children (Vowpal Wabbit's) does nothing here" in served.log()
    proc = run_cli("serve", "-m", model, "--daemon", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "--daemon (Vowpal Wabbit's): streamherd serve is a daemon already" in proc.stderr


def test_a_herding_model_is_served_without_learning_as_predict_answers(data, tmp_path):
    _, stream = data["svm"]
    train = tmp_path / "herd.train"
    train.write_bytes(b"".join(stream.read_bytes().splitlines(keepends=True)[:300]))
    model = tmp_path / "herd.npz"
    proc = run_cli("herd", train, "-f", model, "--hidden", "10", "--max-epochs", "20",
                   "--burn-in", "10", "--quiet")
    assert proc.returncode == 0, proc.stderr
    line = one_line_error(run_cli("serve", "-m", model))
    assert "conditional herding model" in line and "--no-learn" in line
    expected = run_cli("predict", "-m", model, stream, "--quiet").stdout.splitlines()
    with Served(tmp_path, "-m", model, "--no-learn") as served:
        assert served.ask(stream.read_bytes()) == expected
        assert served.stop() == 0
