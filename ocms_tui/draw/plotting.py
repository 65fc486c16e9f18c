"""Turn a chart's series into plotext text: where numbers become pixels.

Core, no Textual (the ChartPlot widget wraps it; tests and benchmarks use it directly). Every
series is M4-reduced to the exact pixel width of plotext's canvas before plotext sees it, so
a build costs the same for 1,000 or 1,000,000 rows and draws the same picture as the full
series would.

The values a build takes and hands plotext are in draw.plot_plan, plotext's build of a plan
in draw.plot_render, and what decides a picture without drawing it in draw.plan_key.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ocms_tui.draw import plotext_speedups
from ocms_tui.draw.axis_range import YAxis, y_axis
from ocms_tui.draw.downsample import M4Memo, SharedColumns, m4
from ocms_tui.draw.layer import LayerCache, LayerColumns
from ocms_tui.draw.plan_key import frame, plan_key
from ocms_tui.draw.plot_plan import (
    Y_AXIS_FRAME_ROWS,
    Plan,
    PlotLine,
    PlotRequest,
    Series,
    Ticks,
    View,
    choose_y_ticks,
    grown_extent,
    label_width,
    x_extent,
)
from ocms_tui.draw.plot_render import Picture, render
from ocms_tui.draw.series_style import MARKER, MARKER_PIXELS_PER_COLUMN, RGB
from ocms_tui.draw.ticks import nice_ticks, tick_labels

KeyT = TypeVar("KeyT")
ValueT = TypeVar("ValueT")

# plotext's canvas is the plot's width less its frame (the y axis lines, left and right: 2
# columns) and the longest y tick label. We choose the labels, so the canvas width follows
# from them and plotext builds once for it; its real width is still read back after each
# build, and a frame found to differ is remembered.
PLOTEXT_FRAME_COLUMNS = 2
# A width M4 first reduces for before any label was drawn: a frame and a 6-character label.
_FRAME_AND_LABEL_GUESS = 8
# Per series, the M4 columns of this many recent views (x range and width) are kept: a key
# that comes back to a view (zoom reset, restore after maximise) or goes to one prepared
# ahead (the next zoom) reduces nothing again.
_KEPT_VIEWS = 6


class ChartCanvas:
    """Builds one chart with a plotext figure (e.g. textual-plotext's `PlotextPlot.plt`).

    `build()` draws every time. A follower uses `plan()`, `shows()` and `draw()`: a plan
    whose pixels are those already drawn needs no plotext build at all.
    """

    def __init__(self, figure: Any) -> None:
        self.figure = figure
        self._frame_columns = PLOTEXT_FRAME_COLUMNS
        # The y ticks drawn (or prepared) per axis and x range, the latest last: the labels
        # a key that comes back to a view (l twice, zoom reset) will draw again.
        self._drawn_y_ticks: dict[tuple[bool, tuple[float, float] | None], Ticks | None] = {}
        self._canvas_rows = 0
        self.points_drawn = 0
        self.extent: tuple[float, float] | None = None
        """The x axis of the last build (None: nothing drawn)."""
        self.drawn: Plan | None = None
        self._drawn_columns: int | None = None  # plotext's canvas width of `drawn`
        self._drawn_key: tuple[Any, ...] | None = None  # `drawn`'s key, made when first asked
        self._keyed: tuple[Plan, tuple[int, int], tuple[Any, ...]] | None = None
        # Per drawn series (its pyramid, its first row), per recent view (x range, canvas
        # columns): the M4's columns, so that a grown series is reduced again in its changed
        # columns only, and a view shown again not at all.
        self._m4_memos: dict[tuple[int, int], dict[View, M4Memo]] = {}
        self.layer_cache = LayerCache()
        self.plotext_builds = 0
        """plotext builds so far: one per draw unless the canvas width was foreseen wrong."""

    def build(self, series: list[Series], request: PlotRequest, reduce: bool = True) -> str | None:
        """plotext's output (ANSI text) for `series`, or None when nothing is drawable.

        With `reduce=False` the full series are drawn (the reference M4 is compared with).
        """
        plan = self.plan(series, request, reduce)
        picture = self.draw(plan, series) if plan is not None else None
        return picture.ansi() if picture is not None else None

    def plan(self, series: list[Series], request: PlotRequest, reduce: bool = True) -> Plan | None:
        """What plotext would be given for `series` (None: nothing drawable). The x axis
        keeps the last drawn one while the steps fit it (`grown_extent`); a zoomed view
        (`request.x_range`) is exact."""
        data = x_extent(series)
        if data is None or request.width < 1 or request.height < 1:
            return None
        if request.x_range is not None:
            extent = request.x_range
        else:
            previous = self.drawn.extent if self.drawn is not None else None
            extent = grown_extent(data, previous)
        if not reduce:
            return self._plan(series, request, extent, data[1], None)
        return self._plan(series, request, extent, data[1], self._foresee(request), settle=True)

    def _foresee(self, request: PlotRequest) -> int:
        """plotext's canvas width, foreseen before M4 reduces for it: the y labels last
        drawn with this axis and x range, else with this axis, else the last ones (M4 at any
        width keeps each series' extremes, so the labels of a view do not change with its
        width; `_plan` checks). Asking the values for their extremes first would cost as
        much as the M4 itself (about 1 ms per series at 1,000,000 rows, measured), so this
        guess is only checked after the one reduction."""
        drawn = self._drawn_y_ticks
        ticks = drawn.get((request.log_y, request.x_range))
        if ticks is None:
            same_axis = [found for (log_y, _), found in drawn.items() if log_y == request.log_y]
            ticks = same_axis[-1] if same_axis else next(reversed(drawn.values()), None)
        columns = self._canvas_width(request, ticks)
        return request.width - _FRAME_AND_LABEL_GUESS if columns is None else columns

    def shows(self, plan: Plan) -> bool:
        """Whether the last picture drawn is exactly what `plan` would draw: the same size,
        theme, axes, ticks and labels, and every line lighting the same pixels. Cheap (numpy
        on the reduced points), and exact: it maps and rasterises with plotext's own
        helpers."""
        drawn, columns = self.drawn, self._drawn_columns
        if drawn is None or columns is None or plan.canvas_columns is None:
            return False
        # First what needs no pixels: a followed run's x axis grows every few reads, and
        # then the pixels (most of a key) need not be mapped for either picture.
        if plan.canvas_columns != columns or frame(plan) != frame(drawn):
            return False
        if self._drawn_key is None:
            self._drawn_key = self._key(drawn, columns)
        # The key holds the canvas width the plan was reduced for and the y labels that
        # decide the real one: equal keys mean the plan fits the canvas drawn.
        if self._key(plan, plan.canvas_columns) != self._drawn_key:
            return False
        self.drawn = plan
        return True

    def prepare(self, series: list[Series], request: PlotRequest) -> None:
        """Reduce `series` for a view likely asked for next, without drawing: its M4 columns
        are kept and its y labels foreseen, so a key that asks for it reduces nothing."""
        plan = self.plan(series, request)
        if plan is not None and plan.lines:
            self._remember_y_ticks(request, plan.y_ticks)

    @property
    def columns_reduced(self) -> int:
        """Pixel columns the kept M4 views have asked of the series' pyramids: a view reduced
        afresh adds its columns, one kept (made ahead, or shown before) none."""
        return sum(
            memo.columns_reduced for views in self._m4_memos.values() for memo in views.values()
        )

    def _remember_y_ticks(self, request: PlotRequest, y_ticks: Ticks | None) -> None:
        _keep_latest(self._drawn_y_ticks, (request.log_y, request.x_range), y_ticks)

    def forget(self, reductions: bool = False) -> None:
        """Nothing is on screen from this canvas any more (the owner shows something else).
        `reductions`: forget the kept M4 columns too, so that the next build reduces every
        column again (a benchmark of whole builds)."""
        self.extent = None
        self.drawn = None
        self._drawn_columns = None
        self._drawn_key = None
        if reductions:
            self._m4_memos = {}

    def draw(self, plan: Plan, series: list[Series]) -> Picture | None:
        """Build `plan` with plotext (None: nothing drawable). Should plotext's canvas not be
        the width the plan foresaw, `series` are reduced again for the real one and built
        again (and the frame it showed is foreseen from then on)."""
        self.forget()
        picture = self._render(plan)
        if picture is None:
            return None
        request = plan.request
        columns = len(self.figure.monitor.matrix.Cols_canvas)
        self._canvas_rows = len(self.figure.monitor.matrix.Rows_canvas)
        if plan.canvas_columns is not None and columns != plan.canvas_columns:
            if columns > 0 and plan.y_ticks is not None:
                self._frame_columns = request.width - label_width(plan.y_ticks[1]) - columns
            # M4 keeps the y range (so the labels) at any width: this build has exactly the
            # canvas the reduction assumed.
            plan = self._plan(series, request, plan.extent, plan.data_through, columns)
            picture = self._render(plan)
            if picture is None:
                return None
        self.extent = plan.extent
        self.drawn = plan
        self._remember_y_ticks(request, plan.y_ticks)
        self._drawn_columns, self._drawn_key = columns, None
        return picture

    def _plan(
        self,
        series: list[Series],
        request: PlotRequest,
        extent: tuple[float, float],
        data_through: float,
        canvas_columns: int | None,
        settle: bool = False,
    ) -> Plan:
        """The plan with every series M4-reduced for `canvas_columns` (None: not reduced).
        `settle`: the columns were foreseen; should the reduced values' y labels leave
        plotext another width, reduce again for it (M4 only: plotext builds once)."""
        plan = self._reduced_plan(series, request, extent, data_through, canvas_columns)
        for _ in range(2 if settle else 0):
            columns = self._canvas_width(request, plan.y_ticks)
            if columns is None or columns == plan.canvas_columns:
                break
            # The columns of the width that did not fit are kept no longer than needed.
            wrong = (float(extent[0]), float(extent[1]), plan.canvas_columns)
            for views in self._m4_memos.values():
                views.pop(wrong, None)
            plan = self._reduced_plan(series, request, extent, data_through, columns)
        return plan

    def _canvas_width(self, request: PlotRequest, y_ticks: Ticks | None) -> int | None:
        """plotext's canvas width with these y labels (None: plotext labels the axis)."""
        if y_ticks is None:
            return None
        return max(0, request.width - self._frame_columns - label_width(y_ticks[1]))

    def _reduced_plan(
        self,
        series: list[Series],
        request: PlotRequest,
        extent: tuple[float, float],
        data_through: float,
        canvas_columns: int | None,
    ) -> Plan:
        low, high = extent
        x_ticks = None
        if high > low:
            ticks = nice_ticks(low, high)
            x_ticks = (tuple(ticks), tuple(tick_labels(ticks)))
        memos: dict[tuple[int, int], dict[View, M4Memo]] = {}
        shared_columns: SharedColumns = {}
        # Layer series (runs drawn muted) are reduced together (draw.layer), not one by one.
        layered = [line for line in series if line.layer] if canvas_columns and high > low else []
        columns: list[LayerColumns] = []
        if layered:
            columns = self._layer_columns(layered, extent, canvas_columns)
        reduce = partial(
            self._reduce,
            extent=extent,
            canvas_columns=canvas_columns,
            memos=memos,
            shared_columns=shared_columns,
        )
        drawable = reduce([line for line in series if not (line.layer and layered)])
        layer_values = [group.values() for group in columns]
        all_values = [values for _, _, values in drawable] + layer_values
        if canvas_columns is not None:
            self._m4_memos = memos
        if not any(values.size for values in all_values):
            # Nothing to draw (e.g. only non-positive values on a log axis): plotext would
            # fail on an empty log axis.
            return Plan(request, extent, data_through, canvas_columns, x_ticks, None, False, ())
        # M4 keeps each column's extremes, so the reduced values span the full y range.
        axis = y_axis(all_values, request.log_y)
        y_ticks = choose_y_ticks(all_values, request, axis)
        lines = []
        if columns:
            assert canvas_columns is not None
            layer = self._layer_line(
                columns,
                [axis.drawn(values) for _, _, values in drawable],
                axis,
                extent,
                request,
                canvas_columns,
                layered[0].color,
            )
            if layer is not None:
                lines.append(layer)
        for line, steps, values in drawable:
            # Steps as floats: plotext turns them into floats anyway, and float lists take
            # the numpy path of plotext_utility_speedups.get_matrix_data.
            step_array, value_array = steps.astype(np.float64), axis.drawn(values)
            lines.append(
                PlotLine(
                    line.marker,
                    line.color,
                    step_array.tolist(),
                    value_array.tolist(),
                    step_array,
                    value_array,
                )
            )
        return Plan(
            request,
            extent,
            data_through,
            canvas_columns,
            x_ticks,
            y_ticks,
            axis.plotext_log,
            tuple(lines),
        )

    def _layer_columns(
        self, layered: list[Series], extent: tuple[float, float], canvas_columns: int
    ) -> list[LayerColumns]:
        """`layer_columns` of the layer series, kept for the last views of this data: a
        plan made again (the canvas width settled, a new picture checked against the one on
        screen, a key that leaves the layer as it is or comes back to a view) reduces
        nothing again."""
        pairs = [(line.drawn_steps, line.drawn_values) for line in layered]
        width = canvas_columns * MARKER_PIXELS_PER_COLUMN
        return self.layer_cache.columns(pairs, extent, width)

    def _reduce(
        self,
        series: list[Series],
        extent: tuple[float, float],
        canvas_columns: int | None,
        memos: dict[tuple[int, int], dict[View, M4Memo]],
        shared_columns: SharedColumns,
    ) -> list[tuple[Series, np.ndarray, npt.NDArray[np.float64]]]:
        """Each series M4-reduced for `canvas_columns` (None: its finite points in the x
        range), those with points left."""
        low, high = extent
        drawable = []
        for line in series:
            memo = None
            if line.pyramid is not None and canvas_columns is not None:
                memo = self._memo(line, memos, extent, canvas_columns)
            if canvas_columns is None:
                steps, values = line.drawn_steps, line.drawn_values
                keep = np.isfinite(values) & (steps >= low) & (steps <= high)
                steps, values = steps[keep], values[keep]
            else:
                steps, values = m4(
                    line.steps,
                    line.values,
                    max(1, canvas_columns) * line.pixels_per_column,
                    x_range=extent,
                    x_sorted=line.steps_sorted,
                    pyramid=line.pyramid if line.steps_sorted else None,
                    rows=line.rows,
                    memo=memo,
                    shared_columns=shared_columns,
                )
            if values.size:
                drawable.append((line, steps, values))
        return drawable

    def _layer_line(
        self,
        columns: list[LayerColumns],
        drawn_values: list[npt.NDArray[np.float64]],
        axis: YAxis,
        extent: tuple[float, float],
        request: PlotRequest,
        canvas_columns: int,
        color: RGB,
    ) -> PlotLine | None:
        """The background layer as one set of points: every pixel its lines light (see
        draw.layer), each at its pixel's centre, so that plotext lights exactly those.
        The layer's extreme values go in as they are: plotext's y limits come from every
        value it is given. `drawn_values`: every other line's values as drawn. On plotext's
        own log axis the pixels are mapped as plotext maps them, from the values' log10."""

        def plotted(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
            if not axis.plotext_log:
                return axis.drawn(values)
            with np.errstate(all="ignore"):
                return np.log10(axis.drawn(values))

        drawn_values = [plotted(values) for values in drawn_values]
        layer_values = [plotted(group.values()) for group in columns]
        # plotext's limits leave NaN out (on a log axis, the log of values <= 0): left out
        # here, numpy finds them (plotext's get_lim took 1.7 s on a layer's 400,000 values).
        present = [
            kept
            for values in [*layer_values, *drawn_values]
            if (kept := values[~np.isnan(values)]).size
        ]
        if not any(values.size for values in layer_values):
            return None
        faster = plotext_speedups
        y_limits = faster.limits(present)
        x_limits = [float(extent[0]), float(extent[1])]
        width = canvas_columns * MARKER_PIXELS_PER_COLUMN
        height = (self._canvas_rows or max(1, request.height - Y_AXIS_FRAME_ROWS)) * 4
        px, py = self.layer_cache.pixels(columns, plotted, y_limits, width, height, axis)
        point_x = x_limits[0] + px * ((x_limits[1] - x_limits[0]) / max(1, width - 1))
        point_y = y_limits[0] + py * ((y_limits[1] - y_limits[0]) / max(1, height - 1))
        if axis.plotext_log:
            point_y = 10.0**point_y
        # Each extreme value itself, at the pixel column holding it (a pixel its span
        # lights anyway), so that plotext finds the limits the pixels were mapped with.
        for group in columns:
            for values, pick in ((group.low, np.nanargmin), (group.high, np.nanargmax)):
                shown = plotted(values)
                if not np.isfinite(shown).any():
                    continue
                at = np.unravel_index(
                    pick(np.where(np.isfinite(shown), shown, np.nan)), shown.shape
                )
                column_x = x_limits[0] + int(group.x[at[1]]) * (
                    (x_limits[1] - x_limits[0]) / max(1, width - 1)
                )
                point_x = np.append(point_x, column_x)
                point_y = np.append(point_y, axis.drawn(values)[at])
        return PlotLine(
            MARKER, color, point_x.tolist(), point_y.tolist(), point_x, point_y, scatter=True
        )

    def _memo(
        self,
        line: Series,
        memos: dict[tuple[int, int], dict[View, M4Memo]],
        extent: tuple[float, float],
        canvas_columns: int,
    ) -> M4Memo:
        """The kept M4 columns of `line` in this view (a fresh memo for a view not kept),
        recorded in `memos` as the latest view of the series."""
        key = (id(line.pyramid), line.rows[0] if line.rows else 0)
        views = memos.get(key)
        if views is None:
            views = memos[key] = self._m4_memos.get(key, {})
        view = (float(extent[0]), float(extent[1]), canvas_columns)
        return _keep_latest(views, view, views.get(view) or M4Memo())

    def _render(self, plan: Plan) -> Picture | None:
        self.points_drawn = plan.points
        if not plan.lines:
            return None
        self.plotext_builds += 1
        return render(self.figure, plan)

    def _key(self, plan: Plan, canvas_columns: int) -> tuple[Any, ...]:
        """`plan_key` of `plan` on this canvas, kept with the plan: a plan checked by
        `shows()` and then drawn is keyed once."""
        cached = self._keyed
        if (
            cached is not None
            and cached[0] is plan
            and cached[1] == (canvas_columns, self._canvas_rows)
        ):
            return cached[2]
        key = plan_key(plan, canvas_columns, self._canvas_rows)
        self._keyed = (plan, (canvas_columns, self._canvas_rows), key)
        return key


def _keep_latest(recent: dict[KeyT, ValueT], key: KeyT, value: ValueT) -> ValueT:
    """Set `recent[key] = value` as the latest entry of `recent` (insertion order: oldest
    first), drop the oldest beyond _KEPT_VIEWS, and return `value`."""
    recent.pop(key, None)
    recent[key] = value
    while len(recent) > _KEPT_VIEWS:
        del recent[next(iter(recent))]
    return value
