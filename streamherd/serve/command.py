"""The ``serve`` command line: the model, the socket, what each answer shows, the snapshots and
the limits. Importing this imports neither numpy nor numba (cli.py imports it for --help)."""
from pathlib import Path

from streamherd import option_groups as shared
from streamherd.command_line import Command, Option

DEFAULT_PORT = 26542   # Vowpal Wabbit's daemon port


def run(values):
    """serve with the command line's ``values``."""
    from streamherd import start_up

    server = start_up.imported("streamherd.serve.server")
    if sum([values.raw, values.proba, values.scores]) > 1:
        from streamherd.errors import StreamherdError

        raise StreamherdError("--proba, --raw and --scores each choose the answer; pass one "
                              "of them")
    shown = "proba" if values.proba else "scores" if values.scores else \
        "raw" if values.raw else "label"
    settings = server.Settings(
        host=values.host, port=values.port,
        final_model=_text(values.final_model),
        save_every=values.save_every, save_seconds=values.save_seconds,
        max_clients=values.max_clients, idle_seconds=values.idle_seconds,
        max_line_bytes=values.max_line_bytes, drain_seconds=values.drain_seconds,
        http_port=values.http_port, port_file=_text(values.port_file),
        pid_file=_text(values.pid_file))
    server.serve(str(values.model), settings, learning=not values.no_learn, shown=shown,
                 fmt=values.fmt)


def serve_hint(flag):
    """The message for an unknown ``flag``: VW's --daemon is what serve is (the hint every
    other command gives for it points elsewhere), else option_groups.vw_hint's."""
    if flag == "--daemon":
        return ("no such option --daemon (Vowpal Wabbit's): streamherd serve is a daemon "
                "already, and stays in the foreground as systemd and container runtimes expect "
                "(docs/serving.md); drop the flag")
    return shared.vw_hint(flag)


def _text(path):
    return None if path is None else str(path)


COMMAND = Command(
    "serve", "Answer examples over TCP, one line per example (Vowpal Wabbit's daemon "
             "protocol), learning from the labeled ones.", [
        ("Model", [
            Option(("-m", "--model", "-i", "--initial_regressor"), "model", "The model to "
                   "serve (.npz).", Path, "MODEL", required=True,
                   vw=("-i", "--initial_regressor")),
            Option(("-f", "--final-model", "--final_regressor"), "final_model",
                   "Write the model learned here: every --save-every examples and "
                   "--save-seconds, on a 'save|' line, SIGHUP or POST /save, and at the end "
                   "(atomically: the file is always a whole model).", Path, "MODEL",
                   vw=("--final_regressor",)),
            Option(("--no-learn", "-t", "--testonly"), "no_learn", "Answer without learning "
                   "from the labels (predict's answers for a model that does not change).",
                   bool, vw=("-t", "--testonly")),
            Option(("--save-every",), "save_every", "A snapshot to -f every N examples "
                   "learned (0: not by count).", int, "N", 0),
            Option(("--save-seconds",), "save_seconds", "A snapshot to -f every S seconds "
                   "when the model learned (0: not by time).", float, "S", 0.0),
        ]),
        ("Answers", [
            Option(("--raw",), "raw", "Answer the margin w.x instead of the label (multiclass: "
                   "every class's score; with learning: binary and regression models).", bool),
            Option(("--proba",), "proba", "Answer P(y=+1|x), as predict --proba (with "
                   "--no-learn).", bool),
            Option(("--scores",), "scores", "Multiclass: class:score for every class, as "
                   "predict --scores (with --no-learn).", bool),
            shared.FORMAT,
        ]),
        ("Network", [
            Option(("--host",), "host", "The address to listen on; anything but loopback "
                   "lets other machines in (no authentication).", metavar="HOST",
                   default="127.0.0.1"),
            Option(("--port",), "port", "The TCP port (0: any free one; see --port-file).",
                   int, "PORT", DEFAULT_PORT),
            Option(("--http-port",), "http_port", "Also answer HTTP on this port: GET "
                   "/health, GET /metrics (Prometheus), POST /save.", int, "PORT"),
            Option(("--port-file", "--port_file"), "port_file", "Write the port listened on "
                   "to this file.", Path, "FILE", vw=("--port_file",)),
            Option(("--pid-file", "--pid_file"), "pid_file", "Write the process id to this "
                   "file.", Path, "FILE", vw=("--pid_file",)),
        ]),
        ("Limits", [
            Option(("--max-clients",), "max_clients", "Clients at once; one more gets an "
                   "error line and is closed.", int, "N", 256),
            Option(("--idle-seconds",), "idle_seconds", "Close a client that sends nothing "
                   "for this long (0: never).", float, "S", 60.0),
            Option(("--max-line-bytes",), "max_line_bytes", "A longer line gets an error line "
                   "and is not read.", int, "N", 1 << 20),
            Option(("--drain-seconds",), "drain_seconds", "On SIGTERM or SIGINT, wait this long "
                   "at most for the clients to read their last answers.", float, "S", 10.0),
            Option(("--num_children",), "vw_num_children", "", int, "N", vw=("--num_children",),
                   note="one process serves every client"),
        ]),
    ], run, hint=lambda flag: serve_hint(flag), clash=shared.vw_clash,
    interrupted="interrupted; the last snapshot written is whole")
