"""Watchers on real directories with real events: inotify, watchdog's observer, polling, and
the fallback."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from app_support import append_rows, write_layout
from test_cli_paths import python_path, unprivileged

from ocms_tui.follow import session as session_module
from ocms_tui.follow.session import FollowSession, SessionState, run_key
from ocms_tui.follow.watch import (
    DIRECTORY,
    InotifyWatcher,
    PollingWatcher,
    WatchdogWatcher,
    Watcher,
    filesystem_type,
    open_watcher,
)

TIMEOUT = 5.0
TICK = 0.1  # a consumer's work per drain (the session's is FOLLOW_SECONDS)
QUIET = 0.5  # no mark for this long: the burst's events have all arrived


def collect_until(watcher: Watcher, wanted: Callable[[set[str]], bool]) -> set[str]:
    """Drain the watcher until the names seen so far satisfy `wanted` (or time runs out)."""
    seen: set[str] = set()
    deadline = time.monotonic() + TIMEOUT
    while not wanted(seen) and time.monotonic() < deadline:
        watcher.dirty.wait(0.05)
        seen |= watcher.take()
    return seen


def quiet(watcher: Watcher, seconds: float = 0.3) -> None:
    """Let pending events arrive, then forget them."""
    time.sleep(seconds)
    watcher.take()


KINDS: dict[str, Callable[[Path], Watcher]] = {
    "inotify": InotifyWatcher,
    "watchdog": WatchdogWatcher,
    "poll": lambda directory: PollingWatcher(directory, interval=0.05),
}


@pytest.fixture(params=list(KINDS))
def make_watcher(request: pytest.FixtureRequest) -> Iterator[Callable[[Path], Watcher]]:
    started: list[Watcher] = []

    def make(directory: Path) -> Watcher:
        watcher = KINDS[request.param](directory)
        watcher.start()
        started.append(watcher)
        return watcher

    yield make
    for watcher in started:
        watcher.stop()


def test_appended_rows_mark_the_file(make_watcher: Callable[[Path], Watcher], tmp_path: Path):
    (tmp_path / "loss.csv").write_text("0,1.0\n")
    watcher = make_watcher(tmp_path)
    quiet(watcher)
    with open(tmp_path / "loss.csv", "a") as csv:
        csv.write("1,0.9\n")
    assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)


def test_a_burst_of_writes_is_a_few_drains_naming_exactly_the_written_files(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    for name in ("loss.csv", "lr.csv", "untouched.csv"):
        (tmp_path / name).write_text("0,1.0\n")
    (tmp_path / "metrics.json").write_text('{"version": 1, "charts": []}')
    watcher = make_watcher(tmp_path)
    quiet(watcher)
    marks = Counter[str]()
    watcher.dirty.on_mark = lambda: marks.update(["mark"])  # on the watcher's thread
    writes = 2000
    with open(tmp_path / "loss.csv", "a") as loss, open(tmp_path / "lr.csv", "a") as lr:
        for step in range(1, writes // 2 + 1):
            for csv in (loss, lr):
                csv.write(f"{step},{1 / step!r}\n")
                csv.flush()  # a real write(2) each, so a real event each
    # Drain as the session does: wake on a mark, take the set, then work for a tick (here
    # TICK) while later marks pile up. Done when the watcher has been quiet for QUIET.
    drains: list[frozenset[str]] = []
    deadline = time.monotonic() + TIMEOUT
    while watcher.dirty.wait(QUIET) and time.monotonic() < deadline:
        drains.append(watcher.take())
        time.sleep(TICK)
    print(f"\n{writes} writes -> {marks['mark']} marks -> {len(drains)} drains")
    assert frozenset().union(*drains) == {"loss.csv", "lr.csv"}
    assert 1 <= len(drains) <= writes // 100, "the burst was not coalesced"
    assert watcher.take() == frozenset()


def test_take_reads_the_events_queued_while_the_thread_rests_on_untaken_marks(
    tmp_path: Path,
) -> None:
    """With a mark not yet taken the thread rests (PENDING_WAIT_SECONDS), so a write to
    another file meanwhile is still in the kernel's queue: `take()` must read it there, or
    that file's rows would wait a whole read longer than the rest."""
    for name in ("loss.csv", "eval.csv"):
        (tmp_path / name).write_text("0,1.0\n")
    watcher = InotifyWatcher(tmp_path)
    watcher.start()
    try:
        quiet(watcher)
        append_rows(tmp_path / "loss.csv", ["1,0.9"])
        assert watcher.dirty.wait(TIMEOUT)  # marked; the thread now rests until a take
        time.sleep(0.02)
        append_rows(tmp_path / "eval.csv", ["1,0.5"])
        assert watcher.take() == {"loss.csv", "eval.csv"}
        assert watcher.take() == frozenset()
    finally:
        watcher.stop()


def test_a_stream_of_writes_wakes_the_thread_a_few_times_per_take(tmp_path: Path) -> None:
    """6,000 writes/s to six files for a second, taken every 0.5 s as the session does: the
    thread marks a few times per take, not every COALESCE_SECONDS (40 times a second), and
    every file is taken."""
    names = [f"chart{index}.csv" for index in range(6)]
    for name in names:
        (tmp_path / name).write_text("")
    watcher = InotifyWatcher(tmp_path)
    watcher.start()
    marks = Counter[str]()
    try:
        quiet(watcher)
        watcher.dirty.on_mark = lambda: marks.update(["mark"])
        stop = threading.Event()

        def write() -> None:
            descriptors = [os.open(tmp_path / name, os.O_WRONLY | os.O_APPEND) for name in names]
            try:
                while not stop.wait(0.01):
                    for _row in range(10):
                        for descriptor in descriptors:
                            os.write(descriptor, b"1,0.5\n")
            finally:
                for descriptor in descriptors:
                    os.close(descriptor)

        writer = threading.Thread(target=write)
        writer.start()
        taken: set[str] = set()
        try:
            for _take in range(3):
                time.sleep(0.5)
                taken |= watcher.take()
        finally:
            stop.set()
            writer.join()
        print(f"\n{marks['mark']} marks in 1.5 s of writes")
        assert taken == set(names)
        assert marks["mark"] <= 20, "the thread woke for every batch of a stream"
    finally:
        watcher.stop()


def test_atomic_replace_of_metrics_json_is_seen(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    (tmp_path / "metrics.json").write_text('{"version": 1, "charts": []}')
    watcher = make_watcher(tmp_path)
    quiet(watcher)
    (tmp_path / "metrics.json.tmp").write_text('{"version": 1, "charts": [] }')
    os.replace(tmp_path / "metrics.json.tmp", tmp_path / "metrics.json")
    assert "metrics.json" in collect_until(watcher, lambda seen: "metrics.json" in seen)


def test_a_directory_created_late_is_picked_up(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    directory = tmp_path / "run" / "output" / "ocms_metrics"
    watcher = make_watcher(directory)
    quiet(watcher)
    directory.mkdir(parents=True)
    assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
    quiet(watcher)
    (directory / "loss.csv").write_text("0,1.0\n")
    assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)


def test_a_run_restarted_into_a_new_directory_is_followed(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    (directory / "loss.csv").write_text("0,1.0\n")
    watcher = make_watcher(directory)
    quiet(watcher)
    shutil.rmtree(directory)
    assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
    directory.mkdir()
    quiet(watcher)
    (directory / "epoch.csv").write_text("0,0\n")
    assert "epoch.csv" in collect_until(watcher, lambda seen: "epoch.csv" in seen)


def test_a_file_renamed_over_another_marks_both(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    (tmp_path / "old.csv").write_text("0,1.0\n")
    (tmp_path / "loss.csv").write_text("0,2.0\n1,2.5\n")
    watcher = make_watcher(tmp_path)
    quiet(watcher)
    os.replace(tmp_path / "old.csv", tmp_path / "loss.csv")
    wanted = {"old.csv", "loss.csv"}
    assert collect_until(watcher, lambda seen: wanted <= seen) >= wanted


def test_a_symlinked_run_switched_to_another_target_is_followed_there(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "run"
    link.symlink_to(first)
    watcher = make_watcher(link)
    quiet(watcher)
    (first / "loss.csv").write_text("0,1.0\n")
    assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)
    # Switched atomically, as `ln -sfn` does: a new link renamed over the old one.
    (tmp_path / "run.new").symlink_to(second)
    os.replace(tmp_path / "run.new", link)
    quiet(watcher)
    (first / "stale.csv").write_text("0,1.0\n")  # no longer the run: never marked
    (second / "lr.csv").write_text("0,0.1\n")
    seen = collect_until(watcher, lambda seen: "lr.csv" in seen)
    assert "lr.csv" in seen
    assert "stale.csv" not in seen | watcher.take()


def test_the_directory_moved_away_while_its_events_are_pending(tmp_path: Path) -> None:
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    (directory / "loss.csv").write_text("0,1.0\n")
    watcher = InotifyWatcher(directory, coalesce_seconds=1.0)
    watcher.start()
    try:
        with open(directory / "loss.csv", "a") as loss:
            loss.write("1,0.9\n")
            loss.flush()
            # The first write is read at once; the thread then pauses a second, so these
            # writes and the move are all still queued in the kernel when it reads again.
            assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)
            for step in range(2, 50):
                loss.write(f"{step},0.5\n")
                loss.flush()
            directory.rename(tmp_path / "moved")
            assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
            loss.write("50,0.4\n")  # in the moved directory: not the run any more
            loss.flush()
        directory.mkdir()  # the run restarted in a new directory of the same name
        seen = collect_until(watcher, lambda seen: DIRECTORY in seen)
        (directory / "epoch.csv").write_text("0,0\n")
        seen |= collect_until(watcher, lambda seen: "epoch.csv" in seen)
        assert seen == {DIRECTORY, "epoch.csv"}  # never the moved directory's loss.csv
    finally:
        watcher.stop()


def flood(directory: Path, writes: int, per_second: float | None = None) -> None:
    """`writes` one-byte writes alternating between two files (the kernel merges only
    identical consecutive events, so each is one queued event), from a process of its own
    like a training job; as fast as it can, or at about `per_second`."""
    script = textwrap.dedent(
        f"""
        import os, time
        descriptors = [os.open(os.path.join({str(directory)!r}, name), os.O_WRONLY | os.O_CREAT)
                       for name in ("a", "b")]
        start, per_second = time.monotonic(), {per_second!r}
        for index in range({writes}):
            os.write(descriptors[index & 1], b"x")
            if per_second and index % 500 == 0:
                time.sleep(max(0.0, start + index / per_second - time.monotonic()))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_a_queue_overflow_marks_the_directory_and_costs_bounded_memory(tmp_path: Path) -> None:
    """A flood bigger than the kernel's queue while the thread pauses: the kernel drops
    events (IN_Q_OVERFLOW), so the watcher must ask for a full read (DIRECTORY), read what
    was queued without keeping it, and carry on."""
    queue_limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    writes = max(100_000, 2 * queue_limit)
    watcher = InotifyWatcher(tmp_path, coalesce_seconds=3.0)
    watcher.start()
    try:
        (tmp_path / "first.csv").write_text("0,1\n")
        assert collect_until(watcher, lambda seen: "first.csv" in seen) == {"first.csv"}
        tracemalloc.start()
        try:
            flood(tmp_path, writes)  # while the thread pauses for 3 s
            # Dropped by the kernel if the queue is still full, else seen: either way the full
            # read that the overflow asks for finds the file.
            (tmp_path / "lost.csv").write_text("0,1\n")
            seen = collect_until(watcher, lambda seen: DIRECTORY in seen)
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert DIRECTORY in seen
        print(f"\n{writes} writes over a queue of {queue_limit}: peak {peak / 1e6:.2f} MB traced")
        assert peak < 4e6, "the watcher kept the flood's events"
        quiet(watcher, 3.5)
        (tmp_path / "after.csv").write_text("0,1\n")
        assert "after.csv" in collect_until(watcher, lambda seen: "after.csv" in seen)
    finally:
        watcher.stop()


def test_rows_whose_events_the_kernel_dropped_are_read_at_once_after_an_overflow(
    tmp_path: Path,
) -> None:
    """The session reads every file when the watcher reports an overflow: the row appended
    while the kernel's queue was full is on screen at the next read, not at the safety
    refresh seconds later."""
    write_layout(tmp_path, {"loss": ["loss"], "lr": ["lr"]})
    append_rows(tmp_path / "loss.csv", ["0,1.0"])
    append_rows(tmp_path / "lr.csv", ["0,0.1"])
    states: list[SessionState] = []
    session = FollowSession([tmp_path], states.append, watch=False)
    watcher = InotifyWatcher(tmp_path, coalesce_seconds=3.0)
    watcher.start()
    try:
        (run,) = session.runs
        session.watchers[run_key(run)] = watcher
        session.step()
        append_rows(tmp_path / "loss.csv", ["1,0.9"])  # read at once; the thread then pauses
        assert watcher.dirty.wait(TIMEOUT)
        session.step()
        flood(tmp_path, 2 * int(Path("/proc/sys/fs/inotify/max_queued_events").read_text()))
        append_rows(tmp_path / "lr.csv", ["1,0.2"])  # the queue is full: its event is dropped
        assert watcher.dirty.wait(TIMEOUT)
        session.step()
        lr = next(chart for chart in states[-1].charts if chart.name == "lr")
        assert lr.sources[0].chart.rows == 2
        assert "lr" in states[-1].changed
    finally:
        session.stop()
        watcher.stop()


def test_writes_inotify_cannot_see_are_read_by_the_safety_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows appended through a hard link in another directory make no event in the run's
    directory (inotify reports to the parent the write went through), as a writer on
    another machine makes none: the session's thread reads them at its safety refresh."""
    monkeypatch.setattr(session_module, "SAFETY_REFRESH_SECONDS", 0.5)
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    elsewhere.mkdir()
    write_layout(run, {"loss": ["loss"]})
    append_rows(run / "loss.csv", ["0,1.0"])
    os.link(run / "loss.csv", elsewhere / "loss.csv")
    states: list[SessionState] = []
    arrived = threading.Event()

    def publish(state: SessionState) -> None:
        states.append(state)
        arrived.set()

    session = FollowSession([run], publish)
    session.start()
    try:
        (watcher,) = session.watchers.values()
        assert isinstance(watcher, InotifyWatcher)
        assert arrived.wait(TIMEOUT)
        marks = Counter[str]()
        watcher.dirty.on_mark = lambda: marks.update(["mark"])
        append_rows(elsewhere / "loss.csv", ["1,0.9"])
        deadline = time.monotonic() + TIMEOUT
        while states[-1].status.rows != 2 and time.monotonic() < deadline:
            arrived.clear()
            arrived.wait(0.1)
        assert states[-1].status.rows == 2
        assert marks["mark"] == 0, "inotify saw the write: this test proves nothing"
    finally:
        session.stop()


def test_a_flood_of_events_is_a_few_batches_and_the_next_write_is_not_lost(
    tmp_path: Path,
) -> None:
    """100,000 events in a second: read in a few batches, and the write after them is
    marked (or, if the thread was kept from reading long enough for the kernel's queue to
    overflow on a busy machine, covered by the directory's mark: a full read)."""
    watcher = InotifyWatcher(tmp_path)
    watcher.start()
    batches = Counter[str]()
    watcher.dirty.on_mark = lambda: batches.update(["batch"])
    try:
        quiet(watcher)
        writes = 100_000
        flood(tmp_path, writes, per_second=100_000)
        (tmp_path / "barrier.csv").write_text("0,1\n")
        seen = collect_until(watcher, lambda seen: bool({"barrier.csv", DIRECTORY} & seen))
        print(f"\n{writes} writes -> {batches['batch']} batches, {sorted(seen)}")
        assert {"a", "b"} <= seen
        assert {"barrier.csv", DIRECTORY} & seen
        assert batches["batch"] <= writes // 100
    finally:
        watcher.stop()


def test_a_non_root_user_follows_a_run_under_a_parent_it_cannot_list() -> None:
    """A shared 0711 directory: the run inside is readable, its parent only passable. The
    run is watched with inotify all the same (only the parent's watch is given up)."""
    user = unprivileged()
    if user is None:
        pytest.skip("needs root with setpriv and an interpreter uid 65534 can run")
    prefix, python = user
    base = Path(tempfile.mkdtemp(prefix="ocms-watch-perm-"))
    try:
        base.chmod(0o711)
        run = base / "run"
        run.mkdir()
        run.chmod(0o777)
        script = textwrap.dedent(
            f"""
            from ocms_tui.follow.watch import open_watcher
            watcher = open_watcher({str(run)!r})
            print(watcher.description)
            with open({str(run / "loss.csv")!r}, "w") as csv:
                csv.write("0,1.0\\n")
            watcher.dirty.wait({TIMEOUT})
            print(sorted(watcher.take()))
            watcher.stop()
            """
        )
        result = subprocess.run(
            [*prefix, python, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env={**os.environ, "PYTHONPATH": python_path()},
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["inotify", "['loss.csv']"]
    finally:
        shutil.rmtree(base)


def test_a_directory_recreated_at_once_is_followed_even_with_its_old_inode_number(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    """Filesystems hand a freed inode number to the next file made (tmpfs does at once):
    the new directory may have the old one's number, but not its watch."""
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    watcher = make_watcher(directory)
    quiet(watcher)
    for _restart in range(3):
        directory.rmdir()
        directory.mkdir()
        if not isinstance(watcher, PollingWatcher):  # which sees the same empty directory
            assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
        quiet(watcher)
    (directory / "loss.csv").write_text("0,1.0\n")
    assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)


def test_the_directory_replaced_by_a_file_and_back(
    make_watcher: Callable[[Path], Watcher], tmp_path: Path
):
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    watcher = make_watcher(directory)
    quiet(watcher)
    directory.rmdir()
    directory.write_text("not a directory")
    assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
    quiet(watcher)
    directory.unlink()
    directory.mkdir()
    assert DIRECTORY in collect_until(watcher, lambda seen: DIRECTORY in seen)
    quiet(watcher)
    (directory / "loss.csv").write_text("0,1.0\n")
    assert "loss.csv" in collect_until(watcher, lambda seen: "loss.csv" in seen)


def test_reads_do_not_mark_anything(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_text("0,1.0\n")
    watcher = InotifyWatcher(tmp_path)
    watcher.start()
    try:
        quiet(watcher)
        for _ in range(20):
            (tmp_path / "loss.csv").read_bytes()
        # A barrier: inotify delivers in order, so once this write is seen, any mark the
        # reads caused has been seen too.
        (tmp_path / "barrier.csv").write_text("0,1.0\n")
        assert collect_until(watcher, lambda seen: "barrier.csv" in seen) == {"barrier.csv"}
    finally:
        watcher.stop()


def test_stop_releases_the_threads(tmp_path: Path) -> None:
    before = threading.active_count()
    for watcher in (
        InotifyWatcher(tmp_path),
        WatchdogWatcher(tmp_path),
        PollingWatcher(tmp_path, 0.05),
    ):
        watcher.start()
        assert threading.active_count() > before
        watcher.stop()
        watcher.stop()  # twice is harmless
    assert threading.active_count() == before


def test_starting_and_stopping_leaks_no_descriptor(tmp_path: Path) -> None:
    """Each inotify instance counts against a per-user limit (128 by default): a session
    that stops watchers for runs that went away must give every one back."""

    def descriptors() -> list[str]:
        targets = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(FileNotFoundError):  # listdir's own, closed by now
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        return sorted(targets)

    (tmp_path / "loss.csv").write_text("0,1.0\n")
    before = descriptors()
    for _ in range(50):
        watcher = InotifyWatcher(tmp_path)
        watcher.start()
        watcher.stop()
    missing = InotifyWatcher(tmp_path / "not" / "yet")  # an ancestor's watch only
    missing.start()
    missing.stop()
    assert descriptors() == before


def test_open_watcher_picks_polling_on_request_and_inotify_otherwise(tmp_path: Path) -> None:
    polling = open_watcher(tmp_path, poll=0.5)
    inotify = open_watcher(tmp_path)
    try:
        assert isinstance(polling, PollingWatcher)
        assert polling.description == "polling every 0.5s"
        if filesystem_type(tmp_path) not in {"nfs", "nfs4"}:
            assert isinstance(inotify, InotifyWatcher)
            assert inotify.description == "inotify"
    finally:
        polling.stop()
        inotify.stop()
    with pytest.raises(ValueError):
        PollingWatcher(tmp_path, 0)


def test_falls_back_to_polling_when_inotify_cannot_start(tmp_path: Path) -> None:
    # A process out of file descriptors cannot create an inotify instance (EMFILE):
    # the same failure as an exhausted fs.inotify.max_user_instances.
    script = textwrap.dedent(
        f"""
        import os, resource, sys, time
        from ocms_tui.follow.watch import open_watcher
        import watchdog.observers
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        open_fds = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_fds, hard))
        watcher = open_watcher({str(tmp_path)!r})
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        print(type(watcher).__name__)
        print(watcher.description)
        with open({str(tmp_path / "x.csv")!r}, "w") as f:
            f.write("1,2\\n")
        watcher.dirty.wait(5)
        print(sorted(watcher.take()))
        watcher.stop()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    kind, description, names = result.stdout.splitlines()
    assert kind == "PollingWatcher"
    assert description.startswith("polling every 1s (inotify unavailable")
    assert names == "['x.csv']"


def test_filesystem_type_reads_the_mount_table() -> None:
    if not Path("/proc/self/mounts").exists():
        pytest.skip("no /proc/self/mounts on this system")
    assert filesystem_type("/proc/self") == "proc"
    assert filesystem_type("/proc/does/not/exist/yet") == "proc"


def test_filesystem_type_takes_the_deepest_mount_holding_the_path() -> None:
    """A mount inside another (/dev/shm inside /dev, /proc inside /) is the one a path below
    it is on; a mount point that is only a prefix of a name (/proc for /procfoo) is not."""
    if not Path("/proc/self/mounts").exists():
        pytest.skip("no /proc/self/mounts on this system")
    mounts = {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        mounts[fields[1]] = fields[2]
    assert filesystem_type("/") == mounts["/"]
    assert filesystem_type("/procfoo/not/there") == mounts["/"]
    for inner in ("/dev/shm", "/sys/fs/cgroup", "/dev/pts"):
        if inner in mounts and os.path.isdir(inner):
            assert filesystem_type(f"{inner}/not/there") == mounts[inner]
