"""The run list's part of the dashboard: runs ranked by a series, the leading ones in
colour, the highlighted one in front, seeds grouped; kept apart from the app's flow of
states (mixed into the app)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events

from ocms_tui.follow.frames import RunFrame
from ocms_tui.follow.run_table import Ranking, find_series, rank_groups
from ocms_tui.follow.runs import run_status
from ocms_tui.follow.session import FollowSession, SessionState
from ocms_tui.format.problems import HEALTH_RULES
from ocms_tui.format.ranking import SortKey
from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.panel_lines import MUTED_COLOR, RunView
from ocms_tui.widgets.run_list import RunList, RunRow
from ocms_tui.widgets.series_table import format_number

if TYPE_CHECKING:
    from textual.widget import Widget


class RunRanking:
    """Mixed into the dashboard App, which has a RunList, a ChartGrid and a FollowSession."""

    if TYPE_CHECKING:
        state: SessionState | None
        session: FollowSession
        top: int
        grouped: bool
        group_pattern: re.Pattern[str]
        run_view: RunView
        stale_after: float
        clock: Callable[[], float]

        @property
        def focused(self) -> Widget | None: ...

        @property
        def grid(self) -> ChartGrid: ...

        @property
        def run_list(self) -> RunList: ...

        def _screen_composed(self) -> bool: ...

        def _focus_grid(self) -> None: ...

    def _show_run_view(self, state: SessionState | None = None) -> None:
        """Feature the leading runs of the ranking (those shown), bring the run highlighted
        in the list to the front while the list has the focus, and tell every panel."""
        state = state or self.state
        # A highlight or a key can still arrive while the app closes, its screens gone.
        if state is None or not self._screen_composed():
            return
        ranking = state.ranking
        featured = [key for key in ranking.order if key not in state.hidden_runs][: self.top]
        in_list = self.focused is not None and self.focused in self.run_list.walk_children()
        ranked_by = ranking.sort.series if ranking.sort else ""
        if self.grouped:
            names = {run.key: run.name for run in state.runs if run.key not in state.hidden_runs}
            groups = rank_groups(ranking, names, self.group_pattern)
            view = RunView(ranked_by=ranked_by, groups=groups, top=self.top)
        else:
            view = RunView(
                tuple(featured),
                self.run_list.highlighted_key if in_list else None,
                ranked_by,
            )
        if view != self.run_view:
            self.run_view = view
            for panel in self.grid.panels:
                panel.show_runs(view)

    def _run_rows(self, state: SessionState) -> list[RunRow]:
        now = self.clock()
        ranking = state.ranking
        by_key = {run.key: run for run in state.runs}
        ordered = [by_key[key] for key in ranking.order if key in by_key]
        ranked = set(ranking.order)
        ordered += [run for run in state.runs if run.key not in ranked]
        values = dict(zip(ranking.order, ranking.values, strict=True))
        return [
            RunRow(
                key=run.key,
                name=run.name,
                color=self.run_view.color_of(run.key) or MUTED_COLOR,
                status=run_status(run, now, live_seconds=self.stale_after),
                quiet_seconds=None if run.last_write is None else now - run.last_write,
                last_step=run.last_step,
                problems=len(run.problems),
                shown=run.key not in state.hidden_runs,
                value=_sort_value(run, ranking, values.get(run.key)),
                health=next((p.rule.value for p in run.problems if p.rule in HEALTH_RULES), None),
            )
            for run in ordered
        ]

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        # Besides ChartKeys' own handler (Textual calls both): the run in front follows
        # the focus into and out of the run list.
        self._show_run_view()

    def on_run_list_highlighted(self, event: RunList.Highlighted) -> None:
        self._show_run_view()

    def action_group_runs(self) -> None:
        """Runs that differ only in their seed as one line (mean and min-max band), or
        every run again."""
        self.grouped = not self.grouped
        self._show_run_view()

    def action_next_sort(self) -> None:
        """Rank the runs by the next series of theirs (after the last, the first again)."""
        ranking = self.state.ranking if self.state is not None else None
        if ranking is None or not ranking.series:
            return
        names = ranking.series
        current = ranking.sort.series if ranking.sort else None
        following = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.session.set_sort(SortKey.parse(following))

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


def _sort_value(run: RunFrame, ranking: Ranking, value: float | None) -> str:
    """A run's latest value of the sort series; a run without that series says so (it is
    ranked last)."""
    if ranking.sort is None:
        return ""
    if value is None and find_series(run.charts, ranking.sort.series) is None:
        return f"no {ranking.sort.series}"
    return format_number(value)
