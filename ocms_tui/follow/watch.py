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

import contextlib
import ctypes
import errno
import os
import re
import select
import struct
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn, TypeVar

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
# After reading a batch of inotify events, the thread waits this long before the next read:
# a stream of writes becomes ~40 batches a second, while the first write after a quiet
# spell is still marked at once (well under the session's FOLLOW_SECONDS).
COALESCE_SECONDS = 0.025
# While marks wait to be taken, the reader reads those files anyway, and `take()` reads the
# kernel's queue itself: the thread need not wake for a stream's further writes until then
# (at 6,000 writes/s, ~4 reads a second instead of ~40). Bounded so that the kernel's queue
# (16,384 events by default) cannot fill meanwhile.
PENDING_WAIT_SECONDS = 0.25

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
    """inotify read by one thread of ours, in batches: a watch on the directory, plus one on
    its nearest existing ancestor so that the directory being created, deleted or replaced is
    seen too.

    The thread sleeps in poll(2) until the kernel has an event, reads everything queued in
    one go, marks the names, then pauses `coalesce_seconds` so that a writer's next events
    pile up in the kernel's queue (which merges identical consecutive ones) and are read
    together; while its marks wait to be taken it rests longer (PENDING_WAIT_SECONDS), and
    `take()` reads what is queued itself. The first write after a quiet spell is marked at
    once, and a run writing 6,000 times a second costs a few reads a second, not 6,000
    Python callbacks (watchdog's observer ran five threads here and built an event object per
    write: 18% of a core against 0.4%, bench_follow's watcher row).
    """

    def __init__(
        self, directory: str | os.PathLike[str], coalesce_seconds: float = COALESCE_SECONDS
    ) -> None:
        super().__init__(directory)
        self.coalesce_seconds = coalesce_seconds
        self._directory_text = str(self.directory)
        self._lock = threading.Lock()  # the watch table: start, stop and the thread
        self._inotify: _Inotify | None = None
        self._watches: dict[str, tuple[int, int]] = {}  # path -> (watch descriptor, inode)
        self._paths_of_watch: dict[int, tuple[str, ...]] = {}
        self._directory_watch: int | None = None
        self._stopping = threading.Event()
        self._taken = threading.Event()  # set by take() (and stop()): the thread may read on
        self._wake_reader, self._wake_writer = -1, -1
        self._thread: threading.Thread | None = None

    @property
    def description(self) -> str:
        return "inotify"

    def take(self) -> frozenset[str]:
        """Everything marked, the events still queued in the kernel included: the thread may
        be resting while earlier marks wait (PENDING_WAIT_SECONDS)."""
        with self._lock:
            inotify = self._inotify if self._thread is not None else None
            events = inotify.read_queued() if inotify is not None else b""
        if events:
            self._handle(events)
        names = self.dirty.take()
        self._taken.set()
        return names

    def start(self) -> None:
        inotify = _Inotify()
        with self._lock:
            self._inotify = inotify
            try:
                self._retarget()
                self._wake_reader, self._wake_writer = os.pipe()
            except BaseException:
                self._inotify = None
                self._watches.clear()
                inotify.close()
                raise
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="ocms-inotify", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        self._taken.set()
        os.write(self._wake_writer, b"!")
        thread.join()
        with self._lock:
            inotify, self._inotify = self._inotify, None
            self._watches.clear()
            self._paths_of_watch = {}
            self._directory_watch = None
        if inotify is not None:
            inotify.close()  # closing the descriptor drops every watch
        os.close(self._wake_reader)
        os.close(self._wake_writer)

    def _run(self) -> None:
        inotify = self._inotify
        assert inotify is not None
        poller = select.poll()
        poller.register(inotify.fd, select.POLLIN)
        poller.register(self._wake_reader, select.POLLIN)
        while True:
            poller.poll()
            if self._stopping.is_set():
                return
            self._taken.clear()
            events = inotify.read_queued()
            self._handle(events)
            # Coalesce: what the writer does meanwhile waits in the kernel's queue; unless
            # the queue was filling up, where a pause would make the kernel drop events.
            if len(events) >= _BUSY_BYTES:
                continue
            if self.dirty.pending:
                self._taken.wait(PENDING_WAIT_SECONDS)
            elif self._stopping.wait(self.coalesce_seconds):
                return
            if self._stopping.is_set():
                return

    def _handle(self, events: bytes) -> None:
        """Mark the names of a batch of raw inotify events: the directory's own files by a
        fast path (no objects per event), the rest checked for a change of the directory."""
        names: set[bytes] = set()
        directory_watch = self._directory_watch
        moved = False
        unpack = _EVENT_HEADER.unpack_from
        offset, end = 0, len(events)
        while offset < end:
            watch, mask, _cookie, length = unpack(events, offset)
            offset += _EVENT_HEADER.size
            name = events[offset : offset + length]
            offset += length
            if watch == directory_watch and not mask & _GONE:
                names.add(name)
            elif mask & IN_Q_OVERFLOW or self._moves_directory(watch, mask, name):
                moved = True  # (an overflow lost events: read everything again too)
        marks = {os.fsdecode(name.rstrip(b"\0")) for name in names}
        marks.discard("")  # the directory's own attributes
        if moved:
            # The directory (or a parent) appeared, vanished or moved, or events were lost:
            # watch anew, then mark it, so that what was written while the watches moved is
            # read again.
            # (OSError, e.g. out of watches: the consumer's safety refresh still reads.)
            with self._lock, contextlib.suppress(OSError):
                self._retarget(renew=True)
            marks.add(DIRECTORY)
        if marks:
            self.dirty.add_all(marks)

    def _moves_directory(self, watch: int, mask: int, name: bytes) -> bool:
        paths = self._paths_of_watch.get(watch)
        if paths is None:
            return False  # a watch already dropped: its last events are stale
        if mask & _GONE:
            return True  # a watched directory itself was deleted, moved or unmounted
        if not mask & _STRUCTURE:
            return False
        child_name = os.fsdecode(name.rstrip(b"\0"))
        for path in paths:
            child = os.path.join(path, child_name)
            if child == self._directory_text or self._directory_text.startswith(child + os.sep):
                return True
        return False

    def _retarget(self, renew: bool = False) -> None:
        """Watch what `_retarget` (the function) says; `renew`: the directory's watch too."""
        inotify = self._inotify
        if inotify is None:
            return

        def add(path: str) -> int:
            if path == self._directory_text:
                return inotify.add_watch(path, _DIRECTORY_MASK)
            try:
                return inotify.add_watch(path, _ANCESTOR_MASK)
            except PermissionError:
                # An ancestor this user may pass through but not read (a shared 0711 home):
                # follow the run anyway; its deletion and re-creation are then seen only by
                # the consumer's safety refresh.
                return _UNWATCHABLE

        def remove(watch: int) -> None:
            # Two paths may share one watch (the same inode): drop it with the last one.
            if watch != _UNWATCHABLE and all(kept != watch for kept, _ in self._watches.values()):
                inotify.remove_watch(watch)

        _retarget(self.directory, self._watches, add, remove, renew)
        paths_of_watch: dict[int, tuple[str, ...]] = {}
        for path, (watch, _inode) in self._watches.items():
            if watch != _UNWATCHABLE:
                paths_of_watch[watch] = (*paths_of_watch.get(watch, ()), path)
        self._paths_of_watch = paths_of_watch
        directory = self._watches.get(self._directory_text)
        self._directory_watch = None if directory is None else directory[0]


# inotify(7)'s constants (linux/inotify.h); the same on every Linux architecture.
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_MASK_ADD = 0x20000000

_STRUCTURE = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
# Asked of the kernel, so that opens and reads (the model's own, 10 times a second) never
# wake the thread: writes, creations, deletions, renames and attribute changes only.
_ANCESTOR_MASK = _STRUCTURE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
_DIRECTORY_MASK = _ANCESTOR_MASK | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
_UNWATCHABLE = -1  # stands for the watch of an ancestor without read permission
_EVENT_HEADER = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
_READ_BYTES = 64 << 10  # per read(2); the kernel's queue holds at most ~16k events (~0.5 MB)
_MAX_READS = 64  # per batch: a writer faster than the thread cannot keep it reading forever
_BUSY_BYTES = 64 << 10  # ~2,000 events in one batch (1/8 of the default queue): no pause


class _Inotify:
    """One non-blocking inotify descriptor (libc through ctypes: no watchdog threads)."""

    def __init__(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, self._add, self._remove = (
                libc.inotify_init1,
                libc.inotify_add_watch,
                libc.inotify_rm_watch,
            )
        except (OSError, AttributeError) as error:  # not Linux
            raise OSError(errno.ENOSYS, f"no inotify in the C library: {error}") from None
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._remove.argtypes = (ctypes.c_int, ctypes.c_int)
        self.fd: int = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            _raise_errno()

    def add_watch(self, path: str, mask: int) -> int:
        watch: int = self._add(self.fd, os.fsencode(path), mask | IN_MASK_ADD)
        if watch < 0:
            _raise_errno(path)
        return watch

    def remove_watch(self, watch: int) -> None:
        self._remove(self.fd, watch)  # EINVAL when the kernel already dropped it: fine

    def read_queued(self) -> bytes:
        """Every event queued now (up to _MAX_READS reads), without blocking."""
        chunks: list[bytes] = []
        for _read in range(_MAX_READS):
            try:
                chunk = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        os.close(self.fd)


def _raise_errno(path: str | None = None) -> NoReturn:
    number = ctypes.get_errno()
    raise OSError(number, os.strerror(number), path)


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

        _retarget(self.directory, self._watches, add, observer.unschedule, renew)
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


WatchHandle = TypeVar("WatchHandle")


def _retarget(
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
        wanted = _paths_to_watch(directory)
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
        if _paths_to_watch(directory) == wanted:
            return


def _paths_to_watch(directory: Path) -> dict[str, int]:
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
    # watchdog's observer only where there is no inotify (macOS, BSD, Windows): on Linux it
    # is the same kernel events at ~40x our CPU (bench_follow's watcher row).
    native: Watcher = (
        InotifyWatcher(directory)
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
