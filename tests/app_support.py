"""Helpers for the dashboard tests: read the screen as text, wait for a condition."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from pathlib import Path

from ocms_recorder import write_layout as write_layout  # the one metrics.json writer
from rich.cells import cell_len
from textual._context import visible_screen_stack
from textual.app import App
from textual.pilot import Pilot

POLL_SECONDS = 0.05

_SVG_TEXT = re.compile(r"<text[^>]*>(.*?)</text>", re.DOTALL)


def svg_text(svg: str) -> str:
    """The text of a Textual SVG screenshot (spans joined; runs of spaces may be lost)."""
    return html.unescape("".join(_SVG_TEXT.findall(svg))).replace("\xa0", " ")


def screen_lines(app: App[object]) -> list[str]:
    """The screen's rows as plain text, as a terminal shows them (a wide character fills two
    cells: it is followed by a space). Read from Textual's compositor, the very strips the
    terminal is sent, without the SVG export (about ten times the cost) and without marking
    anything clean: reading the screen changes nothing the app then paints."""
    width, height = app.size
    visible_screen_stack.set(app._background_screens)
    rows: list[str] = []
    for strip in app.screen._compositor.render_strips()[:height]:
        cells: list[str] = []
        for character in strip.text:
            cells.append(character)
            if cell_len(character) == 2:
                cells.append(" ")
        rows.append("".join(cells)[:width].ljust(width))
    return rows + [" " * width] * (height - len(rows))


def screen_text(app: App[object]) -> str:
    """Everything on the screen as plain text, one line per row."""
    return "\n".join(screen_lines(app))


async def wait_for(pilot: Pilot, condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Let the app run until `condition()` holds; fail with the screen if it never does.

    The condition is checked after each batch of the app's messages is handled (an idle
    message queue), and at least every `POLL_SECONDS` for what a thread (the session's
    reader, a writer) changes meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; the screen shows:\n{screen_text(pilot.app)}")
        await pilot.pause(POLL_SECONDS)


async def wait_for_text(pilot: Pilot, *texts: str, timeout: float = 15.0) -> None:
    await wait_for(pilot, lambda: all(text in screen_text(pilot.app) for text in texts), timeout)


def append_rows(path: Path, rows: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as csv:
        csv.write("".join(f"{row}\n" for row in rows))
