"""The installed `ocms-tui` in a real pseudo-terminal, read back through a terminal emulator
(pyte): what a user in tmux over SSH would see, including the keys reaching the app."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from app_support import append_rows, write_layout
from terminal_support import Terminal, installed_command

from ocms_tui.ui.demo import write_demo_run


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


@pytest.mark.slow  # timed key delays in a real terminal: 2.4 s of CPU
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


def _settled_text(terminal: Terminal, quiet: float = 0.6, timeout: float = 10.0) -> str:
    """The screen once the app has written nothing for `quiet` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = bytes(terminal.output)
        terminal.pump(quiet)
        if bytes(terminal.output) == before:
            break
    return terminal.text()


def test_partial_repaints_leave_no_stale_cell_on_the_terminal(tmp_path: Path) -> None:
    """What reached the terminal after rows arrive (a read repaints only the legend's lines
    that changed, and nothing of a plot whose pixels stayed) is what a full repaint and a
    fresh start show. The hidden series' max, right-aligned in the legend's last column
    beside the border, changes by one digit while no pixel does: that line alone is painted
    (Textual places a line's repaint region from the content's corner: one from the outer
    corner would leave that digit stale)."""
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    write_layout(directory, {"loss": ["loss", "eval_loss"]})
    rng = random.Random(5)
    rows = [f"{step},{1 + rng.random():.5f},{2.5 + rng.random() / 10:.5f}" for step in range(20000)]
    rows[0] = "0,1.5,2.91"  # the max of eval_loss
    append_rows(directory / "loss.csv", rows)
    size = (80, 24)
    followed = Terminal([installed_command(), str(directory)], size=size)
    followed.wait_for("step 19,999 · 20,000 rows", "eval_loss")
    followed.press(b"2")  # eval_loss hidden: its new max moves no pixel
    _settled_text(followed)
    append_rows(directory / "loss.csv", ["20000,1.5,2.5"])  # grows the x axis
    followed.wait_for("step 20,000 · 20,001 rows")
    _settled_text(followed)
    # Under that axis, loss inside its last column's range: the same pixels.
    append_rows(directory / "loss.csv", ["20001,1.5,2.92"])
    followed.wait_for("step 20,001 · 20,002 rows")
    shown = _settled_text(followed).splitlines()[1:]  # the status line ticks: left out
    followed.press(b"l")
    followed.wait_for("· log")
    followed.press(b"l")
    followed.wait_for("· linear")
    assert _settled_text(followed).splitlines()[1:] == shown, "a full repaint differs"
    legend = [line for line in shown if "━ " in line]
    assert any(line.rstrip(" │").endswith("2.92") for line in legend if "eval_loss" in line), (
        "\n".join(shown)
    )
    followed.press(b"q")
    assert followed.exit_code() == 0
