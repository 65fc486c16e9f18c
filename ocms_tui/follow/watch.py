"""Notice changes in a metrics directory: inotify (watchdog's observer where the C library
has none), or a polling thread.

No Textual here. Every watcher fills one thread-safe set of changed names; a consumer (the
session's thread, a benchmark) drains it whenever it likes. However many events arrive, the
consumer sees one set: a writer logging 1,000 rows/s costs one drain per tick, not a message
per row.

Names in the set are file names inside the directory, or `DIRECTORY` when the directory
itself appeared, disappeared or was moved, or when events were lost (read everything).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

from ocms_tui.follow.inotify_watcher import InotifyHub, InotifyWatcher
from ocms_tui.follow.watchdog_watcher import WatchdogWatcher
from ocms_tui.follow.watcher_base import DIRECTORY, DirtySet, Watcher

__all__ = [
    "DEFAULT_POLL_SECONDS",
    "DIRECTORY",
    "NETWORK_FILESYSTEMS",
    "DirtySet",
    "InotifyHub",
    "InotifyWatcher",
    "PollingWatcher",
    "WatchdogWatcher",
    "Watcher",
    "filesystem_type",
    "open_watcher",
]

DEFAULT_POLL_SECONDS = 1.0

# Filesystems where inotify sees only local writes, not a training job on another node.
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "beegfs",
        "fuse.sshfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.juicefs",
    }
)


class PollingWatcher(Watcher):
    """Stats the directory's entries every `interval` seconds and marks those that changed."""

    def __init__(
        self, directory: str | os.PathLike[str], interval: float = DEFAULT_POLL_SECONDS
    ) -> None:
        super().__init__(directory)
        if not interval > 0:
            raise ValueError(f"poll interval must be positive, got {interval}")
        self.interval = interval
        self.reason = ""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def description(self) -> str:
        text = f"polling every {self.interval:g}s"
        return f"{text} ({self.reason})" if self.reason else text

    def start(self) -> None:
        self._stopping.clear()
        # The first snapshot is taken here, so a change right after start() is not missed.
        first = self._snapshot()
        self._thread = threading.Thread(
            target=self._run, args=(first,), name="ocms-poll", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self, previous: dict[str, tuple[int, int, int]] | None) -> None:
        while not self._stopping.wait(self.interval):
            current = self._snapshot()
            if (previous is None) != (current is None):
                self.dirty.add(DIRECTORY)
            elif previous is not None and current is not None:
                for name in previous.keys() | current.keys():
                    if previous.get(name) != current.get(name):
                        self.dirty.add(name)
            previous = current

    def _snapshot(self) -> dict[str, tuple[int, int, int]] | None:
        """(inode, size, mtime) of every entry, or None when the directory is missing."""
        entries: dict[str, tuple[int, int, int]] = {}
        try:
            with os.scandir(self.directory) as scan:
                for entry in scan:
                    try:
                        info = entry.stat()
                    except OSError:  # vanished between listing and stat, or a broken link
                        continue
                    entries[entry.name] = (info.st_ino, info.st_size, info.st_mtime_ns)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            return entries  # unreadable for now: report nothing, try again next tick
        return entries


def filesystem_type(path: str | os.PathLike[str]) -> str | None:
    """The type (e.g. "ext4", "nfs4") of the mount holding `path` or its nearest existing
    ancestor, from /proc/self/mounts; None where that file does not exist."""
    target = Path(os.path.abspath(path))
    while not os.path.exists(target) and target != target.parent:  # never raises
        target = target.parent
    target = target.resolve()
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return None
    # Compared as text (a sweep's hundreds of runs each ask: Path objects per mount line
    # took 2.4 ms a run); the longest mount point holding the path wins.
    held = str(target)
    best: tuple[int, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point = os.path.normpath(_unescape_mount_field(fields[1]))
        inside = held == mount_point or held.startswith(mount_point.rstrip(os.sep) + os.sep)
        if inside and (best is None or len(mount_point) >= best[0]):
            best = (len(mount_point), fields[2])
    return best[1] if best else None


def _unescape_mount_field(field: str) -> str:
    """/proc/self/mounts writes space, tab, newline and backslash as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def open_watcher(
    directory: str | os.PathLike[str],
    poll: float | None = None,
    hub: InotifyHub | None = None,
) -> Watcher:
    """A started watcher: polling every `poll` seconds when asked, else inotify, falling back
    to polling (every DEFAULT_POLL_SECONDS) where inotify cannot start or cannot see remote
    writes (network filesystems). The fallback's reason is in its `description`. `hub`:
    the inotify instance and thread to share (a sweep's runs: one for all of them)."""
    if poll is not None:
        watcher: Watcher = PollingWatcher(directory, poll)
        watcher.start()
        return watcher
    fs_type = filesystem_type(directory)
    if fs_type in NETWORK_FILESYSTEMS:
        return _started_polling(directory, f"{fs_type} is a network filesystem")
    # watchdog's observer only where there is no inotify (macOS, BSD, Windows): on Linux it
    # is the same kernel events at ~40x our CPU (bench_follow's watcher row).
    native: Watcher = (
        InotifyWatcher(directory, hub=hub)
        if sys.platform.startswith("linux")
        else WatchdogWatcher(directory)
    )
    try:
        native.start()
    except OSError as error:
        return _started_polling(directory, f"inotify unavailable: {error.strerror or error}")
    return native


def _started_polling(directory: str | os.PathLike[str], reason: str) -> PollingWatcher:
    watcher = PollingWatcher(directory, DEFAULT_POLL_SECONDS)
    watcher.reason = reason
    watcher.start()
    return watcher
