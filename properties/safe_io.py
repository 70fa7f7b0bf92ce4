"""Safe writes: every file flinkspec writes (results, counterexamples, HTML pages, summaries)
goes through these helpers.

* :func:`check_output_file` -- before any work: an OUT that exists and is not a regular
  file (a directory, a device such as ``/dev/null``, a FIFO, a socket) is refused, and so
  is a destination whose folder does not exist or cannot be written;
* :func:`check_output_dir` -- the same for a folder that will receive files (it is created
  if missing; a file of that name, or an unwritable one, is refused);
* :func:`write_atomic` -- the text goes to a temporary file in the destination's own folder,
  is flushed to disk, then renamed over the destination (``os.replace``): a reader sees the
  old file or the new one, never half of one. On any error or interruption (SIGINT,
  SIGTERM) the temporary file is removed and the destination is left as it was.

Every refusal raises :class:`OutputError` (a ``FlinkspecError``: one line, exit code 2)
naming the path and the reason.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from model.errors import FlinkspecError

#: Prefix of the temporary files (``corpus`` tools skip them).
TEMP_PREFIX = ".tmp-"


class OutputError(FlinkspecError):
    """A destination cannot (or must not) be written."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output_file(path, *, what: str = "output file") -> Path:
    """``path`` as a Path if a regular file may be written there; else :class:`OutputError`."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"{p}: cannot write the {what}: {e.strerror or type(e).__name__}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{p}: exists and is {_kind(st.st_mode)}; the {what} is written only to a "
                          "regular file or a new path")
    if p.is_symlink() and st is None:
        raise OutputError(f"{p}: is a dangling symbolic link; refusing to write the {what} through it")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{p}: cannot write the {what}: the folder {folder} does not exist")
    _probe(folder, f"{p}: cannot write the {what}: the folder {folder} is not writable")
    if st is not None and not os.access(p, os.W_OK):
        # os.replace would still succeed in a writable folder; a read-only file is a signal
        raise OutputError(f"{p}: cannot write the {what}: the file is read-only")
    return p


def check_output_dir(path, *, what: str = "output folder", create: bool = True) -> Path:
    """``path`` as a Path of a folder files may be written into (created when ``create``;
    without, only checked: it, or the nearest folder above it that exists, is writable);
    else :class:`OutputError`."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{p}: the {what} exists and is not a directory")
    if not p.exists():
        if not create:
            above = p.parent
            while not above.exists() and above != above.parent:
                above = above.parent
            if not above.is_dir():
                raise OutputError(f"{p}: cannot create the {what}: {above} is not a directory")
            _probe(above, f"{p}: cannot create the {what}: {above} is not writable")
            return p
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{p}: cannot create the {what}: {e.strerror or type(e).__name__}") from None
    _probe(p, f"{p}: the {what} is not writable")
    return p


def _probe(folder: Path, message: str) -> None:
    """Create and remove a temporary file in ``folder`` (not os.access: root passes os.access
    on read-only file systems and /proc); OutputError(``message``) if that fails."""
    try:
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(f"{message} ({e.strerror or type(e).__name__})") from None


def write_atomic(path, data: str | bytes, *, what: str = "output file", fsync: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, then
    ``os.replace``). Refuses what :func:`check_output_file` refuses; any ``OSError`` becomes
    an :class:`OutputError`. Returns the path."""
    p = check_output_file(path, what=what)
    folder = p.parent if str(p.parent) else Path(".")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=p.suffix, dir=folder)
    except OSError as e:
        raise OutputError(f"{p}: cannot write the {what}: {e.strerror or type(e).__name__}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, p)
    except BaseException as e:  # also KeyboardInterrupt / SIGTERM: no partial file stays
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OutputError(f"{p}: cannot write the {what}: {e.strerror or type(e).__name__}") from None
        raise
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
