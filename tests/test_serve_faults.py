"""streamherd serve's faults, over real sockets on 127.0.0.1: each is answered or logged in one
line and the server goes on serving; SIGTERM mid-stream leaves the model of the lines answered,
SIGKILL the last snapshot whole, and a snapshot that cannot be written is retried."""
import contextlib
import signal
import socket
import threading
import time

import pytest

from helpers import run_cli
from test_serve import (ANSWER_SECONDS, Served, assert_same_model, load, make_data, read_all,
                        send_in_pieces, trained_on)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("serve_faults"))


def good_lines(data, count, start=0):
    model, stream = data["svm"]
    return b"".join(stream.read_bytes().splitlines(keepends=True)[start:start + count])


def test_malformed_lines_get_an_error_line_each_and_the_stream_goes_on(data, tmp_path):
    model, _ = data["svm"]
    good = good_lines(data, 40).splitlines(keepends=True)
    bad = [b"1 3:x 4:1\n",            # a bad feature value (the parser)
           b"abc 3:1\n",              # a class name in a binary stream (the task's label rule)
           b"1 |a b c\n",             # a VW line in an svmlight stream
           b"7 3:1\n"]                # a third label value in a binary model
    sent = [*good[:10], bad[0], *good[10:20], bad[1], bad[2], *good[20:30], bad[3], *good[30:]]
    out = tmp_path / "served.npz"
    with Served(tmp_path, "-m", model, "-f", out) as served:
        answers = served.ask(b"".join(sent), largest_write=50)
        assert served.stop() == 0
    errors = {k + 1: answer for k, answer in enumerate(answers) if answer.startswith("error: ")}
    assert list(errors) == [11, 22, 23, 34]   # each in its place: one answer per line here
    assert "client1:11: bad feature value '3:x'" in errors[11]
    assert "client1:22: bad label 'abc'" in errors[22]
    assert "--skip-bad" not in errors[22]
    assert "client1:23: line in VW format" in errors[23]
    assert "client1:34:" in errors[34]
    # the other lines were learned as train learns them without the bad ones
    reference, predictions = trained_on(tmp_path, model, b"".join(good), "good")
    assert [a for k, a in enumerate(answers, 1) if k not in errors] == predictions
    assert_same_model(out, reference)
    logged = [line for line in served.lines if "malformed line:" in line]
    assert len(logged) == 4 and "client1:34:" in logged[3]
    assert "4 malformed line(s)" in served.log()


def test_an_update_that_fails_sends_the_model_back_to_its_last_snapshot(data, tmp_path):
    """A line whose update makes the model non-finite (train stops there): its answer is the
    error, the model goes back to its last snapshot (here: as loaded, so the 100 lines of the
    first connection are dropped, as the error says), and the lines after it are learned."""
    model, _ = data["svm"]
    out = tmp_path / "served.npz"
    first, before, after = good_lines(data, 100), good_lines(data, 5, 100), good_lines(data, 5,
                                                                                         105)
    with Served(tmp_path, "-m", model, "-f", out) as served:
        assert len(served.ask(first)) == 100
        answers = served.ask(before + b"1 3:1e200 4:1e200\n" + after)
        assert served.stop() == 0
    assert answers[5].startswith("error: client2:6: the arow-p update failed")
    assert "went back to its last snapshot (the 100 example(s) learned since then" in answers[5]
    reference, predictions = trained_on(tmp_path, model, before + after, "good")
    assert answers[:5] + answers[6:] == predictions
    assert_same_model(out, reference)


def test_a_line_over_the_limit_gets_an_error_line(data, tmp_path):
    model, _ = data["svm"]
    long_line = b"1 " + b" ".join(b"%d:1" % k for k in range(1, 3000)) + b"\n"
    sent = good_lines(data, 3) + long_line + good_lines(data, 3, 3)
    expected = run_cli("predict", "-m", model, data["svm"][1], "--quiet").stdout.splitlines()[:6]
    with Served(tmp_path, "-m", model, "--no-learn", "--max-line-bytes", "1000") as served:
        answers = served.ask(sent, largest_write=700)
        assert served.stop() == 0
    assert answers[:3] + answers[4:] == expected, answers
    assert answers[3].startswith("error: client1:4: a line longer than 1000 bytes")
    assert sum("longer than 1000 bytes" in line for line in served.lines) == 1


def test_idle_clients_and_clients_gone_mid_line_are_closed_and_logged(data, tmp_path):
    model, _ = data["svm"]
    with Served(tmp_path, "-m", model, "--no-learn", "--idle-seconds", "0.5") as served:
        silent = served.connect()
        half = served.connect()
        half.sendall(good_lines(data, 2) + b"1 3:0.5 4:")   # two lines and half of one
        gone = served.connect()
        gone.sendall(b"-1 5:1 6:")
        gone.close()
        started = time.monotonic()
        assert read_all(silent) == b""   # closed by the server
        assert time.monotonic() - started < 10
        assert len(read_all(half).decode().splitlines()) == 2
        served.wait_for_log("idle for 0.5 s")
        served.wait_for_log("client3")
        # and the server goes on serving
        assert served.ask(good_lines(data, 5)) == \
            run_cli("predict", "-m", model, data["svm"][1], "--quiet").stdout.splitlines()[:5]
        assert served.stop() == 0
    log = served.log()
    assert "client1 (127.0.0.1:" in log and "idle for 0.5 s (--idle-seconds): closed" in log
    assert "client2" in log and "in the middle of line 3 (10 bytes without a line end" in log
    assert "client3" in log and "disconnected, in the middle of line 1 (9 bytes" in log


def test_connections_past_the_limit_get_an_error_line_and_the_others_go_on(data, tmp_path):
    model, _ = data["svm"]
    line = good_lines(data, 1)
    with Served(tmp_path, "-m", model, "--no-learn", "--max-clients", "3") as served:
        held = [served.connect() for _ in range(3)]
        answers = []
        for connection in held:   # each one served (so counted) before the flood
            connection.sendall(line)
            answers.append(connection.recv(100))
        refused = [served.connect() for _ in range(6)]
        for connection in refused:
            assert read_all(connection).startswith(b"error: too many clients (3, "
                                                   b"--max-clients)")
            connection.close()
        for connection in held:
            connection.sendall(line)
            assert connection.recv(100) == answers[0]
            connection.close()
        served.wait_for_log("refused 6 connection(s) in the last second")
        assert served.stop() == 0


def test_a_client_that_does_not_read_its_answers_holds_no_other_up(data, tmp_path):
    model, stream = data["svm"]
    expected = run_cli("predict", "-m", model, stream, "--raw", "--quiet").stdout.splitlines()
    with Served(tmp_path, "-m", model, "--no-learn", "--raw") as served:
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        slow.connect(("127.0.0.1", served.port))

        def flood():
            with contextlib.suppress(OSError):
                slow.sendall(stream.read_bytes() * 100)

        threading.Thread(target=flood, daemon=True).start()
        time.sleep(1.0)   # its answers fill the buffers: the server waits for it to read
        started = time.monotonic()
        for k in range(5):
            assert served.ask(good_lines(data, 50, 50 * k)) == expected[50 * k:50 * k + 50]
        assert time.monotonic() - started < 10
        slow.close()
        assert served.stop() == 0


def test_sigterm_mid_stream_leaves_the_model_of_the_lines_answered(data, tmp_path):
    model, stream = data["svm"]
    lines = stream.read_bytes().splitlines(keepends=True) * 5
    out = tmp_path / "served.npz"
    with Served(tmp_path, "-m", model, "-f", out) as served:
        connection = served.connect()

        def send():
            try:
                for start in range(0, len(lines), 5):
                    connection.sendall(b"".join(lines[start:start + 5]))
                    time.sleep(0.002)
            except OSError:   # the server closed the connection: the stop
                pass

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        received = b""
        while received.count(b"\n") < 300:
            received += connection.recv(1 << 16)
        code = served.stop()
        received += read_all(connection)
        sender.join(ANSWER_SECONDS)
        connection.close()
    assert code == 0
    answered = received.count(b"\n")
    assert 300 <= answered < len(lines)
    reference, predictions = trained_on(tmp_path, model, b"".join(lines[:answered]), "answered")
    assert received.decode().splitlines() == predictions
    assert_same_model(out, reference)
    assert "SIGTERM: stopping" in served.log()


def test_sigkill_leaves_the_last_snapshot_whole(data, tmp_path):
    model, stream = data["svm"]
    lines = stream.read_bytes().splitlines(keepends=True)
    out = tmp_path / "served.npz"
    with Served(tmp_path, "-m", model, "-f", out, "--save-every", "100") as served:
        with served.connect() as connection:
            for start in range(0, len(lines), 10):
                connection.sendall(b"".join(lines[start:start + 10]))
                received = b""
                while received.count(b"\n") < 10:
                    received += connection.recv(1 << 16)
                if start == 450:
                    served.wait_for_log("snapshot written")
                    served.proc.kill()
                    break
        served.proc.wait(ANSWER_SECONDS)
    learned = load(out)[0]["examples"] - load(model)[0]["examples"]
    assert 100 <= learned <= 460
    reference, _ = trained_on(tmp_path, model, b"".join(lines[:learned]), "snapshot")
    assert_same_model(out, reference)


def test_a_snapshot_that_cannot_be_written_is_logged_and_tried_again(data, tmp_path):
    model, _ = data["svm"]
    folder = tmp_path / "models"
    folder.mkdir()
    out = folder / "served.npz"
    first, second = good_lines(data, 50), good_lines(data, 50, 50)
    with Served(tmp_path, "-m", model, "-f", out, "--save-seconds", "0.2") as served:
        folder.rename(tmp_path / "away")   # the snapshots' folder is gone
        served.ask(first)
        served.wait_for_log("cannot write")
        assert served.ask(second)   # serving goes on
        (tmp_path / "away").rename(folder)
        served.wait_for_log("snapshot written")
        assert served.stop() == 0
    reference, _ = trained_on(tmp_path, model, first + second, "both")
    assert_same_model(out, reference)
    failed = next(line for line in served.lines if "cannot write" in line)
    assert "tried again, serving goes on" in failed


def test_a_model_that_cannot_be_written_at_the_end_is_one_error_line(data, tmp_path):
    model, _ = data["svm"]
    folder = tmp_path / "models"
    folder.mkdir()
    with Served(tmp_path, "-m", model, "-f", folder / "served.npz") as served:
        assert len(served.ask(good_lines(data, 20))) == 20
        folder.rename(tmp_path / "away")
        assert served.stop() == 2
    assert sum("trying again in a second" in line for line in served.lines) == 2
    assert served.lines[-1].startswith("streamherd: cannot write")
    assert "not written after 3 attempts (the last snapshot written: none)" in served.lines[-1]
    assert "Traceback" not in served.log()


def test_a_save_line_writes_the_model_of_the_lines_before_it(data, tmp_path):
    model, _ = data["svm"]
    out = tmp_path / "served.npz"
    first, second = good_lines(data, 30), good_lines(data, 30, 30)
    with Served(tmp_path, "-m", model, "-f", out) as served:
        with served.connect() as connection:
            send_in_pieces(connection, first + b"save|\n")
            received = b""
            while b"saved" not in received:
                received += connection.recv(1 << 16)
            assert received.decode().splitlines()[-1] == f"saved {out}"
            assert len(received.decode().splitlines()) == 31
            reference, _ = trained_on(tmp_path, model, first, "first")
            assert_same_model(out, reference)
            connection.sendall(second)
            connection.shutdown(socket.SHUT_WR)
            assert len(read_all(connection).decode().splitlines()) == 30
        assert served.stop() == 0
    reference, _ = trained_on(tmp_path, model, first + second, "both")
    assert_same_model(out, reference)


def test_sighup_writes_a_snapshot_and_serving_goes_on(data, tmp_path):
    model, _ = data["svm"]
    out = tmp_path / "served.npz"
    first, second = good_lines(data, 40), good_lines(data, 40, 40)
    with Served(tmp_path, "-m", model, "-f", out) as served:
        assert len(served.ask(first)) == 40
        served.proc.send_signal(signal.SIGHUP)
        served.wait_for_log("snapshot written")
        reference, _ = trained_on(tmp_path, model, first, "first")
        assert_same_model(out, reference)
        assert len(served.ask(second)) == 40
        assert served.stop() == 0
    assert "SIGHUP: writing a snapshot" in served.log()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_ends_at_once_and_leaves_the_model_whole(data, tmp_path, signum):
    model, stream = data["svm"]
    out = tmp_path / "served.npz"
    with Served(tmp_path, "-m", model, "-f", out, "--raw", "--drain-seconds", "60",
                "--save-every", "1000") as served:
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        stuck.connect(("127.0.0.1", served.port))
        # its answers, never read, outgrow every buffer (the kernel's send buffer grows to 4 MiB)
        flood = stream.read_bytes() * 2000

        def send():
            with contextlib.suppress(OSError):
                stuck.sendall(flood)

        threading.Thread(target=send, daemon=True).start()
        served.wait_for_log("snapshot written")
        # until its unread answers fill every buffer: no snapshot for a second means the server
        # reads no more of its lines, so the drain cannot end (on a loaded machine the first
        # snapshot can come before the answers outgrow the socket's buffers)
        written, deadline = 0, time.monotonic() + 60
        while time.monotonic() < deadline:
            now = sum("snapshot written" in line for line in served.lines)
            if now == written:
                break
            written = now
            time.sleep(1.0)
        served.proc.send_signal(signum)
        served.wait_for_log("stopping")
        started = time.monotonic()
        assert served.stop(signum) == 128 + signum
        assert time.monotonic() - started < 5
        stuck.close()
    # one line says so: the command's own, or the watchdog's when the way out hangs
    last = served.lines[-1]
    assert "interrupted after writing" in last or "while stopping: ended at once" in last, last
    meta, _ = load(out)   # the last snapshot, whole
    assert meta["examples"] - load(model)[0]["examples"] >= 1000
