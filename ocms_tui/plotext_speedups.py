"""numpy versions of plotext's two hottest helpers, output for output the same.

Profiling a chart build (160x48 screen, noisy series M4-reduced to the canvas) showed about
three quarters of plotext's time in two pure-Python loops of `plotext._utility`: `get_lines`
(the pixels of the line between every two points) and `hd_group` (braille dots grouped per
character cell). Both do integer arithmetic on a few thousand points per series; here they do
it in numpy, returning the very lists plotext's own code returns, so plotext stays the
plotting library and draws the same characters, only 3-4x sooner. Anything unusual (a gap,
mixed marker sizes, fewer than two points) goes to plotext's own code.

`install()` swaps them into `plotext._utility`, which `plotext._build` reads at call time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotext._utility as plotext_utility

_ORIGINAL_GET_LINES: Callable[..., list[Any]] = plotext_utility.get_lines
_ORIGINAL_HD_GROUP: Callable[..., tuple[Any, Any, Any]] = plotext_utility.hd_group
_ORIGINAL_BRUSH: Callable[..., list[Any]] = plotext_utility.brush
_ORIGINAL_GET_MATRIX_DATA: Callable[..., list[Any]] = plotext_utility.get_matrix_data
# Below this many points numpy's per-call cost outweighs the loop it replaces.
_FEW_POINTS = 32


def _integers(values: Sequence[Any]) -> np.ndarray | None:
    """`values` as an int64 array when every one is a plain int (pixel coordinates); None for
    anything else (None gaps, strings of dates), which plotext's own code handles."""
    if not all(type(value) is int for value in values):
        return None
    return np.fromiter(values, dtype=np.int64, count=len(values))


def get_lines(x: list[Any], y: list[Any], *other: list[Any]) -> list[Any]:
    """plotext's `get_lines`: the points of the straight lines between consecutive points,
    each line's last point left to the next line, and `other` (markers, colours, styles)
    repeated along."""
    xs, ys = (_integers(x), _integers(y)) if len(x) >= 2 and len(x) == len(y) else (None, None)
    if xs is None or ys is None or any(len(values) != len(x) for values in other):
        return _ORIGINAL_GET_LINES(x, y, *other)
    x0, y0 = xs[:-1], ys[:-1]
    dx, dy = xs[1:] - x0, ys[1:] - y0
    # get_line: max(|dx|, |dy|) + 1 points, the last one dropped (the next line's first).
    counts = np.maximum(np.abs(dx), np.abs(dy))
    steps = np.where(counts > 0, counts, 1).astype(np.float64)
    segment = np.repeat(np.arange(counts.size), counts)
    offsets = np.arange(segment.size) - np.repeat(np.cumsum(counts) - counts, counts)
    # linspace's `lower + k * slope` in float64, then int(): the same floats, the same ints.
    line_x = x0[segment] + offsets * (dx[segment] / steps[segment])
    line_y = y0[segment] + offsets * (dy[segment] / steps[segment])
    line_x = np.append(line_x.astype(np.int64), xs[-1])
    line_y = np.append(line_y.astype(np.int64), ys[-1])
    source = np.append(segment, xs.size - 1).tolist()
    repeated = [[values[index] for index in source] for values in other]
    return [line_x.tolist(), line_y.tolist(), *repeated]


def hd_group(x: list[Any], y: list[Any], xf: list[int], yf: list[int]) -> tuple[Any, Any, Any]:
    """plotext's `hd_group`: high-definition dots grouped into character cells, in order of
    first appearance, each with its dot pattern (rows bottom-up, flattened)."""
    xs, ys = _integers(x), _integers(y)
    if xs is None or ys is None or not x or len(set(xf)) != 1 or len(set(yf)) != 1:
        return _ORIGINAL_HD_GROUP(x, y, xf, yf)
    across, down = xf[0], yf[0]
    cells = np.stack((xs // across, ys // down), axis=1)
    unique, first, inverse = np.unique(cells, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    # The dot of each point within its cell, numbered as plotext flattens the pattern.
    bit = (down - 1 - ys % down) * across + xs % across
    patterns = np.zeros((unique.shape[0], across * down), dtype=np.int64)
    patterns[rank[inverse], bit] = 1
    ordered = unique[order]
    return (
        ordered[:, 0].tolist(),
        ordered[:, 1].tolist(),
        [tuple(pattern) for pattern in patterns.tolist()],
    )


def get_matrix_data(data: list[Any], lim: list[Any], bins: int) -> list[Any]:
    """plotext's `get_matrix_data`: each value's canvas pixel, by plotext's own arithmetic
    (its half-up `round` to 8 decimals, then floor) done on whole arrays. Only for floats
    with float limits: Python's exact integer arithmetic would round differently."""
    if (
        len(data) < _FEW_POINTS
        or not all(type(value) is float for value in data)
        or not all(type(bound) is float for bound in lim)
    ):
        return _ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    values = np.fromiter(data, dtype=np.float64, count=len(data))
    if not np.isfinite(values).all():
        return _ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    scaled = 0.5 + (bins - 1) * (values - lim[0]) / (lim[1] - lim[0])
    scaled = scaled * 10**8
    floor = np.floor(scaled)
    rounded = np.where(scaled - floor < 0.5, floor, np.ceil(scaled)) * 10 ** (-8)
    return np.floor(rounded).astype(np.int64).tolist()


def brush(*lists: list[Any]) -> list[Any]:
    """plotext's `brush`: the points without repeats. plotext keeps a set's order (which
    varies from process to process), so any order draws the same; here a signal whose
    markers, colours and styles are one value each is deduplicated on its integer pixels."""
    length = min(map(len, lists))
    if length < _FEW_POINTS or len(lists) < 2:
        return _ORIGINAL_BRUSH(*lists)
    xs, ys = _integers(lists[0][:length]), _integers(lists[1][:length])
    others = [values[:length] for values in lists[2:]]
    if xs is None or ys is None or any(values.count(values[0]) != length for values in others):
        return _ORIGINAL_BRUSH(*lists)
    pixels = np.unique(np.stack((xs, ys), axis=1), axis=0)
    count = pixels.shape[0]
    return [
        pixels[:, 0].tolist(),
        pixels[:, 1].tolist(),
        *([values[0]] * count for values in others),
    ]


def install() -> None:
    """Make plotext use these (idempotent)."""
    plotext_utility.get_lines = get_lines
    plotext_utility.hd_group = hd_group
    plotext_utility.brush = brush
    plotext_utility.get_matrix_data = get_matrix_data


def uninstall() -> None:
    """plotext's own helpers again (tests compare the two)."""
    plotext_utility.get_lines = _ORIGINAL_GET_LINES
    plotext_utility.hd_group = _ORIGINAL_HD_GROUP
    plotext_utility.brush = _ORIGINAL_BRUSH
    plotext_utility.get_matrix_data = _ORIGINAL_GET_MATRIX_DATA
