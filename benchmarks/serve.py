"""Requests per second and latency of ``streamherd serve`` against Vowpal Wabbit's daemon.

    python benchmarks/serve.py [--seconds 2] [--lines 20000] [--features 20] [--write-readme]

Both servers run on 127.0.0.1 only, each learning from the labeled lines it answers, with a
model trained on the same ~20-feature data (streamherd: pa2; VW: its default learner). VW's
daemon is the installed Python package's (``pylibvw``'s parser loop with --daemon
--foreground, its default --num_children 10: forked processes that each learn apart); when the
package is not installed, its row says so and the published figure (about 50,000 requests/s
on a ~20-feature model) stands in.

Each run is bounded: ``--seconds`` per scenario (and at most MAX_REQUESTS requests), clients
1, 8 and 64, in two ways of writing:
- one line per write: each client writes one line and waits for its answer, again and again
  (latency: write to answer);
- pipelined: each client writes BATCH lines at once and reads their BATCH answers (latency:
  write to the last answer of the batch).
The clients run in CLIENT_PROCESSES processes of their own (asyncio), on the same machine as
the server: on a two-core machine they take CPU from it, and the figures are those of the
pair. The load average is printed with the table.
"""
import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
README = HERE / "README.md"
START, END = "<!-- serve:start -->", "<!-- serve:end -->"
BATCH = 1000
MAX_REQUESTS = 2_000_000
CLIENT_PROCESSES = 2
CLIENTS = (1, 8, 64)
PUBLISHED_VW = "about 50,000 requests/s (VW's daemon on a ~20-feature model, as published)"

VW_DAEMON = """\
import sys
from vowpalwabbit import pyvw
workspace = pyvw.Workspace(" ".join(sys.argv[1:]))
workspace.run_parser()
workspace.finish()
"""


def make_lines(count, features, seed=3):
    """svmlight lines and their VW twins: two noisy classes, ``features`` features a line."""
    import numpy as np

    chooser = np.random.default_rng(seed)
    svm, vw = [], []
    for _ in range(count):
        label = int(chooser.choice([-1, 1]))
        slots = np.sort(chooser.choice(np.arange(1, 1000), features, replace=False))
        values = chooser.random(features) + 0.5 * ((slots % 7 == 0) == (label > 0))
        pairs = [f"{s}:{v:.4f}" for s, v in zip(slots.tolist(), values.tolist())]
        svm.append(f"{label} {' '.join(pairs)}\n".encode())
        vw.append(f"{label} | {' '.join('f' + p for p in pairs)}\n".encode())
    return svm, vw


# ---------------------------------------------------------------- the load


async def _client(port, payloads, expected, deadline, results):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    latencies, answered, k = results["latencies"], 0, 0
    while time.perf_counter() < deadline and results["requests"] < MAX_REQUESTS:
        payload, lines = payloads[k % len(payloads)], expected
        k += 1
        started = time.perf_counter()
        writer.write(payload)
        got = 0
        while got < lines:
            data = await reader.read(1 << 16)
            if not data:
                raise ConnectionError("the server closed the connection")
            got += data.count(b"\n")
        latencies.append(time.perf_counter() - started)
        answered += lines
        results["requests"] += lines
    writer.close()
    results["answered"] += answered
    results["clients answered"] += answered > 0


async def _load(port, clients, mode, lines_file, seconds):
    lines = Path(lines_file).read_bytes().splitlines(keepends=True)
    if mode == "line":
        payloads, expected = lines, 1
    else:
        payloads = [b"".join(lines[i:i + BATCH]) for i in range(0, len(lines) - BATCH, BATCH)]
        expected = BATCH
    results = {"latencies": [], "requests": 0, "answered": 0, "clients answered": 0,
               "clients failed": 0}
    started = time.perf_counter()
    deadline = started + seconds
    tasks = [asyncio.create_task(_client(port, payloads[k % len(payloads):] + payloads,
                                         expected, deadline, results)) for k in range(clients)]
    # a client the server never answers (not accepted) is given up a little after the deadline
    done, pending = await asyncio.wait(tasks, timeout=seconds + 10)
    for task in pending:
        task.cancel()
    for task in done:
        if task.exception() is not None:   # the server closed or reset the connection
            results["clients failed"] += 1
    results["seconds"] = time.perf_counter() - started
    return results


def load_process(port, clients, mode, lines_file, seconds):
    """The clients of one process (run as ``serve.py --load``): prints its results as JSON."""
    results = asyncio.run(_load(port, clients, mode, lines_file, seconds))
    print(json.dumps(results))


def measure(port, clients, mode, lines_file, seconds):
    """requests/s, p50 and p99 latency (ms) of ``clients`` clients in CLIENT_PROCESSES
    processes."""
    processes = min(CLIENT_PROCESSES, clients)
    shares = [clients // processes + (k < clients % processes) for k in range(processes)]
    children = [subprocess.Popen([sys.executable, __file__, "--load", str(port), str(share), mode,
                                  str(lines_file), str(seconds)], stdout=subprocess.PIPE)
                for share in shares]
    results = [json.loads(child.communicate(timeout=seconds + 120)[0]) for child in children]
    latencies = sorted(x for r in results for x in r["latencies"])
    answered = sum(r["answered"] for r in results)
    elapsed = max(r["seconds"] for r in results)
    return {"requests/s": answered / elapsed, "p50 ms": 1000 * statistics.median(latencies),
            "p99 ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
            "requests": answered,
            "clients answered": sum(r["clients answered"] for r in results),
            "clients failed": sum(r["clients failed"] for r in results)}


# ---------------------------------------------------------------- the servers


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server ended with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start")


def start_streamherd(model, folder):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "streamherd", "serve", "-m", str(model),
                                "-f", str(folder / "served.npz"), "--port", str(port)],
                               stderr=subprocess.DEVNULL, env=env, cwd=folder)
    wait_for_port(port, process)
    return process, port


def start_vw(model, folder):
    port = free_port()
    script = folder / "vw_daemon.py"
    script.write_text(VW_DAEMON)
    process = subprocess.Popen([sys.executable, str(script), "--daemon", "--foreground",
                                "--port", str(port), "--quiet", "-i", str(model)],
                               stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=folder,
                               start_new_session=True)
    wait_for_port(port, process)
    return process, port


def stop(process):
    """SIGTERM to the server (VW's: to its process group, its forked children too)."""
    with contextlib.suppress(ProcessLookupError):
        if process.pid == os.getpgid(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def vw_available():
    try:
        import vowpalwabbit  # noqa: F401
        return True
    except ImportError:
        return False


def load_average():
    return os.getloadavg()[0]


def run(seconds, count, features):
    folder = Path(tempfile.mkdtemp(prefix="streamherd-serve-bench-"))
    svm, vw = make_lines(count, features)
    (folder / "train.svm").write_bytes(b"".join(svm))
    (folder / "train.vw").write_bytes(b"".join(vw))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "streamherd", "train", "--algo", "pa2", "-C", "1",
                    "train.svm", "-f", "model.npz", "--quiet"], check=True, cwd=folder, env=env)
    servers = [("streamherd serve", start_streamherd, folder / "model.npz",
                folder / "train.svm")]
    if vw_available():
        subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", "train.vw", "-f",
                        "model.vw", "--quiet"], check=True, cwd=folder)
        servers.append(("VW daemon", start_vw, folder / "model.vw", folder / "train.vw"))
    rows, loads = [], [load_average()]
    for name, start, model, lines_file in servers:
        for mode in ("line", "pipelined"):
            for clients in CLIENTS:
                process, port = start(model, folder)
                try:
                    figures = measure(port, clients, mode, lines_file, seconds)
                finally:
                    stop(process)
                loads.append(load_average())
                rows.append((name, mode, clients, figures))
                print(f"{name:16} {mode:9} {clients:3d} clients: "
                      f"{figures['requests/s']:10,.0f} requests/s  p50 {figures['p50 ms']:.3f} "
                      f"ms  p99 {figures['p99 ms']:.3f} ms", flush=True)
    return rows, loads, vw_available()


def table(rows, loads, has_vw, seconds, count, features):
    lines = [f"{count} lines of {features} features (svmlight; VW: the same as VW lines), "
             f"{seconds:g} s per row, every server learning from the labeled lines it answers "
             f"(streamherd: pa2 -C 1). One line per write: each client writes a line and waits "
             f"for its answer (latency: write to answer). Pipelined: each client writes "
             f"{BATCH} lines at once and reads their answers (latency: write to the last "
             f"answer; requests/s counts lines). The clients are {CLIENT_PROCESSES} asyncio "
             f"processes on the same machine ({os.cpu_count()} cores), sharing its CPU with "
             f"the server.", "",
             "| server | writes | clients (answered) | requests/s | p50 ms | p99 ms |",
             "|---|---|---|---|---|---|"]
    for name, mode, clients, figures in rows:
        failed = figures["clients failed"]
        lines.append(f"| {name} | {'one line' if mode == 'line' else f'{BATCH} lines'} | "
                     f"{clients} ({figures['clients answered']}"
                     f"{f', {failed} failed' if failed else ''}) | "
                     f"{figures['requests/s']:,.0f} | {figures['p50 ms']:.3f} | "
                     f"{figures['p99 ms']:.3f} |")
    if not has_vw:
        lines += ["", f"Vowpal Wabbit is not installed here: the comparison is with "
                      f"{PUBLISHED_VW}."]
    lines += ["", f"load average (1 min) during the runs: {min(loads):.2f} to {max(loads):.2f}"]
    return "\n".join(lines)


def write_readme(text):
    """The "## Serving" section, the last of benchmarks/README.md, between its markers."""
    readme = README.read_text()
    block = f"{START}\n{text}\n{END}"
    if START in readme:
        readme = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, readme,
                        flags=re.S)
    else:
        readme = readme.rstrip("\n") + f"\n\n## Serving\n\n{block}\n"
    README.write_text(readme)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        port, clients, mode, lines_file, seconds = sys.argv[2:7]
        load_process(int(port), int(clients), mode, lines_file, float(seconds))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    rows, loads, has_vw = run(args.seconds, args.lines, args.features)
    text = table(rows, loads, has_vw, args.seconds, args.lines, args.features)
    print(text)
    if args.write_readme:
        write_readme(text)


if __name__ == "__main__":
    main()
