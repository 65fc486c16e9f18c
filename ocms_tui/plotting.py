"""Turn a chart's series into plotext text: where numbers become pixels.

Core, no Textual (the ChartPlot widget wraps it; tests and benchmarks use it directly). Every
series is M4-reduced to the exact pixel width of plotext's canvas before plotext sees it, so
a build costs the same for 1,000 or 1,000,000 rows and draws the same picture as the full
series would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ocms_tui import plotext_speedups
from ocms_tui.axis_range import y_axis
from ocms_tui.downsample import m4
from ocms_tui.pyramid import MinMaxPyramid
from ocms_tui.ticks import log_ticks, nice_ticks, spaced_ticks, tick_count, tick_labels

# plotext's line and braille helpers in numpy: the same characters, a third of the time.
plotext_speedups.install()

RGB = tuple[int, int, int]

# Series colours that read on light and dark backgrounds; legend and plot use the same ones.
PALETTE: tuple[RGB, ...] = (
    (0, 130, 200),
    (230, 25, 75),
    (60, 180, 75),
    (245, 130, 48),
    (145, 30, 180),
    (0, 160, 160),
    (200, 160, 0),
    (240, 50, 230),
)

MARKER = "braille"
MARKER_PIXELS_PER_COLUMN = 2  # braille: 2 dots across, 4 down (plotext's marker_factor)
# When runs are overlaid, colour names the run and the marker the series: a run's first
# series is a fine braille line, its others lines of coarser characters (one per column).
SERIES_MARKERS = (MARKER, "•", "+", "x", "*", "o", "#", "%")
# A run that started again: earlier passes over the steps are drawn in this lighter
# character, in the series' colour, so the latest pass stands out and no line goes back.
EARLIER_PASS_MARKER = "·"
# plotext's frame takes 2 columns; its y tick labels about 6 more. Only a first guess: the
# real canvas width is read back after each build and remembered.
_FRAME_AND_LABEL_GUESS = 8
Y_CELLS_PER_TICK = 2  # about a y label every other row (spaced_ticks keeps them apart)
Y_AXIS_FRAME_ROWS = 3  # rows of a plot that are not canvas: frame top and bottom, x labels


def series_color(index: int) -> RGB:
    return PALETTE[index % len(PALETTE)]


def series_marker(index: int) -> str:
    return SERIES_MARKERS[index % len(SERIES_MARKERS)]


@dataclass(frozen=True)
class Series:
    """One line: x = steps, y = values (NaN = gap), drawn in `color`."""

    steps: np.ndarray
    values: npt.NDArray[np.float64]
    color: RGB
    steps_sorted: bool = False  # a promise that steps never decrease: cheaper extents and M4
    marker: str = MARKER
    pyramid: MinMaxPyramid | None = None  # kept for `values`: M4 in O(pixels x log n)
    rows: tuple[int, int] | None = None  # draw only these rows [start, stop): one pass

    @property
    def drawn_steps(self) -> np.ndarray:
        return self.steps if self.rows is None else self.steps[self.rows[0] : self.rows[1]]

    @property
    def drawn_values(self) -> npt.NDArray[np.float64]:
        return self.values if self.rows is None else self.values[self.rows[0] : self.rows[1]]

    @property
    def pixels_per_column(self) -> int:
        return MARKER_PIXELS_PER_COLUMN if self.marker == MARKER else 1


@dataclass(frozen=True)
class PlotRequest:
    """What to build: the widget's size in cells and the view settings."""

    width: int
    height: int
    log_y: bool = False
    x_range: tuple[float, float] | None = None
    theme: str | None = None


def x_extent(series: list[Series]) -> tuple[float, float] | None:
    """The steps the x axis spans: every step of the chart, gaps included (as a step axis
    should), so sorted steps cost no pass over the data."""
    lows, highs = [], []
    for line in series:
        steps = line.drawn_steps
        if steps.size == 0:
            continue
        if line.steps_sorted:
            lows.append(float(steps[0]))
            highs.append(float(steps[-1]))
        else:
            lows.append(float(steps.min()))
            highs.append(float(steps.max()))
    return (min(lows), max(highs)) if lows else None


class ChartCanvas:
    """Builds one chart with a plotext figure (e.g. textual-plotext's `PlotextPlot.plt`)."""

    def __init__(self, figure: Any) -> None:
        self.figure = figure
        self._canvas_columns: dict[tuple[int, int, bool], int] = {}
        self.points_drawn = 0
        self.extent: tuple[float, float] | None = None
        """The steps the last build's x axis spans (None: nothing drawn)."""

    def build(self, series: list[Series], request: PlotRequest, reduce: bool = True) -> str | None:
        """plotext's output (ANSI text) for `series`, or None when nothing is drawable.

        With `reduce=False` the full series are drawn (the reference M4 is compared with).
        """
        extent = request.x_range or x_extent(series)
        self.extent = None
        if extent is None or request.width < 1 or request.height < 1:
            return None
        key = (request.width, request.height, request.log_y)
        guess = self._canvas_columns.get(key, request.width - _FRAME_AND_LABEL_GUESS)
        text = self._draw(series, request, extent, guess if reduce else None)
        if self.points_drawn == 0:
            return None
        self.extent = extent
        columns = len(self.figure.monitor.matrix.Cols_canvas)
        self._canvas_columns[key] = columns
        if reduce and columns != guess:
            # The y tick labels took another width than guessed; M4 keeps the y range, so
            # the second build has exactly the canvas the reduction assumed.
            text = self._draw(series, request, extent, columns)
        return text

    def _draw(
        self,
        series: list[Series],
        request: PlotRequest,
        extent: tuple[float, float],
        canvas_columns: int | None,
    ) -> str:
        figure = self.figure
        figure.clear_figure()
        # plotext clamps a figure to the terminal it runs in; a widget (or a headless
        # snapshot) has its own size. plotext offers no public per-figure switch.
        figure._limit_size(False, False)
        figure.plotsize(request.width, request.height)
        if request.theme is not None:
            figure.theme(request.theme)
        low, high = extent
        if high > low:
            figure.xlim(low, high)
            ticks = nice_ticks(low, high)
            figure.xticks(ticks, tick_labels(ticks))
        drawable: list[tuple[Series, np.ndarray, npt.NDArray[np.float64]]] = []
        for line in series:
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
                )
            if values.size:
                drawable.append((line, steps, values))
        self.points_drawn = 0
        if not drawable:
            # Nothing to draw (e.g. only non-positive values on a log axis): plotext would
            # fail on an empty log axis, and build() reports "nothing drawable" anyway.
            return ""
        # M4 keeps each column's extremes, so the reduced values span the full y range.
        axis = y_axis([values for _, _, values in drawable], request.log_y)
        if axis.plotext_log:
            figure.yscale("log")
        if axis.ticks:
            figure.yticks(list(axis.ticks), list(axis.labels))
        for line, steps, values in drawable:
            self.points_drawn += int(values.size)
            # Steps as floats: plotext turns them into floats anyway, and float lists take
            # the numpy path of plotext_speedups.get_matrix_data.
            figure.plot(
                steps.astype(np.float64).tolist(),
                axis.drawn(values).tolist(),
                marker=line.marker,
                color=line.color,
            )
        if not axis.ticks:  # a plain axis: round, short ticks instead of plotext's own
            _set_value_ticks(figure, _finite_range([values for _, _, values in drawable]), request)
        return str(figure.build())


def _finite_range(arrays: list[np.ndarray]) -> tuple[float, float]:
    low, high = math.inf, -math.inf
    for values in arrays:
        finite = values[np.isfinite(values)]
        if finite.size:
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    return low, high


def _set_value_ticks(figure: Any, value_range: tuple[float, float], request: PlotRequest) -> None:
    """Round, short y labels (plotext's own are long and uneven: 0.00003000, 0.00001301)."""
    low, high = value_range
    if not low <= high:
        return  # nothing drawn
    rows = request.height - Y_AXIS_FRAME_ROWS
    count = tick_count(rows, Y_CELLS_PER_TICK)
    ticks = log_ticks(low, high, count) if request.log_y else nice_ticks(low, high, count)
    ticks = spaced_ticks(ticks, low, high, rows, log=request.log_y)
    if ticks:
        figure.yticks(ticks, tick_labels(ticks))
