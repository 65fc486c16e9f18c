"""The dashboard's keys that act on the charts (focus, maximise, smoothing, log scale, zoom,
series) and the strip of chart names that follows the focus: a part of the app, kept apart
from the app's flow of states."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.css.query import NoMatches

from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.chart_panel import MAX_ZOOM, ChartPanel, SharedView
from ocms_tui.widgets.chart_strip import ChartStrip

if TYPE_CHECKING:
    from textual.widget import Widget


class ChartKeys:
    """Mixed into the dashboard App, which has a ChartGrid, a ChartStrip and a SharedView."""

    if TYPE_CHECKING:
        shared: SharedView
        is_running: bool

        @property
        def focused(self) -> Widget | None: ...

        @property
        def grid(self) -> ChartGrid: ...

        def set_focus(self, widget: Widget | None) -> None: ...

        def query_one(self, selector: type[ChartStrip] | type[ChartGrid]) -> Widget: ...

    @property
    def strip(self) -> ChartStrip:
        strip = self.query_one(ChartStrip)
        assert isinstance(strip, ChartStrip)
        return strip

    def _focused_panel(self) -> ChartPanel | None:
        if isinstance(self.focused, ChartPanel):
            return self.focused
        panels = self.grid.panels
        return panels[0] if panels else None

    def _redraw_all(self) -> None:
        for panel in self.grid.panels:
            panel.redraw()

    def _grid_laid_out(self, overflowing: bool) -> None:
        if self._screen_composed():
            self.strip.display = overflowing
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
        self.strip.show([panel.name for panel in panels], index)

    def on_chart_strip_picked(self, event: ChartStrip.Picked) -> None:
        panels = self.grid.panels
        if event.index < len(panels):
            target = panels[event.index]
            if self.grid.maximised is not None:
                self.grid.set_maximised(target)
            target.focus()

    def _focus_grid(self) -> None:
        panel = self._focused_panel()
        if panel is not None:
            panel.focus(scroll_visible=False)
        else:
            self.set_focus(None)

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
