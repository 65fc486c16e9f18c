"""Helpers for the dashboard tests: read the screen as text, wait for a condition."""

from __future__ import annotations

import html
import os
import re
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from ocms_recorder import write_layout as write_layout  # the one metrics.json writer
from rich.cells import cell_len
from textual._context import visible_screen_stack
from textual.app import App
from textual.pilot import Pilot

from ocms_tui.follow.frames import (
    ChartFrame,
    RunFrame,
    SeriesStats,
    next_generation,
    next_version,
    overlay_frames,
    read_only,
)
from ocms_tui.follow.run_table import NOT_RANKED, Ranking
from ocms_tui.follow.runs import RunStatus
from ocms_tui.follow.session import FollowSession, SessionState, Status

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


# -- hand-made states: the app without a reading thread ---------------------------------


class HandSession(FollowSession):
    """A session whose states the test hands in (`show`): no thread, no watcher, nothing
    read from disk, so an app test of what the screen does with a state depends on nothing
    else. The app attaches to it as to a session started before it."""

    def __init__(self, directories: Sequence[Path]) -> None:
        super().__init__(list(directories), lambda _: None, watch=False, directory_label="runs")

    @property
    def started(self) -> bool:
        return True

    def show(self, state: SessionState) -> None:
        """Publish `state` as the reading thread would after a read."""
        with self._lock:
            self.state = state
            self.publish(state)


def chart_frame(
    name: str,
    columns: dict[str, Sequence[float]],
    steps: Sequence[int] | None = None,
    generation: int | None = None,
) -> ChartFrame:
    """A chart's frame made by hand: `columns` by y-axis name, all as long as `steps`
    (0, 1, 2 ... by default). `generation`: that of an earlier frame these rows extend."""
    length = len(next(iter(columns.values()), ()))
    step_array = np.arange(length, dtype=np.int64) if steps is None else np.asarray(steps)
    values = tuple(np.asarray(column, dtype=np.float64) for column in columns.values())
    return ChartFrame(
        name=name,
        file=f"{name}.csv",
        y_axis=tuple(columns),
        chart_id=zlib.crc32(f"{name}/{tuple(columns)}".encode()),
        generation=next_generation() if generation is None else generation,
        version=next_version(),
        rows=len(step_array),
        steps=read_only(step_array.astype(np.int64)),
        values=tuple(read_only(column) for column in values),
        stats=tuple(SeriesStats().updated(step_array, column) for column in values),
        last_step=int(step_array[-1]) if len(step_array) else None,
        marks=tuple(() for _ in columns),
    )


def hand_run(directory: Path, *charts: ChartFrame, color: int = 0) -> RunFrame:
    """A run's frame made by hand (its directory need not exist)."""
    return RunFrame(
        key=os.path.abspath(directory),
        name=directory.name,
        directory=directory,
        color=color,
        charts=charts,
        problems=(),
        last_write=time.time(),
        has_metrics_json=True,
    )


def hand_state(
    serial: int,
    runs: Sequence[RunFrame],
    changed: Iterable[str] | None = None,
    ranking: Ranking = NOT_RANKED,
) -> SessionState:
    """A state of `runs`, everything read (`idle`); `changed`: every chart by default."""
    charts = overlay_frames(runs)
    return SessionState(
        serial=serial,
        runs=tuple(runs),
        charts=charts,
        problems=(),
        status=Status(
            state=RunStatus.LIVE,
            directory="runs",
            charts=len(charts),
            rows=sum(chart.rows for run in runs for chart in run.charts),
            last_write_age=0.0,
            watching="hand-made states",
        ),
        changed=frozenset(c.name for c in charts) if changed is None else frozenset(changed),
        hidden_runs=frozenset(),
        reads=serial,
        loading=False,
        idle=True,
        ranking=ranking,
    )
