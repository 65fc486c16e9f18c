"""The live dashboard, `ocms-tui PATH...`: charts, problems and status of metrics directories.

Data flows one way. A FollowSession (plain Python, its own thread) reads the runs as they
change and publishes a SessionState; the app forwards it to the UI thread as one coalescing
message, lays it out, and redraws the panels whose charts changed. The app itself only lays
out, applies states and handles keys. Several runs are overlaid: one panel per chart name.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.message import Message

from ocms_tui.draw.plotting import series_color
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.notify import Notifier, notification_for
from ocms_tui.follow.runs import run_status
from ocms_tui.follow.runset import OverlayChart, TrackedRun
from ocms_tui.follow.session import (
    STALE_AFTER_SECONDS,
    FollowSession,
    PathArgument,
    SessionState,
    label_of,
    run_key,
)
from ocms_tui.follow.watch import Watcher
from ocms_tui.format.problems import HEALTH_RULES, Problem
from ocms_tui.widgets.bindings import bindings
from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.chart_panel import (
    MAX_ZOOM,
    ChartPanel,
    PanelView,
    SharedView,
)
from ocms_tui.widgets.chart_strip import ChartStrip
from ocms_tui.widgets.help_screen import HelpScreen
from ocms_tui.widgets.key_footer import KeyFooter
from ocms_tui.widgets.keys import Scope
from ocms_tui.widgets.problems_pane import ProblemsPane
from ocms_tui.widgets.run_list import RunList, RunRow
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.status_bar import StatusBar

# From a layout shown to its objects frozen (see OcmsApp._freeze_long_lived).
FREEZE_AFTER_SECONDS = 1.0


class StateChanged(Message):
    """A new SessionState. Queued states coalesce: the newest replaces the older, taking
    their changed charts along, so a busy UI thread draws once what arrived meanwhile."""

    def __init__(self, state: SessionState) -> None:
        super().__init__()
        self.state = state
        self.changed = set(state.changed)

    def can_replace(self, message: Message) -> bool:
        if isinstance(message, StateChanged):
            message.changed |= self.changed
            return True
        return False


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
    #charts {
        width: 1fr;
    }
    ChartGrid {
        width: 1fr;
        scrollbar-size-vertical: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(Scope.APP)

    def __init__(
        self,
        paths: PathArgument | Sequence[PathArgument],
        poll: float | None = None,
        *,
        watch: bool = True,
        directory_label: str | None = None,
        clock: Callable[[], float] = time.time,
        stale_after: float = STALE_AFTER_SECONDS,
        handle_signals: bool = False,
        session: FollowSession | None = None,
        notify: bool = False,
        baseline: PathArgument | None = None,
    ) -> None:
        """`session`: one already reading `paths` (started before Textual was imported, so
        that the first rows are read meanwhile); the app takes its states over. `notify`:
        ring the bell and send a desktop notification once per health finding (--notify).
        `baseline`: a run also followed (add it to `paths`) and drawn dotted (--baseline)."""
        super().__init__()
        self.baseline = None if baseline is None else Path(baseline)
        self.notifier = Notifier() if notify else None
        self.notifications_sent: list[str] = []
        self.handle_signals = handle_signals
        # Exit signals that came after the terminal was set up but before the app could
        # answer them (see run_dashboard): answered at once when it can.
        self.signals_before_mount: list[int] = []
        path_list = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not path_list:
            raise ValueError("no directory to follow")
        self.directory_label = directory_label or label_of(path_list)
        self.clock = clock
        self.stale_after = stale_after
        self.session = session or FollowSession(
            path_list,
            self._state_arrived,
            poll=poll,
            watch=watch,
            directory_label=self.directory_label,
            clock=clock,
            stale_after=stale_after,
            wait_for_first_screen=True,
        )
        self.shared = SharedView()
        self.state: SessionState | None = None
        """The state on screen (None until the first read)."""
        self._panel_views: dict[str, PanelView] = {}
        self._shown_charts: tuple[tuple[OverlayChart, ...], bool] = ((), False)
        self._pending_states = 0

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver, or on a POSIX terminal the one that reports a lone escape key
        at its deadline instead of at the next 100 ms poll (see terminal_driver)."""
        driver = super().get_driver_class()
        if driver.__module__ == "textual.drivers.linux_driver" and driver.__name__ == "LinuxDriver":
            # Imported here: the POSIX driver needs termios, which Windows lacks.
            from ocms_tui.widgets.terminal_driver import PromptEscapeDriver

            return PromptEscapeDriver
        return driver

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="body"):
            run_list = RunList()
            run_list.display = self.overlaid  # one run: no sidebar, the look it always had
            yield run_list
            with Vertical(id="charts"):
                strip = ChartStrip()
                strip.display = False  # until the panels do not all fit
                yield strip
                yield ChartGrid(self._grid_laid_out)
        yield ProblemsPane()
        yield KeyFooter(lambda action: self.check_action(action, ()) is not False)

    @property
    def grid(self) -> ChartGrid:
        return self.query_one(ChartGrid)

    @property
    def run_list(self) -> RunList:
        return self.query_one(RunList)

    @property
    def runs(self) -> tuple[TrackedRun, ...]:
        return self.session.runs

    @property
    def model(self) -> RunModel:
        """The first run's model (the only one when a single run is followed)."""
        return self.runs[0].model

    @property
    def watchers(self) -> dict[str, Watcher]:
        return self.session.watchers

    @property
    def paused(self) -> bool:
        return self.session.paused

    @property
    def overlaid(self) -> bool:
        return len(self.runs) > 1

    def on_mount(self) -> None:
        if self.session.started:
            state = self.session.attach(self._state_arrived)
            if state is not None:
                self._state_arrived(state)
        else:
            self.session.start()
        if self.handle_signals:
            self._exit_on_signals()

    def _exit_on_signals(self) -> None:
        """SIGTERM, SIGHUP (the terminal closed, the tmux pane killed) and SIGINT end the app
        the way `q` does: Textual's driver then leaves the alternate screen and turns mouse
        reporting off, and the callers' `with` blocks (the demo's temporary directory) clean
        up. A second signal while exiting takes the default way out."""
        loop = asyncio.get_running_loop()

        def exit_on(signal_number: int) -> None:
            for number in EXIT_SIGNALS:
                loop.remove_signal_handler(number)
            self.exit(return_code=128 + signal_number)  # the shell's convention for "killed by"

        for number in EXIT_SIGNALS:
            loop.add_signal_handler(number, exit_on, number)
        if self.signals_before_mount:
            exit_on(self.signals_before_mount[0])

    def on_unmount(self) -> None:
        self.session.stop()
        gc.unfreeze()  # an app run in a longer process (tests, a notebook) leaves its objects

    # -- showing the session's state ---------------------------------------------------

    def _state_arrived(self, state: SessionState) -> None:
        """The session's callback, on its thread (or this one, for keys)."""
        self._pending_states += 1
        self.post_message(StateChanged(state))

    def on_state_changed(self, message: StateChanged) -> None:
        self._pending_states = 0
        if not self.is_running:
            return  # posted by the session just before the app closed
        self._apply(message.state, message.changed)

    @property
    def idle(self) -> bool:
        """Everything on disk has been read and is on screen."""
        state = self.state
        return (
            state is not None
            and state is self.session.state
            and state.idle
            and self._pending_states == 0
            and self._shown_charts == (state.charts, state.overlaid)
        )

    async def settle(self, timeout: float = 60.0) -> None:
        """Wait until what is on disk now is fully read and every chart shows it."""
        deadline = time.monotonic() + timeout
        asked_after = self.session.state.serial if self.session.state is not None else 0
        self.session.read_everything()

        def settled() -> bool:
            return self.idle and self.state is not None and self.state.serial > asked_after

        while not settled() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0)  # let panels mounted by the last state compose
        if self.state is not None:
            self._apply(self.state, {panel.name for panel in self.grid.panels})

    def _apply(self, state: SessionState, changed: set[str]) -> None:
        previous, self.state = self.state, state
        if previous is not None and previous.overlaid != state.overlaid:
            self.run_list.display = state.overlaid  # a second run appeared
            self.refresh_bindings()
            self.query_one(KeyFooter).refresh_keys()
        key = (state.charts, state.overlaid)
        if key != self._shown_charts:
            self._shown_charts = key
            self.call_later(self._show_charts, key)
        else:
            for panel in self.grid.panels:
                if panel.name in changed:
                    panel.show_new_data()
        if previous is None or previous.problems != state.problems:
            self.query_one(ProblemsPane).show(state.problems)
            self._notify(state.problems)
        self.grid.show_message(self._grid_message(state))
        self.query_one(StatusBar).show(state.status)
        if state.overlaid:
            self.run_list.show(self._run_rows(state))
        if not state.charts:
            self.session.first_screen_shown()  # nothing to draw: no reason to wait

    def _notify(self, problems: tuple[Problem, ...]) -> None:
        if self.notifier is None:
            return
        self.notifier.forget_missing(problems)
        fresh = self.notifier.new_findings(problems)
        if not fresh:
            return
        text = notification_for(fresh)
        self.notifications_sent.append(text)
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(text)
            driver.flush()

    def _run_rows(self, state: SessionState) -> list[RunRow]:
        now = self.clock()
        return [
            RunRow(
                key=run_key(run),
                name=run.name,
                color=series_color(run.color),
                status=run_status(run.model, now, live_seconds=self.stale_after),
                quiet_seconds=None if run.model.last_write is None else now - run.model.last_write,
                last_step=max(
                    (c.last_step for c in run.model.charts if c.last_step is not None),
                    default=None,
                ),
                problems=len(run.model.problems),
                shown=run_key(run) not in state.hidden_runs,
                health=next(
                    (p.rule.value for p in run.model.problems if p.rule in HEALTH_RULES), None
                ),
            )
            for run in state.runs
        ]

    async def _show_charts(self, key: tuple[tuple[OverlayChart, ...], bool]) -> None:
        if not self._screen_composed():
            return
        grid = self.grid
        focused = self.focused.name if isinstance(self.focused, ChartPanel) else None
        maximised = grid.maximised.name if grid.maximised else None
        grid.maximised = None
        replaced = bool(grid.panels)
        gc.unfreeze()  # the panels about to go (see _freeze_long_lived)
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
                baseline=self.baseline,
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
        # The panels draw at the next refresh; then the session may read on.
        self.call_after_refresh(self.session.first_screen_shown)
        self.set_timer(FREEZE_AFTER_SECONDS, partial(self._freeze_long_lived, replaced))

    def _freeze_long_lived(self, panels_replaced: bool) -> None:
        """The objects made so far (the app, its panels, the modules) live until the charts
        change: out of the cyclic collector's sight, its full collections scan about 16,000
        objects instead of 120,000 and pause the UI for at most 7 ms instead of 40 ms (one
        key press in ten at 6 x 1M met one; measured in process). `_show_charts` unfreezes
        them before it removes panels, and the panels it removed are collected here (once
        per new layout, a pause of about 40 ms), or they would be frozen with the rest; a
        moment later, once the removal's last messages and threads let go of them."""
        if panels_replaced:
            gc.collect()
        gc.freeze()

    def _grid_message(self, state: SessionState) -> Text | None:
        if state.charts:
            return None
        label = self.directory_label
        if state.overlaid:
            if all(run_key(run) in state.hidden_runs for run in state.runs):
                return safe_text("no run selected (press b, then space on a run)")
            if state.loading:
                return safe_text(f"loading {label} …")
            return safe_text(f"the selected runs under {label} have no charts yet …")
        model = state.runs[0].model
        if model.missing is not None and state.reads > 0:
            if not model.missing.may_appear:  # waiting would not help: say what is wrong
                return safe_text(model.missing.message)
            return _lines(f"waiting for {label} …", "(it does not exist yet)")
        if state.loading:
            return safe_text(f"loading {label} …")
        if not model.has_metrics_json:
            return _lines(f"no metrics.json in {label} yet …", "(waiting for the first log())")
        return safe_text(f"{label}/metrics.json declares no charts (see the problems below)")

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

    def _grid_laid_out(self, overflowing: bool) -> None:
        if self._screen_composed():
            self.query_one(ChartStrip).display = overflowing
            self._show_strip()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if self._screen_composed():
            self._show_strip()

    def _screen_composed(self) -> bool:
        """False while the app closes: its widgets go before the last queued messages and
        callbacks (a layout, a focus change, a new state) are handled."""
        if not self.is_running:
            return False
        try:
            self.query_one(ChartGrid)
            self.query_one(ChartStrip)
        except NoMatches:
            return False
        return True

    def _show_strip(self) -> None:
        panels = self.grid.panels
        focused = self.focused
        index = (
            panels.index(focused) if isinstance(focused, ChartPanel) and focused in panels else None
        )
        self.query_one(ChartStrip).show([panel.name for panel in panels], index)

    def on_chart_strip_picked(self, event: ChartStrip.Picked) -> None:
        panels = self.grid.panels
        if event.index < len(panels):
            target = panels[event.index]
            if self.grid.maximised is not None:
                self.grid.set_maximised(target)
            target.focus()

    def action_runs(self) -> None:
        run_list = self.run_list
        run_list.display = not run_list.display
        if not run_list.display and self.focused in run_list.walk_children():
            self._focus_grid()

    def action_filter_runs(self) -> None:
        self.run_list.display = True
        self.run_list.filter.focus()

    def on_run_list_toggled(self, event: RunList.Toggled) -> None:
        self.session.show_run(event.key, event.shown)

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
        panel = self._focused_panel()
        if panel is not None:
            panel.next_smoothing()

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
        self.session.set_paused(not self.session.paused)

    def action_reload(self) -> None:
        self.session.reload()

    def action_problems(self) -> None:
        pane = self.query_one(ProblemsPane)
        pane.display = not pane.display


EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _lines(*lines: str) -> Text:
    """Lines of text with paths in them: each line safe, the line breaks kept."""
    return Text("\n").join(safe_text(line) for line in lines)


def run_dashboard(
    paths: PathArgument | Sequence[PathArgument],
    poll: float | None = None,
    session: FollowSession | None = None,
    notify: bool = False,
    baseline: PathArgument | None = None,
) -> int:
    """Open the dashboard on `paths` (runs or parents of runs) until the user quits; returns
    the exit code. `session`, `notify`, `baseline`: see OcmsApp."""
    app = OcmsApp(
        paths, poll=poll, handle_signals=True, session=session, notify=notify, baseline=baseline
    )

    def noted(number: int, _frame: object) -> None:
        app.signals_before_mount.append(number)

    # Textual switches the terminal to the alternate screen and mouse reporting before the
    # app is mounted and answers signals: a SIGTERM meanwhile killed the process with the
    # terminal left so (seen at 0.64 s into a 6x1M start). Noted here; the app then exits
    # the way q does.
    previous = {number: signal.signal(number, noted) for number in EXIT_SIGNALS}
    try:
        app.run()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return app.return_code or 0


def save_snapshot(
    paths: PathArgument | Sequence[PathArgument],
    out_path: str | os.PathLike[str],
    size: tuple[int, int],  # the default is the command line's (--size)
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
