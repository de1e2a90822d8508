"""``streamherd serve``: Vowpal Wabbit's daemon protocol over TCP, on asyncio.

A client writes lines (VW or svmlight, as train reads them) and reads one answer line per
example, in order (answers.py). The event loop does all the I/O; the model work of a client's
lines runs on the loop's thread between two awaits, so that it is never interleaved with
another's: learning has one writer and a prediction reads a whole model. A read is at most
READ_BYTES, so the work of one is short and the other clients wait little; the lines that
arrive together (a pipelining client's) are parsed and learned as one chunk.

The model is never lost: snapshots are written (train's atomic save_model, in a thread, from
arrays copied between two batches) every --save-every examples and/or --save-seconds, on a
client's ``save|`` line, on SIGHUP and on POST /save, and at the end. SIGTERM and SIGINT stop
accepting, answer every line already received, write the model and exit 0; a second one ends
the process at once (outputs.catch_signals), leaving the last snapshot whole.

Every event is one line on stderr (``streamherd serve: ...``), as a supervisor's journal
expects them.
"""
import asyncio
import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass, replace

from streamherd import outputs
from streamherd.errors import StreamherdError, say
from streamherd.model import save_model
from streamherd.serve.answers import ERROR_PREFIX, Answerer, Stream
from streamherd.serve.metrics import Metrics

# bytes read from a client at a time: the lines of one read are one chunk of model work
READ_BYTES = 1 << 16
# a client's malformed lines logged one by one, at most (the rest are counted at its end)
LOGGED_ERRORS = 10
# an answer buffer above this waits for the client to read (a slow client waits alone)
WRITE_BUFFER_BYTES = 1 << 18
SAVE_LINES = (b"save|", b"'save|")
SAVE, TOO_LONG = "save", "too long"
# the model written at the end: tried this many times, a second apart
FINAL_SAVE_ATTEMPTS = 3


@dataclass(frozen=True)
class Settings:
    """The server's flags (command.py)."""

    host: str = "127.0.0.1"
    port: int = 26542
    final_model: "str | None" = None
    save_every: int = 0          # examples learned between snapshots (0: not by count)
    save_seconds: float = 0.0    # seconds between snapshots (0: not by time)
    max_clients: int = 256
    idle_seconds: float = 60.0
    max_line_bytes: int = 1 << 20
    drain_seconds: float = 10.0
    http_port: "int | None" = None
    port_file: "str | None" = None
    pid_file: "str | None" = None


def log(text):
    say(f"streamherd serve: {text}")


class Client:
    """One connection: its stream (line numbers, format) and what it was sent."""

    def __init__(self, number, peer, reader, writer):
        self.number = number
        self.peer = peer
        self.name = f"client{number}"
        self.reader, self.writer = reader, writer
        self.stream = Stream(self.name)
        self.last_active = time.monotonic()
        self.answers = 0
        self.errors = 0
        self.closing = None     # why the server closes it (idle, stopping)

    @property
    def described(self):
        return f"{self.name} ({self.peer})"


class Server:
    """The listening sockets, the clients, the snapshots and the stop."""

    def __init__(self, answerer: Answerer, settings: Settings):
        self.answerer = answerer
        self.settings = settings
        self.metrics = Metrics(answerer)
        self.clients = set()
        self.numbers = itertools.count(1)
        self.stopping = None          # the signal's name once stopping
        self.stopped = None           # an asyncio.Event, set by the signal handler
        self.refused = 0              # connections refused since the last log line of them
        self.learned_since_save = 0
        self.saved_examples = answerer.examples_learned
        self.save_wanted = None       # an asyncio.Event: a snapshot is asked for
        self.save_done = None         # an asyncio.Condition: a snapshot was written (or failed)
        self.save_generation = 0      # snapshots attempted
        self.last_save_error = None
        self.saving = None            # the snapshot being written (a future), if any

    # ------------------------------------------------------------ running

    def run(self):
        """Serve until SIGTERM or SIGINT; returns once the model is written."""
        return asyncio.run(self._main())

    async def _main(self):
        loop = asyncio.get_running_loop()
        self.stopped = asyncio.Event()
        self.save_wanted = asyncio.Event()
        self.save_done = asyncio.Condition()
        settings = self.settings
        try:
            server = await asyncio.start_server(
                self._client, settings.host, settings.port, limit=READ_BYTES,
                backlog=max(128, settings.max_clients))
        except OSError as e:
            raise StreamherdError(f"cannot listen on {settings.host}:{settings.port}: "
                                  f"{e.strerror or e}; pick another --port (0: any free one) "
                                  f"or stop what holds it") from None
        http = None
        if settings.http_port is not None:
            try:
                http = await asyncio.start_server(self._http, settings.host, settings.http_port)
            except OSError as e:
                server.close()
                raise StreamherdError(f"cannot listen on {settings.host}:{settings.http_port} "
                                      f"(--http-port): {e.strerror or e}; pick another port"
                                      ) from None
        port = server.sockets[0].getsockname()[1]
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop, signum)
        loop.add_signal_handler(signal.SIGHUP, self._save_asked, "SIGHUP")
        self._write_files(port)
        tasks = [asyncio.create_task(self._saver()), asyncio.create_task(self._watch_idle())]
        if settings.save_seconds > 0:
            tasks.append(asyncio.create_task(self._save_periodically()))
        answerer = self.answerer
        log(f"listening on {settings.host}:{port}{_http_said(http)}, model "
            f"{answerer.model_path}, {_learning_said(answerer, settings)}")
        await self.stopped.wait()
        server.close()
        if http is not None:
            http.close()
        await self._drain()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.saving is not None:   # a snapshot being written must not replace the last one
            await asyncio.gather(self.saving, return_exceptions=True)
        self._final_save()
        written = settings.final_model if answerer.learning else None
        log(f"stopped: {answerer.examples_learned} examples learned"
            f"{', model written to ' + written if written else ''}")

    def _write_files(self, port):
        """--port-file and --pid-file, each written whole (a temporary file renamed)."""
        for path, text in ((self.settings.port_file, port), (self.settings.pid_file, os.getpid())):
            if path is not None:
                with outputs.replaced_on_success(path, what="file") as f:
                    f.write(f"{text}\n")

    def _stop(self, signum):
        """The first SIGTERM or SIGINT: stop accepting, answer the lines received, then end.
        A second one ends the process at once: the signal is raised again to streamherd's own
        handler (outputs.catch_signals: temporary files removed, exit 128 + its number)."""
        name = signal.Signals(signum).name
        if self.stopping is not None:
            outputs.catch_signals(lambda: f"streamherd serve: {name} while stopping: ended at "
                                          f"once; the last snapshot written is whole")
            signal.raise_signal(signum)
            return
        self.stopping = name
        log(f"{name}: stopping; answering the lines received from {len(self.clients)} "
            f"client(s), then writing the model")
        for client in list(self.clients):
            client.closing = "stopping"
            self._end_input(client)
        self.stopped.set()

    @staticmethod
    def _end_input(client):
        """Read no more from ``client``: what it sent so far is answered, then it is closed."""
        with contextlib.suppress(Exception):
            client.writer.transport.pause_reading()
        client.reader.feed_eof()

    async def _drain(self):
        """Wait for every client to be answered (at most --drain-seconds), then close them."""
        deadline = time.monotonic() + self.settings.drain_seconds
        while self.clients and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for client in list(self.clients):
            log(f"{client.described} not answered within --drain-seconds "
                f"{self.settings.drain_seconds:g}: closed")
            client.writer.transport.abort()
        await asyncio.sleep(0)

    # ------------------------------------------------------------ a client

    async def _client(self, reader, writer):
        number = next(self.numbers)
        peer = ":".join(map(str, writer.get_extra_info("peername") or ("?",)))[:64]
        if self.stopping is not None:
            writer.transport.abort()
            return
        if len(self.clients) >= self.settings.max_clients:
            self._refuse(writer)
            return
        client = Client(number, peer, reader, writer)
        self.clients.add(client)
        self.metrics.connected(len(self.clients), accepted=True)
        log(f"{client.described} connected")
        ending = "disconnected"
        try:
            ending = await self._serve(client)
        except (ConnectionError, OSError) as e:
            ending = f"connection lost ({e.strerror or type(e).__name__})"
        finally:
            self.clients.discard(client)
            self.metrics.connected(len(self.clients))
            writer.transport.close()
            errors = f", {client.errors} malformed line(s)" if client.errors else ""
            log(f"{client.described} {ending}: {client.answers} answer(s){errors}")

    def _refuse(self, writer):
        """A connection past --max-clients: one error line, closed; logged once a second."""
        self.metrics.error("refused")
        with contextlib.suppress(Exception):
            writer.write(f"{ERROR_PREFIX}too many clients ({self.settings.max_clients}, "
                         f"--max-clients); try again later\n".encode())
            writer.transport.close()
        self.refused += 1
        if self.refused == 1:
            asyncio.get_running_loop().call_later(1.0, self._log_refused)

    def _log_refused(self):
        log(f"refused {self.refused} connection(s) in the last second: "
            f"{self.settings.max_clients} clients connected (--max-clients)")
        self.refused = 0

    async def _serve(self, client):
        """Answer ``client``'s lines until it closes (or the server stops); returns how it
        ended, for the log."""
        reader, writer = client.reader, client.writer
        carry = bytearray()
        discarding = False   # inside a line longer than --max-line-bytes
        limit = self.settings.max_line_bytes
        while True:
            data = await reader.read(READ_BYTES)
            if not data:
                break
            client.last_active = time.monotonic()
            end = data.rfind(b"\n") + 1
            if discarding:
                if end == 0:
                    continue
                data, discarding = data[data.find(b"\n") + 1:], False
                end = data.rfind(b"\n") + 1
            if end == 0:
                carry += data
                if len(carry) > limit:
                    await self._answer_line_too_long(client, limit)
                    carry.clear()
                    discarding = True
                continue
            lines = bytes(carry + data[:end]) if carry else data[:end]
            carry[:] = data[end:]
            await self._answer(client, lines)
            if len(carry) > limit:
                await self._answer_line_too_long(client, limit)
                carry.clear()
                discarding = True
        if client.closing == "idle":
            ending = f"idle for {self.settings.idle_seconds:g} s (--idle-seconds): closed"
        elif client.closing == "stopping":
            ending = "answered before the stop: closed"
        else:
            ending = "disconnected"
        if carry or discarding:
            self.metrics.error("partial_line")
            ending += (f", in the middle of line {client.stream.next_line} "
                       f"({'over --max-line-bytes' if discarding else str(len(carry)) + ' bytes'}"
                       f" without a line end: not answered)")
        await self._flush(writer, final=True)
        return ending

    async def _answer(self, client, lines):
        """Answer whole ``lines`` of ``client``: the save requests and the lines over
        --max-line-bytes among them in their turn."""
        limit = self.settings.max_line_bytes
        if b"save|" in lines or len(lines) > limit:
            for part, kind in _special_lines(lines, limit):
                if kind == SAVE:
                    client.stream.next_line += 1
                    self._send(client, [await self._save_line(client)])
                elif kind == TOO_LONG:
                    await self._answer_line_too_long(client, limit)
                else:
                    self._answer_block(client, part)
        else:
            self._answer_block(client, lines)
        await self._flush(client.writer)

    def _answer_block(self, client, lines):
        """The model work of ``lines``, on the loop's thread: no other client's runs meanwhile."""
        started = time.perf_counter()
        answers, tally = self.answerer.answer(client.stream, lines)
        self.metrics.answered(tally, time.perf_counter() - started)
        if tally.errors:
            self._log_errors(client, answers)
        self._send(client, answers)
        if tally.learned:
            self._learned(tally.learned)

    def _send(self, client, answers):
        if answers:
            client.answers += len(answers)
            client.writer.write(("\n".join(answers) + "\n").encode())

    async def _flush(self, writer, final=False):
        """Wait for the client to read its answers when too many are waiting (or all, at the
        end)."""
        if final or writer.transport.get_write_buffer_size() > WRITE_BUFFER_BYTES:
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    def _log_errors(self, client, answers):
        for line in answers:
            if line.startswith(ERROR_PREFIX):
                client.errors += 1
                if client.errors <= LOGGED_ERRORS:
                    last = client.errors == LOGGED_ERRORS
                    log(f"{client.described} malformed line: {line[len(ERROR_PREFIX):]}"
                        f"{' (later ones are counted, not logged)' if last else ''}")

    async def _answer_line_too_long(self, client, limit):
        stream = client.stream
        message = (f"{stream.source}:{stream.next_line}: a line longer than {limit} bytes "
                   f"(--max-line-bytes): not read")
        stream.next_line += 1
        self.metrics.error("line_too_long")
        client.errors += 1
        log(f"{client.described} {message}")
        self._send(client, [ERROR_PREFIX + message])
        await self._flush(client.writer)

    async def _watch_idle(self):
        """Close the clients that sent nothing for --idle-seconds (one that connects and sends
        nothing, or stops in the middle of a line)."""
        idle = self.settings.idle_seconds
        if idle == 0:   # never
            return
        while True:
            await asyncio.sleep(max(0.05, min(idle / 4, 1.0)))
            now = time.monotonic()
            for client in list(self.clients):
                if client.closing is None and now - client.last_active > idle:
                    client.closing = "idle"
                    self.metrics.error("idle")
                    self._end_input(client)
                elif client.closing == "idle" and now - client.last_active > 2 * idle:
                    client.writer.transport.abort()   # not even reading its answers

    # ------------------------------------------------------------ snapshots

    def _learned(self, examples):
        self.learned_since_save += examples
        every = self.settings.save_every
        if every and self.learned_since_save >= every:
            self.learned_since_save = 0
            self.save_wanted.set()

    def _save_asked(self, why):
        if not self.answerer.learning or self.settings.final_model is None:
            log(f"{why}: no snapshot to write "
                f"({'--no-learn' if not self.answerer.learning else 'no -f MODEL was given'})")
            return
        log(f"{why}: writing a snapshot")
        self.save_wanted.set()

    async def _save_periodically(self):
        while True:
            await asyncio.sleep(self.settings.save_seconds)
            if self.answerer.examples_learned != self.saved_examples:
                self.save_wanted.set()

    async def _saver(self):
        """Write a snapshot each time one is asked for, one at a time; a failed one is logged
        and tried again (serving goes on)."""
        retry = None
        while True:
            if retry is None:
                await self.save_wanted.wait()
            else:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.save_wanted.wait(), retry)
            self.save_wanted.clear()
            ok = await self._save_now()
            retry = None if ok else min(max(self.settings.save_seconds, 1.0), 30.0)

    async def _save_now(self):
        """One snapshot (the model as it is between two batches), written in a thread; returns
        whether it was written."""
        path = self.settings.final_model
        answerer = self.answerer
        examples = answerer.examples_learned
        snapshot = answerer.snapshot()
        meta, arrays = snapshot.meta, snapshot.arrays
        started = time.perf_counter()
        self.save_generation += 1
        self.saving = asyncio.get_running_loop().run_in_executor(
            None, save_model, path, meta, arrays)
        try:
            await self.saving
        except StreamherdError as e:
            self.last_save_error = str(e)
            self.metrics.error("save_failed")
            log(f"{e}; the snapshot will be tried again, serving goes on")
            ok = False
        else:
            self.last_save_error = None
            self.saved_examples = examples
            answerer.remember(snapshot)
            self.metrics.saved()
            log(f"snapshot written to {path}: {meta['examples']} examples "
                f"({examples} learned here), {time.perf_counter() - started:.3f} s")
            ok = True
        async with self.save_done:
            self.save_done.notify_all()
        return ok

    async def _save_line(self, client):
        """A client's ``save|`` line (VW's): a snapshot now; its answer says where, or why
        not."""
        if not self.answerer.learning or self.settings.final_model is None:
            return (f"{ERROR_PREFIX}save: nothing to write "
                    f"({'--no-learn' if not self.answerer.learning else 'no -f MODEL was given'})")
        log(f"{client.described} asked for a snapshot")
        ok = await self.save_request()
        return f"saved {self.settings.final_model}" if ok else \
            f"{ERROR_PREFIX}save: {self.last_save_error}"

    async def save_request(self):
        """Ask for a snapshot and wait for the next one written (or failed): whether it was
        written."""
        async with self.save_done:
            generation = self.save_generation
            self.save_wanted.set()
            await self.save_done.wait_for(lambda: self.save_generation > generation
                                          and not self.save_wanted.is_set())
        return self.last_save_error is None

    def _final_save(self):
        """The model learned, written at the end (in this thread: the loop is done)."""
        path = self.settings.final_model
        if path is None or not self.answerer.learning:
            return
        if self.answerer.examples_learned == self.saved_examples and self.last_save_error is None \
                and self.save_generation:
            return
        snapshot = self.answerer.snapshot()
        for attempt in range(1, FINAL_SAVE_ATTEMPTS + 1):
            try:
                save_model(path, snapshot.meta, snapshot.arrays)
                return
            except StreamherdError as e:
                if attempt == FINAL_SAVE_ATTEMPTS:
                    last = f"{self.saved_examples} examples learned here" \
                        if self.save_generation and self.saved_examples else "none"
                    raise StreamherdError(f"{e}; the model learned was not written after "
                                          f"{attempt} attempts (the last snapshot written: "
                                          f"{last})") from None
                log(f"{e}; trying again in a second")
                time.sleep(1.0)

    # ------------------------------------------------------------ HTTP

    async def _http(self, reader, writer):
        """GET /health, GET /metrics (Prometheus' text format), POST /save; one request per
        connection."""
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
            method, target = (request.split(b" ", 2) + [b"", b""])[:2]
            status, kind, body = await self._http_answer(method.decode("latin-1"),
                                                          target.decode("latin-1"))
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: "
                         f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError):
            pass
        finally:
            writer.transport.close()

    async def _http_answer(self, method, target):
        path = target.split("?", 1)[0]
        text = "text/plain; charset=utf-8"
        if path == "/health" and method in ("GET", "HEAD"):
            if self.stopping:
                return "503 Service Unavailable", text, b"stopping\n"
            return "200 OK", text, b"ok\n"
        if path == "/metrics" and method in ("GET", "HEAD"):
            kind, body = self.metrics.exposition()
            return "200 OK", kind, body
        if path == "/save" and method == "POST":
            if not self.answerer.learning or self.settings.final_model is None:
                return "409 Conflict", text, b"nothing to write (--no-learn, or no -f)\n"
            log("HTTP client asked for a snapshot")
            if await self.save_request():
                return "200 OK", text, f"saved {self.settings.final_model}\n".encode()
            return "500 Internal Server Error", text, f"{self.last_save_error}\n".encode()
        return "404 Not Found", text, b"GET /health, GET /metrics or POST /save\n"


def _http_said(http):
    return f" (HTTP: {http.sockets[0].getsockname()[1]})" if http is not None else ""


def _learning_said(answerer, settings):
    if not answerer.learning:
        return "not learning (--no-learn)"
    if settings.final_model is None:
        return "learning (no -f: what it learns is not written)"
    return f"learning, snapshots to {settings.final_model}"


def _special_lines(lines, limit):
    """(part, kind) of ``lines`` (whole lines) in order: runs of ordinary lines (kind None),
    each line that is VW's ``save|`` (a tag "save" and no features: SAVE) and each line longer
    than ``limit`` bytes (TOO_LONG)."""
    part = []
    pieces = lines.split(b"\n")
    for k, line in enumerate(pieces):
        if k == len(pieces) - 1 and not line:   # (after the last line end)
            break
        line += b"\n"
        kind = SAVE if line.strip() in SAVE_LINES else TOO_LONG if len(line) > limit else None
        if kind is None:
            part.append(line)
            continue
        if part:
            yield b"".join(part), None
            part = []
        yield line, kind
    if part:
        yield b"".join(part), None


def serve(model_path, settings, learning=True, shown="label", fmt="auto"):
    """``streamherd serve``: every flag checked before the model is loaded, then serve until
    SIGTERM or SIGINT."""
    if fmt not in ("auto", "svmlight", "vw"):
        raise StreamherdError(f"unknown --format '{fmt}'; use one of auto, svmlight, vw")
    for flag, port in (("--port", settings.port), ("--http-port", settings.http_port)):
        if port is not None and not 0 <= port <= 65535:
            raise StreamherdError(f"{flag} {port}: give a port number from 0 (any free one) to "
                                  f"65535")
    for flag, value in (("--save-every", settings.save_every),
                        ("--save-seconds", settings.save_seconds),
                        ("--idle-seconds", settings.idle_seconds),
                        ("--drain-seconds", settings.drain_seconds)):
        if not value >= 0:
            raise StreamherdError(f"{flag} {value:g}: give 0 or more")
    for flag, value in (("--max-clients", settings.max_clients),
                        ("--max-line-bytes", settings.max_line_bytes)):
        if value < 1:
            raise StreamherdError(f"{flag} {value}: give 1 or more")
    if settings.final_model is not None:
        if not learning:
            raise StreamherdError("--no-learn answers without learning, so there is no model "
                                  "to write: drop -f (or --no-learn)")
        settings = replace(settings, final_model=outputs.resolve_output(
            settings.final_model, [], "model"))
    for what, path in (("--port-file", settings.port_file), ("--pid-file", settings.pid_file)):
        if path is not None:
            outputs.resolve_output(path, [model_path], what)
    if (settings.save_every or settings.save_seconds) and settings.final_model is None:
        raise StreamherdError("--save-every and --save-seconds write snapshots to -f MODEL: "
                              "give -f")
    answerer = Answerer(model_path, learning, shown, fmt)
    if settings.host not in ("127.0.0.1", "localhost", "::1"):
        log(f"--host {settings.host}: reachable beyond this machine, by anyone who can reach "
            f"the port (the protocol has no authentication)")
    Server(answerer, settings).run()
