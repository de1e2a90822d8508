"""Models as ``.npz``: a JSON ``meta`` string, ``mean`` and the learner's named state arrays.

Written atomically (temporary file in the target's folder, then rename), so a failed or
interrupted run never leaves a half-written or clobbered model. Loaded with
``allow_pickle=False``.
"""
import json
import os
import tempfile
import zipfile

import numpy as np

from streamherd import __version__
from streamherd.errors import StreamherdError

# Version 2 added multiclass and regression models (meta "task", "classes", "multiclass"); a
# version 1 file is a binary model, read as before.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_MARKER = "streamherd-model"


def save_model(path, meta, arrays):
    meta = {"format": _MARKER, "format_version": FORMAT_VERSION, "streamherd_version": __version__,
            **meta}
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".streamherd-", suffix=".npz.tmp", dir=folder)
    except OSError as e:
        raise StreamherdError(f"cannot write model {path}: {e.strerror}; "
                              f"check that the folder exists and is writable") from None
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a model is an ordinary file
        os.replace(tmp, path)
    except BaseException as e:
        os.unlink(tmp)
        if isinstance(e, OSError):
            raise StreamherdError(f"cannot write model {path}: {e.strerror}") from None
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def require_arrays(path, arrays, names):
    """A one-line error when the model at ``path`` lacks one of the arrays ``names``."""
    for name in names:
        if name not in arrays:
            raise StreamherdError(f"{os.fspath(path)} is damaged: it has no '{name}' array")


def load_model(path, expected_arrays=None):
    """Returns (meta, arrays). Every way a file can fail to be a model is a one-line error."""
    path = os.fspath(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise StreamherdError(f"model {path} does not exist; train one with "
                              f"'streamherd train ... -f {path}'") from None
    except OSError as e:
        raise StreamherdError(f"cannot read model {path}: {e.strerror or e}") from None
    except (ValueError, zipfile.BadZipFile, EOFError):
        raise StreamherdError(f"{path} is not a streamherd model (not an .npz archive)") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise StreamherdError(f"{path} is not a streamherd model (a .npy array, not an .npz archive)")
    with archive:
        try:
            meta = json.loads(str(archive["meta"]))
        except (KeyError, ValueError, zipfile.BadZipFile, EOFError):
            raise StreamherdError(f"{path} is not a streamherd model (no readable 'meta' entry)") from None
        if not isinstance(meta, dict) or meta.get("format") != _MARKER:
            raise StreamherdError(f"{path} is not a streamherd model (its 'meta' is not streamherd's)")
        if meta.get("format_version") not in READABLE_VERSIONS:
            raise StreamherdError(
                f"{path} has model format version {meta.get('format_version')}, this streamherd "
                f"({__version__}) reads versions {READABLE_VERSIONS[0]} to {FORMAT_VERSION}; "
                f"retrain it or use the matching version")
        try:
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
        except (ValueError, zipfile.BadZipFile, EOFError, OSError):
            raise StreamherdError(f"{path} is damaged: an array cannot be read") from None
    bits = meta.get("bits")
    if not isinstance(bits, int) or not 1 <= bits <= 32:
        raise StreamherdError(f"{path} is damaged: 'bits' in its meta is {bits!r}")
    classes = meta.get("classes")
    if meta.get("task") == "multiclass" and not isinstance(classes, list):
        raise StreamherdError(f"{path} is damaged: its meta has no class list")
    # joint and one-versus-all multiclass models hold one block of 2^bits slots per class
    dim = (1 << bits) * (len(classes) if meta.get("task") == "multiclass" else 1)
    require_arrays(path, arrays, ["mean", *(expected_arrays or [])])
    for name, array in arrays.items():
        if array.shape[:1] != (dim,) or array.dtype != np.float64:
            raise StreamherdError(
                f"{path} is damaged: array '{name}' has shape {array.shape} and dtype {array.dtype}, "
                f"expected ({dim}, ...) float64 for bits={bits}"
                f"{' and ' + str(len(classes)) + ' classes' if meta.get('task') == 'multiclass' else ''}")
        if not np.all(np.isfinite(array)):
            raise StreamherdError(f"{path} is damaged: array '{name}' holds NaN or infinity")
    return meta, arrays
