"""The user's files are sacred: inputs checked before any work, outputs checked before any work
and written to a temporary file that replaces the target only when the run succeeded.

An output is never an input (the same file under another name, a hard link, or the file behind
a redirected stdin/stdout included), never anything but a regular file (``-f /dev/null`` as root
would replace the device), and a symbolic link is written through (the file it points to is
replaced, the link stays). The one exception is a text stream: predictions may go to a pipe, a
terminal or a device (VW's habits ``-p /dev/stdout``, ``-p /dev/null``, a named pipe), written in
place, since there is no file there to keep and nothing to rename over it.
"""
import contextlib
import os
import stat
import sys
import tempfile
import threading

from streamherd.errors import StreamherdError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_inputs(paths):
    """Every input is there and readable before the first byte is learned from (not after
    training on the files before a misspelt one)."""
    for path in paths:
        if path == "-":
            if sys.stdin is None:
                raise StreamherdError("standard input is closed, and no input file was given; "
                                      "pass input files or pipe data in")
            continue
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise StreamherdError(f"cannot read {path}: no such file; check the path") from None
        except OSError as e:
            raise StreamherdError(f"cannot read {path}: {e.strerror}; check the path and "
                                  f"permissions") from None
        if stat.S_ISDIR(info.st_mode):
            raise StreamherdError(f"cannot read {path}: it is a folder; give the data files "
                                  f"in it (e.g. {os.path.join(path, '*.svm')})")
        if not os.access(path, os.R_OK):
            raise StreamherdError(f"cannot read {path}: permission denied; check its "
                                  f"permissions")


def _same_file(info, other):
    return info.st_dev == other.st_dev and info.st_ino == other.st_ino


def _input_stats(inputs):
    """(name, stat) of each input that is a file: named files, and stdin when it is a file."""
    stats = []
    for path in inputs:
        try:
            if path == "-":
                if sys.stdin is not None:
                    stats.append(("standard input", os.fstat(sys.stdin.fileno())))
            else:
                stats.append((path, os.stat(path)))
        except (OSError, ValueError):   # not there: check_inputs reports it
            continue
    return stats


# outputs that are text streams (read as they are written), which may go to a pipe or device
STREAMS = ("predictions",)
_STREAM_KINDS = (stat.S_ISFIFO, stat.S_ISCHR, stat.S_ISSOCK)


class StreamTarget(str):
    """The path of a pipe, terminal or device that a text stream is written to in place
    (replaced_on_success opens it, no temporary file)."""


def resolve_output(path, inputs, what):
    """The real path to write ``what`` (e.g. "model") to: through symbolic links, checked
    before any work. Refuses a target that exists and is not a regular file (but a pipe or a
    device for a text stream, STREAMS: a StreamTarget), a missing or read-only folder, and an
    output that is one of ``inputs``."""
    path = os.fspath(path)
    real = os.path.realpath(path)
    try:
        # the path itself, not realpath's: /dev/stdout on a pipe resolves to a name
        # ("/proc/N/fd/pipe:[..]") that only the link itself opens
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise StreamherdError(f"cannot write {what} {path}: {e.strerror}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        if what in STREAMS and any(test(info.st_mode) for test in _STREAM_KINDS):
            _refuse_an_input(path, info, inputs, what)
            return StreamTarget(path)
        raise StreamherdError(f"cannot write {what} {path}: it is {_kind(info.st_mode)}; give "
                              f"the path of a regular file")
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise StreamherdError(f"cannot write {what} {path}: folder {folder} does not exist; "
                              f"create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StreamherdError(f"cannot write {what} {path}: folder {folder} is not writable; "
                              f"write it elsewhere")
    if info is not None:
        _refuse_an_input(path, info, inputs, what)
    return real


def refuse_shared_outputs(outputs):
    """Refuse two outputs of one run that are one file (``outputs``: (what, the path given,
    its resolve_output) of each; None paths skipped): the one renamed last would replace the
    other's whole content, and the run would say it wrote both. By real path, and by file
    identity for files already there (a hard link); text streams (a pipe, a device) aside."""
    seen = []
    for what, given, real in outputs:
        if real is None or isinstance(real, StreamTarget):
            continue
        try:
            info = os.stat(real)
        except OSError:
            info = None
        for other_what, other_given, other_real, other_info in seen:
            if real == other_real or (info is not None and other_info is not None
                                      and _same_file(info, other_info)):
                raise StreamherdError(f"cannot write {what} {given}: it is also the "
                                      f"{other_what} output ({other_given}); write them to "
                                      f"different files")
        seen.append((what, given, real, info))


def beside_model(final_model, part):
    """A file written beside the model: model.npz -> model.PART.npz (--save_per_pass's pass3,
    --save-bank's bank2)."""
    path = os.fspath(final_model)
    stem = path[:-4] if path.endswith(".npz") else path
    return f"{stem}.{part}.npz"


def _refuse_an_input(path, info, inputs, what):
    for name, input_info in _input_stats(inputs):
        if _same_file(info, input_info):
            same = "" if name == path else f" ({name})"
            raise StreamherdError(f"cannot write {what} {path}: it is also an input{same}; "
                                  f"write the {what} to another file")


def check_stdout_output(inputs):
    """Standard output carries the predictions: it must be open, and not an input file
    (``predict x.svm >> x.svm`` would read its own output for ever)."""
    if sys.stdout is None:
        raise StreamherdError("standard output is closed; pass -p FILE to write the "
                              "predictions to a file")
    try:
        info = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError):
        return
    if stat.S_ISREG(info.st_mode):
        for name, input_info in _input_stats(inputs):
            if _same_file(info, input_info):
                raise StreamherdError(f"standard output is the input {name}; redirect the "
                                      f"predictions to another file")


_together = threading.local()   # replaced_together's list of (temporary file, real path)


@contextlib.contextmanager
def replaced_together():
    """The files written inside this block (replaced_on_success) replace theirs together at its
    end, once every one is written whole: an exception or an interrupt while one is being
    written (eleven --save-bank models take seconds) leaves every one of them as it was."""
    outer = getattr(_together, "files", None)
    _together.files = files = []
    try:
        yield
    except BaseException:
        for tmp, _ in files:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _together.files = outer
    for tmp, real_path in files:
        os.replace(tmp, real_path)


@contextlib.contextmanager
def replaced_on_success(real_path, mode="w", what="output"):
    """A file object writing to a temporary file beside ``real_path``, which replaces it when
    the block ends without an exception; otherwise the temporary file is removed and whatever
    was at ``real_path`` stays as it was. ``what`` names the file in an error. A StreamTarget
    (a pipe or device) is written in place: what was sent before a failure cannot be taken back,
    as on standard output."""
    if isinstance(real_path, StreamTarget):
        try:
            # opened apart from its with: only the open's own error is worded here
            stream = open(real_path, mode,  # noqa: SIM115
                          encoding="utf-8" if "b" not in mode else None)
        except OSError as e:
            raise StreamherdError(f"cannot write {what} {real_path}: {e.strerror}") from None
        with stream:
            yield stream
        return
    folder = os.path.dirname(os.path.abspath(real_path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".streamherd-", suffix=".tmp", dir=folder)
    except OSError as e:
        raise StreamherdError(f"cannot write {what} {real_path}: {e.strerror}; check that the "
                              f"folder exists and is writable") from None
    try:
        with os.fdopen(fd, mode, encoding="utf-8" if "b" not in mode else None) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())   # mkstemp makes it 0600: an ordinary file instead
        together = getattr(_together, "files", None)
        if together is None:
            os.replace(tmp, real_path)
        else:
            together.append((tmp, real_path))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
