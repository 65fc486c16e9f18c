"""What every watcher shares: the set of changed names it fills, its interface, and how
it keeps a watch on a directory that may not exist yet (see ocms_tui.follow.watch)."""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

DIRECTORY = "."
"""Marks a change of the directory itself rather than of one file in it."""


class DirtySet:
    """Names changed since the last `take()`; written by watcher threads, drained by one reader."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()
        self._signal = threading.Event()
        self.on_mark: Callable[[], None] | None = None
        """Called (on the watcher's thread) after each mark: e.g. to wake a reader thread."""

    def add(self, name: str) -> None:
        self.add_all((name,))

    def add_all(self, names: Iterable[str]) -> None:
        """Mark several names with one lock and one `on_mark` (a batch of events)."""
        with self._lock:
            self._names.update(names)
            self._signal.set()
        if self.on_mark is not None:
            self.on_mark()

    @property
    def pending(self) -> bool:
        """Something is marked and not yet taken."""
        return bool(self._names)

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


WatchHandle = TypeVar("WatchHandle")


def retarget_watches(
    directory: Path,
    watches: dict[str, tuple[WatchHandle, int]],
    add: Callable[[str], WatchHandle],
    remove: Callable[[WatchHandle], None],
    renew: bool = False,
) -> None:
    """Make `watches` (path -> (handle, inode)) watch the directory when it exists, and
    always its nearest existing ancestor.

    A watch follows an inode, so a directory deleted and created again under the same name
    (a restarted run) needs a new watch: compare inodes, not just paths. `renew` replaces
    the directory's watch even when the inode number is the same: after a change of the
    directory itself that number may be a new directory's (filesystems reuse freed numbers
    at once) while the old watch died with the old directory.
    """
    if renew and (watched := watches.pop(str(directory), None)) is not None:
        remove(watched[0])
    # Loop because directories can appear or vanish while watches are being rearranged.
    for _attempt in range(5):
        wanted = paths_to_watch(directory)
        for path, (watch, inode) in list(watches.items()):
            if wanted.get(path) != inode:
                del watches[path]
                remove(watch)
        try:
            for path, inode in wanted.items():
                if path not in watches:
                    watches[path] = (add(path), inode)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if paths_to_watch(directory) == wanted:
            return


def paths_to_watch(directory: Path) -> dict[str, int]:
    """The nearest existing ancestor, then the directory if it exists, with their inodes."""
    wanted: dict[str, int] = {}
    for path in (_nearest_existing_ancestor(directory), directory):
        try:
            wanted[str(path)] = path.stat().st_ino
        except OSError:
            continue
    return wanted


def _nearest_existing_ancestor(path: Path) -> Path:
    for ancestor in path.parents:
        if os.path.isdir(ancestor):  # False, never an error, for a name too long or no access
            return ancestor
    return Path(path.anchor)
