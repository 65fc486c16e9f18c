"""The installed `ocms-tui` in a real pseudo-terminal, read back through a terminal emulator
(pyte): what a user in tmux over SSH would see, including the keys reaching the app."""

from __future__ import annotations

from pathlib import Path

from terminal_support import Terminal, installed_command

from ocms_tui.demo import write_demo_run


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
