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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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

    def values(self) -> FloatArray:
        """Every value kept (finite), for the y axis: M4 keeps each column's extremes."""
        both = np.concatenate((self.low.ravel(), self.high.ravel()))
        return both[np.isfinite(both)]


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
            if same_ends and (known is steps or np.array_equal(known, steps)):
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
        finite = np.isfinite(values)
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
        found.append(LayerColumns(pixels[starts], first, low, high, last))
    return found


def layer_pixels(
    columns: Sequence[LayerColumns],
    drawn: Callable[[FloatArray], FloatArray],
    y_limits: list[float],
    width: int,
    height: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The pixels (x, y) inside the canvas that the layer's lines light, each once. `drawn`:
    values as plotext is given them (the y axis' scaling)."""
    lit_x: list[np.ndarray] = []
    lit_y: list[np.ndarray] = []
    for group in columns:
        pixel = {
            name: _y_pixels(drawn(getattr(group, name)), y_limits, height)
            for name in ("first", "low", "high", "last")
        }
        present = pixel["low"] >= 0  # a column where the series has a value
        # The span from the lowest to the highest value of each column.
        x = np.broadcast_to(group.x, present.shape)[present]
        low, high = pixel["low"][present], pixel["high"][present]
        spans = high - low + 1
        lit_x.append(np.repeat(x, spans))
        lit_y.append(np.repeat(low, spans) + _offsets(spans))
        # plotext's line from each column's last value to the series' next column's first:
        # every series' joins at once (`nonzero` lists each row's columns in order).
        rows, where = np.nonzero(present)
        joined = np.flatnonzero(rows[1:] == rows[:-1])
        if joined.size:
            before, after = joined, joined + 1
            segment_x, segment_y = plotext_speedups.segment_pixels(
                group.x[where[before]],
                pixel["last"][rows[before], where[before]],
                group.x[where[after]],
                pixel["first"][rows[after], where[after]],
            )
            lit_x.append(segment_x)
            lit_y.append(segment_y)
    if not lit_x:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    every_x, every_y = np.concatenate(lit_x), np.concatenate(lit_y)
    inside = (every_x >= 0) & (every_x < width) & (every_y >= 0) & (every_y < height)
    lit = np.zeros(width * height, dtype=bool)  # a bitmap: each pixel once, cheaper than unique
    lit[every_x[inside] * height + every_y[inside]] = True
    keys = np.flatnonzero(lit)
    return keys // height, keys % height


def _y_pixels(values: FloatArray, y_limits: list[float], height: int) -> np.ndarray:
    """plotext's pixel row of each value; -1 where there is none (NaN)."""
    shape = values.shape
    flat = values.ravel()
    result = np.full(flat.size, -1, dtype=np.int64)
    finite = np.isfinite(flat)
    if finite.any():
        result[finite] = plotext_speedups.matrix_pixels(flat[finite], y_limits, height)
    return result.reshape(shape)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., n-1 for each n of `lengths`, one after another."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
