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
from ocms_tui.downsample import m4
from ocms_tui.pyramid import MinMaxPyramid

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
        if request.log_y:
            figure.yscale("log")
        low, high = extent
        if high > low:
            figure.xlim(low, high)
            ticks = nice_ticks(low, high)
            figure.xticks(ticks, [format_tick(tick) for tick in ticks])
        self.points_drawn = 0
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
            if values.size == 0:
                continue
            self.points_drawn += int(values.size)
            # Steps as floats: plotext turns them into floats anyway, and float lists take
            # the numpy path of plotext_speedups.get_matrix_data.
            figure.plot(
                steps.astype(np.float64).tolist(),
                values.tolist(),
                marker=line.marker,
                color=line.color,
            )
        return str(figure.build())


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values (1, 2, 2.5 or 5 times a power of ten) within [low, high]."""
    span = high - low
    if not span > 0:
        return [low]
    raw = span / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(
        (magnitude * factor for factor in (1, 2, 2.5, 5) if magnitude * factor >= raw),
        magnitude * 10,
    )
    first = math.ceil(low / step) * step
    return [first + index * step for index in range(int((high - first) / step + 1e-9) + 1)]


def format_tick(value: float) -> str:
    """A step as an axis label: 0, 750, 2.5k, 120k, 1.5M."""
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.4g}{suffix}"
    return f"{value:.4g}"
