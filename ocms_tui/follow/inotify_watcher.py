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


class InotifyHub:
    """One inotify instance and one reader thread, shared by every InotifyWatcher given it
    (the runs of a sweep): a watcher per run each with its own instance and thread ran out of
    the kernel's instances (fs.inotify.max_user_instances, 128 by default) at a few hundred
    runs, and 2,000 runs meant 2,000 threads. Watches of the same directory (the sweep's
    parent, every run's nearest ancestor) are one kernel watch, counted per watcher and
    dropped with the last one. The instance is made with the first watcher and closed with
    the last.

    The thread sleeps in poll(2) until the kernel has an event, reads everything queued in
    one go, hands each watcher its events, then pauses `coalesce_seconds` so that a writer's
    next events pile up in the kernel's queue (which merges identical consecutive ones) and
    are read together; while marks wait to be taken it rests longer (PENDING_WAIT_SECONDS),
    and a watcher's `take()` reads what is queued itself.
    """

    def __init__(self, coalesce_seconds: float = COALESCE_SECONDS) -> None:
        self.coalesce_seconds = coalesce_seconds
        self._lock = threading.RLock()  # the instance, the watchers and their watch tables
        self._inotify: _Inotify | None = None
        self._watchers: set[InotifyWatcher] = set()
        self._subscribers: dict[int, set[InotifyWatcher]] = {}  # watch descriptor -> users
        self._stopping = threading.Event()
        self._taken = threading.Event()  # set by a take() (and stop()): the thread may read on
        self._wake_reader, self._wake_writer = -1, -1
        self._thread: threading.Thread | None = None

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    @property
    def kernel_watches(self) -> int:
        """Watches held in the kernel (a directory several watchers watch counts once)."""
        return len(self._subscribers)

    def attach(self, watcher: InotifyWatcher) -> None:
        """Start delivering `watcher`'s events (starting the instance and thread if none);
        raises OSError when inotify cannot watch it (no instance, no watches left)."""
        with self._lock:
            started_here = self._inotify is None
            if started_here:
                self._inotify = _Inotify()
            self._watchers.add(watcher)
            try:
                watcher._retarget()
                if started_here:
                    self._start_thread()
            except BaseException:
                self.detach(watcher)
                raise

    def detach(self, watcher: InotifyWatcher) -> None:
        """Stop delivering `watcher`'s events, drop the watches only it held, and close the
        instance with the last watcher."""
        with self._lock:
            inotify = self._inotify
            for watch, _inode in watcher._watches.values():
                if inotify is not None:
                    self.unsubscribe(watcher, watch)
            watcher._watches.clear()
            watcher._refresh_paths()
            self._watchers.discard(watcher)
            if self._watchers or inotify is None:
                return
            self._inotify = None
            # This thread's own stop signal and pipe: a watcher attached meanwhile starts
            # another instance, thread and pipe.
            thread, self._thread = self._thread, None
            stopping, wake_reader, wake_writer = (
                self._stopping,
                self._wake_reader,
                self._wake_writer,
            )
        if thread is not None:
            stopping.set()
            self._taken.set()
            os.write(wake_writer, b"!")
            if thread is not threading.current_thread():
                thread.join()
            os.close(wake_reader)
            os.close(wake_writer)
        inotify.close()  # closing the descriptor drops every watch

    def subscribe(self, watcher: InotifyWatcher, path: str, mask: int) -> int:
        inotify = self._inotify
        if inotify is None:
            raise OSError(errno.EBADF, "the inotify instance is closed", path)
        watch = inotify.add_watch(path, mask)  # IN_MASK_ADD: a shared watch gets both masks
        self._subscribers.setdefault(watch, set()).add(watcher)
        return watch

    def unsubscribe(self, watcher: InotifyWatcher, watch: int) -> None:
        users = self._subscribers.get(watch)
        if users is None:
            return
        users.discard(watcher)
        if not users:
            del self._subscribers[watch]
            if self._inotify is not None:
                self._inotify.remove_watch(watch)

    def read_queued(self) -> None:
        """Read what the kernel has queued now and hand it out (a take() calls this: the
        thread may be resting while earlier marks wait)."""
        with self._lock:
            inotify = self._inotify if self._thread is not None else None
            events = inotify.read_queued() if inotify is not None else b""
        if events:
            self._handle(events)

    def taken(self) -> None:
        self._taken.set()

    def _start_thread(self) -> None:
        self._wake_reader, self._wake_writer = os.pipe()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ocms-inotify", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        inotify, stopping = self._inotify, self._stopping
        assert inotify is not None
        poller = select.poll()
        poller.register(inotify.fd, select.POLLIN)
        poller.register(self._wake_reader, select.POLLIN)
        while True:
            poller.poll()
            if stopping.is_set():
                return
            self._taken.clear()
            with self._lock:
                events = inotify.read_queued() if not stopping.is_set() else b""
            self._handle(events)
            # Coalesce: what the writers do meanwhile waits in the kernel's queue; unless
            # the queue was filling up, where a pause would make the kernel drop events.
            if len(events) >= _BUSY_BYTES:
                continue
            if any(watcher.dirty.pending for watcher in list(self._watchers)):
                self._taken.wait(PENDING_WAIT_SECONDS)
            elif stopping.wait(self.coalesce_seconds):
                return
            if stopping.is_set():
                return

    def _handle(self, events: bytes) -> None:
        """Mark the names of a batch of raw inotify events in the watchers they concern: a
        watched directory's own files by a fast path, the rest checked for a change of a
        watcher's directory (created, deleted, moved: watched anew and read whole)."""
        names: dict[InotifyWatcher, set[bytes]] = {}
        moved: set[InotifyWatcher] = set()
        with self._lock:
            subscribers = self._subscribers
            unpack = _EVENT_HEADER.unpack_from
            offset, end = 0, len(events)
            while offset < end:
                watch, mask, _cookie, length = unpack(events, offset)
                offset += _EVENT_HEADER.size
                name = events[offset : offset + length]
                offset += length
                if mask & IN_Q_OVERFLOW:  # events were lost: every watcher reads everything
                    moved.update(self._watchers)
                    continue
                for watcher in subscribers.get(watch, ()):
                    if watch == watcher._directory_watch and not mask & _GONE:
                        names.setdefault(watcher, set()).add(name)
                    elif watcher._moves_directory(watch, mask, name):
                        moved.add(watcher)
            for watcher in moved:
                if watcher in self._watchers:
                    # The directory (or a parent) appeared, vanished or moved, or events
                    # were lost: watch anew, then mark it, so that what was written while
                    # the watches moved is read again. (OSError, e.g. out of watches: the
                    # consumer's safety refresh still reads.)
                    with contextlib.suppress(OSError):
                        watcher._retarget(renew=True)
        for watcher in names.keys() | moved:
            marks = {os.fsdecode(name.rstrip(b"\0")) for name in names.get(watcher, ())}
            marks.discard("")  # the directory's own attributes
            if watcher in moved:
                marks.add(DIRECTORY)
            if marks:
                watcher.dirty.add_all(marks)


class InotifyWatcher(Watcher):
    """inotify on one directory, plus a watch on its nearest existing ancestor so that the
    directory being created, deleted or replaced is seen too. Its events are read by an
    InotifyHub: the one given (one instance and thread for a sweep's runs), else its own.

    A run writing 6,000 times a second costs a few reads a second, not 6,000 Python
    callbacks (watchdog's observer ran five threads here and built an event object per
    write: 18% of a core against 0.4%, bench_follow's watcher row).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        coalesce_seconds: float = COALESCE_SECONDS,
        hub: InotifyHub | None = None,
    ) -> None:
        super().__init__(directory)
        self.hub = hub if hub is not None else InotifyHub(coalesce_seconds)
        self._directory_text = str(self.directory)
        self._watches: dict[str, tuple[int, int]] = {}  # path -> (watch descriptor, inode)
        self._paths_of_watch: dict[int, tuple[str, ...]] = {}
        self._directory_watch: int | None = None
        self._started = False

    @property
    def description(self) -> str:
        return "inotify"

    def take(self) -> frozenset[str]:
        """Everything marked, the events still queued in the kernel included."""
        if self._started:
            self.hub.read_queued()
        names = self.dirty.take()
        self.hub.taken()
        return names

    def start(self) -> None:
        self.hub.attach(self)
        self._started = True

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.hub.detach(self)

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
        """Watch what `retarget_watches` says; `renew`: the directory's watch too. Called
        with the hub's lock held."""
        hub = self.hub

        def add(path: str) -> int:
            if path == self._directory_text:
                return hub.subscribe(self, path, _DIRECTORY_MASK)
            try:
                return hub.subscribe(self, path, _ANCESTOR_MASK)
            except PermissionError:
                # An ancestor this user may pass through but not read (a shared 0711 home):
                # follow the run anyway; its deletion and re-creation are then seen only by
                # the consumer's safety refresh.
                return _UNWATCHABLE

        def remove(watch: int) -> None:
            # Two paths may share one watch (the same inode): drop it with the last one.
            if watch != _UNWATCHABLE and all(kept != watch for kept, _ in self._watches.values()):
                hub.unsubscribe(self, watch)

        retarget_watches(self.directory, self._watches, add, remove, renew)
        self._refresh_paths()

    def _refresh_paths(self) -> None:
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
