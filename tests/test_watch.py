"""Watchers on real directories with real events: inotify, polling, and the fallback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ocms_tui.watch import (
    DIRECTORY,
    InotifyWatcher,
    PollingWatcher,
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


@pytest.fixture(params=["inotify", "poll"])
def make_watcher(request: pytest.FixtureRequest) -> Iterator[Callable[[Path], Watcher]]:
    started: list[Watcher] = []

    def make(directory: Path) -> Watcher:
        watcher: Watcher = (
            InotifyWatcher(directory)
            if request.param == "inotify"
            else PollingWatcher(directory, interval=0.05)
        )
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
    for watcher in (InotifyWatcher(tmp_path), PollingWatcher(tmp_path, 0.05)):
        watcher.start()
        assert threading.active_count() > before
        watcher.stop()
        watcher.stop()  # twice is harmless
    assert threading.active_count() == before


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
        from ocms_tui.watch import open_watcher
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
