"""Errors a user can cause. The CLI prints their message as one line and exits non-zero."""


class StreamherdError(Exception):
    """A user-facing error: the message says what, where and how to fix it."""

    exit_code = 2
