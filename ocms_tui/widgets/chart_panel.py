"""ChartPanel: one chart of metrics.json: its plot, its legend with exact numbers, its title."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical

from ocms_tui.model import ChartData
from ocms_tui.plotting import (
    EARLIER_PASS_MARKER,
    MARKER,
    RGB,
    Series,
    series_color,
    series_marker,
)
from ocms_tui.runset import OverlayChart, RunChart
from ocms_tui.series import MAX_KEPT_PASSES, pass_bounds
from ocms_tui.widgets.chart_plot import ChartPlot
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.series_table import SeriesRow, SeriesTable

MIN_PLOT_ROWS = 10  # runs overlaid: a plot keeps 7 rows of curve above its long legend
SMOOTHING_WEIGHTS = (0.0, 0.6, 0.9, 0.99)
MAX_ZOOM = 12


@dataclass
class SharedView:
    """View settings every chart shares (the app owns it, panels read it)."""

    smoothing: float = 0.0
    zoom: int = 0  # show the latest 1/2**zoom of the steps


@dataclass(frozen=True)
class Line:
    """One series of one run as this panel draws it."""

    source: RunChart
    index: int  # the series' position in the chart's y axis
    label: str  # untrusted text (from files): rendered plain
    color: RGB
    marker: str


# A panel draws and lists at most this many lines: a chart may declare up to 1,000 series,
# and a legend row plus a plotted line each would freeze the screen for seconds.
MAX_PANEL_LINES = 24


def series_count(overlay: OverlayChart) -> int:
    return sum(len(source.chart.y_axis) for source in overlay.sources)


def panel_lines(overlay: OverlayChart, overlaid: bool) -> tuple[Line, ...]:
    """One run: a colour per series. Runs overlaid: a colour per run, a marker per series,
    labels naming run and series. The first MAX_PANEL_LINES only."""
    lines: list[Line] = []
    for source in overlay.sources:
        for index, name in enumerate(source.chart.y_axis):
            if len(lines) == MAX_PANEL_LINES:
                break
            if overlaid:
                label = f"{source.run.name} · {name}"
                lines.append(
                    Line(source, index, label, series_color(source.run.color), series_marker(index))
                )
            else:
                lines.append(Line(source, index, name, series_color(index), MARKER))
    return tuple(lines)


@dataclass
class PanelView:
    """View settings of one chart, kept across reloads by chart name."""

    log_y: bool = False
    hidden: set[int] = field(default_factory=set)


class ChartPanel(Vertical, can_focus=True):
    DEFAULT_CSS = """
    ChartPanel {
        border: round $primary 40%;
        border-title-color: $text;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        background: $surface;
        height: 1fr;
    }
    ChartPanel:focus {
        border: round $accent;
    }
    """

    # Here, not on the app: the grid around the panels scrolls on arrows and would take them.
    # Not in the footer (80 columns hold the app's keys only); the help screen lists them.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "app.focus_chart(-1, 0)", show=False),
        Binding("right", "app.focus_chart(1, 0)", show=False),
        Binding("up", "app.focus_chart(0, -1)", show=False),
        Binding("down", "app.focus_chart(0, 1)", show=False),
    ]

    def __init__(
        self,
        overlay: OverlayChart,
        shared: SharedView,
        view: PanelView,
        overlaid: bool = False,
    ) -> None:
        super().__init__()
        self.overlay = overlay
        self.overlaid = overlaid
        self.lines = panel_lines(overlay, overlaid)
        self.shared = shared
        self.view = view
        self.plot = ChartPlot(self._series_for_plot)
        self.table = SeriesTable()
        self.border_title = safe_text(overlay.name)

    @property
    def name(self) -> str:
        return self.overlay.name

    @property
    def min_height(self) -> int:
        """Rows this panel needs: border, plot, the legend's header and a line per series
        (0 for one run: the grid's own minimum fits its legends)."""
        return 2 + MIN_PLOT_ROWS + 1 + len(self.lines) if self.overlaid else 0

    @property
    def chart(self) -> ChartData:
        """The first run's chart (the only one unless runs are overlaid)."""
        return self.overlay.sources[0].chart

    @property
    def charts(self) -> tuple[ChartData, ...]:
        return tuple(source.chart for source in self.overlay.sources)

    def compose(self) -> ComposeResult:
        yield self.plot
        yield self.table

    def on_mount(self) -> None:
        self.show_new_data()

    def show_new_data(self) -> None:
        """The charts have new rows (or were reset): new numbers now, a new plot at the
        next frame. Every time: a redraw is cheap enough not to be rationed."""
        self.border_subtitle = self._subtitle()  # a restart may have come with the rows
        self._show_table()
        self.plot.invalidate()

    def redraw(self) -> None:
        """A view setting changed: show it at once."""
        self.show_new_data()

    def toggle_series(self, index: int) -> bool:
        if not 0 <= index < len(self.lines):
            return False
        self.view.hidden ^= {index}
        self.redraw()
        return True

    def toggle_log(self) -> None:
        self.view.log_y = not self.view.log_y
        self.redraw()

    def _show_table(self) -> None:
        rows = [
            SeriesRow(
                line.label,
                line.color,
                line.source.chart.stats(line.index),
                number in self.view.hidden,
                line.marker,
            )
            for number, line in enumerate(self.lines)
        ]
        steps = [chart.last_step for chart in self.charts if chart.last_step is not None]
        self.table.show(
            rows,
            max(steps, default=None),
            sum(chart.rows for chart in self.charts),
            max(chart.passes for chart in self.charts),
        )

    def _subtitle(self) -> Text | None:
        """The view settings in effect (the data's step and rows head the legend)."""
        parts = []
        total = series_count(self.overlay)
        if total > len(self.lines):
            parts.append(f"first {len(self.lines)} of {total:,} series")
        if self.shared.smoothing:
            parts.append(f"ema {self.shared.smoothing:g}")
        if self.view.log_y:
            parts.append("log")
        passes = max(chart.passes for chart in self.charts)
        if passes > 1:
            parts.append("run restarted: earlier passes dotted")
        if any(chart.earlier_passes_dropped for chart in self.charts):
            parts.append(f"latest {MAX_KEPT_PASSES} of {passes:,} passes drawn")
        if self.shared.zoom:
            parts.append(f"latest 1/{2**self.shared.zoom} of steps")
        return Text(" · ".join(parts)) if parts else None

    def _series_for_plot(self) -> tuple[list[Series], bool, tuple[float, float] | None]:
        all_steps = {id(chart): chart.steps() for chart in self.charts}
        series = []
        for number, line in enumerate(self.lines):
            if number in self.view.hidden:
                continue
            chart = line.source.chart
            steps = all_steps[id(chart)]
            values = chart.values(line.index)
            # steps() and values() are two reads of a growing store: use their common rows.
            rows = min(len(steps), len(values))
            # Smoothed and log values and the M4 pyramid are kept with the data and only
            # extended by the rows that arrived since the last draw.
            shown = chart.shown(line.index, self.shared.smoothing, self.view.log_y)
            shown_values = shown.values(values[:rows])
            passes = pass_bounds(rows, chart.restarts, chart.earlier_passes_dropped)
            # A run that started again: one line per pass (steps never go back within one),
            # the earlier passes in a lighter character.
            for start, stop in passes:
                latest = stop == rows
                series.append(
                    Series(
                        steps[:rows],
                        shown_values,
                        line.color,
                        steps_sorted=True,
                        marker=line.marker if latest else EARLIER_PASS_MARKER,
                        pyramid=shown.pyramid,
                        rows=None if len(passes) == 1 else (start, stop),
                    )
                )
        return series, self.view.log_y, self._x_range(list(all_steps.values()))

    def _x_range(self, all_steps: list[np.ndarray]) -> tuple[float, float] | None:
        present = [steps for steps in all_steps if steps.size]
        if not self.shared.zoom or not present:
            return None
        low = min(float(steps.min()) for steps in present)
        high = max(float(steps.max()) for steps in present)
        return (high - (high - low) / 2**self.shared.zoom, high)
