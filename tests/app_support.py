"""Helpers for the dashboard tests: read the screen as text, wait for a condition."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from pathlib import Path

from ocms_recorder import write_layout as write_layout  # the one metrics.json writer
from textual.app import App
from textual.pilot import Pilot

_SVG_TEXT = re.compile(r"<text[^>]*>(.*?)</text>", re.DOTALL)


def svg_text(svg: str) -> str:
    """The text of a Textual SVG screenshot (spans joined; runs of spaces may be lost)."""
    return html.unescape("".join(_SVG_TEXT.findall(svg))).replace("\xa0", " ")


def screen_text(app: App[object]) -> str:
    """Everything on the screen as plain text (from Textual's own SVG screenshot)."""
    return svg_text(app.export_screenshot())


_SVG_LINE_TEXT = re.compile(
    r'<text[^>]*?x="([\d.]+)"[^>]*clip-path="url\(#terminal-(?:\d+-)?line-(\d+)\)"[^>]*>'
    r"(.*?)</text>",
    re.DOTALL,
)
_CELL_WIDTH = 12.2  # Textual's SVG export: one cell is 12.2 units wide


def screen_lines(app: App[object]) -> list[str]:
    """The screen's rows as plain text, as a terminal shows them (after any cropping)."""
    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, number, text in _SVG_LINE_TEXT.findall(app.export_screenshot()):
        column, row = round(float(x) / _CELL_WIDTH), int(number)
        for offset, character in enumerate(html.unescape(text).replace("\xa0", " ")):
            if row < height and column + offset < width:
                rows[row][column + offset] = character
    return ["".join(row) for row in rows]


async def wait_for(pilot: Pilot, condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Let the app run until `condition()` holds; fail with the screen if it never does."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; the screen shows:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)


async def wait_for_text(pilot: Pilot, *texts: str, timeout: float = 15.0) -> None:
    await wait_for(pilot, lambda: all(text in screen_text(pilot.app) for text in texts), timeout)


def append_rows(path: Path, rows: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as csv:
        csv.write("".join(f"{row}\n" for row in rows))
