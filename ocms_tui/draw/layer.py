"""The background layer: hundreds of series (runs drawn muted) as one set of lit pixels.

An M4 reduction per series costs about a millisecond of Python calls whatever its size:
2,000 muted series a panel made a sweep of 500 runs take seconds per build. Series that share
their steps (runs logging at the same interval, the usual sweep) are reduced together here,
as one 2-D array per pixel column: each series' first, lowest, highest and last value in each
column (what M4 keeps), then the pixels plotext's lines through those points light: the span
from the lowest to the highest value in a column, and plotext's own straight line from each
column's last value to the next column's first. The layer is drawn as one plotext signal of
those pixels (see ChartCanvas._layer_line).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ocms_tui.draw import plotext_speedups

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LayerColumns:
    """Series sharing their steps, reduced to pixel columns: `x` the pixel column of each
    bucket; `first`, `low`, `high`, `last` (series x buckets) NaN where a series has no
    finite value in that column."""

    x: np.ndarray
    first: FloatArray
    low: FloatArray
    high: FloatArray
    last: FloatArray
    # The pixels these columns lit, per y axis and canvas (see LayerCache.pixels).
    lit: dict[Hashable, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def values(self) -> FloatArray:
        """Every value kept (finite), for the y axis: M4 keeps each column's extremes."""
        both = np.concatenate((self.low.ravel(), self.high.ravel()))
        return both[np.isfinite(both)]


# Views (x range, canvas width) whose layer is kept per chart: a key that leaves a view and
# comes back (enter then escape, ] then 0) reduces nothing again. A view of 1,500 grey series
# in 150 pixel columns keeps 7 MB.
KEPT_VIEWS = 3
KEPT_PIXELS = 8  # y axes (and canvas heights) whose lit pixels are kept per view


class LayerCache:
    """The layer's columns of the last KEPT_VIEWS views of unchanged data, and the pixels
    each lit on the last few y axes. Data is recognised by where its arrays' values start
    and how many there are, while the arrays owning them are alive (held weakly: a freed
    buffer's address may be another's next, and a kept view must not keep data alive)."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[list[weakref.ref[np.ndarray]], list[LayerColumns]]] = {}
        self.reductions = 0
        """Views reduced so far (a view found kept adds nothing)."""

    def columns(
        self,
        series: Sequence[tuple[np.ndarray, FloatArray]],
        extent: tuple[float, float],
        width: int,
    ) -> list[LayerColumns]:
        """`layer_columns(series, extent, width)`, kept."""
        key = (
            float(extent[0]),
            float(extent[1]),
            width,
            tuple((_address(s), len(s), _address(v), len(v)) for s, v in series),
        )
        found = self._kept.pop(key, None)
        if found is None or any(owner() is None for owner in found[0]):
            owners = {id(root): root for pair in series for root in map(_owner, pair)}
            found = ([weakref.ref(root) for root in owners.values()], [])
            found[1].extend(layer_columns(series, extent, width))
            self.reductions += 1
        self._kept[key] = found  # the latest last
        while len(self._kept) > KEPT_VIEWS:
            del self._kept[next(iter(self._kept))]
        return found[1]

    @staticmethod
    def pixels(
        columns: Sequence[LayerColumns],
        drawn: Callable[[FloatArray], FloatArray],
        y_limits: list[float],
        width: int,
        height: int,
        axis: Hashable,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`layer_pixels`, kept with the first group's columns for the y axis `axis` (what
        `drawn` does) and limits: a plan made again for a view shown before maps nothing."""
        if not columns:
            return layer_pixels(columns, drawn, y_limits, width, height)
        key = (axis, tuple(y_limits), width, height, len(columns))
        kept = columns[0].lit
        found = kept.pop(key, None)
        if found is None:
            found = layer_pixels(columns, drawn, y_limits, width, height)
        kept[key] = found
        while len(kept) > KEPT_PIXELS:
            del kept[next(iter(kept))]
        return found


def _address(array: np.ndarray) -> int:
    """Where an array's values start: equal for two views of the same buffer."""
    return int(array.__array_interface__["data"][0])


def _owner(array: np.ndarray) -> np.ndarray:
    """The array owning the buffer a view shows."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _groups(
    series: Sequence[tuple[np.ndarray, FloatArray]],
) -> list[tuple[np.ndarray, list[FloatArray]]]:
    """Series by equal steps (compared whole once per candidate group)."""
    groups: list[tuple[np.ndarray, list[FloatArray]]] = []
    for steps, values in series:
        rows = min(len(steps), len(values))
        steps, values = steps[:rows], values[:rows]
        if not rows:
            continue
        for known, members in groups:
            same_ends = len(known) == rows and known[0] == steps[0] and known[-1] == steps[-1]
            # Runs of one chart share its steps' buffer (views of it): no compare needed.
            shared = known is steps or _address(known) == _address(steps)
            if same_ends and (shared or np.array_equal(known, steps)):
                members.append(values)
                break
        else:
            groups.append((steps, [values]))
    return groups


def layer_columns(
    series: Sequence[tuple[np.ndarray, FloatArray]],
    extent: tuple[float, float],
    width: int,
) -> list[LayerColumns]:
    """`series` as (sorted steps, values), reduced to `width` pixel columns across the x
    range `extent` (plotext's own mapping of a step to its pixel column)."""
    x_limits = [float(extent[0]), float(extent[1])]
    found = []
    for steps, members in _groups(series):
        start = int(np.searchsorted(steps, extent[0], side="left"))
        stop = int(np.searchsorted(steps, extent[1], side="right"))
        if stop <= start:
            continue
        pixels = plotext_speedups.matrix_pixels(
            steps[start:stop].astype(np.float64), x_limits, width
        )
        starts = np.flatnonzero(np.r_[True, pixels[1:] != pixels[:-1]])
        values = np.vstack([member[start:stop] for member in members])
        found.append(LayerColumns(pixels[starts], *_m4_columns(values, starts)))
    return found


def _m4_columns(
    values: FloatArray, starts: np.ndarray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Each row's first, lowest, highest and last finite value in each column (the columns
    begin at `starts`), NaN where a column has none."""
    finite = np.isfinite(values)
    if finite.all():  # the usual sweep: a column's first and last values are its edges
        ends = np.r_[starts[1:], values.shape[1]] - 1
        low = np.minimum.reduceat(values, starts, axis=1)
        high = np.maximum.reduceat(values, starts, axis=1)
        return values[:, starts], low, high, values[:, ends]
    masked = np.where(finite, values, np.nan)
    with np.errstate(invalid="ignore"):
        low = np.fmin.reduceat(masked, starts, axis=1)
        high = np.fmax.reduceat(masked, starts, axis=1)
    positions = np.arange(values.shape[1])
    count = values.shape[1]
    first_at = np.minimum.reduceat(np.where(finite, positions, count), starts, axis=1)
    last_at = np.maximum.reduceat(np.where(finite, positions, -1), starts, axis=1)
    first = np.take_along_axis(masked, np.minimum(first_at, count - 1), axis=1)
    last = np.take_along_axis(masked, np.maximum(last_at, 0), axis=1)
    first[first_at == count] = np.nan
    last[last_at < 0] = np.nan
    return first, low, high, last


def layer_pixels(
    columns: Sequence[LayerColumns],
    drawn: Callable[[FloatArray], FloatArray],
    y_limits: list[float],
    width: int,
    height: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The pixels (x, y) inside the canvas that the layer's lines light, each once. `drawn`:
    values as plotext is given them (the y axis' scaling).

    Every pixel a series lights in a column is one run of rows (its span from the lowest to
    the highest value, and plotext's line to the next column, which between neighbouring
    columns steps one row at a time in the left column): the runs are counted into one
    difference array per column and summed up, never listed pixel by pixel (at 1,000 grey
    runs listing them took over a second a panel)."""
    runs = _PixelRuns(width, height)
    for group in columns:
        pixel = {
            name: _y_pixels(drawn(getattr(group, name)), y_limits, height)
            for name in ("first", "low", "high", "last")
        }
        # (series, column) of every column where a series has a value, each series' in order.
        rows, where = np.nonzero(pixel["low"] >= 0)
        x = group.x[where]
        runs.add(x, pixel["low"][rows, where], pixel["high"][rows, where])
        # plotext's line from each column's last value to the series' next column's first.
        joined = np.flatnonzero(rows[1:] == rows[:-1])
        if not joined.size:
            continue
        before, after = joined, joined + 1
        x0, x1 = x[before], x[after]
        y0 = pixel["last"][rows[before], where[before]]
        y1 = pixel["first"][rows[after], where[after]]
        neighbours = x1 - x0 == 1
        # Between neighbouring columns plotext's line (get_line: max(|dx|, |dy|) points,
        # x advancing by 1/|dy|, so kept at x0 but for the end) covers y0 up to the row
        # before y1 at x0, then y1 at x1.
        toward = y1[neighbours] - np.sign(y1[neighbours] - y0[neighbours])
        start, stop = y0[neighbours], toward
        runs.add(x0[neighbours], np.minimum(start, stop), np.maximum(start, stop))
        runs.add(x1[neighbours], y1[neighbours], y1[neighbours])
        apart = ~neighbours
        if apart.any():  # a gap of columns: plotext's own line arithmetic
            segment_x, segment_y = plotext_speedups.segment_pixels(
                x0[apart], y0[apart], x1[apart], y1[apart]
            )
            runs.add(segment_x, segment_y, segment_y)
    return runs.lit()


class _PixelRuns:
    """Runs of rows lit in pixel columns (x, from row `low` to row `high`), kept as counts
    in a difference array along each column; `lit()` is every pixel inside the canvas that
    one of them covers, in order of x, then y."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self._starts: list[np.ndarray] = []
        self._ends: list[np.ndarray] = []

    def add(self, x: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        low, high = np.maximum(low, 0), np.minimum(high, self.height - 1)
        inside = (x >= 0) & (x < self.width) & (low <= high)
        x, low, high = x[inside], low[inside], high[inside]
        stride = self.height + 1  # a run ending on the top row marks the spare row
        self._starts.append(x * stride + low)
        self._ends.append(x * stride + high + 1)

    def lit(self) -> tuple[np.ndarray, np.ndarray]:
        width, height = self.width, self.height
        if not self._starts or width < 1 or height < 1:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        size = width * (height + 1)
        counts = np.bincount(np.concatenate(self._starts), minlength=size)
        counts -= np.bincount(np.concatenate(self._ends), minlength=size)
        covered = np.cumsum(counts.reshape(width, height + 1), axis=1)[:, :height] > 0
        keys = np.flatnonzero(covered)
        return keys // height, keys % height


def _y_pixels(values: FloatArray, y_limits: list[float], height: int) -> np.ndarray:
    """plotext's pixel row of each value; -1 where there is none (NaN)."""
    shape = values.shape
    flat = values.ravel()
    result = np.full(flat.size, -1, dtype=np.int64)
    finite = np.isfinite(flat)
    if finite.any():
        # Not `matrix_pixels`: it remembers results by their inputs' bytes, for a line's
        # few points drawn twice; a layer's arrays are large and new with each view.
        result[finite] = plotext_speedups._matrix_pixels(flat[finite], y_limits, height)
    return result.reshape(shape)
