"""ChartPanel: one chart of metrics.json: its plot, its legend with exact numbers, its title."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.timer import Timer
from textual.worker import Worker, get_current_worker

from ocms_tui.draw.plot_plan import Series
from ocms_tui.draw.series_style import EARLIER_PASS_MARKER, MARKER, RGB, series_color, series_marker
from ocms_tui.follow.model import ChartData, SeriesStats
from ocms_tui.follow.run_table import Band, band
from ocms_tui.follow.runset import OverlayChart, RunChart
from ocms_tui.follow.series import MAX_KEPT_PASSES, SeriesStore, pass_bounds, step_span
from ocms_tui.follow.session import run_key
from ocms_tui.widgets.bindings import bindings
from ocms_tui.widgets.chart_plot import ChartPlot
from ocms_tui.widgets.keys import Scope
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.series_table import SeriesRow, SeriesTable

# Marks of the health checks: a triangle on the edge the value lies beyond, in red.
MARK_ABOVE = "▼"
MARK_BELOW = "▲"
MARK_COLOR = (230, 60, 60)
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
    so that charts stay aligned on the step."""

    zoom: int = 0  # show the latest 1/2**zoom of the steps


@dataclass(frozen=True)
class Line:
    """One series of one run as this panel draws it."""

    source: RunChart
    index: int  # the series' position in the chart's y axis
    label: str  # the series' name; untrusted text (from files): rendered plain
    color: RGB
    marker: str
    run: str = ""  # runs overlaid: the run's name (untrusted)
    muted: bool = False  # drawn behind, in MUTED_COLOR, and not listed in the legend
    # Runs grouped: every member run's chart holding the series; the line is their mean,
    # with the min-max band around it (`source` is the first of them).
    group: tuple[RunChart, ...] = ()


# Runs overlaid: the leading few are drawn in colour and listed; every other run is drawn
# behind them in this grey (it reads on dark and light themes), summed up in one legend line.
MUTED_COLOR: RGB = (118, 118, 118)
DEFAULT_TOP_RUNS = 5


@dataclass(frozen=True)
class RunView:
    """How runs overlaid are shown, the same in every panel (the app owns it). `featured`:
    the run keys in colour and in the legend, best first (a colour per place); every other
    run is drawn muted. `highlighted`: a run brought to the front (the run list's highlighted
    run), in the next colour if it is not featured."""

    featured: tuple[str, ...] = ()
    highlighted: str | None = None
    ranked_by: str = ""  # the series the runs are ranked by ("": in the order found)
    # Runs grouped (seeds as one line): (group name, member run keys), best first; the
    # first `top` in colour with their band, the others' means grey.
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    top: int = DEFAULT_TOP_RUNS

    def color_of(self, key: str) -> RGB | None:
        """The run's colour, None when it is drawn muted."""
        if key in self.featured:
            return series_color(self.featured.index(key))
        if key == self.highlighted:
            return series_color(len(self.featured))
        return None


def panel_lines(
    overlay: OverlayChart,
    overlaid: bool,
    runs: RunView | None = None,
    baseline: Path | None = None,
) -> tuple[Line, ...]:
    """One run: a colour per series, every series. A run and its baseline (`--baseline`):
    the run drawn as alone, the baseline in the same colours, dotted. Runs overlaid: the
    featured runs first, in their order, a colour per run and a marker per series, labels
    naming run and series; then the highlighted run, then every other run's series, muted;
    a baseline among them dotted."""

    def is_baseline(source: RunChart) -> bool:
        return baseline is not None and _same_directory(source.run.directory, baseline)

    if not overlaid or (baseline is not None and len(overlay.sources) <= 2):
        alone: list[Line] = []
        for source in overlay.sources:
            for index, name in enumerate(source.chart.y_axis):
                color = series_color(index)
                if is_baseline(source):
                    run = f"baseline {source.run.name}"
                    alone.append(Line(source, index, name, color, EARLIER_PASS_MARKER, run))
                else:
                    alone.append(Line(source, index, name, color, MARKER))
        return tuple(alone)
    runs = runs or RunView()
    if runs.groups:
        return group_lines(overlay, runs)
    places = {key: place for place, key in enumerate(runs.featured)}
    if runs.highlighted is not None and runs.highlighted not in places:
        places[runs.highlighted] = len(places)
    listed: list[Line] = []
    muted: list[Line] = []
    for source in sorted(overlay.sources, key=lambda s: places.get(run_key(s.run), len(places))):
        color = runs.color_of(run_key(source.run))
        for index, name in enumerate(source.chart.y_axis):
            if color is None:
                muted.append(Line(source, index, name, MUTED_COLOR, MARKER, source.run.name, True))
            elif is_baseline(source):
                run = f"baseline {source.run.name}"
                listed.append(Line(source, index, name, color, EARLIER_PASS_MARKER, run))
            else:
                marker = series_marker(index)
                listed.append(Line(source, index, name, color, marker, source.run.name))
    return (*listed, *muted)


def group_lines(overlay: OverlayChart, runs: RunView) -> tuple[Line, ...]:
    """One line per group and series: the leading `runs.top` groups in colour, the others
    muted (their means only)."""
    by_key = {run_key(source.run): source for source in overlay.sources}
    listed: list[Line] = []
    muted: list[Line] = []
    for place, (name, keys) in enumerate(runs.groups):
        members = [by_key[key] for key in keys if key in by_key]
        if not members:
            continue
        featured = place < runs.top
        color = series_color(place) if featured else MUTED_COLOR
        label = f"{name} ({len(keys)} run{'s' if len(keys) > 1 else ''})"
        series_names = dict.fromkeys(n for member in members for n in member.chart.y_axis)
        for number, series_name in enumerate(series_names):
            carriers = tuple(m for m in members if series_name in m.chart.y_axis)
            first = carriers[0]
            index = first.chart.y_axis.index(series_name)
            marker = series_marker(number) if featured else MARKER
            line = Line(first, index, series_name, color, marker, label, not featured, carriers)
            (listed if featured else muted).append(line)
    return (*listed, *muted)


def _same_directory(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return first == second


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
        overlay: OverlayChart,
        shared: SharedView,
        view: PanelView,
        overlaid: bool = False,
        runs: RunView | None = None,
        baseline: Path | None = None,
    ) -> None:
        super().__init__()
        self.overlay = overlay
        self.overlaid = overlaid
        self.runs = runs or RunView()
        self.baseline = baseline
        self.lines = panel_lines(overlay, overlaid, self.runs, baseline)
        self.shared = shared
        self.view = view
        self.plot = ChartPlot(self._series_for_plot)
        self.table = SeriesTable()
        self._sorted_for: tuple[tuple[int, int], ...] | None = None
        self._steps_sorted: dict[int, bool] = {}
        self._shown_subtitle: Text | None = None
        self._preparing: Worker[None] | None = None
        self._prepared_for: tuple[float, int] = (0.0, 0)  # (smoothing, rows) made ahead
        self._prepare_timer: Timer | None = None
        self.prepared_ahead = 0
        """Times the next keys' work was made ahead (once per burst of keys)."""
        self.border_title = self._title()

    @property
    def name(self) -> str:
        return self.overlay.name

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
        series = [
            (line.source.chart, line.index)
            for number, line in enumerate(self.lines)
            if number not in self.view.hidden
        ]
        if sum(chart.rows for chart, _ in series) > PREPARE_MAX_VALUES:
            return
        # Handed over without waiting (not call_from_thread, which blocks until the loop
        # runs the call): a loop that stops first would leave the thread waiting forever,
        # and the interpreter waits for it at exit.
        loop = asyncio.get_running_loop()

        def prepare() -> None:
            worker = get_current_worker()
            for chart, index in series:
                if worker.is_cancelled:
                    return
                hand_over = chart.prepare(index, weight)
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
                self._group_stats(line) if line.group else line.source.chart.stats(line.index),
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
        stores = {id(chart): chart.drawn() for chart in self.charts}
        all_steps = {key: store.steps() for key, store in stores.items()}
        series = []
        for number, line in self._drawing_order():
            if number in self.view.hidden:
                continue
            if line.group:
                series.extend(self._group_series(line))
                continue
            store = stores[id(line.source.chart)]
            steps = all_steps[id(line.source.chart)]
            values = store.values(line.index)
            # steps() and values() are two reads of a growing store: use their common rows.
            rows = min(len(steps), len(values))
            # Smoothed and log values and the M4 pyramid are kept with the data and only
            # extended by the rows that arrived since the last draw.
            shown = store.shown(line.index, self.view.smoothing, self.view.log_y)
            shown_values = shown.values(values[:rows])
            passes = pass_bounds(rows, store.restarts, store.earlier_passes_dropped)
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
                        layer=line.muted,
                    )
                )
            series.extend(self._marks(line))
        spans = [_span(stores[key], steps) for key, steps in all_steps.items()]
        return series, self.view.log_y, _x_range(spans, self.shared.zoom)

    def _band(self, line: Line) -> Band | None:
        """The group's mean and min-max of the line's series, at the view's smoothing and
        axis (each member's own view of it)."""
        pairs = []
        for member in line.group:
            store = member.chart.drawn()
            index = member.chart.y_axis.index(line.label)
            steps, values = store.steps(), store.values(index)
            rows = min(len(steps), len(values))
            shown = store.shown(index, self.view.smoothing, self.view.log_y)
            pairs.append((steps[:rows], shown.values(values[:rows])))
        return band(pairs)

    def _group_series(self, line: Line) -> list[Series]:
        found = self._band(line)
        if found is None:
            return []
        ordered = bool(np.all(np.diff(found.steps) >= 0))
        mean = Series(found.steps, found.mean, line.color, ordered, line.marker, layer=line.muted)
        if line.muted or len(line.group) < 2:
            return [mean]
        edges = [
            Series(found.steps, edge, line.color, ordered, EARLIER_PASS_MARKER)
            for edge in (found.low, found.high)
        ]
        return [*edges, mean]

    def _group_stats(self, line: Line) -> SeriesStats:
        """The legend's numbers of a group: those of its mean."""
        found = self._band(line)
        return SeriesStats() if found is None else SeriesStats().updated(found.steps, found.mean)

    def _drawing_order(self) -> list[tuple[int, Line]]:
        """Later lines are drawn over earlier ones. Runs overlaid: the muted runs first, then
        the featured runs from the last to the best, the highlighted run last of all."""
        numbered = list(enumerate(self.lines))
        if not self.overlaid:
            return numbered  # one run: its series in their order, as they always were
        muted = [item for item in numbered if item[1].muted]
        listed = [item for item in numbered if not item[1].muted]
        front = self.runs.highlighted
        in_front = [item for item in listed if run_key(item[1].source.run) == front]
        behind = [item for item in listed if run_key(item[1].source.run) != front]
        return [*muted, *reversed(behind), *in_front]

    def _marks(self, line: Line) -> list[Series]:
        """The steps the health checks name, as marks on the chart's top (a nan, an inf, a
        spike, where a divergence began) or bottom (a -inf) edge: a value no line can draw
        is shown, not skipped."""
        chart = line.source.chart
        marks = chart.marks(line.index)
        stats = chart.stats(line.index)
        if not marks or stats.maximum is None or stats.minimum is None:
            return []
        if self.view.log_y and stats.minimum <= 0:
            return []  # a mark at a non-positive level has no place on a log axis
        # One series per mark: plotext joins the points of one series with a line.
        return [
            Series(
                np.array([step], dtype=np.int64),
                np.array([stats.minimum if below else stats.maximum]),
                MARK_COLOR,
                steps_sorted=True,
                marker=MARK_BELOW if below else MARK_ABOVE,
            )
            for step, _, below in marks
        ]

    def _shown_range(self, zoom: int) -> tuple[float, float] | None:
        stores = [chart.drawn() for chart in self.charts]
        return _x_range([_span(store, store.steps()) for store in stores], zoom)


def _span(store: SeriesStore, steps: np.ndarray) -> tuple[float, float] | None:
    return step_span(steps, store.restarts, store.earlier_passes_dropped)


def _x_range(spans: list[tuple[float, float] | None], zoom: int) -> tuple[float, float] | None:
    """The latest 1/2**zoom of the steps the charts span (None: all of them)."""
    present = [span for span in spans if span is not None]
    if not zoom or not present:
        return None
    low = min(low for low, _ in present)
    high = max(high for _, high in present)
    return (high - (high - low) / 2**zoom, high)
