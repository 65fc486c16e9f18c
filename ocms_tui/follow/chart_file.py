"""Where a chart's CSV is and whether it may be read: a name inside the metrics directory
(a symlink leading out of it is never followed), opened without ever waiting (a FIFO).
"""

from __future__ import annotations

import errno
import os
import stat
from enum import Enum
from pathlib import Path


class FileState(Enum):
    OK = "ok"
    MISSING = "missing"
    NOT_A_FILE = "not-a-file"
    OUTSIDE = "outside"  # a symlink that leads out of the metrics directory
    UNREADABLE = "unreadable"


def resolve_inside(directory: Path, name: str) -> tuple[Path | None, FileState]:
    """The path of `name` in `directory`, unless a symlink leads outside it.

    Runs on every refresh of every chart, so the usual case (a plain name that is not a
    symlink) costs one lstat; a symlink has its real path checked.
    """
    candidate = directory / name
    if name not in ("", ".", "..") and os.sep not in name:
        try:
            if not stat.S_ISLNK(os.lstat(candidate).st_mode):
                return candidate, FileState.OK
        except FileNotFoundError:
            return None, FileState.MISSING
        except OSError:
            return None, FileState.UNREADABLE
    try:
        real = Path(os.path.realpath(candidate, strict=True))
    except FileNotFoundError:
        return None, FileState.MISSING
    except (OSError, RuntimeError):  # a symlink loop
        return None, FileState.UNREADABLE
    real_directory = Path(os.path.realpath(directory))
    if real.parent != real_directory and real_directory not in real.parents:
        return None, FileState.OUTSIDE
    return real, FileState.OK


def open_chart_file(directory: Path, name: str) -> tuple[int | None, FileState]:
    """A descriptor of the file `name` in `directory` (the caller closes it), or None and
    why not.

    O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
    """
    path, state = resolve_inside(directory, name)
    if path is None:
        return None, state
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        missing = error.errno == errno.ENOENT
        return None, FileState.MISSING if missing else FileState.UNREADABLE
    return descriptor, FileState.OK
