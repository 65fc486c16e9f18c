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
