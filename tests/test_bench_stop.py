"""A benchmark stopped midway leaves nothing running and nothing on disk: no process of its
group, no private tmux server, no dashboard (in a tmux pane, or any `ocms_tui` process
reading its data), no temporary directory. Stopped as a person or a tool stops it: Ctrl-C
(SIGINT to the foreground group), `timeout` (SIGTERM to the benchmark, then to its whole
group), a closed terminal (SIGHUP), and killed outright (SIGKILL: nothing of it can run, the
tmux servers end themselves)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a real benchmark group, started and stopped

BENCH = Path(__file__).resolve().parent.parent / "bench"
TMUX_DIRECTORY = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
STARTUP_TIMEOUT = 180.0
WORKSPACE = re.compile(r"temporary files: (\S+)")


def live_processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every process not yet dead, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        state, parent, group = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z":  # a zombie is dead, only not yet reaped
            found.append((int(entry), int(parent), int(group)))
    return found


def alive(pid: int) -> bool:
    return any(each == pid for each, _, _ in live_processes())


def processes_in_group(group: int) -> list[int]:
    return [pid for pid, _, each in live_processes() if each == group]


def children_of(parent: int) -> list[int]:
    return [pid for pid, each, _ in live_processes() if each == parent]


def dashboards_reading(directory: str) -> list[int]:
    """Every live `ocms_tui` process with `directory` (or a path under it) in its command."""
    found = []
    for pid, _, _ in live_processes():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"ocms_tui" in part for part in command) and any(
            part.decode(errors="replace").startswith(directory) for part in command
        ):
            found.append(pid)
    return found


def tmux_sockets(pid: int) -> list[Path]:
    return sorted(TMUX_DIRECTORY.glob(f"ocms-bench-{pid}-*"))


def pane_pids(socket: Path) -> list[int]:
    listed = subprocess.run(
        ["tmux", "-S", str(socket), "list-panes", "-a", "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return [int(pid) for pid in listed.stdout.split() if pid.isdigit()]


def live_servers(sockets: list[Path]) -> list[Path]:
    """The sockets a tmux server still answers on."""
    return [
        socket
        for socket in sockets
        if subprocess.run(
            ["tmux", "-S", str(socket), "list-sessions"],
            capture_output=True,
            timeout=10,
            check=False,
        ).returncode
        == 0
    ]


def start_benchmark(group: str) -> subprocess.Popen[str]:
    # --tiny: the data is generated into the benchmark's temporary directory, so that a
    # leftover directory is seen (and no shared fixture is made by a test).
    return subprocess.Popen(
        [sys.executable, str(BENCH / "run.py"), "--tiny", "--only", group],
        cwd=BENCH,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job has
    )


def wait_until_started(bench: subprocess.Popen[str], group: str) -> tuple[list[int], list[Path]]:
    """The dashboards in tmux panes (with their sockets), or the worker processes."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    started: list[int] = []
    sockets: list[Path] = []
    while not started and time.monotonic() < deadline and bench.poll() is None:
        time.sleep(0.2)
        if group == "screen":
            sockets = tmux_sockets(bench.pid)
            started = [pid for socket in sockets for pid in pane_pids(socket)]
        else:
            started = children_of(bench.pid)
    assert started, f"the {group} group started nothing in {STARTUP_TIMEOUT:.0f} s"
    return started, sockets


def stop(bench: subprocess.Popen[str], how: str) -> None:
    if how == "ctrl-c":
        os.killpg(bench.pid, signal.SIGINT)  # what a terminal sends its foreground job
    elif how == "timeout":
        # What `timeout` does: SIGTERM to the command, then to the whole process group
        # (the benchmark gets it twice, its children once).
        bench.send_signal(signal.SIGTERM)
        os.killpg(bench.pid, signal.SIGTERM)
    elif how == "hang-up":
        os.killpg(bench.pid, signal.SIGHUP)  # a closed terminal
    elif how == "kill":
        os.killpg(bench.pid, signal.SIGKILL)
    else:
        raise AssertionError(how)


def eventually(condition, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return bool(condition())


EXIT_STATUS = {"ctrl-c": signal.SIGINT, "timeout": signal.SIGTERM, "hang-up": signal.SIGHUP}


@pytest.mark.parametrize(
    ("group", "how"),
    [
        pytest.param("screen", "timeout", id="tmux-dashboard-timeout"),
        pytest.param("screen", "ctrl-c", id="tmux-dashboard-ctrl-c"),
        pytest.param("screen", "hang-up", id="tmux-dashboard-hang-up"),
        pytest.param("follow", "ctrl-c", id="worker-processes-ctrl-c"),
        pytest.param("follow", "timeout", id="worker-processes-timeout"),
    ],
)
def test_a_stopped_benchmark_leaves_nothing_running(group: str, how: str) -> None:
    if group == "screen" and shutil.which("tmux") is None:
        pytest.skip("the screen figures need tmux")
    bench = start_benchmark(group)
    try:
        started, sockets = wait_until_started(bench, group)
        time.sleep(1.0)  # midway through its work
        stop(bench, how)
        _, errors = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.wait()
    assert bench.returncode == 128 + EXIT_STATUS[how], errors
    assert "everything it started has been ended" in errors
    workspace = WORKSPACE.search(errors)
    assert workspace is not None, errors
    assert not processes_in_group(bench.pid)
    assert not [pid for pid in started if alive(pid)]
    assert not dashboards_reading(workspace.group(1))
    assert not live_servers(sockets)
    assert not tmux_sockets(bench.pid)
    assert not Path(workspace.group(1)).exists(), "its temporary directory was left behind"


def test_a_benchmark_killed_outright_leaves_no_dashboard_running() -> None:
    """SIGKILL runs no cleanup: each tmux server's own guard job ends its dashboard and
    itself once the benchmark is gone. (Its temporary directory stays: nothing can remove
    it.)"""
    if shutil.which("tmux") is None:
        pytest.skip("the screen figures need tmux")
    bench = start_benchmark("screen")
    try:
        started, sockets = wait_until_started(bench, "screen")
        stop(bench, "kill")
        bench.wait(timeout=30)
        errors = bench.stderr.read() if bench.stderr else ""
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.wait()
    workspace = WORKSPACE.search(errors)
    assert workspace is not None, errors
    try:
        # The guard looks once a second, then gives the dashboard 2 s to end on SIGTERM.
        assert eventually(lambda: not [pid for pid in started if alive(pid)], 15)
        assert eventually(lambda: not dashboards_reading(workspace.group(1)), 5)
        assert eventually(lambda: not live_servers(sockets), 5)
        assert not tmux_sockets(bench.pid)
    finally:
        shutil.rmtree(workspace.group(1), ignore_errors=True)
