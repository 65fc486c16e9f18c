"""ChartPanel: one chart of metrics.json: its plot, its legend with exact numbers, its title."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.timer import Timer
from textual.worker import Worker, get_current_worker

from ocms_tui.draw.plot_plan import Series
from ocms_tui.follow.frames import MAX_KEPT_PASSES, ChartFrame, OverlayFrame
from ocms_tui.follow.views import SeriesViews
from ocms_tui.widgets.bindings import bindings
from ocms_tui.widgets.chart_plot import ChartPlot
from ocms_tui.widgets.keys import Scope
from ocms_tui.widgets.panel_drawing import PanelFrames
from ocms_tui.widgets.panel_lines import (
    DEFAULT_TOP_RUNS,
    MUTED_COLOR,
    Line,
    RunView,
    panel_lines,
)
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.series_table import SeriesRow, SeriesTable

__all__ = [
    "DEFAULT_TOP_RUNS",
    "MAX_ZOOM",
    "MUTED_COLOR",
    "ChartPanel",
    "PanelView",
    "RunView",
    "SharedView",
]
MIN_PLOT_ROWS = 10  # a plot keeps 7 rows of curve above its legend, however long
# Runs overlaid make long legends: a panel asks the grid for room for this many lines of it
# and sums up the rest in its last line when the panel is smaller.
MIN_LEGEND_LINES = 8
# One run: a handful of series, listed whole unless the plot would drop below this.
MIN_SINGLE_RUN_PLOT_ROWS = 5
SMOOTHING_WEIGHTS = (0.0, 0.6, 0.9, 0.99)
# The next smoothing is made ahead this long after a key: the key's own frame is drawn first,
# without a thread competing for the interpreter.
PREPARE_AFTER_SECONDS = 0.25
# ... and only up to this many values in all (8 bytes each kept: 64 MB); a larger chart (many
# runs overlaid) smooths when s is pressed.
PREPARE_MAX_VALUES = 8_000_000
MAX_ZOOM = 12


@dataclass
class SharedView:
    """View settings every chart shares (the app owns it, panels read it): the x range,
    so that charts stay aligned on the step; and the view cache of every chart's series,
    kept across new layouts (a new run joining keeps the others' smoothing)."""

    zoom: int = 0  # show the latest 1/2**zoom of the steps
    series: SeriesViews = field(default_factory=SeriesViews)


@dataclass
class PanelView:
    """View settings of one chart, kept across reloads by chart name. Smoothing and the log
    scale are both per chart (a loss wants them, a learning rate or an epoch counter not)."""

    smoothing: float = 0.0
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

    # Arrows are bound here, not on the app: the grid around the panels scrolls on arrows and
    # would take them. Not in the footer (80 columns hold the app's keys only).
    BINDINGS: ClassVar[list[BindingType]] = bindings(Scope.PANEL)

    def __init__(
        self,
        overlay: OverlayFrame,
        shared: SharedView,
        view: PanelView,
        overlaid: bool = False,
        runs: RunView | None = None,
        baseline: Path | None = None,
    ) -> None:
        super().__init__()
        self.frames = PanelFrames(overlay, shared.series)
        self.overlaid = overlaid
        self.runs = runs or RunView()
        self.baseline = baseline
        self.lines = panel_lines(overlay, overlaid, self.runs, baseline)
        self.shared = shared
        self.view = view
        self.plot = ChartPlot(self._series_for_plot)
        self.table = SeriesTable()
        self._shown_subtitle: Text | None = None
        self._preparing: Worker[None] | None = None
        self._prepared_for: tuple[float, int] = (0.0, 0)  # (smoothing, rows) made ahead
        self._prepare_timer: Timer | None = None
        self.prepared_ahead = 0
        """Times the next keys' work was made ahead (once per burst of keys)."""
        self.border_title = self._title()

    @property
    def name(self) -> str:
        return self.frames.overlay.name

    @property
    def overlay(self) -> OverlayFrame:
        return self.frames.overlay

    @property
    def listed(self) -> tuple[Line, ...]:
        """The lines in the legend (every line but the muted ones), first in `lines`."""
        return tuple(line for line in self.lines if not line.muted)

    @property
    def muted_runs(self) -> int:
        """Runs (or groups) drawn grey."""
        return len({line.run for line in self.lines if line.muted})

    def show_runs(self, runs: RunView) -> None:
        """Other runs featured, or another highlighted: lines, legend and plot anew."""
        if runs == self.runs:
            return
        self.runs = runs
        self.lines = panel_lines(self.overlay, self.overlaid, runs, self.baseline)
        self.view.hidden = set()  # the numbers 1-9 name other lines now
        self.redraw()

    @property
    def min_height(self) -> int:
        """Rows this panel needs: border, plot, the legend's header and its lines, up to
        MIN_LEGEND_LINES (0 for one run: the grid's own minimum fits its legends)."""
        if not self.overlaid:
            return 0
        more = 1 if self.muted_runs else 0
        return 2 + MIN_PLOT_ROWS + 1 + min(len(self.listed), MIN_LEGEND_LINES) + more

    @property
    def chart(self) -> ChartFrame:
        """The first run's chart (the only one unless runs are overlaid)."""
        return self.overlay.sources[0].chart

    @property
    def charts(self) -> tuple[ChartFrame, ...]:
        return self.frames.charts

    def prepared_smoothing(self, series: int) -> float | None:
        """The smoothing made ahead for `series` of the first run's chart, not yet drawn."""
        return self.shared.series.prepared_smoothing(self.chart, series)

    def compose(self) -> ComposeResult:
        yield self.plot
        yield self.table

    def on_mount(self) -> None:
        self.show_new_data()

    def on_resize(self) -> None:
        self._fit_legend()

    def _fit_legend(self) -> None:
        """The legend gets what the plot's minimum leaves; the rest of it is summed up.
        Fitted again whenever it changes (other runs featured), not only on a resize."""
        if not self.content_size.height:
            return  # not laid out yet: fitted on the first resize
        plot_rows = MIN_PLOT_ROWS if self.overlaid else MIN_SINGLE_RUN_PLOT_ROWS
        spare = self.content_size.height - plot_rows - 1 - (1 if self.muted_runs else 0)
        self.table.limit(max(2, spare) if spare < len(self.listed) else None)

    def on_focus(self) -> None:
        self._prepare_later()

    def _prepare_later(self) -> None:
        """Make ahead what the next key likely asks for, PREPARE_AFTER_SECONDS from now: one
        timer per panel, started again by each key, so that quick presses prepare once, after
        the last of them (a timer per key made each one's work, late, in the next key's way)."""
        if self._prepare_timer is not None:
            self._prepare_timer.stop()
        self._prepare_timer = self.set_timer(PREPARE_AFTER_SECONDS, self._prepare_ahead)

    @property
    def prepare_pending(self) -> bool:
        """The next keys' work is yet to be made ahead (a key came in the last moments)."""
        return self._prepare_timer is not None

    def _prepare_ahead(self) -> None:
        self._prepare_timer = None
        self.prepared_ahead += 1
        self.prepare_next_smoothing()
        if not self.muted_runs:
            # A grey layer is reduced for one view at a time (draw.layer): a view made ahead
            # would cost the UI thread a reduction of every grey run, then be dropped.
            self.prepare_next_zoom()
            self.prepare_maximised()

    def show_frames(self, overlay: OverlayFrame) -> None:
        """Newer frames of this chart (the same runs and declarations): drawn at the next
        `show_new_data` or view change."""
        self.frames.show(overlay)

    def show_new_data(self) -> None:
        """The charts have new rows (or were reset): new numbers now, a new plot at the
        next frame unless no pixel of it changed. Every time: a redraw is cheap enough not
        to be rationed."""
        self._show_data()
        if self.has_focus:
            self.prepare_next_smoothing()

    def _show_data(self, view_changed: bool = False) -> None:
        self._show_subtitle()  # a restart may have come with the rows
        self._show_table()
        self.plot.invalidate(view_changed)

    def _show_subtitle(self) -> None:
        # Setting a border subtitle repaints the whole panel, plot included, even when it
        # is the same: only a new one is set.
        subtitle = self._subtitle()
        if subtitle != self._shown_subtitle:
            self._shown_subtitle = subtitle
            self.border_subtitle = subtitle

    def redraw(self) -> None:
        """A view setting changed: show it at once. The next smoothing is made ahead only
        after this frame (a thread smoothing 1,000,000-row series while the frame is drawn
        made `s` at 1M rows 1.5x slower than at 1k)."""
        self.border_title = self._title()
        self._show_data(view_changed=True)
        self._prepare_later()

    def prepare_next_zoom(self) -> None:
        """Reduce the series for the range `]` shows next, once this frame is drawn: at
        1,000,000 rows a new range costs about 1 ms of M4 per series, the key then none."""
        if self.shared.zoom < MAX_ZOOM:
            self.plot.prepare(self._shown_range(self.shared.zoom + 1))

    def prepare_maximised(self) -> None:
        """Reduce the focused chart's series for the size enter gives its plot: the area the
        grid gives a maximised panel (ChartGrid.maximised_area), less what the panel keeps
        around its plot now (border, legend). Only the canvas width decides the reduction,
        so a height a row off would cost nothing."""
        area_of = getattr(self.parent, "maximised_area", None)
        area = area_of() if self.has_focus and callable(area_of) else None
        if area is None:
            return  # not in a grid, or a chart is maximised already
        around = self.outer_size - self.plot.size
        size = Size(area.width - around.width, area.height - around.height)
        self.plot.prepare(self._shown_range(self.shared.zoom), size)

    def toggle_series(self, index: int) -> bool:
        if not 0 <= index < len(self.listed):
            return False
        self.view.hidden ^= {index}
        self.redraw()
        return True

    def toggle_log(self) -> None:
        self.view.log_y = not self.view.log_y
        self.redraw()

    def next_smoothing(self) -> None:
        """off → EMA 0.6 → 0.9 → 0.99 → off."""
        self.view.smoothing = self._following_smoothing()
        self.redraw()

    def _following_smoothing(self) -> float:
        weights = SMOOTHING_WEIGHTS
        current = weights.index(self.view.smoothing) if self.view.smoothing in weights else 0
        return weights[(current + 1) % len(weights)]

    def prepare_next_smoothing(self) -> None:
        """Smooth the shown series at the weight `s` gives next, in a thread, so that the key
        costs what a redraw costs, not an EMA and a pyramid per series (about 12 ms each at
        1,000,000 rows). Done again when the rows have doubled since (a run still loading
        or growing); one panel at a time: only the focused one is asked to."""
        if not self.has_focus:
            return
        weight = self._following_smoothing()
        rows = sum(chart.rows for chart in self.charts)
        prepared_weight, prepared_rows = self._prepared_for
        if weight <= 0 or (weight == prepared_weight and rows < 2 * prepared_rows) or not rows:
            return
        if self._preparing is not None and self._preparing.is_running:
            return  # asked again when it is done and more rows came
        self._prepared_for = (weight, rows)
        by_key = self.frames.by_key
        series = [
            (by_key[line.key], line.index)
            for number, line in enumerate(self.lines)
            if number not in self.view.hidden and line.key in by_key
        ]
        if sum(chart.rows for chart, _ in series) > PREPARE_MAX_VALUES:
            return
        views = self.shared.series
        # Handed over without waiting (not call_from_thread, which blocks until the loop
        # runs the call): a loop that stops first would leave the thread waiting forever,
        # and the interpreter waits for it at exit.
        loop = asyncio.get_running_loop()

        def prepare() -> None:
            worker = get_current_worker()
            for chart, index in series:
                if worker.is_cancelled:
                    return
                hand_over = views.prepare(chart, index, weight)
                try:
                    loop.call_soon_threadsafe(hand_over)
                except RuntimeError:  # the loop is closed: the app has ended
                    return

        self._preparing = self.run_worker(
            prepare, name="prepare smoothing", group="prepare", thread=True, exit_on_error=False
        )

    def _title(self) -> Text:
        """The chart's name, then the state of both per-chart keys (s, l), always shown."""
        title = safe_text(self.overlay.name)
        smoothing = f"ema {self.view.smoothing:g}" if self.view.smoothing else "ema off"
        title.append(
            f" · {smoothing} · {'log' if self.view.log_y else 'linear'}", style="not bold dim"
        )
        return title

    def _show_table(self) -> None:
        self._fit_legend()
        rows = [
            SeriesRow(
                line.label,
                line.color,
                self.frames.stats(line, self.view.smoothing, self.view.log_y),
                number in self.view.hidden,
                line.marker,
                line.run,
            )
            for number, line in enumerate(self.listed)
        ]
        steps = [chart.last_step for chart in self.charts if chart.last_step is not None]
        muted = self.muted_runs
        more = ""
        if muted:
            ranked = f" (ranked by {self.runs.ranked_by})" if self.runs.ranked_by else ""
            kind = "group" if self.runs.groups else "run"
            more = f"+{muted:,} more {kind}{'s' if muted > 1 else ''}, drawn grey{ranked}"
        self.table.show(
            rows,
            max(steps, default=None),
            sum(chart.rows for chart in self.charts),
            max(chart.passes for chart in self.charts),
            more,
        )

    def _subtitle(self) -> Text | None:
        """The view settings in effect (the data's step and rows head the legend)."""
        parts = []
        passes = max(chart.passes for chart in self.charts)
        if passes > 1:
            parts.append("run restarted: earlier passes dotted")
        if any(chart.earlier_passes_dropped for chart in self.charts):
            parts.append(f"latest {MAX_KEPT_PASSES} of {passes:,} passes drawn")
        if self.shared.zoom:
            parts.append(f"latest 1/{2**self.shared.zoom} of steps")
        return Text(" · ".join(parts)) if parts else None

    def _series_for_plot(self) -> tuple[list[Series], bool, tuple[float, float] | None]:
        view = self.view
        series = self.frames.series(self._drawing_order(), view.hidden, view.smoothing, view.log_y)
        return series, view.log_y, self.frames.x_range(self.shared.zoom)

    def _drawing_order(self) -> list[tuple[int, Line]]:
        """Later lines are drawn over earlier ones. Runs overlaid: the muted runs first, then
        the featured runs from the last to the best, the highlighted run last of all."""
        numbered = list(enumerate(self.lines))
        if not self.overlaid:
            return numbered  # one run: its series in their order, as they always were
        muted = [item for item in numbered if item[1].muted]
        listed = [item for item in numbered if not item[1].muted]
        front = self.runs.highlighted
        in_front = [item for item in listed if item[1].key == front]
        behind = [item for item in listed if item[1].key != front]
        return [*muted, *reversed(behind), *in_front]

    def _shown_range(self, zoom: int) -> tuple[float, float] | None:
        return self.frames.x_range(zoom)
