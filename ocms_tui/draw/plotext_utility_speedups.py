"""numpy versions of plotext's hottest `plotext._utility` helpers, output for output the same.

Profiling a chart build (160x48 screen, noisy series M4-reduced to the canvas) showed most of
plotext's time in pure-Python loops of `plotext._utility`: `get_lines` (the pixels of the
line between every two points), `brush` (the points without repeats), `hd_group` (braille
dots grouped per character cell), `remove_outsiders`, `get_lim` and `join`. Here they do it in
numpy (draw.plotext_speedups), returning the very lists plotext's own code returns, so plotext
stays the plotting library and draws the same characters, only sooner. Anything unusual (a
gap, mixed marker sizes, fewer than two points) goes to plotext's own code.

draw.plotext_install swaps them into `plotext._utility`, which `plotext._build` reads at call
time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import plotext._utility as plotext_utility

from ocms_tui.draw.plotext_speedups import (
    FEW_POINTS,
    ORIGINAL_GET_LIM,
    ORIGINAL_GET_MATRIX_DATA,
    ambiguous,
    extremes,
    integer_array,
    line_pixels,
    matrix_pixels,
    pixel_keys,
    pixel_list,
    repeated_along,
)

# plotext's own, taken before any is swapped: the cases these leave to plotext.
ORIGINAL_GET_LINES: Callable[..., list[Any]] = plotext_utility.get_lines
ORIGINAL_HD_GROUP: Callable[..., tuple[Any, Any, Any]] = plotext_utility.hd_group
ORIGINAL_BRUSH: Callable[..., list[Any]] = plotext_utility.brush
ORIGINAL_REMOVE_OUTSIDERS: Callable[..., list[Any]] = plotext_utility.remove_outsiders
ORIGINAL_JOIN: Callable[..., list[Any]] = plotext_utility.join
_FLOAT = frozenset({float})


def get_lines(x: list[Any], y: list[Any], *other: list[Any]) -> list[Any]:
    """plotext's `get_lines`: the points of the straight lines between consecutive points,
    each line's last point left to the next line, and `other` (markers, colours, styles)
    repeated along."""
    xs, ys = (
        (integer_array(x), integer_array(y)) if len(x) >= 2 and len(x) == len(y) else (None, None)
    )
    if xs is None or ys is None or any(len(values) != len(x) for values in other):
        return ORIGINAL_GET_LINES(x, y, *other)
    line_x, line_y, source = line_pixels(xs, ys)
    return [
        pixel_list(line_x),
        pixel_list(line_y),
        *(repeated_along(values, source) for values in other),
    ]


def _head(values: list[Any], length: int) -> list[Any]:
    """`values[:length]`, the list itself (and so its remembered array) when nothing is cut."""
    return values if len(values) == length else values[:length]


def hd_group(x: list[Any], y: list[Any], xf: list[int], yf: list[int]) -> tuple[Any, Any, Any]:
    """plotext's `hd_group`: high-definition dots grouped into character cells, in order of
    first appearance, each with its dot pattern (rows bottom-up, flattened)."""
    xs, ys = integer_array(x), integer_array(y)
    if (
        xs is None
        or ys is None
        or not x
        or xf.count(xf[0]) != len(xf)
        or yf.count(yf[0]) != len(yf)
    ):
        return ORIGINAL_HD_GROUP(x, y, xf, yf)
    across, down = xf[0], yf[0]
    cell_x, cell_y = xs // across, ys // down
    _, first, inverse = np.unique(
        pixel_keys(cell_x, cell_y), return_index=True, return_inverse=True
    )
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    # The dot of each point within its cell, numbered as plotext flattens the pattern.
    bit = (down - 1 - ys % down) * across + xs % across
    patterns = np.zeros((order.size, across * down), dtype=np.int64)
    patterns[rank[inverse.reshape(-1)], bit] = 1
    firsts = first[order]
    return (
        pixel_list(cell_x[firsts]),
        pixel_list(cell_y[firsts]),
        list(map(tuple, patterns.tolist())),
    )


def get_matrix_data(data: list[Any], lim: list[Any], bins: int) -> list[Any]:
    """plotext's `get_matrix_data`: each value's canvas pixel, by plotext's own arithmetic
    (its half-up `round` to 8 decimals, then floor) done on whole arrays. Only for floats
    with float limits: Python's exact integer arithmetic would round differently."""
    if len(data) < FEW_POINTS or set(map(type, data)) != _FLOAT or set(map(type, lim)) != _FLOAT:
        return ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    values = np.fromiter(data, dtype=np.float64, count=len(data))
    if not np.isfinite(values).all():
        return ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    return pixel_list(matrix_pixels(values, lim, bins))


def brush(*lists: list[Any]) -> list[Any]:
    """plotext's `brush`: the points without repeats. plotext keeps a set's order (which
    varies from process to process), so any order draws the same. A signal whose markers,
    colours and styles are one value each is deduplicated on its integer pixels; points whose
    pixels are all different already (dot cells after `hd_group`) are handed back as they
    are."""
    length = min(map(len, lists))
    if length < FEW_POINTS or len(lists) < 2:
        return ORIGINAL_BRUSH(*lists)
    xs, ys = integer_array(_head(lists[0], length)), integer_array(_head(lists[1], length))
    if xs is None or ys is None:
        return ORIGINAL_BRUSH(*lists)
    others = [values[:length] for values in lists[2:]]
    keys = pixel_keys(xs, ys)
    if all(values.count(values[0]) == length for values in others):
        _, first = np.unique(keys, return_index=True)
        return [
            pixel_list(xs[first]),
            pixel_list(ys[first]),
            *([v[0]] * first.size for v in others),
        ]
    if np.unique(keys).size == length:  # no two points share a pixel: no two are alike
        return [pixel_list(xs), pixel_list(ys), *others]
    return ORIGINAL_BRUSH(*lists)


def remove_outsiders(x: list[Any], y: list[Any], width: int, height: int, *other: Any) -> Any:
    """plotext's `remove_outsiders`: the points within the canvas, with the first len(x)
    entries of each `other` along (plotext hands it colours and styles still one per
    pixel, longer than the list of cells; its own zip cuts them likewise)."""
    count = len(x)
    xs, ys = (integer_array(x), integer_array(y)) if len(y) == count else (None, None)
    if xs is None or ys is None or not x or any(len(values) < count for values in other):
        return ORIGINAL_REMOVE_OUTSIDERS(x, y, width, height, *other)
    inside = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
    if inside.all():
        return [pixel_list(xs), pixel_list(ys), *(list(values[:count]) for values in other)]
    kept = np.flatnonzero(inside)
    if kept.size == 0:
        return ORIGINAL_REMOVE_OUTSIDERS(x, y, width, height, *other)  # its empty shape
    return [
        pixel_list(xs[kept]),
        pixel_list(ys[kept]),
        *(repeated_along(list(values[:count]), kept) for values in other),
    ]


def get_lim(data: list[Any]) -> list[Any]:
    """plotext's `get_lim`: the least and greatest value (gaps left out), spread when equal.
    For floats only, without NaN, and without zeros of both signs (min() keeps whichever
    comes first, numpy either)."""
    if len(data) < FEW_POINTS or set(map(type, data)) != _FLOAT:
        return ORIGINAL_GET_LIM(data)
    values = np.fromiter(data, dtype=np.float64, count=len(data))
    return ORIGINAL_GET_LIM(data) if ambiguous(values) else extremes(values)


def join(data: list[Any]) -> list[Any]:
    """plotext's `join`: nested lists flattened. A list holding no list is copied whole
    instead of element by element (`list in map(type, row)` checks in C)."""
    joined: list[Any] = []
    for row in data:
        if type(row) is not list:
            joined.append(row)
        elif list in map(type, row):
            joined.extend(join(row))
        else:
            joined.extend(row)
    return joined
