"""Whether a path the user gave can take a whole output file (an SVG), and writing it so.

Standard library only, and nothing here opens the path before it is known to be a regular
file or a new name: opening a FIFO for writing waits for a reader forever, a device takes
the bytes somewhere else. The rule, checked before any work is done:

- a new name in a directory this user may write: created;
- an existing regular file this user may write (in a directory it may write): replaced,
  keeping its permissions; a symlink to one stands for that file;
- anything else is refused with the reason: a FIFO, a socket, a device (/dev/null too), a
  directory, a symlink that leads nowhere or to one of those, a path through a file, a
  directory without write permission.

The file is written to a temp file beside it and renamed over it: a reader sees the old
file or the new one, and a failure leaves neither half a file nor the temp file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def process_umask() -> int:
    """The process umask, read without changing it (os.umask would, for a moment, for every
    thread; the dashboard converts sources in a thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def output_file(path: Path) -> tuple[Path | None, str | None]:
    """(the file to write, None) when `path` may take a whole file by the rule above (a
    symlink gives the file it leads to), else (None, why not). Never blocks, never raises."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except NotADirectoryError:
        return None, f"{path} cannot be written: a part of its path is a file, not a directory"
    except (OSError, ValueError) as error:  # ValueError: a NUL byte
        return None, f"{path} cannot be written: {_reason(error)}"
    target = path
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            target = Path(os.path.realpath(path, strict=True))
            info = os.stat(target)
        except FileNotFoundError:
            return None, (
                f"{path} is a symlink to {_link_text(path)}, which does not exist: remove the "
                "link or name another file"
            )
        except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
            return None, f"{path} is a symlink that cannot be followed: {_reason(error)}"
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            return None, f"{path} is a directory; name a file like {path / 'dashboard.svg'}"
        if not stat.S_ISREG(info.st_mode):
            leads = f" (a symlink to {target})" if target != path else ""
            return None, (
                f"{path}{leads} is {_kind(info.st_mode)}, not a regular file: name a new file "
                "or an existing regular one"
            )
        if not os.access(target, os.W_OK):
            return None, f"{path} cannot be written: Permission denied"
    parent = target.parent
    try:
        parent_mode = os.stat(parent).st_mode
    except FileNotFoundError:
        return None, f"{path} cannot be written: the directory {parent} does not exist"
    except NotADirectoryError:
        return None, f"{path} cannot be written: a part of its path is a file, not a directory"
    except (OSError, ValueError) as error:
        return None, f"{path} cannot be written: {_reason(error)}"
    if not stat.S_ISDIR(parent_mode):
        return None, f"{path} cannot be written: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return None, (
            f"{path} cannot be written: the directory {parent} is not writable for this user "
            "(Permission denied)"
        )
    return target, None


def replace_file(target: Path, write: Callable[[Path], None]) -> None:
    """`write(temp)` fills a new temp file beside `target`, which is then renamed over it,
    with `target`'s permissions when it exists (else the umask's). Raises what `write` or
    the file system raises; the temp file is removed on any failure."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~process_umask()
    descriptor, temp_name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    os.close(descriptor)
    temp = Path(temp_name)
    try:
        write(temp)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temp)
        raise


def _link_text(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _reason(error: BaseException) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)
