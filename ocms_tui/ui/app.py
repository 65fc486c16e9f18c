"""The live dashboard, `ocms-tui PATH...`: charts, problems and status of metrics directories.

Data flows one way. A FollowSession (plain Python, its own thread) reads the runs as they
change and publishes a SessionState; the app forwards it to the UI thread as one coalescing
message, lays it out, and redraws the panels whose charts changed. The app itself only lays
out, applies states and handles keys. Several runs are overlaid: one panel per chart name.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.driver import Driver
from textual.message import Message

from ocms_tui.follow.notify import Notifier, notification_for
from ocms_tui.follow.session import (
    STALE_AFTER_SECONDS,
    FollowSession,
    OutsideProblems,
    PathArgument,
    SessionState,
    label_of,
)
from ocms_tui.format.problems import Problem
from ocms_tui.format.ranking import DEFAULT_GROUP_PATTERN, SortKey, compile_group_pattern
from ocms_tui.ui.exit_signals import exit_on_signals
from ocms_tui.ui.freeze import LayoutFreezer
from ocms_tui.ui.run_ranking import RunRanking
from ocms_tui.widgets.bindings import bindings
from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.chart_keys import ChartKeys
from ocms_tui.widgets.chart_panel import (
    DEFAULT_TOP_RUNS,
    ChartPanel,
    PanelView,
    RunView,
    SharedView,
)
from ocms_tui.widgets.chart_strip import ChartStrip
from ocms_tui.widgets.grid_message import grid_message
from ocms_tui.widgets.help_screen import HelpScreen, octopus_runs
from ocms_tui.widgets.key_footer import KeyFooter
from ocms_tui.widgets.keys import Scope
from ocms_tui.widgets.problems_pane import ProblemsPane
from ocms_tui.widgets.run_list import RunList
from ocms_tui.widgets.status_bar import StatusBar

LayoutKey = tuple[tuple[object, ...], bool]


def layout_key(state: SessionState) -> LayoutKey:
    """What the panels are laid out for: new frames of the same charts keep the layout."""
    return tuple(chart.structure for chart in state.charts), state.overlaid


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


class OcmsApp(RunRanking, ChartKeys, App[int]):
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
        sort: SortKey | None = None,
        top: int = DEFAULT_TOP_RUNS,
        group: re.Pattern[str] | None = None,
        notify: bool = False,
        baseline: PathArgument | None = None,
        outside_problems: OutsideProblems | None = None,
        health: bool = True,
    ) -> None:
        """`session`: one already reading `paths` (started before Textual was imported, so
        that the first rows are read meanwhile); the app takes its states over. Runs
        overlaid are ranked by `sort` (None: the session picks a series); the first `top`
        are drawn in colour. `group`: start with runs grouped by this seed pattern (`g`
        toggles grouping, by the default pattern unless one is given). `notify`: ring the
        bell and send a desktop notification once per health finding (--notify).
        `baseline`: a run also followed (add it to `paths`) and drawn dotted (--baseline).
        `outside_problems`, `health` (False: --no-health): see FollowSession."""
        super().__init__()
        self.baseline = None if baseline is None else Path(baseline)
        self.notifier = Notifier() if notify else None
        self.notifications_sent: list[str] = []
        self.handle_signals = handle_signals
        # Exit signals that came after the terminal was set up but before the app could
        # answer them (see signals_noted): answered at once when it can.
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
            sort=sort,
            outside_problems=outside_problems,
            health=health,
        )
        self.top = top
        self.group_pattern = group or compile_group_pattern(DEFAULT_GROUP_PATTERN)
        self.grouped = group is not None
        self.run_view = RunView()
        self.shared = SharedView()
        self.state: SessionState | None = None
        """The state on screen (None until the first read)."""
        self._panel_views: dict[str, PanelView] = {}
        self._shown_charts: LayoutKey = ((), False)
        self._pending_states = 0
        self.freezer = LayoutFreezer(self.set_timer)

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
    def paused(self) -> bool:
        return self.session.paused

    @property
    def overlaid(self) -> bool:
        """Several runs: the state on screen says so (before the first, the session)."""
        if self.state is not None:
            return self.state.overlaid
        return len(self.session.runs) > 1

    def on_mount(self) -> None:
        if self.session.started:
            state = self.session.attach(self._state_arrived)
            if state is not None:
                self._state_arrived(state)
        else:
            self.session.start()
        if self.handle_signals:
            exit_on_signals(lambda code: self.exit(return_code=code), self.signals_before_mount)

    def on_unmount(self) -> None:
        self.session.stop()
        self.freezer.release()

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
            and self._shown_charts == layout_key(state)
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
        if previous is None or previous.overlaid != state.overlaid:
            self.run_list.display = state.overlaid  # a second run appeared
            self.refresh_bindings()
            self.query_one(KeyFooter).refresh_keys()
        key = layout_key(state)
        if key != self._shown_charts:
            self._shown_charts = key
            self.call_later(self._show_charts, key)
        else:
            by_name = {chart.name: chart for chart in state.charts}
            for panel in self.grid.panels:
                overlay = by_name.get(panel.name)
                if overlay is None or overlay.structure != panel.overlay.structure:
                    continue  # a panel of the last layout, about to go
                panel.show_frames(overlay)
                if panel.name in changed:
                    panel.show_new_data()
        # The view caches of rows no run shows any more (a reset file, a run gone).
        self.shared.series.keep(chart.generation for run in state.runs for chart in run.charts)
        if previous is None or previous.problems != state.problems:
            self.query_one(ProblemsPane).show(state.problems)
            self._notify(state.problems)
        self.grid.show_message(grid_message(state, self.directory_label))
        self.query_one(StatusBar).show(state.status)
        if state.overlaid:
            self._show_run_view(state)
            sort = state.ranking.sort
            self.run_list.show(self._run_rows(state), sort.describe() if sort else "")
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

    async def _show_charts(self, key: LayoutKey) -> None:
        if not self._screen_composed():
            return
        grid = self.grid
        focused = self.focused.name if isinstance(self.focused, ChartPanel) else None
        maximised = grid.maximised.name if grid.maximised else None
        grid.maximised = None
        self.freezer.layout_starting(removes_panels=bool(grid.panels))
        await grid.remove_children(ChartPanel)
        if key is not self._shown_charts or self.state is None:
            return  # the structure changed again meanwhile; a later call shows it
        charts, overlaid = self.state.charts, self.state.overlaid
        panels = [
            ChartPanel(
                chart,
                self.shared,
                self._panel_views.setdefault(chart.name, PanelView()),
                overlaid=overlaid,
                runs=self.run_view,
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
        self.freezer.layout_shown()

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("runs", "filter_runs", "next_sort", "group_runs"):
            return self.overlaid  # one run: no run list, and the footer as it always was
        return True

    def on_key(self, event: events.Key) -> None:
        # Escape in the filter (or the list) hands the keys back to the charts.
        if event.key == "escape" and self.focused in self.run_list.walk_children():
            event.stop()
            self._focus_grid()

    def action_help(self) -> None:
        runs = self.state.runs if self.state is not None else ()
        self.push_screen(HelpScreen(octopus_runs(runs)))

    def action_pause(self) -> None:
        self.session.set_paused(not self.session.paused)

    def action_reload(self) -> None:
        self.session.reload()

    def action_problems(self) -> None:
        pane = self.query_one(ProblemsPane)
        pane.display = not pane.display
