"""Signals end every command promptly, through real signals sent to the CLI at random points (a
fixed seed): exit 128 + the signal's number, one line on stderr, every existing file as it was
and no temporary file left, beside the outputs or under TMPDIR (the stdin copy, the shuffle's
spill). A run ended early names the files it had already written (--save_per_pass)."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, without_compile_notice

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
PROMPT_SECONDS = 2.0


def _write_svm(path, rng, lines, features, slots):
    labels = np.where(rng.random(lines) < 0.5, "1", "-1")
    columns = np.sort(rng.integers(1, slots, (lines, features)), axis=1)
    with open(path, "w") as f:
        for label, row in zip(labels, columns):
            f.write(label + " " + " ".join(f"{j}:1" for j in np.unique(row)) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """wide.svm: 2^24 slots' worth of distinct features (an arow -b 24 model takes a while to
    save); long.svm: enough rows that --shuffle_memory 1 spills them."""
    folder = tmp_path_factory.mktemp("signals")
    rng = np.random.default_rng(36)
    _write_svm(folder / "wide.svm", rng, 30_000, 40, 1 << 24)
    _write_svm(folder / "long.svm", rng, 100_000, 12, 1000)
    return folder


@pytest.fixture
def work(tmp_path, data):
    """A folder with links to the data, an old model (old.npz, copied as m.npz) and its own
    TMPDIR (tmp/)."""
    for name in ("wide.svm", "long.svm"):
        (tmp_path / name).symlink_to(data / name)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "m.npz").write_bytes(b"the old model")
    return tmp_path


def _start(work, *args, stdin=subprocess.DEVNULL):
    env = dict(os.environ, TMPDIR=str(work / "tmp"))
    return subprocess.Popen([sys.executable, "-m", "streamherd", *map(str, args)], cwd=work,
                            env=env, stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _wait_for(proc, ready, timeout=120):
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the run never got there"
        time.sleep(0.002)


def _catches_signals(pid):
    """The CLI has installed its handlers (the SigCgt mask of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        caught = int(next(line for line in f if line.startswith("SigCgt:")).split()[1], 16)
    return all(caught & (1 << (signum - 1)) for signum in CODES)


def _signalled(proc, signum):
    """Send ``signum``; the run must end within PROMPT_SECONDS: returns its one stderr line."""
    assert proc.poll() is None, "the run ended before the signal"
    proc.send_signal(signum)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    took = time.monotonic() - sent
    err = without_compile_notice(err.decode())
    assert proc.returncode == CODES[signum], err
    assert took <= PROMPT_SECONDS, f"{took:.1f} s after the signal"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamherd: interrupted"), err
    return lines[0]


def _temporary_files(work):
    return [p.name for p in [*work.iterdir(), *(work / "tmp").iterdir()]
            if p.name.startswith((".streamherd-", "streamherd-"))]


@pytest.mark.parametrize("signum", list(CODES))
def test_a_signal_while_a_large_model_is_saved_leaves_no_temporary_file(work, signum):
    proc = _start(work, "train", "--quiet", "--algo", "arow", "-b", "24", "wide.svm",
                  "-f", "m.npz")
    _wait_for(proc, lambda: any(p.name.startswith(".streamherd-") for p in work.iterdir()))
    assert _signalled(proc, signum) == "streamherd: interrupted; no model was written"
    assert (work / "m.npz").read_bytes() == b"the old model"
    assert _temporary_files(work) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_signal_during_shuffled_passes_ends_the_run_promptly(work, seed):
    """Block-wise --shuffle spills the parsed input and reads it back each pass; a SIGTERM
    at any point of it ends the run within two seconds, the spill removed."""
    delay = random.Random(seed).uniform(0.0, 3.0)
    signum = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT][seed - 1]
    proc = _start(work, "train", "--quiet", "--passes", 1000, "--holdout_off", "--shuffle",
                  "--shuffle_memory", 1, "long.svm", "-f", "m.npz")
    _wait_for(proc, lambda: _catches_signals(proc.pid))
    time.sleep(delay)
    assert _signalled(proc, signum) == "streamherd: interrupted; no model was written"
    assert (work / "m.npz").read_bytes() == b"the old model"
    assert _temporary_files(work) == []


def test_sighup_while_stdin_is_replayed_removes_its_copy(work):
    proc = _start(work, "train", "--quiet", "--passes", 3, "-f", "m.npz", stdin=subprocess.PIPE)
    proc.stdin.write((work / "long.svm").read_bytes())   # and no end: still copying
    proc.stdin.flush()
    _wait_for(proc, lambda: list((work / "tmp").iterdir()))
    assert _signalled(proc, signal.SIGHUP) == "streamherd: interrupted; no model was written"
    assert (work / "m.npz").read_bytes() == b"the old model"
    assert _temporary_files(work) == []


def test_an_interrupt_after_save_per_pass_names_the_files_it_wrote(work):
    (work / "m.pass1.npz").write_bytes(b"an old pass")
    proc = _start(work, "train", "--quiet", "--passes", 1000, "--holdout_off", "--save_per_pass",
                  "long.svm", "-f", "m.npz")
    _wait_for(proc, lambda: (work / "m.pass2.npz").exists())
    line = _signalled(proc, signal.SIGTERM)
    written = sorted(Path(p).name for p in line.split("after writing ")[1].split(";")[0]
                     .split(", "))
    assert line.endswith("; nothing else was written")
    assert written == [f"m.pass{k}.npz" for k in range(1, len(written) + 1)]
    assert len(written) >= 2
    assert (work / "m.npz").read_bytes() == b"the old model"
    assert _temporary_files(work) == []


def test_an_error_after_save_per_pass_names_the_files_it_wrote(work):
    """--skip-bad's "most lines were bad" comes after the passes, each of which wrote its
    model."""
    (work / "bad.svm").write_text("1 1:1 2:1\nnot a line\nnor this\n" * 30)
    proc = _start(work, "train", "--quiet", "--skip-bad", "--passes", 2, "--holdout_off",
                  "--save_per_pass", "bad.svm", "-f", "m.npz")
    _, err = proc.communicate(timeout=120)
    line = without_compile_notice(err.decode()).strip()
    assert proc.returncode == 2 and "\n" not in line, line
    assert line.endswith(f"(written before the error: {work / 'm.pass1.npz'}, "
                         f"{work / 'm.pass2.npz'})")
    assert (work / "m.npz").read_bytes() == b"the old model"


SWALLOWED = textwrap.dedent("""
    import sys, threading, time
    from streamherd import outputs
    outputs.catch_signals(lambda: "streamherd: interrupted; LINE")

    class Slow:
        def __del__(self):   # the signal comes here: its exception cannot leave a destructor
            print("ready", flush=True)
            time.sleep(3)

    try:   # as cli.run
        Slow()
        with outputs.replaced_on_success(sys.argv[1]) as f:
            f.write("new")
            if sys.argv[2] == "hang":
                threading.Event().wait()
        print("finished", flush=True)
    except KeyboardInterrupt as e:
        sys.exit(e.exit_code)
""")


@pytest.mark.parametrize("then", ["write", "hang"])
def test_a_signal_swallowed_by_a_destructor_still_ends_the_run(work, then):
    """An interrupt raised inside a destructor is dropped by Python; the run must still end
    with the signal's code, replacing no file: at its next output, or after a grace period
    if it would go on waiting."""
    (work / "out.txt").write_text("old")
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWED, "out.txt", then], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}"
                                     f"{os.environ.get('PYTHONPATH', '')}"))
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert b"finished" not in out
    assert b"Exception ignored" not in err and b"Traceback" not in err, err
    assert (work / "out.txt").read_text() == "old"
    assert _temporary_files(work) == []


RENAMES = textwrap.dedent("""
    import os, signal, sys
    from streamherd import outputs
    outputs.catch_signals(lambda: "streamherd: interrupted")
    rename = os.replace

    def rename_then_signal(source, target):
        rename(source, target)
        if target.endswith("a.txt"):
            os.kill(os.getpid(), signal.SIGTERM)

    os.replace = rename_then_signal
    try:   # as cli.run
        with outputs.replaced_together():
            for name in ("a.txt", "b.txt"):
                with outputs.replaced_on_success(name) as f:
                    f.write("new")
        print("finished", flush=True)
    except KeyboardInterrupt as e:
        sys.exit(e.exit_code)
""")


def test_a_signal_during_the_renames_lets_every_one_finish(work):
    """Files replaced together are all replaced or none: a signal after the first rename is
    raised once the last is done."""
    for name in ("a.txt", "b.txt"):
        (work / name).write_text("old")
    proc = subprocess.run([sys.executable, "-c", RENAMES], cwd=work, capture_output=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}"
                                               f"{os.environ.get('PYTHONPATH', '')}"))
    assert proc.returncode == 143, proc.stderr
    assert proc.stdout == b"" and proc.stderr == b""
    assert [(work / name).read_text() for name in ("a.txt", "b.txt")] == ["new", "new"]
    assert _temporary_files(work) == []


def test_a_run_in_the_callers_process_gives_back_its_signal_handlers():
    """cli.run([...]) in a caller's process (a test, a script) catches the signals while it
    runs, and leaves the caller's handlers (and warning filters) as they were."""
    from streamherd.cli import run

    def handlers():
        return [signal.getsignal(signum) for signum in CODES] + [sys.unraisablehook,
                                                                 warnings.filters[:]]

    before = handlers()
    with pytest.raises(SystemExit):
        run(["inspect", "no-such-model.npz"])
    assert handlers() == before


def test_an_interruption_names_each_file_it_wrote_once(monkeypatch):
    """dist-train writes its model after every round: the line names it once; before any round,
    dist-train's own words say that no model was written."""
    from streamherd import cli, outputs
    from streamherd.distributed import command

    monkeypatch.setattr(outputs, "replaced", ["/m/old.npz", "/m/m.npz", "/m/m.npz", "/m/m.npz"])
    assert cli._interrupted_line(command.COMMAND.interrupted, 1) == \
        "streamherd: interrupted after writing /m/m.npz; nothing else was written"
    assert cli._interrupted_line(command.COMMAND.interrupted, 4) == \
        "streamherd: interrupted before its first round was written; no model was written"


# ---------------------------------------------------------------- dist-train

# closing a local cluster (its scheduler and worker processes) takes a few seconds on a loaded
# machine: the interruption's bound for dist-train
CLUSTER_PROMPT_SECONDS = 15.0


def _dist_train_interrupted(proc, send):
    sent = time.monotonic()
    send()
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    took = time.monotonic() - sent
    err = without_compile_notice(err.decode())
    assert proc.returncode == 130, err
    assert took <= CLUSTER_PROMPT_SECONDS, f"{took:.1f} s after the signal"
    assert "Traceback" not in err and "Task exception" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamherd: interrupted"), err
    return lines[0]


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0, 3.0])
def test_ctrl_c_while_dist_train_starts_its_cluster_is_one_line(work, delay):
    """SIGINT while the local cluster starts, or its first round runs: exit 130, one line, no
    distributed traceback (the client's cancelled gathers, a worker's lost connection), and
    the old model as it was."""
    pytest.importorskip("distributed")
    proc = _start(work, "dist-train", "--quiet", "--workers", 2, "--passes", 50, "long.svm",
                  "-f", "m.npz")
    _wait_for(proc, lambda: _catches_signals(proc.pid))
    time.sleep(delay)
    if proc.poll() is not None:
        pytest.fail(f"dist-train ended before the signal: {proc.stderr.read().decode()}")
    line = _dist_train_interrupted(proc, lambda: proc.send_signal(signal.SIGINT))
    if (work / "m.npz").read_bytes() == b"the old model":
        assert line == "streamherd: interrupted before its first round was written; no model " \
                       "was written"
    else:   # a round had finished: its model was written whole, and the line says so
        assert line.endswith("m.npz; nothing else was written")
    assert _temporary_files(work) == []


@pytest.mark.parametrize("group", [False, True], ids=["process", "process-group"])
def test_ctrl_c_during_dist_train_rounds_is_one_line(work, group):
    """After a round was written: SIGINT to the process, or to its whole group as a terminal's
    Ctrl-C sends it (the worker processes get it too)."""
    pytest.importorskip("distributed")
    env = dict(os.environ, TMPDIR=str(work / "tmp"))
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "dist-train", "--quiet",
                             "--workers", "2", "--passes", "200", "long.svm", "-f", "m.npz"],
                            cwd=work, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    _wait_for(proc, lambda: (work / "m.npz").read_bytes() != b"the old model")
    line = _dist_train_interrupted(proc, (lambda: os.killpg(proc.pid, signal.SIGINT)) if group
                                   else (lambda: proc.send_signal(signal.SIGINT)))
    assert line == f"streamherd: interrupted after writing {work / 'm.npz'}; nothing else was " \
                   f"written"
    from streamherd.model import load_model
    assert load_model(work / "m.npz")[0]["algo"]
    assert _temporary_files(work) == []


# ---------------------------------------------------------------- start-up

@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("delay", [0.0, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1])
def test_a_signal_right_after_spawn_ends_the_run(work, signum, delay):
    """Before the interpreter runs streamherd, the signal's default ends the process (the
    shell's 128 + n); from streamherd's first statement on, the run ends with 128 + n and one
    line; never exit 0, never "Exception ignored", never a traceback, never a model."""
    proc = subprocess.Popen([sys.executable, "-m", "streamherd", "train", "--quiet", "long.svm",
                             "-f", "m.npz"], cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signum)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    err = without_compile_notice(err.decode())
    assert time.monotonic() - sent <= PROMPT_SECONDS
    assert proc.returncode in (-signum, CODES[signum]), (proc.returncode, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == CODES[signum]:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("streamherd: interrupted"), err
    else:
        assert err == ""
    assert (work / "m.npz").read_bytes() == b"the old model"
    assert _temporary_files(work) == []


SLOW_IMPORTS = textwrap.dedent("""
    import runpy, sys, time

    class SlowCommandLine:
        # the command's imports made slow: a signal lands in them for certain
        def find_spec(self, name, path=None, target=None):
            if name == "streamherd.cli":
                print("importing", flush=True)
                time.sleep(30)
            return None

    sys.meta_path.insert(0, SlowCommandLine())
    sys.argv = ["streamherd", "train", "--quiet", "long.svm", "-f", "m.npz"]
    runpy.run_module("streamherd", run_name="__main__")
""")


@pytest.mark.parametrize("signum", list(CODES))
def test_a_signal_while_the_command_imports_is_one_line(work, signum):
    """Between streamherd's first statement and its handlers (the command's imports): exit
    128 + n with one line, not a KeyboardInterrupt traceback nor a silent death."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_IMPORTS], cwd=work,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}"
                                     f"{os.environ.get('PYTHONPATH', '')}"))
    assert proc.stdout.readline() == b"importing\n"
    assert _signalled(proc, signum) == \
        "streamherd: interrupted while starting; nothing was written"
    assert (work / "m.npz").read_bytes() == b"the old model"


SIGNAL_AT = textwrap.dedent("""
    import os, runpy, signal, sys
    from streamherd import cli, outputs

    moment, signum = sys.argv[1], int(sys.argv[2])
    catch_signals, run = outputs.catch_signals, cli.run

    def catch_then_signal(line):
        # the signal lands as the command's handlers are set, before run's try
        previous = catch_signals(line)
        os.kill(os.getpid(), signum)
        return previous

    def run_then_signal():
        # the signal lands as run ends, after its try
        try:
            run()
        finally:
            os.kill(os.getpid(), signum)

    if moment == "handlers":
        outputs.catch_signals = catch_then_signal
    else:
        cli.run = run_then_signal
    sys.argv = ["streamherd", "train", "--quiet", "long.svm", "-f", "m.npz"]
    runpy.run_module("streamherd", run_name="__main__")
""")


@pytest.mark.parametrize("signum", list(CODES))
@pytest.mark.parametrize("moment", ["handlers", "end"])
def test_a_signal_at_the_edges_of_the_run_is_one_line(work, signum, moment):
    """A signal just as the command's handlers are set, or as the run ends, ends the process
    with 128 + n and one line that names what was written; never a traceback."""
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, moment, str(int(signum))],
                          cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}"
                                   f"{os.environ.get('PYTHONPATH', '')}"))
    err = without_compile_notice(proc.stderr.decode())
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == CODES[signum], err
    if moment == "handlers":
        assert err.strip() == "streamherd: interrupted", err
        assert (work / "m.npz").read_bytes() == b"the old model"
    else:
        assert err.strip() == f"streamherd: interrupted after writing {work / 'm.npz'}; " \
                              f"nothing else was written", err
        from streamherd.model import load_model
        assert load_model(work / "m.npz")[0]["algo"]
    assert _temporary_files(work) == []
