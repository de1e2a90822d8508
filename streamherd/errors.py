"""Errors a user can cause, and interruptions. The CLI prints their message as one line and
exits with their code."""
import contextlib
import sys


class StreamherdError(Exception):
    """A user-facing error: the message says what, where and how to fix it."""

    exit_code = 2

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


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
