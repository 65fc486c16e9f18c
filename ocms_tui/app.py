"""The live dashboard, `ocms-tui PATH...`: charts, problems and status of metrics directories.

Data flows one way. Watchers mark changed files and wake the thread worker that alone
calls `RunModel.refresh()` (and searches parents for new runs); a timer (twice a second)
hands what changed to the widgets, which read the models and redraw within their budget.
The models never know a widget. Several runs are overlaid: one panel per chart name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer

from ocms_tui.model import RunModel
from ocms_tui.plotting import series_color
from ocms_tui.runs import run_status
from ocms_tui.runset import RESCAN_SECONDS, OverlayChart, RunSet, TrackedRun, overlay
from ocms_tui.runset import combined_problems as all_problems
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
from ocms_tui.widgets.run_list import RunList, RunRow
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


PathArgument = str | os.PathLike[str]


class OcmsApp(App[int]):
    """Follows the runs named by `paths` (run directories, or parents searched for runs).
    `poll` polls every that many seconds instead of inotify; `watch=False` reads only on the
    timer's safety refresh (snapshots); `directory_label` and `clock` make the screen
    reproducible (tests, screenshots)."""

    TITLE = "ocms-tui"
    AUTO_FOCUS = None  # the first chart takes the focus when it appears, not the run filter
    CSS = """
    Screen {
        layout: vertical;
    }
    #body {
        height: 1fr;
    }
    ChartGrid {
        width: 1fr;
        scrollbar-size-vertical: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("b", "runs", "Runs"),
        Binding("slash", "filter_runs", show=False),
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
        paths: PathArgument | Sequence[PathArgument],
        poll: float | None = None,
        *,
        watch: bool = True,
        directory_label: str | None = None,
        clock: Callable[[], float] = time.time,
        stale_after: float = STALE_AFTER_SECONDS,
    ) -> None:
        super().__init__()
        path_list = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not path_list:
            raise ValueError("no directory to follow")
        self.runset = RunSet(path_list)
        self.poll = poll
        self.watch_enabled = watch
        self.directory_label = directory_label or (
            str(path_list[0])
            if len(path_list) == 1
            else os.path.commonpath([os.path.abspath(path) for path in path_list])
        )
        self.clock = clock
        self.stale_after = stale_after
        self.shared = SharedView()
        self.paused = False
        self.hidden_runs: set[str] = set()
        """Runs (by absolute directory) switched off in the run list."""
        self.watchers: dict[str, Watcher] = {}
        self._panel_views: dict[str, PanelView] = {}
        self._shown_charts: tuple[tuple[OverlayChart, ...], bool] = ((), False)
        self._shown_runs: tuple[TrackedRun, ...] = ()
        self._refreshing = False
        self._reload_requested = False
        self._more = False
        self._refreshes = 0
        self._run_refreshes: dict[str, int] = {}
        self._refreshed_at = float("-inf")
        self._rescanned_at = time.monotonic()
        self._failure: str | None = None
        self._status_state: RunState | None = None
        self._status_at = float("-inf")
        self._wake = threading.Event()
        self._wake.set()  # the first read
        self._stopping = threading.Event()

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="body"):
            run_list = RunList()
            run_list.display = self.overlaid  # one run: no sidebar, the look it always had
            yield run_list
            yield ChartGrid()
        yield ProblemsPane()
        yield Footer(compact=True, show_command_palette=False)

    @property
    def grid(self) -> ChartGrid:
        return self.query_one(ChartGrid)

    @property
    def run_list(self) -> RunList:
        return self.query_one(RunList)

    @property
    def runs(self) -> tuple[TrackedRun, ...]:
        return self.runset.runs

    @property
    def model(self) -> RunModel:
        """The first run's model (the only one when a single run is followed)."""
        return self.runs[0].model

    @property
    def overlaid(self) -> bool:
        return len(self.runs) > 1

    def selected_runs(self) -> tuple[TrackedRun, ...]:
        return tuple(run for run in self.runs if _key(run) not in self.hidden_runs)

    def on_mount(self) -> None:
        self._ui_loop = asyncio.get_running_loop()
        if self.watch_enabled:
            for run in self.runs:
                self._watch(run)
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
        for watcher in list(self.watchers.values()):
            watcher.stop()

    def _watch(self, run: TrackedRun) -> None:
        if _key(run) in self.watchers or self._stopping.is_set():
            return
        watcher = open_watcher(run.directory, self.poll)
        watcher.dirty.on_mark = self._wake.set
        self.watchers[_key(run)] = watcher

    # -- following the directories (worker thread) -------------------------------------

    def _follow(self) -> None:
        """The worker thread, the models' only reader. The watchers wake it directly, so a
        row reaches a model without waiting for the UI's timer; a stream of writes is
        read at most every MIN_REFRESH_SECONDS; the UI's timer then shows what changed."""
        while not self._stopping.is_set():
            self._wake.wait(self._wait_timeout())
            if self._stopping.is_set():
                return
            self._wake.clear()
            if self.paused:
                continue  # the watchers keep their marks; resuming wakes us again
            if time.monotonic() - self._rescanned_at >= RESCAN_SECONDS:
                self._rescan()
            for watcher in list(self.watchers.values()):
                watcher.take()
            self._refresh_once()
            if self._refreshes == 1 or self._more or self._charts_key() != self._shown_charts:
                # New charts, or a large run arriving slice by slice: show it now rather
                # than at the next tick.
                with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                    self._ui_loop.call_soon_threadsafe(self._tick)
            if self._more:
                self._wake.set()  # a large run loads in slices: the screen fills as it goes
            elif any(run.model.settling for run in self.runs):
                time.sleep(0.1)  # rows wait for metrics.json to catch up: look again soon
                self._wake.set()
            else:
                # Coalesce a stream of writes: whatever arrives meanwhile is read next time.
                time.sleep(max(0.0, self._refreshed_at + MIN_REFRESH_SECONDS - time.monotonic()))

    def _searches_parents(self) -> bool:
        """Whether a path may gain runs (a parent, or a directory not yet a run): then the
        worker wakes every RESCAN_SECONDS; else every SAFETY_REFRESH_SECONDS."""
        return any(not run.model.has_metrics_json for run in self.runs) or self.overlaid

    def _rescan(self) -> None:
        self._rescanned_at = time.monotonic()
        before = self.runs
        try:
            if not self.runset.rescan():
                return
        except Exception as error:  # a search must not take the dashboard down
            self._failure = f"search error: {type(error).__name__}: {error}"
            return
        for run in before:
            if run not in self.runs and (watcher := self.watchers.pop(_key(run), None)):
                watcher.stop()
        if self.watch_enabled:
            for run in self.runs:
                self._watch(run)

    def _wait_timeout(self) -> float:
        return RESCAN_SECONDS if self._searches_parents() else SAFETY_REFRESH_SECONDS

    def _refresh_once(self) -> None:
        reload, self._reload_requested = self._reload_requested, False
        self._refreshing = True
        more = False
        try:
            for run in self.runs:
                first = self._run_refreshes.get(_key(run), 0) == 0
                budget = FIRST_LOAD_BUDGET if first or reload else LOAD_BUDGET
                model = run.model
                change = model.reload(budget) if reload else model.refresh(budget)
                self._run_refreshes[_key(run)] = self._run_refreshes.get(_key(run), 0) + 1
                more |= change.more
            self._failure = None
        except Exception as error:  # a reader bug must not take the dashboard down
            self._failure = f"read error: {type(error).__name__}: {error}"
        finally:
            self._more = more
            self._refreshes += 1
            self._refreshed_at = time.monotonic()
            self._refreshing = False

    def _tick(self) -> None:
        if not self.is_running or self._stopping.is_set():
            return  # scheduled by the worker just before the app closed
        self._sync(time.monotonic())

    @property
    def idle(self) -> bool:
        """Everything on disk has been read and handed to the widgets."""
        return (
            self._refreshes > 0
            and all(self._run_refreshes.get(_key(run), 0) > 0 for run in self.runs)
            and not (self._refreshing or self._more or self._reload_requested)
            and not self._wake.is_set()
            and not any(run.model.settling for run in self.runs)
            and self._charts_key() == self._shown_charts
        )

    async def settle(self, timeout: float = 60.0) -> None:
        """Wait until the runs are fully read and every chart shows them (snapshots)."""
        deadline = time.monotonic() + timeout
        while not self.idle and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0)  # let panels mounted by the last sync compose
        self._sync(time.monotonic(), force=True)

    # -- showing the models ------------------------------------------------------------

    def _charts_key(self) -> tuple[tuple[OverlayChart, ...], bool]:
        return overlay(self.selected_runs()), self.overlaid

    def _sync(self, now: float, force: bool = False) -> None:
        runs = self.runs
        if runs != self._shown_runs:
            if self.overlaid != (len(self._shown_runs) > 1) and self._shown_runs:
                self.run_list.display = self.overlaid  # a second run appeared
                self.refresh_bindings()
            self._shown_runs = runs
            force = True
        key = self._charts_key()
        if key != self._shown_charts:
            self._shown_charts = key
            self.call_later(self._show_charts, key)
        if not self.paused or force:
            for panel in self.grid.panels:
                panel.sync(now, force)
            self.query_one(ProblemsPane).show(all_problems(runs))
        self.grid.show_message(self._grid_message(key[0]))
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
            if self.overlaid:
                self.run_list.show(self._run_rows())

    def _run_rows(self) -> list[RunRow]:
        now = self.clock()
        return [
            RunRow(
                key=_key(run),
                name=run.name,
                color=series_color(run.color),
                status=run_status(run.model, now, live_seconds=self.stale_after),
                last_step=max(
                    (c.last_step for c in run.model.charts if c.last_step is not None),
                    default=None,
                ),
                problems=len(run.model.problems),
                shown=_key(run) not in self.hidden_runs,
            )
            for run in self.runs
        ]

    async def _show_charts(self, key: tuple[tuple[OverlayChart, ...], bool]) -> None:
        grid = self.grid
        focused = self.focused.name if isinstance(self.focused, ChartPanel) else None
        maximised = grid.maximised.name if grid.maximised else None
        grid.maximised = None
        await grid.remove_children(ChartPanel)
        if key is not self._shown_charts:
            return  # the structure changed again meanwhile; a later call shows it
        charts, overlaid = key
        panels = [
            ChartPanel(
                chart,
                self.shared,
                self._panel_views.setdefault(chart.name, PanelView()),
                overlaid=overlaid,
            )
            for chart in charts
        ]
        await grid.mount_all(panels)
        by_name = {panel.name: panel for panel in panels}
        if maximised in by_name:
            grid.set_maximised(by_name[maximised])
        else:
            grid.relayout()
        target = by_name.get(focused or "") or (panels[0] if panels else None)
        if target is not None and (focused or self.focused is None) and self.screen is grid.screen:
            target.focus(scroll_visible=False)

    def _grid_message(self, charts: tuple[OverlayChart, ...]) -> Text | None:
        if charts:
            return None
        label = self.directory_label
        if self.overlaid:
            if not self.selected_runs():
                return safe_text("no run selected (press b, then space on a run)")
            if self._refreshes == 0 or any(run.model.loading for run in self.runs):
                return safe_text(f"loading {label} …")
            return safe_text(f"the selected runs under {label} have no charts yet …")
        model = self.model
        if not model.exists and self._refreshes > 0:
            return _lines(f"waiting for {label} …", "(it does not exist yet)")
        if self._refreshes == 0 or model.loading:
            return safe_text(f"loading {label} …")
        if not model.has_metrics_json:
            return _lines(f"no metrics.json in {label} yet …", "(waiting for the first log())")
        return safe_text(f"{label}/metrics.json declares no charts (see the problems below)")

    def _status(self) -> Status:
        runs = self.runs
        models = [run.model for run in runs]
        writes = [model.last_write for model in models if model.last_write is not None]
        age = None if not writes else self.clock() - max(writes)
        if not any(model.exists for model in models) and self._refreshes > 0:
            state = RunState.WAITING
        elif self.paused:
            state = RunState.PAUSED
        elif self._refreshes == 0 or any(model.loading for model in models) or self._more:
            state = RunState.LOADING
        elif age is not None and age < self.stale_after:
            state = RunState.LIVE
        else:
            state = RunState.STALE
        watchers = list(self.watchers.values())
        watching = watchers[0].description if watchers else "not watching"
        directory = self.directory_label
        if self.overlaid:
            directory = f"{directory} · {len(self.selected_runs())}/{len(runs)} runs"
        return Status(
            state=state,
            directory=directory,
            charts=len(self._shown_charts[0]),
            rows=sum(model.total_rows for model in models),
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("runs", "filter_runs"):
            return self.overlaid  # one run: no run list, and the footer as it always was
        return True

    def action_runs(self) -> None:
        run_list = self.run_list
        run_list.display = not run_list.display
        if not run_list.display and self.focused in run_list.walk_children():
            self._focus_grid()

    def action_filter_runs(self) -> None:
        self.run_list.display = True
        self.run_list.filter.focus()

    def on_run_list_toggled(self, event: RunList.Toggled) -> None:
        if event.shown:
            self.hidden_runs.discard(event.key)
        else:
            self.hidden_runs.add(event.key)
        self._sync(time.monotonic(), force=True)

    def on_key(self, event: events.Key) -> None:
        # Escape in the filter (or the list) hands the keys back to the charts.
        if event.key == "escape" and self.focused in self.run_list.walk_children():
            event.stop()
            self._focus_grid()

    def _focus_grid(self) -> None:
        panel = self._focused_panel()
        if panel is not None:
            panel.focus(scroll_visible=False)
        else:
            self.set_focus(None)

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


def _key(run: TrackedRun) -> str:
    return os.path.abspath(run.directory)


def _lines(*lines: str) -> Text:
    """Lines of text with paths in them: each line safe, the line breaks kept."""
    return Text("\n").join(safe_text(line) for line in lines)


def run_dashboard(paths: PathArgument | Sequence[PathArgument], poll: float | None = None) -> int:
    """Open the dashboard on `paths` (runs or parents of runs) until the user quits; returns
    the exit code."""
    app = OcmsApp(paths, poll=poll)
    app.run()
    return app.return_code or 0


def save_snapshot(
    paths: PathArgument | Sequence[PathArgument],
    out_path: str | os.PathLike[str],
    size: tuple[int, int] = (160, 48),
    **options: object,
) -> None:
    """Render the dashboard on `paths` once, fully loaded, to an SVG file.

    `options` go to OcmsApp (e.g. `directory_label`, `clock` for reproducible screenshots).
    """

    async def render() -> str:
        app = OcmsApp(paths, watch=False, **options)  # type: ignore[arg-type]
        app.animation_level = "none"
        async with app.run_test(size=size) as pilot:
            await app.settle()
            await pilot.pause()
            return app.export_screenshot(title=f"ocms-tui {app.directory_label}")

    Path(out_path).write_text(asyncio.run(render()), encoding="utf-8")
