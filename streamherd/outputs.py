"""The user's files are sacred: inputs checked before any work, outputs checked before any work
and written to a temporary file that replaces the target only when the run succeeded.

An output is never an input (the same file under another name, a hard link, or the file behind
a redirected stdin/stdout included), never anything but a regular file (``-f /dev/null`` as root
would replace the device), and a symbolic link is written through (the file it points to is
replaced, the link stays), but not one another user may have planted in a shared folder. A
replaced file keeps its mode (a private model stays private) and, where the process may, its
owner. The one exception is a text stream: predictions may go to a pipe, a
terminal or a device (VW's habits ``-p /dev/stdout``, ``-p /dev/null``, a named pipe), written in
place, since there is no file there to keep and nothing to rename over it.
"""
import contextlib
import errno
import fcntl
import os
import signal
import stat
import sys
import tempfile
import threading
import time

from streamherd.errors import Interrupted, StreamherdError, say

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


def model_missing(path):
    """The error of a model file that is not there."""
    return StreamherdError(f"model {path} does not exist; train one with "
                           f"'streamherd train ... -f {path}'")


def check_model_exists(path):
    """model_missing when nothing is at ``path`` (what else can be wrong with it, reading it
    tells: model/container.py)."""
    if not os.path.lexists(path):
        raise model_missing(path)


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
    _refuse_a_planted_link(path, what)
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


def _refuse_a_planted_link(path, what):
    """Refuse to write through a symbolic link that another user may have planted: one in a
    sticky world-writable folder (the system temp folder) owned by neither this process's user
    nor the folder's owner. That is the rule of the kernel's fs.protected_symlinks, applied
    whatever that setting is: as root, following such a link would replace a file the link's
    owner could not write."""
    try:
        link = os.lstat(path)
        folder = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return
    sticky_shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if stat.S_ISLNK(link.st_mode) and sticky_shared and \
            link.st_uid not in (os.geteuid(), folder.st_uid):
        raise StreamherdError(f"cannot write {what} {path}: it is a symbolic link owned by "
                              f"another user in a shared folder; write to a path of your own")


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
        _replace(files)
    except BaseException:
        for tmp, _ in files:   # (one already renamed is no longer there)
            remove_temporary(tmp)
        raise
    finally:
        _together.files = outer


@contextlib.contextmanager
def replaced_on_success(real_path, mode="w", what="output"):
    """A file object writing to a temporary file beside ``real_path``, which replaces it when
    the block ends without an exception; otherwise the temporary file is removed and whatever
    was at ``real_path`` stays as it was. ``what`` names the file in an error; a write that
    fails (a full disk) is one such error (write_error). A StreamTarget (a pipe or device) is
    written in place: what was sent before a failure cannot be taken back, as on standard
    output."""
    encoding = "utf-8" if "b" not in mode else None
    if isinstance(real_path, StreamTarget):
        try:
            # opened apart from its with: only the open's own error is worded here
            stream = open(real_path, mode, encoding=encoding)  # noqa: SIM115
        except OSError as e:
            raise StreamherdError(f"cannot write {what} {real_path}: {e.strerror}") from None
        with _closed_reporting(stream, what, real_path, kept=None) as reported:
            yield reported
        return
    folder = os.path.dirname(os.path.abspath(real_path))
    try:
        fd, tmp = temporary_file(".streamherd-", ".tmp", folder)
    except OSError as e:
        raise StreamherdError(f"cannot write {what} {real_path}: {e.strerror}; check that the "
                              f"folder exists and is writable") from None
    try:
        kept = os.path.lexists(real_path)
        with _closed_reporting(os.fdopen(fd, mode, encoding=encoding), what, real_path,
                               kept) as reported:
            yield reported
        _take_mode(tmp, real_path)
        together = getattr(_together, "files", None)
        if together is None:
            _replace([(tmp, real_path)])
        else:
            together.append((tmp, real_path))
    except BaseException:
        remove_temporary(tmp)
        raise


@contextlib.contextmanager
def _closed_reporting(file, what, path, kept):
    """``file`` as a ReportedWrites, closed at the block's end; a failed write or the close's
    last flush is write_error's line (an exception of the block itself goes on as it is)."""
    try:
        yield ReportedWrites(file, what, path, kept)
    except BaseException:
        with contextlib.suppress(OSError):
            file.close()
        raise
    try:
        file.close()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise write_error(what, path, e, kept) from None


def write_error(what, path, error, kept=None):
    """The one line of a write that failed: which file, why (a full disk said so), and what
    became of the file (``kept``: True, it was there and stays as it was; False, it was not
    created; None: a stream, what was sent is sent)."""
    fate = {True: f" ({path} was left as it was)", False: f" ({path} was not created)",
            None: ""}[kept]
    return StreamherdError(f"cannot write {what} {path}: {_write_reason(error)}{fate}")


def _write_reason(error):
    """Why a write failed, and what to do: a full disk is called so."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on device; free some space there or write it elsewhere"
    if error.errno == errno.EFBIG:
        return "the file is too large for its file system; write it elsewhere"
    return f"{(error.strerror or str(error)).lower()}; check where it goes"


class ReportedWrites:
    """A file object whose failed writes are write_error's one line naming the file (a closed
    pipe stays a BrokenPipeError: the CLI ends quietly then); all else is the file's own."""

    def __init__(self, file, what, path, kept):
        self._file, self._what, self._path, self._kept = file, what, path, kept

    def _reported(self, method, *args):
        try:
            return method(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise write_error(self._what, self._path, e, self._kept) from None

    def write(self, data):
        return self._reported(self._file.write, data)

    def writelines(self, lines):
        return self._reported(self._file.writelines, lines)

    def flush(self):
        return self._reported(self._file.flush)

    def __getattr__(self, name):
        return getattr(self._file, name)

    def __iter__(self):
        return iter(self._file)


@contextlib.contextmanager
def standard_output(what):
    """A text writer to standard output for ``what`` a command prints there (inspect's
    table). Written straight to its file descriptor, so that a failed write (a full disk under
    '> file') leaves nothing buffered to retry: it is one line naming the file behind stdout,
    which, a regular file, is cut back to what it held before (nothing half-written is left
    there). Where stdout has no descriptor (a caller's own stream), that stream as it is."""
    stream = sys.stdout
    if stream is None:
        raise StreamherdError(f"standard output is closed; redirect it to a file for the {what}")
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):   # io.StringIO and the like
        yield stream
        return
    stream.flush()
    writer = _DescriptorWriter(fd, what)
    yield writer
    writer.flush()


class _DescriptorWriter:
    """Text written to a file descriptor in large pieces (see standard_output)."""

    PIECE = 1 << 16

    def __init__(self, fd, what):
        self.fd, self.what, self.pending, self.size = fd, what, [], 0
        info = os.fstat(fd)
        self.regular = stat.S_ISREG(info.st_mode)
        # where this run's output begins: the end for an appending '>>', else the offset
        self.start = info.st_size if self.regular and fcntl.fcntl(fd, fcntl.F_GETFL) & \
            os.O_APPEND else (os.lseek(fd, 0, os.SEEK_CUR) if self.regular else None)

    def write(self, text):
        data = text.encode("utf-8")
        self.pending.append(data)
        self.size += len(data)
        if self.size >= self.PIECE:
            self.flush()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        data = b"".join(self.pending)
        self.pending, self.size = [], 0
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except BrokenPipeError:
                raise
            except InterruptedError:
                continue
            except OSError as e:
                raise self._failed(e) from None

    def _failed(self, error):
        try:
            name = os.readlink(f"/proc/self/fd/{self.fd}")
        except OSError:
            name = None
        fate = ""
        if self.regular:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.start)
                fate = "; what this run had written there was removed"
        return StreamherdError(f"cannot write the {self.what} to standard output"
                               f"{f' ({name})' if name else ''}: {_write_reason(error)}{fate}")


def _replace(files):
    """Each (temporary file, real path) renamed over its target, none after a signal, and all
    of them once begun; ``replaced`` records each."""
    with signals_deferred():
        for tmp, real_path in files:
            os.replace(tmp, real_path)
            _temporary.discard(tmp)
            replaced.append(real_path)


# ---------------------------------------------------------------- signals
#
# SIGINT, SIGTERM and SIGHUP end a command through an Interrupted raised in the main thread, so
# that every ``finally`` on the way out removes its temporary file. What that cannot cover: an
# interrupt raised inside a library's destructor is dropped ("Exception ignored"), and the way
# out may wait on a thread, a lock or a queue that never comes free (a run seen to hang after
# SIGTERM). So the signal is also remembered (no output replaces its file after it),
# and a watchdog thread ends the process SIGNAL_GRACE_SECONDS later, or at a second signal,
# after removing every temporary file still there. While the process has child processes (a
# pool's, a local cluster's), stopping them is the way out: it is given CHILDREN_GRACE_SECONDS.

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_GRACE_SECONDS = 1.5
CHILDREN_GRACE_SECONDS = 60.0
_temporary = set()             # the temporary files that exist now: outputs', spills
replaced = []                  # the real paths replaced by an output, in order
_caught = {"signal": None, "line": lambda: "streamherd: interrupted"}
_deferring = threading.local()   # .on: the main thread is in signals_deferred (another's: no)
_ending = threading.Lock()     # held by whichever says the interruption's line


def catch_signals(line):
    """Install the handler of SIGNALS (but of one the parent ignores, as nohup's SIGHUP);
    ``line()``: the one line said on stderr if the watchdog ends the process. Returns what
    restore_signals puts back."""
    _caught["line"] = line
    previous = {"hook": sys.unraisablehook}
    sys.unraisablehook = _unraisable
    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _on_signal)
    return previous


def restore_signals(previous):
    for signum, handler in previous.items():
        if signum == "hook":
            sys.unraisablehook = handler
        else:
            signal.signal(signum, handler)


def _on_signal(signum, frame):
    if _caught["signal"] is not None:
        _end_now(128 + _caught["signal"])
    _caught["signal"] = signum
    threading.Thread(target=_watch, args=(128 + signum,), daemon=True).start()
    if not getattr(_deferring, "on", False):
        raise Interrupted(128 + signum)


def _unraisable(unraisable):
    """The interrupt a destructor could not raise is remembered (_on_signal): no "Exception
    ignored" traceback for it, nor, once a signal came, for a destructor's error that the
    interruption left behind (a ZipFile whose file a cut save closed)."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt) and _caught["signal"] is None:
        sys.__unraisablehook__(unraisable)


def _watch(code):
    time.sleep(SIGNAL_GRACE_SECONDS)
    children = sys.modules.get("multiprocessing")
    deadline = time.monotonic() + CHILDREN_GRACE_SECONDS
    while children is not None and children.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    _end_now(code)


def _end_now(code):
    for path in list(_temporary):
        remove_temporary(path)
    if _ending.acquire(blocking=False):
        say(_caught["line"]())
    os._exit(code)


def replaced_since(count):
    """The real paths replaced since ``replaced`` held ``count`` of them, each once (dist-train
    replaces its model every round)."""
    return list(dict.fromkeys(replaced[count:]))


def may_say_interrupted():
    """Whether the interruption's line is still to be said (and by the caller: the watchdog
    will not say it too)."""
    return _ending.acquire(blocking=False)


def interruption_line():
    """The one line that says the run was interrupted (catch_signals's ``line``)."""
    return _caught["line"]()


def defer_signals_to_the_end():
    """From now on in the main thread, a signal is remembered, not raised: the process ends
    by itself (or by the watchdog, SIGNAL_GRACE_SECONDS later)."""
    _deferring.on = True


def raise_if_signalled():
    """An Interrupted if a signal came (its exception may have been swallowed on the way)."""
    if _caught["signal"] is not None:
        raise Interrupted(128 + _caught["signal"])


@contextlib.contextmanager
def signals_deferred():
    """A block that a signal does not cut short: it is raised at the block's end (and before
    the block, a signal already caught is)."""
    raise_if_signalled()
    _deferring.on = True
    try:
        yield
    finally:
        _deferring.on = False
    raise_if_signalled()


def temporary_file(prefix, suffix, folder=None):
    """tempfile.mkstemp's (fd, path), remembered until remove_temporary (or a rename over its
    target), so that a signal's watchdog removes it."""
    with signals_deferred():
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
        _temporary.add(path)
        if _caught["signal"] is not None:   # came while it was made: raised on the way out
            os.close(fd)
            remove_temporary(path)
    return fd, path


# where Python's tempfile looks first: a folder the user named there is the one used
TEMPORARY_FOLDER_VARIABLES = ("TMPDIR", "TEMP", "TMP")


def spill_file(prefix, suffix, what):
    """temporary_file's (fd, path) of a spill (``what``: a copy of standard input, a shuffle's
    blocks) in the system temporary folder. A folder named by TMPDIR (TEMP, TMP) is used as it
    is: Python's tempfile would silently take /tmp (or the working folder) instead when it is
    full or unwritable, filling the disk the user sent the spill away from; here that is one
    line naming the folder."""
    named = [os.environ[name] for name in TEMPORARY_FOLDER_VARIABLES if os.environ.get(name)]
    folder = named[0] if named else tempfile.gettempdir()
    try:
        return temporary_file(prefix, suffix, folder)
    except OSError as e:
        where = f"TMPDIR ({folder})" if named else folder
        raise StreamherdError(f"cannot make {what} in {where}: {e.strerror}; free space there "
                              f"or set TMPDIR to a writable folder with room") from None


def remove_temporary(path):
    with contextlib.suppress(OSError):
        os.unlink(path)
    _temporary.discard(path)


def _take_mode(tmp, real_path):
    """The mode (and, where the process may, the owner) of the file ``tmp`` replaces, so that a
    private file stays private; a new file an ordinary one's (mkstemp makes it 0600)."""
    try:
        replaced_file = os.stat(real_path)
    except OSError:
        os.chmod(tmp, 0o666 & ~_umask())
        return
    os.chmod(tmp, stat.S_IMODE(replaced_file.st_mode))
    with contextlib.suppress(OSError):   # only root (or the owner, to its own groups) may
        os.chown(tmp, replaced_file.st_uid, replaced_file.st_gid)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
