"""A sweep's runs are watched through one inotify instance and one thread (InotifyHub):
real directories, real inotify events, the session's real thread. Runs created later are
followed, runs deleted mid-sweep let go of their watches, and hundreds of runs hold one
instance (the kernel's default limit is 128 instances per user)."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from app_support import append_rows, write_layout

from ocms_tui.follow.runset import RESCAN_SECONDS
from ocms_tui.follow.session import FollowSession, SessionState
from ocms_tui.follow.watch import InotifyHub, InotifyWatcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
TIMEOUT = 30.0


def start_run(directory: Path, rows: int = 3) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_layout(directory, {"loss": ["loss"]})
    append_rows(directory / "loss.csv", [f"{step},{1 / (step + 1)!r}" for step in range(rows)])


def inotify_instances() -> int:
    """inotify descriptors this process holds."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except FileNotFoundError:  # listdir's own descriptor, closed by now
            continue
    return count


def inotify_threads() -> int:
    return sum(thread.name == "ocms-inotify" for thread in threading.enumerate())


class Followed:
    """A real session on a real thread, its states kept."""

    def __init__(self, parent: Path) -> None:
        self.states: list[SessionState] = []
        self._published = threading.Condition()
        self.session = FollowSession([parent], self._publish)

    def _publish(self, state: SessionState) -> None:
        with self._published:
            self.states.append(state)
            self._published.notify_all()

    def wait_for(self, done: Callable[[SessionState], bool], timeout: float = TIMEOUT) -> float:
        """Seconds until a state satisfies `done`."""
        started = time.monotonic()
        with self._published:
            reached = self._published.wait_for(
                lambda: bool(self.states) and done(self.states[-1]), timeout=timeout
            )
        assert reached, f"not reached in {timeout} s; last state: {self.states[-1:]}"
        return time.monotonic() - started


def rows_by_run(state: SessionState) -> dict[str, int]:
    return {run.directory.name: sum(chart.rows for chart in run.charts) for run in state.runs}


def test_a_sweep_of_runs_shares_one_instance_and_one_thread(tmp_path: Path) -> None:
    before = (inotify_instances(), inotify_threads())
    for index in range(150):  # past the kernel's default 128 instances per user
        start_run(tmp_path / f"lr_{index}")
    followed = Followed(tmp_path)
    followed.session.start()
    try:
        followed.wait_for(lambda state: state.idle and len(state.runs) == 150)
        assert inotify_instances() == before[0] + 1
        assert inotify_threads() == before[1] + 1
        hub = followed.session.inotify
        assert hub.watchers == 150
        assert hub.kernel_watches == 151  # every run's directory, and their parent once
        assert {watcher.description for watcher in followed.session.watchers.values()} == {
            "inotify"
        }
        assert followed.states[-1].status.watching == "inotify"
        # A write to any run is seen through the shared instance (the safety refresh is
        # RESCAN_SECONDS away: a read well before it came from an event).
        append_rows(tmp_path / "lr_97" / "loss.csv", ["3,0.2"])
        waited = followed.wait_for(lambda state: rows_by_run(state)["lr_97"] == 4)
        assert waited < RESCAN_SECONDS
    finally:
        followed.session.stop()
    assert (inotify_instances(), inotify_threads()) == before


def test_a_run_created_later_is_followed_and_its_writes_seen(tmp_path: Path) -> None:
    instances = inotify_instances()
    for index in range(3):
        start_run(tmp_path / f"lr_{index}")
    followed = Followed(tmp_path)
    followed.session.start()
    try:
        followed.wait_for(lambda state: state.idle and len(state.runs) == 3)
        start_run(tmp_path / "lr_late")
        waited = followed.wait_for(lambda state: "lr_late" in rows_by_run(state))
        assert waited < 2 * RESCAN_SECONDS + 1  # within the rescan interval, as before
        assert followed.session.inotify.watchers == 4
        append_rows(tmp_path / "lr_late" / "loss.csv", ["3,0.2", "4,0.1"])
        waited = followed.wait_for(lambda state: rows_by_run(state).get("lr_late") == 5)
        assert waited < RESCAN_SECONDS  # an event, not the next search
        assert inotify_instances() == instances + 1
    finally:
        followed.session.stop()


def test_a_run_deleted_mid_sweep_is_let_go_and_the_others_followed(tmp_path: Path) -> None:
    for index in range(4):
        start_run(tmp_path / f"lr_{index}")
    followed = Followed(tmp_path)
    followed.session.start()
    hub = followed.session.inotify
    try:
        followed.wait_for(lambda state: state.idle and len(state.runs) == 4)
        assert hub.kernel_watches == 5
        shutil.rmtree(tmp_path / "lr_2")
        followed.wait_for(lambda state: "lr_2" not in rows_by_run(state))
        deadline = time.monotonic() + TIMEOUT
        while hub.watchers != 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hub.watchers == 3 and hub.kernel_watches == 4  # its watch went with it
        append_rows(tmp_path / "lr_3" / "loss.csv", ["3,0.2"])
        waited = followed.wait_for(lambda state: rows_by_run(state).get("lr_3") == 4)
        assert waited < RESCAN_SECONDS
        # Made again under the same name (a restarted run): followed afresh.
        start_run(tmp_path / "lr_2", rows=7)
        followed.wait_for(lambda state: rows_by_run(state).get("lr_2") == 7)
    finally:
        followed.session.stop()
    assert hub.watchers == 0 and hub.kernel_watches == 0


def test_watchers_sharing_the_parent_keep_its_watch_until_the_last_one_stops(
    tmp_path: Path,
) -> None:
    """The parent is every run's nearest ancestor: one kernel watch, dropped with the last
    of its users; a run's directory created after its watcher started is seen through it."""
    instances = inotify_instances()
    hub = InotifyHub()
    first = InotifyWatcher(tmp_path / "a", hub=hub)  # not there yet: the parent only
    second = InotifyWatcher(tmp_path / "b", hub=hub)
    first.start()
    second.start()
    try:
        assert hub.kernel_watches == 1
        start_run(tmp_path / "a")
        deadline = time.monotonic() + TIMEOUT
        while not first.dirty.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "." in first.take()  # the directory itself came: read it whole
        assert second.take() == frozenset()
        assert hub.kernel_watches == 2
        first.stop()
        assert hub.kernel_watches == 1  # the parent's watch stays for `second`
        start_run(tmp_path / "b")
        deadline = time.monotonic() + TIMEOUT
        while not second.dirty.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "." in second.take()
    finally:
        first.stop()
        second.stop()
    assert hub.watchers == 0 and hub.kernel_watches == 0
    assert inotify_instances() == instances


def test_watchers_coming_and_going_on_two_threads_leave_no_descriptor_behind(
    tmp_path: Path,
) -> None:
    """The session's thread starts watchers for new runs while the UI's stops them all (the
    dashboard closing during a search): the instance is closed with the last watcher and
    made again with the next, each with its own thread and pipe, nothing left open."""
    for name in ("a", "b"):
        start_run(tmp_path / name)
    before = sorted(os.listdir("/proc/self/fd"))
    hub = InotifyHub()
    failures: list[BaseException] = []

    def churn(name: str) -> None:
        try:
            for _ in range(150):
                watcher = InotifyWatcher(tmp_path / name, hub=hub)
                watcher.start()
                watcher.take()
                watcher.stop()
        except BaseException as error:  # reported below, not lost in the thread
            failures.append(error)

    threads = [threading.Thread(target=churn, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert not failures
    assert hub.watchers == 0 and hub.kernel_watches == 0
    deadline = time.monotonic() + TIMEOUT
    while inotify_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(os.listdir("/proc/self/fd")) == before
    # And it still works afterwards.
    watcher = InotifyWatcher(tmp_path / "a", hub=hub)
    watcher.start()
    try:
        append_rows(tmp_path / "a" / "loss.csv", ["3,0.2"])
        deadline = time.monotonic() + TIMEOUT
        while not watcher.dirty.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watcher.take() == {"loss.csv"}
    finally:
        watcher.stop()
