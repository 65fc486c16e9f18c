"""The installed `ocms-tui` in a real pseudo-terminal, read back through a terminal emulator
(pyte): what a user in tmux over SSH would see, including the keys reaching the app."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest

from ocms_tui.demo import write_demo_run

COLUMNS, LINES = 120, 36


def installed_command() -> str:
    beside_python = Path(sys.executable).with_name("ocms-tui")
    command = str(beside_python) if beside_python.exists() else shutil.which("ocms-tui")
    if command is None:
        pytest.fail("ocms-tui is not installed (pip install -e .)")
    return command


class Terminal:
    """A child process on a pty of a fixed size, its output fed into a pyte screen."""

    def __init__(self, argv: list[str]) -> None:
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        environment = dict(os.environ, TERM="xterm-256color", COLUMNS=str(COLUMNS))
        environment["LINES"] = str(LINES)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the app
            os.execve(argv[0], argv, environment)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            try:
                self.stream.feed(os.read(self.fd, 65536))
            except OSError:  # the child closed the terminal
                return

    def wait_for(self, *texts: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(text in self.text() for text in texts):
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {texts!r}; the terminal shows:\n{self.text()}")
            self.pump(0.1)

    def press(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def exit_code(self, timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"ocms-tui did not exit; the terminal shows:\n{self.text()}")


def test_installed_dashboard_follows_a_run_and_quits(tmp_path: Path) -> None:
    directory = tmp_path / "ocms_metrics"
    write_demo_run(directory, steps=300)
    terminal = Terminal([installed_command(), str(directory)])
    terminal.wait_for("loss", "learning_rate", "step 299 · 300 rows", "● live")
    with open(directory / "epoch.csv", "a", encoding="utf-8") as csv:
        csv.write("300,5.0\n301,5.25\n")
    terminal.wait_for("step 301 · 302 rows")
    terminal.press(b"?")
    terminal.wait_for("ocms-tui · keys")
    terminal.press(b"\x1b")  # escape closes the help
    terminal.pump(0.5)
    terminal.press(b"q")
    assert terminal.exit_code() == 0
