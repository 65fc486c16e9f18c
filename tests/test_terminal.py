"""The installed `ocms-tui` in a real pseudo-terminal, read back through a terminal emulator
(pyte): what a user in tmux over SSH would see, including the keys reaching the app."""

from __future__ import annotations

import time
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


def test_legends_never_show_cut_off_names_or_values_at_start_up(tmp_path: Path) -> None:
    """Every frame from the first: a legend line shows its whole name and numbers (they were
    laid out for a narrower panel for 0.2-0.5 s, `1━ … 0.39637`)."""
    directory = tmp_path / "ocms_metrics"
    write_demo_run(directory, steps=1000)
    terminal = Terminal([installed_command(), str(directory)])
    frames: list[str] = []
    settled_at = None
    deadline = time.monotonic() + 30
    while settled_at is None or time.monotonic() < settled_at + 1.0:
        assert time.monotonic() < deadline, frames[-1] if frames else "nothing on screen"
        terminal.pump(0.01)
        if not frames or terminal.text() != frames[-1]:
            frames.append(terminal.text())
        if settled_at is None and "1━ epoch" in frames[-1]:
            settled_at = time.monotonic()  # the third panel's legend: watch 1 s more
    legend_frames = [frame for frame in frames if "━" in frame]
    assert legend_frames
    for frame in legend_frames:
        for line in frame.splitlines():
            for cell in line.split("│"):
                if "━" in cell and "━ " in cell:
                    name = cell.split("━ ", 1)[1].split()[0]
                    assert name != "…" and not name.endswith("…"), frame
    terminal.press(b"q")
    assert terminal.exit_code() == 0


def _restore_seconds(terminal: Terminal, key: bytes) -> float:
    """Maximise the focused chart with enter, then restore the grid with `key`: seconds from
    the key to the grid (more than one panel border) on screen."""
    terminal.press(b"\r")
    while terminal.text().count("╭") != 1:
        terminal.pump(0.005)
    terminal.pump(0.3)  # the maximised frame settles
    pressed = time.monotonic()
    terminal.press(key)
    while terminal.text().count("╭") < 2:
        assert time.monotonic() < pressed + 10, terminal.text()
        terminal.pump(0.002)
    return time.monotonic() - pressed


def test_escape_reaches_the_app_at_its_delay_not_at_textuals_next_poll(tmp_path: Path) -> None:
    """A lone ESC is the escape key once nothing followed it for ESCDELAY (25 ms by default
    here); Textual's input thread only looked every 100 ms, so escape restored the grid
    100-200 ms later than enter, which does the same. Medians of 3 of each, alternated."""
    directory = tmp_path / "ocms_metrics"
    write_demo_run(directory, steps=300)
    terminal = Terminal([installed_command(), str(directory)])
    terminal.wait_for("loss", "learning_rate", "step 299 · 300 rows")
    terminal.pump(0.5)
    by_enter, by_escape = [], []
    for _ in range(3):
        by_enter.append(_restore_seconds(terminal, b"\r"))
        by_escape.append(_restore_seconds(terminal, b"\x1b"))
    # The arrows' sequences begin with ESC too: they still move the focus.
    terminal.press(b"\x1b[C")
    terminal.pump(0.3)
    assert "[C" not in terminal.text()
    terminal.press(b"q")
    assert terminal.exit_code() == 0
    delay = sorted(by_escape)[1] - sorted(by_enter)[1]
    assert delay < 0.065, (by_escape, by_enter)
