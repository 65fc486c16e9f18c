"""A child process in a real pseudo-terminal, its output read back through a terminal
emulator (pyte): what a user in tmux over SSH would see, and the terminal's modes after."""

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
from collections.abc import Mapping
from pathlib import Path

import pyte
import pytest

COLUMNS, LINES = 120, 36


def installed_command() -> str:
    beside_python = Path(sys.executable).with_name("ocms-tui")
    command = str(beside_python) if beside_python.exists() else shutil.which("ocms-tui")
    if command is None:
        pytest.fail("ocms-tui is not installed (pip install -e .)")
    return command


class Terminal:
    """A child process on a pty of a fixed size, its output fed into a pyte screen."""

    def __init__(
        self,
        argv: list[str],
        size: tuple[int, int] = (COLUMNS, LINES),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        columns, lines = size
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        self.output = bytearray()  # every byte the child wrote, to check the modes it left
        child_environment = dict(os.environ if environment is None else environment)
        child_environment.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the app
            os.execve(argv[0], argv, child_environment)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))

    def private_mode_set(self, mode: int) -> bool:
        """Whether DEC private mode `mode` (1049 alternate screen, 1000 mouse, ...) is on."""
        return (mode << 5) in self.screen.mode  # pyte keeps private modes shifted by 5

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            self.output += data
            self.stream.feed(data)

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
