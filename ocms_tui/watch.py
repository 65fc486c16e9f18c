"""Notice changes in a metrics directory: inotify through watchdog, or a polling thread.

No Textual here. Both watchers fill one thread-safe set of changed names; a consumer (the
dashboard's timer, a benchmark) drains it whenever it likes. However many events arrive, the
consumer sees one set: a writer logging 1,000 rows/s costs one drain per tick, not a message
per row.

Names in the set are file names inside the directory, or `DIRECTORY` when the directory
itself appeared, disappeared or was moved (reload everything).
"""

from __future__ import annotations

import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

DIRECTORY = "."
"""Marks a change of the directory itself rather than of one file in it."""

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


class DirtySet:
    """Names changed since the last `take()`; written by watcher threads, drained by one reader."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()
        self._signal = threading.Event()
        self.on_mark: Callable[[], None] | None = None
        """Called (on the watcher's thread) after each mark: e.g. to wake a reader thread."""

    def add(self, name: str) -> None:
        with self._lock:
            self._names.add(name)
            self._signal.set()
        if self.on_mark is not None:
            self.on_mark()

    def take(self) -> frozenset[str]:
        """Everything marked since the last call (empty when nothing changed)."""
        with self._lock:
            names = frozenset(self._names)
            self._names.clear()
            self._signal.clear()
        return names

    def wait(self, timeout: float | None = None) -> bool:
        """Block until something is marked (for benchmarks and tests; the UI polls `take`)."""
        return self._signal.wait(timeout)


class Watcher(ABC):
    """Watches one directory (which may not exist yet) and marks what changed in `dirty`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(os.path.abspath(directory))
        self.dirty = DirtySet()

    @property
    @abstractmethod
    def description(self) -> str:
        """How the directory is watched, for the status bar ("inotify", "polling every 1s")."""

    @abstractmethod
    def start(self) -> None:
        """Start watching; raises OSError when this kind of watcher cannot run here."""

    @abstractmethod
    def stop(self) -> None:
        """Stop watching and release threads and OS handles; safe to call twice."""

    def take(self) -> frozenset[str]:
        return self.dirty.take()


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


class InotifyWatcher(Watcher):
    """watchdog's native observer on the directory, plus a watch on the nearest existing
    ancestor so that the directory being created, deleted or replaced is seen too."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory)
        self._observer: BaseObserver | None = None
        self._handler = _Handler(self)
        self._lock = threading.RLock()
        self._watches: dict[Path, tuple[ObservedWatch, int]] = {}

    @property
    def description(self) -> str:
        return "inotify"

    def start(self) -> None:
        observer = Observer()
        with self._lock:
            self._observer = observer
            try:
                self._retarget()
                observer.start()
            except BaseException:
                self._observer = None
                self._watches.clear()
                observer.unschedule_all()
                raise

    def stop(self) -> None:
        with self._lock:
            observer, self._observer = self._observer, None
            self._watches.clear()
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join()

    def on_event(self, event: FileSystemEvent) -> None:
        """Called on watchdog's thread for every raw event; keeps only what concerns us."""
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            path = Path(os.fsdecode(raw))
            if path.parent == self.directory:
                self.dirty.add(path.name)
            elif event.event_type in _STRUCTURAL and (
                path == self.directory or path in self.directory.parents
            ):
                # The directory (or a parent) appeared, vanished or moved: watch anew, then
                # mark it, so that what was written while the watches moved is read again.
                with self._lock:
                    self._retarget()
                self.dirty.add(DIRECTORY)

    def _wanted(self) -> dict[Path, int]:
        """The paths to watch, with the inode each should have."""
        wanted: dict[Path, int] = {}
        for path in (_nearest_existing_ancestor(self.directory), self.directory):
            try:
                wanted[path] = path.stat().st_ino
            except OSError:
                continue
        return wanted

    def _retarget(self) -> None:
        """Watch the directory when it exists, and always its nearest existing ancestor.

        A watch follows an inode, so a directory deleted and created again under the same
        name (a restarted run) needs a new watch: compare inodes, not just paths.
        """
        observer = self._observer
        if observer is None:
            return
        # Loop because directories can appear or vanish while watches are being rearranged.
        for _attempt in range(5):
            wanted = self._wanted()
            for path, (watch, inode) in list(self._watches.items()):
                if wanted.get(path) != inode:
                    del self._watches[path]
                    observer.unschedule(watch)
            try:
                for path, inode in wanted.items():
                    if path not in self._watches:
                        watch = observer.schedule(
                            self._handler, str(path), event_filter=list(_WATCHED_EVENTS)
                        )
                        self._watches[path] = (watch, inode)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if self._wanted() == wanted:
                return


_STRUCTURAL = frozenset({"created", "deleted", "moved"})

# Asked of the kernel, so that opens and reads (the model's own, 10 times a second) never
# wake watchdog's threads: writes, creations, deletions, renames and attribute changes only.
_WATCHED_EVENTS = (
    FileModifiedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: InotifyWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads (including our own) change nothing
        self._watcher.on_event(event)


def _nearest_existing_ancestor(path: Path) -> Path:
    for ancestor in path.parents:
        if os.path.isdir(ancestor):  # False, never an error, for a name too long or no access
            return ancestor
    return Path(path.anchor)


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
    best: tuple[int, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point = Path(_unescape_mount_field(fields[1]))
        if (target == mount_point or mount_point in target.parents) and (
            best is None or len(mount_point.parts) >= best[0]
        ):
            best = (len(mount_point.parts), fields[2])
    return best[1] if best else None


def _unescape_mount_field(field: str) -> str:
    """/proc/self/mounts writes space, tab, newline and backslash as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def open_watcher(directory: str | os.PathLike[str], poll: float | None = None) -> Watcher:
    """A started watcher: polling every `poll` seconds when asked, else inotify, falling back
    to polling (every DEFAULT_POLL_SECONDS) where inotify cannot start or cannot see remote
    writes (network filesystems). The fallback's reason is in its `description`."""
    if poll is not None:
        watcher: Watcher = PollingWatcher(directory, poll)
        watcher.start()
        return watcher
    fs_type = filesystem_type(directory)
    if fs_type in NETWORK_FILESYSTEMS:
        return _started_polling(directory, f"{fs_type} is a network filesystem")
    inotify = InotifyWatcher(directory)
    try:
        inotify.start()
    except OSError as error:
        return _started_polling(directory, f"inotify unavailable: {error.strerror or error}")
    return inotify


def _started_polling(directory: str | os.PathLike[str], reason: str) -> PollingWatcher:
    watcher = PollingWatcher(directory, DEFAULT_POLL_SECONDS)
    watcher.reason = reason
    watcher.start()
    return watcher
