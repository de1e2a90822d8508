"""Errors a user can cause, and interruptions. The CLI prints their message as one line and
exits with their code."""
import contextlib
import math
import os
import reprlib
import signal
import sys


class StreamherdError(Exception):
    """A user-facing error: the message says what, where and how to fix it."""

    exit_code = 2

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class SavedMeta:
    """A saved model's meta, checked key by key by each part that reads its slice of it; each
    failure is a one-line 'PATH is damaged: ...'."""

    def __init__(self, path, meta):
        self.path, self.meta = path, meta

    def damaged(self, what):
        return StreamherdError(f"{self.path} is damaged: {what}")

    def get(self, key, check, expected, required=True, default=None):
        """meta[key] after ``check(value)``; absent: an error, or ``default``."""
        if key not in self.meta:
            if required:
                raise self.damaged(f"its meta has no '{key}'")
            return default
        value = self.meta[key]
        if not check(value):
            raise self.damaged(f"'{key}' in its meta is {shown(value)}, expected {expected}")
        return value


_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxdict = 4
_short.maxlevel = 2


def shown(value):
    """A value for a message: short, one line, safe for any nesting."""
    return _short.repr(value)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value):
    """A JSON number (not a bool) that a float can hold (NaN and infinity included): an int
    from 2^1024 - 2^970 on rounds beyond the largest float."""
    return isinstance(value, float) or is_int(value) and abs(value) < 2 ** 1024 - 2 ** 970


def is_finite(value):
    return is_real(value) and math.isfinite(value)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM. A KeyboardInterrupt, so that every ``except
    KeyboardInterrupt`` and ``finally`` on the way out (a temporary output removed, threads
    stopped) treats both alike. ``exit_code`` is 128 + the signal number, as a shell reports a
    process ended by that signal: 130 for Ctrl-C, 143 for SIGTERM."""

    def __init__(self, exit_code=130, message=None):
        """``message``: what the interruption left undone, when the code that caught it knows
        (predict's count); None: the command's own words (cli)."""
        super().__init__(message)
        self.exit_code = exit_code
        self.message = message


def say(text):
    """A line on stderr. A closed stderr, or one whose reader went away, neither turns an exit
    code into a traceback nor makes a finished run fail."""
    # AttributeError: sys.stderr is None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(text, file=sys.stderr, flush=True)


_silenced = []   # depth of notices_silenced: a run with --quiet


def notice(text):
    """A learner's remark on the run (e.g. that it started folding): a line on stderr, unless
    the run is quiet (``notices_silenced``)."""
    if not _silenced:
        say(text)


@contextlib.contextmanager
def notices_silenced(silent=True):
    """While inside, ``notice`` says nothing (when ``silent``): the run's --quiet."""
    if silent:
        _silenced.append(True)
    try:
        yield
    finally:
        if silent:
            _silenced.pop()


# SIGINT, SIGTERM and SIGHUP
STARTUP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def end_at_signals_while_starting():
    """For the command's process, first thing: a signal before the command's own handlers
    (outputs.catch_signals) are in place ends it at once, with its exit code (128 + its
    number) and one line. Without it, Ctrl-C while modules import is a KeyboardInterrupt
    traceback, SIGTERM a death no message explains. Nothing is written yet, so nothing needs
    undoing; a signal the parent ignores (nohup's SIGHUP) stays ignored."""
    for signum in STARTUP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _end_while_starting)


def _end_while_starting(signum, frame):
    say("streamherd: interrupted while starting; nothing was written")
    os._exit(128 + signum)
