"""Every way out of the dashboard leaves the terminal as it was (main screen, no mouse
reporting) and removes the demo's temporary directory: q, ctrl+c, SIGTERM, SIGHUP and SIGINT,
in a real pseudo-terminal read back through pyte."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from terminal_support import Terminal

ALTERNATE_SCREEN = 1049
MOUSE_MODES = (1000, 1002, 1003, 1006, 1015)  # button, drag, any-motion, SGR, urxvt


def open_demo(tmp_path: Path) -> Terminal:
    """`ocms-tui --demo` at 80x24 with its temporary directory under `tmp_path`."""
    environment = dict(os.environ, TMPDIR=str(tmp_path))
    terminal = Terminal([sys.executable, "-m", "ocms_tui", "--demo"], (80, 24), environment)
    terminal.wait_for("loss", "● live")
    assert terminal.private_mode_set(ALTERNATE_SCREEN)
    assert any(terminal.private_mode_set(mode) for mode in MOUSE_MODES)
    assert [path.name[:10] for path in tmp_path.iterdir()] == ["ocms-demo-"]
    return terminal


def assert_restored(terminal: Terminal, tmp_path: Path) -> None:
    assert not terminal.private_mode_set(ALTERNATE_SCREEN)
    assert not [mode for mode in MOUSE_MODES if terminal.private_mode_set(mode)]
    assert list(tmp_path.iterdir()) == []  # the demo's ocms-demo-* directory is gone


@pytest.mark.parametrize(
    "signal_number",
    [
        signal.SIGTERM,
        # A demo process and a terminal each (1 s of CPU): SIGTERM in the quick suite.
        pytest.param(signal.SIGHUP, marks=pytest.mark.slow),
        pytest.param(signal.SIGINT, marks=pytest.mark.slow),
    ],
)
def test_a_signal_restores_the_terminal_and_removes_the_demo_directory(
    tmp_path: Path, signal_number: int
) -> None:
    terminal = open_demo(tmp_path)
    os.kill(terminal.pid, signal_number)
    assert terminal.exit_code() == 128 + signal_number
    assert_restored(terminal, tmp_path)


@pytest.mark.parametrize("keys", [b"q", b"\x03"], ids=["q", "ctrl+c"])
def test_a_quit_key_restores_the_terminal_and_removes_the_demo_directory(
    tmp_path: Path, keys: bytes
) -> None:
    terminal = open_demo(tmp_path)
    terminal.press(keys)
    assert terminal.exit_code() == 0
    assert "Do you want to quit" not in terminal.text()
    assert_restored(terminal, tmp_path)
