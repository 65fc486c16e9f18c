"""The Linux watcher: inotify through ctypes, read in batches by one thread of ours (see
InotifyWatcher; ocms_tui.follow.watch picks it)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import struct
import threading
from typing import NoReturn

from ocms_tui.follow.watcher_base import DIRECTORY, Watcher, retarget_watches

# After reading a batch of inotify events, the thread waits this long before the next read:
# a stream of writes becomes ~40 batches a second, while the first write after a quiet
# spell is still marked at once (well under the session's FOLLOW_SECONDS).
COALESCE_SECONDS = 0.025
# While marks wait to be taken, the reader reads those files anyway, and `take()` reads the
# kernel's queue itself: the thread need not wake for a stream's further writes until then
# (at 6,000 writes/s, ~4 reads a second instead of ~40). Bounded so that the kernel's queue
# (16,384 events by default) cannot fill meanwhile.
PENDING_WAIT_SECONDS = 0.25


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
        """Watch what `retarget_watches` says; `renew`: the directory's watch too."""
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

        retarget_watches(self.directory, self._watches, add, remove, renew)
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
