"""What a chart build is given and what plotext is handed: the series, the view asked for,
and the plan (the x axis, the ticks and labels, the reduced lines) that decides the picture.

Pure values and the choices made before plotext runs: the x axis that grows in steps while
rows arrive (`grown_extent`) and the round y ticks (`choose_y_ticks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ocms_tui.draw.axis_range import YAxis
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.draw.series_style import MARKER, MARKER_PIXELS_PER_COLUMN, RGB
from ocms_tui.draw.ticks import log_ticks, nice_ticks, spaced_ticks, tick_count, tick_labels

Y_CELLS_PER_TICK = 2  # about a y label every other row (spaced_ticks keeps them apart)
Y_AXIS_FRAME_ROWS = 3  # rows of a plot that are not canvas: frame top and bottom, x labels


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
    # Part of the background layer: every layer series is drawn as one picture of the
    # pixels their lines light, in one colour (runs drawn muted behind the leading ones).
    layer: bool = False

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


# While rows arrive the x axis ends this share of its span past the last step, and keeps
# that end until the rows reach it: a new row then changes the last pixel column at most,
# not every column's M4 bucket, so most new rows at 1M change no pixel and cost no build.
X_HEADROOM = 1 / 64


def grown_extent(
    data: tuple[float, float], previous: tuple[float, float] | None
) -> tuple[float, float]:
    """The x axis for steps spanning `data`, given the axis drawn before. It always holds
    every step (none hidden, the latest shown). Unchanged while the steps still fit and it
    is no looser than X_HEADROOM; when the steps grow past it, it ends X_HEADROOM of the span
    past the last step; anything else (a first draw, steps that shrank or start elsewhere)
    gets the exact span of the steps."""
    low, high = data
    if previous is None or previous[0] != low or not high > low:
        return data
    headroom = (high - low) * X_HEADROOM
    if high <= previous[1] <= high + headroom:
        return previous
    if previous[1] < high:
        return (low, high + headroom)
    return data


@dataclass(frozen=True)
class PlotLine:
    """One series as plotext is given it: the points (M4-reduced, y as the axis draws it),
    as the lists plotext takes and as the float64 arrays they were made from."""

    marker: str
    color: RGB
    steps: list[float]
    values: list[float]
    step_array: npt.NDArray[np.float64] = field(compare=False, repr=False)
    value_array: npt.NDArray[np.float64] = field(compare=False, repr=False)
    scatter: bool = False  # points, not a line through them (the background layer)


Ticks = tuple[tuple[float, ...], tuple[str, ...]]
"""Tick positions and their labels."""


@dataclass(frozen=True)
class Plan:
    """Everything plotext is given for one build; equal plans draw equal pictures."""

    request: PlotRequest
    extent: tuple[float, float]  # the x axis
    data_through: float  # the last step of the data (the axis may end a little later)
    canvas_columns: int | None  # the width M4 reduced for (None: the full series)
    x_ticks: Ticks | None
    y_ticks: Ticks | None
    plotext_log: bool
    lines: tuple[PlotLine, ...]

    @property
    def points(self) -> int:
        return sum(len(line.values) for line in self.lines)


View = tuple[float, float, int]
"""An x range and the canvas columns it is drawn on."""


def choose_y_ticks(
    values: list[npt.NDArray[np.float64]], request: PlotRequest, axis: YAxis
) -> Ticks | None:
    """The y ticks and labels given to plotext for series with these finite `values` on
    `axis`; None leaves the labels to plotext."""
    if axis.ticks:
        return axis.ticks, axis.labels
    # A plain axis: round, short ticks instead of plotext's own.
    ticks = _value_ticks(_finite_range(values), request)
    return (tuple(ticks), tuple(tick_labels(ticks))) if ticks else None


def label_width(labels: tuple[str, ...]) -> int:
    """Columns plotext gives the y labels: the longest (it pads the others to it)."""
    return max(map(len, labels), default=0)


def _finite_range(arrays: list[np.ndarray]) -> tuple[float, float]:
    low, high = math.inf, -math.inf
    for values in arrays:
        finite = values[np.isfinite(values)]
        if finite.size:
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    return low, high


def _value_ticks(value_range: tuple[float, float], request: PlotRequest) -> list[float]:
    """Round, short y ticks (plotext's own are long and uneven: 0.00003000, 0.00001301)."""
    low, high = value_range
    if not low <= high:
        return []  # nothing drawn
    rows = request.height - Y_AXIS_FRAME_ROWS
    count = tick_count(rows, Y_CELLS_PER_TICK)
    ticks = log_ticks(low, high, count) if request.log_y else nice_ticks(low, high, count)
    return spaced_ticks(ticks, low, high, rows, log=request.log_y)
