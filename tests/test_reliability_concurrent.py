"""Concurrent readers: two dashboards and a `--check` loop, each its own process, follow one
directory while a writer process fills it (a widening and a chart added on the way).

Consistent: every sample a reader takes is an exact prefix of what the writer logs, no
reader ever reports an error once metrics.json exists, the check's row counts never go
down, and at the end all three hold every row and the dashboards show the last step.

Read-only, proved four ways:
1. every reader runs a Python audit hook that records any attempt to open a file in the
   directory for writing, or to rename, remove, create, chmod, chown, truncate or touch
   anything in it: none may be recorded;
2. as root (when user namespaces work), the readers run without root's override and the
   writer makes everything read-only to them (directory 0555, umask 0222): a reader's own
   probe confirms it cannot create a file there, so it could not have written anything;
3. after the writer has stopped, the readers go on (a reload, more checks) under inotify:
   only opened and closed-without-writing events may come from the directory;
4. a snapshot of (inode, size, mtime, ctime, mode) of every entry taken when the writer
   stopped is identical after the readers are done.

Run as a script, this file is the reader process: `python THIS dashboard|check DIR`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

# The values of these runs (reliability_support.value_of) jump across 13 orders of
# magnitude from step to step by design: spikes by any measure. These tests are about the
# files, so they read them without the curve health checks (health=False, --no-health).
pytestmark = pytest.mark.slow  # -m "not slow" leaves it out of the quick run; CI runs it

PLAN_STEPS = 60_000
READER_KINDS = ("dashboard", "dashboard", "check")
# The events a reader may cause: reading, never writing (watchdog's names for inotify's).
READ_EVENTS = {"opened", "closed_no_write"}


def plan():  # type: ignore[no-untyped-def]
    from reliability_support import TrainingPlan

    return TrainingPlan(widen_at=PLAN_STEPS // 2, new_chart_at=PLAN_STEPS * 3 // 4)


# -- the reader processes -------------------------------------------------------------------

WRITE_EVENTS = {
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.utime",
    "os.truncate",
    "os.symlink",
    "os.link",
    "os.mkfifo",
    "os.mknod",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install_write_recorder(directory: Path) -> list[str]:
    """Audit every attempt of this process to change anything in `directory`."""
    inside = os.path.realpath(directory)
    attempts: list[str] = []

    def concerns(path: object) -> bool:
        if isinstance(path, int) or path is None:
            return False
        real = os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
        return real == inside or real.startswith(inside + os.sep)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writing = bool(flags & WRITE_FLAGS) or (
                isinstance(mode, str) and any(char in mode for char in "wax+")
            )
            if writing and concerns(path):
                attempts.append(f"open {path} {mode} {flags}")
        elif event in WRITE_EVENTS and any(concerns(arg) for arg in args[:2]):
            attempts.append(f"{event} {args[:2]}")

    sys.addaudithook(hook)
    return attempts


def can_create_a_file(directory: Path) -> bool:
    probe = directory / f".probe-{os.getpid()}"
    try:
        probe.touch()
    except OSError:
        return False
    probe.unlink()
    return True


async def run_dashboard(directory: Path, report: dict[str, Any]) -> None:
    from app_support import screen_text
    from reliability_support import assert_exact_prefix, expected_arrays

    from ocms_tui.ui.app import OcmsApp

    expected = expected_arrays(plan(), range(PLAN_STEPS))
    app = OcmsApp(directory)
    async with app.run_test(size=(160, 48)) as pilot:
        report["samples"] = 0
        stop = asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        print("ready", flush=True)
        while not stop.done():  # the writer is writing
            sample(app.session.runs[0].model, expected, report, assert_exact_prefix)
            await asyncio.sleep(0.1)
        for reload in (False, True):  # the writer has stopped: read to the end, then reload
            if reload:
                await pilot.press("r")
            await app.settle(timeout=60)
            sample(app.session.runs[0].model, expected, report, assert_exact_prefix, complete=True)
        await pilot.pause()
        screen = screen_text(app)
        report["shows_last_step"] = f"step {PLAN_STEPS - 1:,}" in screen
        report["rows"] = app.session.runs[0].model.total_rows


def sample(model, expected, report, assert_exact_prefix, complete=False) -> None:  # type: ignore[no-untyped-def]
    from ocms_tui.format.problems import Rule

    report["samples"] += 1
    try:
        assert_exact_prefix(model, expected, complete=complete)
        # Before the writer's first log() the directory has no metrics.json: the one error
        # allowed (a refresh on the worker thread may also be half-way through this sample).
        errors = [
            f"{p.rule.value} {p.path}:{p.line}"
            for p in model.problems
            if p.is_error and p.rule is not Rule.MISSING_METRICS_JSON
        ]
        assert not errors, errors
    except AssertionError as error:
        report.setdefault("inconsistent", []).append(str(error)[:300])


def run_check_loop(directory: Path, report: dict[str, Any]) -> None:
    from ocms_tui.cli import main

    def check() -> dict[str, Any]:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            code = main(["--check", "--no-health", "--format", "json", str(directory)])
        document = json.loads(output.getvalue())
        document["exit"] = code
        return document

    report["checks"] = 0
    rows: dict[str, int] = {}
    writer_done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), writer_done.set()), daemon=True).start()
    print("ready", flush=True)
    finishing = 0
    while finishing < 3:  # after the writer stops: three more full checks
        if writer_done.is_set():
            finishing += 1
        document = check()
        report["checks"] += 1
        runs = document.get("runs", [document])
        for run in runs:
            errors = [p for p in run["problems"] if p["severity"] == "error"]
            if errors and {p["rule"] for p in errors} != {"missing-metrics-json"}:
                report.setdefault("inconsistent", []).append(json.dumps(errors)[:300])
            for chart in run["charts"]:
                if chart["rows"] < rows.get(chart["name"], 0):
                    report.setdefault("inconsistent", []).append(f"{chart} went down")
                rows[chart["name"]] = chart["rows"]
        time.sleep(0.05)
    report["rows"] = sum(rows.values())
    report["last_exit"] = document["exit"]


def write_everything(directory: Path) -> None:
    """What a misbehaving reader might do, for the recorder's own test."""
    (directory / "new.csv").write_text("0,1\n")
    with open(directory / "new.csv", "a") as handle:
        handle.write("1,2\n")
    descriptor = os.open(directory / "other.csv", os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(descriptor)
    os.replace(directory / "other.csv", directory / "moved.csv")
    os.utime(directory / "moved.csv")
    os.chmod(directory / "moved.csv", 0o600)
    os.truncate(directory / "moved.csv", 0)
    os.remove(directory / "moved.csv")
    (directory / "sub").mkdir()
    shutil.rmtree(directory / "sub")
    (directory / "new.csv").read_text()  # reading is not an attempt


def reader_main(kind: str, directory: Path) -> None:
    report: dict[str, Any] = {"kind": kind, "can_write": can_create_a_file(directory)}
    attempts = install_write_recorder(directory)
    if kind == "misbehave":
        write_everything(directory)
    elif kind == "dashboard":
        asyncio.run(run_dashboard(directory, report))
    else:
        run_check_loop(directory, report)
    report["write_attempts"] = attempts
    print(json.dumps(report), flush=True)


# -- the test -------------------------------------------------------------------------------


def without_root_override() -> list[str]:
    """As root: a user-namespace prefix under which the directory's modes bind a reader
    (it owns root's files but has no capabilities). Otherwise nothing."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return []
    prefix = ["unshare", "-U", "--map-user=1000", "--map-group=1000"]
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    return prefix if probe.returncode == 0 else []


def test_the_write_recorder_sees_every_kind_of_write(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-B", __file__, "misbehave", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    attempts = json.loads(result.stdout.splitlines()[-1])["write_attempts"]
    kinds = [attempt.split()[0] for attempt in attempts]
    assert kinds.count("open") == 3  # write_text, append, os.open with O_CREAT
    assert {"os.rename", "os.utime", "os.chmod", "os.truncate", "os.remove", "os.mkdir"} <= set(
        kinds
    )
    assert "shutil.rmtree" in kinds and len(attempts) >= 10


def test_two_dashboards_and_a_check_loop_follow_a_writer_without_writing(tmp_path: Path) -> None:
    from reliability_support import entry_snapshot, expected_arrays, start_writer
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    directory = tmp_path / "run"
    directory.mkdir()
    prefix = without_root_override()
    if prefix:
        directory.chmod(0o555)  # root (the writer) is not bound by it; the readers are
    tests = str(Path(__file__).parent)
    environment = {
        **os.environ,
        "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    readers = [
        subprocess.Popen(
            [*prefix, sys.executable, "-B", __file__, kind, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        for kind in READER_KINDS
    ]
    try:
        for reader in readers:
            assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
        started = time.monotonic()
        writer = start_writer(
            directory,
            plan(),
            0,
            PLAN_STEPS - 1,
            pause_chance=0.005,  # about 8 s of writing, in bursts
            pause_max_ms=50,
            seed=6,
            preexec_fn=lambda: os.umask(0o222),  # what it creates is read-only to readers
        )
        _, writer_errors = writer.communicate(timeout=300)
        assert writer.returncode == 0, writer_errors
        writing = time.monotonic() - started

        events: list[tuple[str, str]] = []

        class Recorder(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                events.append((event.event_type, os.fsdecode(event.src_path)))

        observer = Observer()
        observer.schedule(Recorder(), str(directory))
        observer.start()
        before = entry_snapshot(directory)
        for reader in readers:  # the writer is done: finish reading, reload, check again
            assert reader.stdin is not None
            reader.stdin.write("done\n")
            reader.stdin.flush()
        reports = []
        for reader in readers:
            stdout, stderr = reader.communicate(timeout=180)
            assert reader.returncode == 0, stderr
            reports.append(json.loads(stdout.splitlines()[-1]))
        time.sleep(0.3)  # let inotify deliver
        observer.stop()
        observer.join()
        after = entry_snapshot(directory)
    finally:
        directory.chmod(0o755)
        for reader in readers:
            if reader.poll() is None:
                reader.kill()

    expected = expected_arrays(plan(), range(PLAN_STEPS))
    written_rows = sum(len(steps) for steps, _ in expected.values())
    for report in reports:
        assert report.get("inconsistent") is None, report
        assert report["write_attempts"] == [], report
        assert report["rows"] == written_rows, report
        if prefix:
            assert report["can_write"] is False, "the readers were not read-only"
    dashboards = [report for report in reports if report["kind"] == "dashboard"]
    assert all(report["shows_last_step"] and report["samples"] > 5 for report in dashboards), (
        dashboards
    )
    check_loop = next(report for report in reports if report["kind"] == "check")
    assert check_loop["checks"] > 5 and check_loop["last_exit"] == 0
    writes = [event for event in events if event[0] not in READ_EVENTS]
    assert writes == [], writes
    assert any(kind == "opened" for kind, _ in events), "inotify saw no reader at all"
    assert after == before
    print(
        f"\nconcurrent: writer {writing:.1f} s, {written_rows:,} rows; "
        f"dashboards {[r['samples'] for r in dashboards]} samples, "
        f"{check_loop['checks']} checks; {len(events)} read events after the writer stopped; "
        f"readers {'without' if prefix else 'with'} write permission"
    )


if __name__ == "__main__":
    reader_main(sys.argv[1], Path(sys.argv[2]))
