"""watchdog's native observer, for systems without inotify (macOS, BSD, Windows)."""

from __future__ import annotations

import os
import threading
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

from ocms_tui.follow.watcher_base import DIRECTORY, Watcher, retarget_watches


class WatchdogWatcher(Watcher):
    """watchdog's native observer (FSEvents, kqueue, ReadDirectoryChangesW) where the C
    library has no inotify, with the same watch on the nearest existing ancestor."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory)
        self._observer: BaseObserver | None = None
        self._handler = _Handler(self)
        self._lock = threading.RLock()
        self._watches: dict[str, tuple[ObservedWatch, int]] = {}
        # Events name resolved paths (a symlinked run; /var is /private/var on macOS).
        self._resolved = self.directory

    @property
    def description(self) -> str:
        return "watchdog"

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
            if path.parent in (self.directory, self._resolved):
                self.dirty.add(path.name)
            elif event.event_type in _WATCHDOG_STRUCTURAL and (
                path == self.directory or path in self.directory.parents
            ):
                with self._lock:
                    self._retarget(renew=True)
                self.dirty.add(DIRECTORY)

    def _retarget(self, renew: bool = False) -> None:
        observer = self._observer
        if observer is None:
            return

        def add(path: str) -> ObservedWatch:
            return observer.schedule(
                self._handler, path, event_filter=list(_WATCHDOG_EVENTS), follow_symlink=True
            )

        retarget_watches(self.directory, self._watches, add, observer.unschedule, renew)
        self._resolved = Path(os.path.realpath(self.directory))


_WATCHDOG_STRUCTURAL = frozenset({"created", "deleted", "moved"})
_WATCHDOG_EVENTS = (
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
    def __init__(self, watcher: WatchdogWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads (including our own) change nothing
        self._watcher.on_event(event)
