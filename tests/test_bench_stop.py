"""A benchmark stopped midway (Ctrl-C, a `timeout`'s SIGTERM) leaves nothing running: no
process of its group, no private tmux server, no dashboard in a tmux pane."""

from __future__ import annotations

import os
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


def alive(pid: int) -> bool:
    return any(each == pid for each, _, _ in live_processes())


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


def processes_in_group(group: int) -> list[int]:
    return [pid for pid, _, each in live_processes() if each == group]


def children_of(parent: int) -> list[int]:
    return [pid for pid, each, _ in live_processes() if each == parent]


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


@pytest.mark.parametrize(
    ("group", "stop"),
    [
        pytest.param("screen", "sigterm", id="tmux-dashboard-sigterm"),
        pytest.param("follow", "ctrl-c", id="worker-processes-ctrl-c"),
    ],
)
def test_a_stopped_benchmark_leaves_nothing_running(group: str, stop: str) -> None:
    if group == "screen" and shutil.which("tmux") is None:
        pytest.skip("the screen figures need tmux")
    bench = subprocess.Popen(
        [sys.executable, str(BENCH / "run.py"), "--quick", "--only", group],
        cwd=BENCH,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job has
    )
    started: list[int] = []  # the dashboards in tmux panes, or the worker processes
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not started and time.monotonic() < deadline and bench.poll() is None:
            time.sleep(0.2)
            if group == "screen":
                started = [pid for socket in tmux_sockets(bench.pid) for pid in pane_pids(socket)]
            else:
                started = children_of(bench.pid)
        assert started, f"the {group} group started nothing in {STARTUP_TIMEOUT:.0f} s"
        time.sleep(1.0)  # midway through its work
        if stop == "sigterm":
            bench.send_signal(signal.SIGTERM)  # what `timeout` sends
        else:
            os.killpg(bench.pid, signal.SIGINT)  # what a terminal sends its foreground job
        _, errors = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.wait()
    expected = 128 + (signal.SIGTERM if stop == "sigterm" else signal.SIGINT)
    assert bench.returncode == expected, errors
    assert "everything it started has been ended" in errors
    assert not processes_in_group(bench.pid)
    assert not [pid for pid in started if alive(pid)]
    assert not tmux_sockets(bench.pid)
