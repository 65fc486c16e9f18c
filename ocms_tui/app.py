"""The live dashboard, `ocms-tui DIR`: charts, problems and status of a metrics directory.

Data flows one way. A watcher marks changed files and wakes the thread worker that alone
calls `RunModel.refresh()`; a timer (twice a second) hands what changed to the widgets, which
read the model and redraw within their budget. The model never knows a widget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer

from ocms_tui.model import ChartData, RunModel
from ocms_tui.watch import Watcher, open_watcher
from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.chart_panel import (
    MAX_ZOOM,
    SMOOTHING_WEIGHTS,
    TABLE_INTERVAL,
    ChartPanel,
    PanelView,
    SharedView,
)
from ocms_tui.widgets.help_screen import HelpScreen
from ocms_tui.widgets.problems_pane import ProblemsPane
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.status_bar import RunState, Status, StatusBar

TICK_SECONDS = 0.5  # how often the screen catches up with the model (keys act at once)
# A run streaming rows is re-read at most this often; the first write after a quiet spell
# is read at once. The screen shows new numbers every few seconds anyway.
MIN_REFRESH_SECONDS = 0.25
SAFETY_REFRESH_SECONDS = 5.0  # re-read even without events (settling rows, missed events)
FIRST_LOAD_BUDGET = 1 << 20  # bytes per chart in the first read: charts appear at once
LOAD_BUDGET = 16 << 20  # bytes per chart per later read while a large run loads
STALE_AFTER_SECONDS = 30.0


class OcmsApp(App[int]):
    """Follows one metrics directory. `poll` polls every that many seconds instead of
    inotify; `watch=False` reads only on the timer's safety refresh (snapshots);
    `directory_label` and `clock` make the screen reproducible (tests, screenshots)."""

    TITLE = "ocms-tui"
    CSS = """
    Screen {
        layout: vertical;
    }
    ChartGrid {
        scrollbar-size-vertical: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("enter", "maximise", "Max"),
        Binding("escape", "restore", show=False),
        Binding("s", "smoothing", "EMA"),
        Binding("l", "log_scale", "Log"),
        Binding("right_square_bracket", "zoom(1)", "Zoom", key_display="[]0"),
        Binding("left_square_bracket", "zoom(-1)", show=False),
        Binding("0", "zoom(0)", show=False),
        Binding("1", "toggle_series(1)", "Lines", key_display="1-9"),
        *(Binding(str(n), f"toggle_series({n})", show=False) for n in range(2, 10)),
        Binding("space", "pause", "Pause", key_display="␣"),
        Binding("r", "reload", "Reload"),
        Binding("p", "problems", "Problems"),
    ]

    def __init__(
        self,
        directory: str | os.PathLike[str],
        poll: float | None = None,
        *,
        watch: bool = True,
        directory_label: str | None = None,
        clock: Callable[[], float] = time.time,
        stale_after: float = STALE_AFTER_SECONDS,
    ) -> None:
        super().__init__()
        self.model = RunModel(directory)
        self.poll = poll
        self.watch_enabled = watch
        self.directory_label = directory_label or str(directory)
        self.clock = clock
        self.stale_after = stale_after
        self.shared = SharedView()
        self.paused = False
        self.watcher: Watcher | None = None
        self._panel_views: dict[str, PanelView] = {}
        self._shown_charts: tuple[ChartData, ...] = ()
        self._refreshing = False
        self._reload_requested = False
        self._more = False
        self._refreshes = 0
        self._refreshed_at = float("-inf")
        self._failure: str | None = None
        self._status_state: RunState | None = None
        self._status_at = float("-inf")
        self._wake = threading.Event()
        self._wake.set()  # the first read
        self._stopping = threading.Event()

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield ChartGrid()
        yield ProblemsPane()
        yield Footer(compact=True, show_command_palette=False)

    @property
    def grid(self) -> ChartGrid:
        return self.query_one(ChartGrid)

    def on_mount(self) -> None:
        self._ui_loop = asyncio.get_running_loop()
        if self.watch_enabled:
            self.watcher = open_watcher(self.model.directory, self.poll)
            self.watcher.dirty.on_mark = self._wake.set
        self.run_worker(
            self._follow,
            name="follow",
            group="model",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )
        self._tick()
        self.set_interval(TICK_SECONDS, self._tick)

    def on_unmount(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self.watcher is not None:
            self.watcher.stop()

    # -- following the directory (worker thread) ---------------------------------------

    def _follow(self) -> None:
        """The worker thread, the model's only reader. The watcher wakes it directly, so a
        row reaches the model without waiting for the UI's timer; a stream of writes is
        read at most every MIN_REFRESH_SECONDS; the UI's timer then shows what changed."""
        while not self._stopping.is_set():
            self._wake.wait(SAFETY_REFRESH_SECONDS)
            if self._stopping.is_set():
                return
            self._wake.clear()
            if self.paused:
                continue  # the watcher keeps its marks; resuming wakes us again
            if self.watcher is not None:
                self.watcher.take()
            self._refresh_once()
            if self._refreshes == 1 or self._more or self.model.charts != self._shown_charts:
                # New charts, or a large run arriving slice by slice: show it now rather
                # than at the next tick.
                with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                    self._ui_loop.call_soon_threadsafe(self._tick)
            if self._more:
                self._wake.set()  # a large run loads in slices: the screen fills as it goes
            elif self.model.settling:
                time.sleep(0.1)  # rows wait for metrics.json to catch up: look again soon
                self._wake.set()
            else:
                # Coalesce a stream of writes: whatever arrives meanwhile is read next time.
                time.sleep(max(0.0, self._refreshed_at + MIN_REFRESH_SECONDS - time.monotonic()))

    def _refresh_once(self) -> None:
        reload, self._reload_requested = self._reload_requested, False
        budget = FIRST_LOAD_BUDGET if self._refreshes == 0 or reload else LOAD_BUDGET
        self._refreshing = True
        try:
            change = self.model.reload(budget) if reload else self.model.refresh(budget)
            self._more = change.more
            self._failure = None
        except Exception as error:  # a reader bug must not take the dashboard down
            self._more = False
            self._failure = f"read error: {type(error).__name__}: {error}"
        finally:
            self._refreshes += 1
            self._refreshed_at = time.monotonic()
            self._refreshing = False

    def _tick(self) -> None:
        self._sync(time.monotonic())

    @property
    def idle(self) -> bool:
        """Everything on disk has been read and handed to the widgets."""
        return (
            self._refreshes > 0
            and not (self._refreshing or self._more or self._reload_requested)
            and not self._wake.is_set()
            and not self.model.settling
            and self.model.charts == self._shown_charts
        )

    async def settle(self, timeout: float = 60.0) -> None:
        """Wait until the directory is fully read and every chart shows it (snapshots)."""
        deadline = time.monotonic() + timeout
        while not self.idle and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0)  # let panels mounted by the last sync compose
        self._sync(time.monotonic(), force=True)

    # -- showing the model -------------------------------------------------------------

    def _sync(self, now: float, force: bool = False) -> None:
        model = self.model
        charts = model.charts
        if charts != self._shown_charts:
            self._shown_charts = charts
            self.call_later(self._show_charts, charts)
        if not self.paused or force:
            for panel in self.grid.panels:
                panel.sync(now, force)
            self.query_one(ProblemsPane).show(model.problems)
        self.grid.show_message(self._grid_message(charts))
        status = self._status()
        # Row counts change with every refresh: repaint the bar with the legends (same
        # quantised time: one repaint for all), or at once when the state changed.
        if (
            force
            or status.state is not self._status_state
            or now // TABLE_INTERVAL != self._status_at // TABLE_INTERVAL
        ):
            self._status_state, self._status_at = status.state, now
            self.query_one(StatusBar).show(status)

    async def _show_charts(self, charts: tuple[ChartData, ...]) -> None:
        grid = self.grid
        focused = self.focused.chart.name if isinstance(self.focused, ChartPanel) else None
        maximised = grid.maximised.chart.name if grid.maximised else None
        grid.maximised = None
        await grid.remove_children(ChartPanel)
        if charts is not self._shown_charts:
            return  # the structure changed again meanwhile; a later call shows it
        panels = [
            ChartPanel(chart, self.shared, self._panel_views.setdefault(chart.name, PanelView()))
            for chart in charts
        ]
        await grid.mount_all(panels)
        by_name = {panel.chart.name: panel for panel in panels}
        if maximised in by_name:
            grid.set_maximised(by_name[maximised])
        else:
            grid.relayout()
        target = by_name.get(focused or "") or (panels[0] if panels else None)
        if target is not None and (focused or self.focused is None) and self.screen is grid.screen:
            target.focus(scroll_visible=False)

    def _grid_message(self, charts: tuple[ChartData, ...]) -> Text | None:
        model = self.model
        label = self.directory_label
        if not model.exists and self._refreshes > 0:
            return _lines(f"waiting for {label} …", "(it does not exist yet)")
        if charts:
            return None
        if self._refreshes == 0 or model.loading:
            return safe_text(f"loading {label} …")
        if not model.has_metrics_json:
            return _lines(f"no metrics.json in {label} yet …", "(waiting for the first log())")
        return safe_text(f"{label}/metrics.json declares no charts (see the problems below)")

    def _status(self) -> Status:
        model = self.model
        last_write = model.last_write
        age = None if last_write is None else self.clock() - last_write
        if not model.exists and self._refreshes > 0:
            state = RunState.WAITING
        elif self.paused:
            state = RunState.PAUSED
        elif self._refreshes == 0 or model.loading or self._more:
            state = RunState.LOADING
        elif age is not None and age < self.stale_after:
            state = RunState.LIVE
        else:
            state = RunState.STALE
        watching = self.watcher.description if self.watcher else "not watching"
        return Status(
            state=state,
            directory=self.directory_label,
            charts=len(model.charts),
            rows=model.total_rows,
            last_write_age=age,
            watching=self._failure or watching,
        )

    # -- keys --------------------------------------------------------------------------

    def _focused_panel(self) -> ChartPanel | None:
        if isinstance(self.focused, ChartPanel):
            return self.focused
        panels = self.grid.panels
        return panels[0] if panels else None

    def _redraw_all(self) -> None:
        for panel in self.grid.panels:
            panel.redraw()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_maximise(self) -> None:
        grid = self.grid
        panel = self._focused_panel()
        if grid.maximised is not None:
            grid.set_maximised(None)
            if panel is not None:
                panel.focus()
        elif panel is not None:
            grid.set_maximised(panel)
            panel.focus()

    def action_restore(self) -> None:
        if self.grid.maximised is not None:
            self.action_maximise()

    def action_focus_chart(self, columns: int, rows: int) -> None:
        grid = self.grid
        panels = grid.panels
        current = self._focused_panel()
        if current is None:
            return
        step = columns + rows * (1 if grid.maximised else grid.columns)
        index = max(0, min(len(panels) - 1, panels.index(current) + step))
        target = panels[index]
        if grid.maximised is not None:
            grid.set_maximised(target)
        target.focus()

    def action_smoothing(self) -> None:
        weights = SMOOTHING_WEIGHTS
        current = weights.index(self.shared.smoothing) if self.shared.smoothing in weights else 0
        self.shared.smoothing = weights[(current + 1) % len(weights)]
        self._redraw_all()

    def action_log_scale(self) -> None:
        panel = self._focused_panel()
        if panel is not None:
            panel.toggle_log()

    def action_zoom(self, direction: int) -> None:
        zoom = 0 if direction == 0 else self.shared.zoom + direction
        self.shared.zoom = max(0, min(MAX_ZOOM, zoom))
        self._redraw_all()

    def action_toggle_series(self, number: int) -> None:
        panel = self._focused_panel()
        if panel is not None:
            panel.toggle_series(number - 1)

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            self._wake.set()
            self._redraw_all()
        self._tick()

    def action_reload(self) -> None:
        self._reload_requested = True
        self._wake.set()

    def action_problems(self) -> None:
        pane = self.query_one(ProblemsPane)
        pane.display = not pane.display


def _lines(*lines: str) -> Text:
    """Lines of text with paths in them: each line safe, the line breaks kept."""
    return Text("\n").join(safe_text(line) for line in lines)


def run_dashboard(directory: str | os.PathLike[str], poll: float | None = None) -> int:
    """Open the dashboard on `directory` until the user quits; returns the exit code."""
    app = OcmsApp(directory, poll=poll)
    app.run()
    return app.return_code or 0


def save_snapshot(
    directory: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    size: tuple[int, int] = (160, 48),
    **options: object,
) -> None:
    """Render the dashboard on `directory` once, fully loaded, to an SVG file.

    `options` go to OcmsApp (e.g. `directory_label`, `clock` for reproducible screenshots).
    """

    async def render() -> str:
        app = OcmsApp(directory, watch=False, **options)  # type: ignore[arg-type]
        app.animation_level = "none"
        async with app.run_test(size=size) as pilot:
            await app.settle()
            await pilot.pause()
            return app.export_screenshot(title=f"ocms-tui {app.directory_label}")

    Path(out_path).write_text(asyncio.run(render()), encoding="utf-8")
