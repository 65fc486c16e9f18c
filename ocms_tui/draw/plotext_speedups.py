"""numpy versions of plotext's hottest helpers, output for output the same.

Profiling a chart build (160x48 screen, noisy series M4-reduced to the canvas) showed most of
plotext's time in pure-Python loops of `plotext._utility`: `get_lines` (the pixels of the
line between every two points), `brush` (the points without repeats), `hd_group` (braille
dots grouped per character cell), `remove_outsiders`, `get_lim` and `join`. Here they do it in
numpy, returning the very lists plotext's own code returns, so plotext stays the plotting
library and draws the same characters, only sooner. Anything unusual (a gap, mixed marker
sizes, fewer than two points) goes to plotext's own code.

The pixel lists these helpers hand each other are remembered with the int64 array each was
made from (`_pixels`), so the next helper takes the array instead of checking and
converting every element again; to plotext they are plain lists.

After those, most of a build was still plotext's per-dot lines that turn a signal's dots into
character cells (two calls to `marker_factor` per dot, the dot pattern of each cell, and one
`insert_element` per cell). `place_signal` does that whole step per signal in numpy; it is
swapped into `build_plot` itself, in place of exactly those lines of its source (when they
read as expected; otherwise `build_plot` stays plotext's own).

`install()` swaps them into `plotext._utility`, which `plotext._build` reads at call time.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotext._build as plotext_build
import plotext._utility as plotext_utility
from plotext._matrix import matrix_class
from plotext._monitor import monitor_class

_ORIGINAL_GET_LINES: Callable[..., list[Any]] = plotext_utility.get_lines
_ORIGINAL_HD_GROUP: Callable[..., tuple[Any, Any, Any]] = plotext_utility.hd_group
_ORIGINAL_BRUSH: Callable[..., list[Any]] = plotext_utility.brush
_ORIGINAL_GET_MATRIX_DATA: Callable[..., list[Any]] = plotext_utility.get_matrix_data
_ORIGINAL_REMOVE_OUTSIDERS: Callable[..., list[Any]] = plotext_utility.remove_outsiders
_ORIGINAL_GET_LIM: Callable[..., list[Any]] = plotext_utility.get_lim
_ORIGINAL_JOIN: Callable[..., list[Any]] = plotext_utility.join
_ORIGINAL_INSERT_ELEMENT: Callable[..., None] = matrix_class.insert_element
_ORIGINAL_SET_MATRICES: Callable[..., None] = matrix_class.set_matrices
_ORIGINAL_BUILD_PLOT: Callable[..., None] = plotext_build.build_class.build_plot
_ORIGINAL_TO_TIME: Callable[..., tuple[Any, bool]] = monitor_class.to_time
# Below this many points numpy's per-call cost outweighs the loop it replaces.
_FEW_POINTS = 32
_INT = frozenset({int})
_FLOAT = frozenset({float})
_NUMBERS = frozenset({int, float})


# Lists made by these helpers -> (the list, the array it was made from). The list is kept
# with its array so that its id cannot be reused by another list while it is remembered;
# plotext only reads these lists and builds new ones from them, never changes one in place.
_ARRAYS: dict[int, tuple[list[int], np.ndarray]] = {}
_REMEMBERED = 256  # a build makes about a dozen per signal; older ones are forgotten


def _pixels(array: np.ndarray) -> list[int]:
    """`array` as the list of ints plotext expects, remembered for the next helper."""
    values: list[int] = array.tolist()
    if len(_ARRAYS) >= _REMEMBERED:
        del _ARRAYS[next(iter(_ARRAYS))]  # the oldest: dicts keep insertion order
    _ARRAYS[id(values)] = (values, array)
    return values


def _integers(values: Sequence[Any]) -> np.ndarray | None:
    """`values` as an int64 array when every one is a plain int (pixel coordinates); None for
    anything else (None gaps, strings of dates), which plotext's own code handles."""
    remembered = _ARRAYS.get(id(values))
    if remembered is not None and remembered[0] is values:
        return remembered[1]
    if set(map(type, values)) != _INT:  # the check in C: no Python loop over the values
        return None
    return np.fromiter(values, dtype=np.int64, count=len(values))


def _repeated(values: list[Any], source: np.ndarray) -> list[Any]:
    """`[values[i] for i in source]`; one marker, colour or style for a whole signal (the
    usual case) is repeated without a Python loop."""
    if values and values.count(values[0]) == len(values):
        return [values[0]] * int(source.size)
    return [values[index] for index in source.tolist()]


def _pixel_keys(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """One int64 per (x, y) pair, equal exactly when the pairs are equal."""
    low_y = int(ys.min())
    return (xs - int(xs.min())) * (int(ys.max()) - low_y + 1) + (ys - low_y)


# The last results of `matrix_pixels` and `line_pixels` by their inputs' bytes: a follower
# asks each twice for the same points (ChartCanvas.shows keys a plan by the pixels its lines
# light, then plotext's build computes them again), about a tenth of a read at 1,000 rows.
_RESULTS: dict[tuple[object, ...], Any] = {}
_KEPT_RESULTS = 64  # a few builds' worth of series (6 charts x 4 series x 3 arrays)


def _remembered(key: tuple[object, ...], compute: Callable[[], Any]) -> Any:
    found = _RESULTS.get(key)
    if found is None:
        found = compute()
        for array in found if isinstance(found, tuple) else (found,):
            array.flags.writeable = False  # shared by every caller with these inputs
        if len(_RESULTS) >= _KEPT_RESULTS:
            del _RESULTS[next(iter(_RESULTS))]  # the oldest: dicts keep insertion order
        _RESULTS[key] = found
    return found


def line_pixels(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`get_lines` on int64 pixel arrays: the line's pixels, and for each the index of the
    point whose line it belongs to. The arrays returned are read-only."""
    key = ("lines", xs.dtype.str, ys.dtype.str, xs.tobytes(), ys.tobytes())
    result: tuple[np.ndarray, np.ndarray, np.ndarray] = _remembered(
        key, lambda: _line_pixels(xs, ys)
    )
    return result


def _line_pixels(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if xs.size < 2:
        return xs.copy(), ys.copy(), np.arange(xs.size)
    line_x, line_y, segment = _segments(xs[:-1], ys[:-1], xs[1:], ys[1:])
    line_x = np.append(line_x, xs[-1])
    line_y = np.append(line_y, ys[-1])
    return line_x, line_y, np.append(segment, xs.size - 1)


def segment_pixels(
    x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pixels of plotext's straight lines from each (x0, y0) to its (x1, y1), both ends
    included: separate lines (a background layer's joins between pixel columns)."""
    line_x, line_y, _ = _segments(x0, y0, x1, y1)
    return np.append(line_x, x1), np.append(line_y, y1)


def _segments(
    x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """plotext's get_line for each segment, its last point left out (the next one's first),
    and the segment each pixel belongs to."""
    dx, dy = x1 - x0, y1 - y0
    # get_line: max(|dx|, |dy|) + 1 points, the last one dropped (the next line's first).
    counts = np.maximum(np.abs(dx), np.abs(dy))
    steps = np.where(counts > 0, counts, 1).astype(np.float64)
    segment = np.repeat(np.arange(counts.size), counts)
    offsets = np.arange(segment.size) - np.repeat(np.cumsum(counts) - counts, counts)
    # linspace's `lower + k * slope` in float64, then int(): the same floats, the same ints.
    line_x = x0[segment] + offsets * (dx[segment] / steps[segment])
    line_y = y0[segment] + offsets * (dy[segment] / steps[segment])
    return line_x.astype(np.int64), line_y.astype(np.int64), segment


def get_lines(x: list[Any], y: list[Any], *other: list[Any]) -> list[Any]:
    """plotext's `get_lines`: the points of the straight lines between consecutive points,
    each line's last point left to the next line, and `other` (markers, colours, styles)
    repeated along."""
    xs, ys = (_integers(x), _integers(y)) if len(x) >= 2 and len(x) == len(y) else (None, None)
    if xs is None or ys is None or any(len(values) != len(x) for values in other):
        return _ORIGINAL_GET_LINES(x, y, *other)
    line_x, line_y, source = line_pixels(xs, ys)
    return [_pixels(line_x), _pixels(line_y), *(_repeated(values, source) for values in other)]


def _head(values: list[Any], length: int) -> list[Any]:
    """`values[:length]`, the list itself (and so its remembered array) when nothing is cut."""
    return values if len(values) == length else values[:length]


def hd_group(x: list[Any], y: list[Any], xf: list[int], yf: list[int]) -> tuple[Any, Any, Any]:
    """plotext's `hd_group`: high-definition dots grouped into character cells, in order of
    first appearance, each with its dot pattern (rows bottom-up, flattened)."""
    xs, ys = _integers(x), _integers(y)
    if (
        xs is None
        or ys is None
        or not x
        or xf.count(xf[0]) != len(xf)
        or yf.count(yf[0]) != len(yf)
    ):
        return _ORIGINAL_HD_GROUP(x, y, xf, yf)
    across, down = xf[0], yf[0]
    cell_x, cell_y = xs // across, ys // down
    _, first, inverse = np.unique(
        _pixel_keys(cell_x, cell_y), return_index=True, return_inverse=True
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
        _pixels(cell_x[firsts]),
        _pixels(cell_y[firsts]),
        list(map(tuple, patterns.tolist())),
    )


def get_matrix_data(data: list[Any], lim: list[Any], bins: int) -> list[Any]:
    """plotext's `get_matrix_data`: each value's canvas pixel, by plotext's own arithmetic
    (its half-up `round` to 8 decimals, then floor) done on whole arrays. Only for floats
    with float limits: Python's exact integer arithmetic would round differently."""
    if len(data) < _FEW_POINTS or set(map(type, data)) != _FLOAT or set(map(type, lim)) != _FLOAT:
        return _ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    values = np.fromiter(data, dtype=np.float64, count=len(data))
    if not np.isfinite(values).all():
        return _ORIGINAL_GET_MATRIX_DATA(data, lim, bins)
    return _pixels(matrix_pixels(values, lim, bins))


def matrix_pixels(values: np.ndarray, lim: list[float], bins: int) -> np.ndarray:
    """`get_matrix_data` of finite float64 `values` with float limits, as a read-only int64
    array (a few values go through plotext's own code, as `get_matrix_data` sends them)."""
    key = ("matrix", values.dtype.str, values.tobytes(), *map(repr, lim), bins)
    result: np.ndarray = _remembered(key, lambda: _matrix_pixels(values, lim, bins))
    return result


def _matrix_pixels(values: np.ndarray, lim: list[float], bins: int) -> np.ndarray:
    if values.size < _FEW_POINTS:
        return np.array(_ORIGINAL_GET_MATRIX_DATA(values.tolist(), lim, bins), dtype=np.int64)
    scaled = 0.5 + (bins - 1) * (values - lim[0]) / (lim[1] - lim[0])
    scaled = scaled * 10**8
    floor = np.floor(scaled)
    rounded = np.where(scaled - floor < 0.5, floor, np.ceil(scaled)) * 10 ** (-8)
    return np.floor(rounded).astype(np.int64)


def limits(arrays: list[np.ndarray]) -> list[Any]:
    """`get_lim` of the joined float64 `arrays` (as lists of floats they would be)."""
    joined = np.concatenate(arrays) if arrays else np.zeros(0)
    if joined.size < _FEW_POINTS:
        return _ORIGINAL_GET_LIM(joined.tolist())
    return _ORIGINAL_GET_LIM(joined.tolist()) if _ambiguous(joined) else _extremes(joined)


def _extremes(values: np.ndarray) -> list[Any]:
    return [float(values.min()), float(values.max())]


def _ambiguous(values: np.ndarray) -> bool:
    """Where numpy's extremes may differ from plotext's: NaN, all equal, zeros of both
    signs."""
    low, high = float(values.min()), float(values.max())
    if low != low or low == high:
        return True
    if low == 0.0 or high == 0.0:
        signs = np.signbit(values[values == 0.0])
        return bool(signs.any() and not signs.all())
    return False


def brush(*lists: list[Any]) -> list[Any]:
    """plotext's `brush`: the points without repeats. plotext keeps a set's order (which
    varies from process to process), so any order draws the same. A signal whose markers,
    colours and styles are one value each is deduplicated on its integer pixels; points whose
    pixels are all different already (dot cells after `hd_group`) are handed back as they
    are."""
    length = min(map(len, lists))
    if length < _FEW_POINTS or len(lists) < 2:
        return _ORIGINAL_BRUSH(*lists)
    xs, ys = _integers(_head(lists[0], length)), _integers(_head(lists[1], length))
    if xs is None or ys is None:
        return _ORIGINAL_BRUSH(*lists)
    others = [values[:length] for values in lists[2:]]
    keys = _pixel_keys(xs, ys)
    if all(values.count(values[0]) == length for values in others):
        _, first = np.unique(keys, return_index=True)
        return [_pixels(xs[first]), _pixels(ys[first]), *([v[0]] * first.size for v in others)]
    if np.unique(keys).size == length:  # no two points share a pixel: no two are alike
        return [_pixels(xs), _pixels(ys), *others]
    return _ORIGINAL_BRUSH(*lists)


def remove_outsiders(x: list[Any], y: list[Any], width: int, height: int, *other: Any) -> Any:
    """plotext's `remove_outsiders`: the points within the canvas, with the first len(x)
    entries of each `other` along (plotext hands it colours and styles still one per
    pixel, longer than the list of cells; its own zip cuts them likewise)."""
    count = len(x)
    xs, ys = (_integers(x), _integers(y)) if len(y) == count else (None, None)
    if xs is None or ys is None or not x or any(len(values) < count for values in other):
        return _ORIGINAL_REMOVE_OUTSIDERS(x, y, width, height, *other)
    inside = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
    if inside.all():
        return [_pixels(xs), _pixels(ys), *(list(values[:count]) for values in other)]
    kept = np.flatnonzero(inside)
    if kept.size == 0:
        return _ORIGINAL_REMOVE_OUTSIDERS(x, y, width, height, *other)  # its empty shape
    return [
        _pixels(xs[kept]),
        _pixels(ys[kept]),
        *(_repeated(list(values[:count]), kept) for values in other),
    ]


def get_lim(data: list[Any]) -> list[Any]:
    """plotext's `get_lim`: the least and greatest value (gaps left out), spread when equal.
    For floats only, without NaN, and without zeros of both signs (min() keeps whichever
    comes first, numpy either)."""
    if len(data) < _FEW_POINTS or set(map(type, data)) != _FLOAT:
        return _ORIGINAL_GET_LIM(data)
    values = np.fromiter(data, dtype=np.float64, count=len(data))
    return _ORIGINAL_GET_LIM(data) if _ambiguous(values) else _extremes(values)


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


def to_time(self: Any, data: list[Any]) -> tuple[Any, bool]:
    """plotext's `monitor_class.to_time` (dates given as strings made times): a list of
    plain ints and floats, as every plot of ours hands it, holds no string (`set(map(type,
    data))` checks in C what plotext checks element by element at every plot call)."""
    if set(map(type, data)) <= _NUMBERS:
        return data, False
    return _ORIGINAL_TO_TIME(self, data)


def insert_element(
    self: Any,
    col: int,
    row: int,
    marker: str,
    fullground: Any = None,
    style: Any = None,
    background: Any = None,
    check_canvas: bool = False,
) -> None:
    """plotext's `matrix_class.insert_element` (one cell's character and colours, where the
    matrix has it) in one call instead of six."""
    if check_canvas is not False and not (col in self.Cols_canvas and row in self.Rows_canvas):
        return
    if col in self.Cols and row in self.Rows:
        self.marker[row][col] = marker
        if fullground is not None:
            self.fullground[row][col] = fullground
        if background is not None:
            self.background[row][col] = background
        if style is not None:
            self.style[row][col] = style


def set_matrices(self: Any) -> None:
    """plotext's `matrix_class.set_matrices`: blank characters and colours, the canvas area
    in the canvas colour, the rest in the axes colour; row by row instead of cell by cell."""
    columns = self.cols
    self.marker = [[plotext_utility.space] * columns for _ in self.Rows]
    self.fullground = [[plotext_utility.no_color] * columns for _ in self.Rows]
    inside = [column in self.Cols_canvas for column in self.Cols]
    canvas_row = [self.canvas_color if cell else self.axes_color for cell in inside]
    self.background = [
        list(canvas_row) if row in self.Rows_canvas else [self.axes_color] * columns
        for row in self.Rows
    ]
    self.style = [[plotext_utility.no_color] * columns for _ in self.Rows]


def _original_place_signal(
    matrix: Any,
    x: list[Any],
    y: list[Any],
    m: list[Any],
    c: list[Any],
    st: list[Any],
    width_canvas: int,
    height_canvas: int,
    col_start: int,
    row_start: int,
) -> list[Any]:
    """plotext's own lines (`_PLACED_SOURCE`) for one signal: its dots brushed, grouped into
    character cells, cut to the canvas and set in the matrix. Returns (x, y, m, c, st) as
    they are after those lines (the legend reads c and st)."""
    ut = plotext_utility
    x, y, m, c, st = ut.brush(x, y, m, c, st)
    xf = [ut.marker_factor(el, 2, 2, 2) for el in m]
    yf = [ut.marker_factor(el, 2, 3, 4) for el in m]
    test = max(xf, default=1) * max(yf, default=1) != 1
    x, y, mxy = ut.hd_group(x, y, xf, yf) if test else (x, y, [])
    m = [ut.get_hd_marker(mxy[i]) if m[i] in ut.hd_symbols else m[i] for i in range(len(x))]
    x, y, m, c, st = ut.remove_outsiders(x, y, width_canvas, height_canvas, m, c, st)
    x, y, m, c, st = ut.brush(x, y, m, c, st)
    for i in range(len(x)):
        matrix.insert_element(x[i] + col_start, y[i] + row_start, m[i], c[i], st[i])
    return [x, y, m, c, st]


def _cell_characters(codes: dict[tuple[int, ...], str]) -> np.ndarray:
    """plotext's dot-pattern table as an array: index = the pattern's dots as bits (dot i of
    the pattern is bit i), value = its character (None where plotext has none)."""
    table = np.full(1 << len(next(iter(codes))), None, dtype=object)
    for pattern, character in codes.items():
        table[sum(dot << bit for bit, dot in enumerate(pattern))] = character
    return table


# get_hd_marker picks the table by the pattern's length: 2x2, 2x3 or 2x4 dots.
_CELL_CHARACTERS = {
    len(next(iter(codes))): _cell_characters(codes)
    for codes in (
        plotext_utility.hd_codes,
        plotext_utility.fhd_codes,
        plotext_utility.braille_codes,
    )
}


def place_signal(
    matrix: Any,
    x: list[Any],
    y: list[Any],
    m: list[Any],
    c: list[Any],
    st: list[Any],
    width_canvas: int,
    height_canvas: int,
    col_start: int,
    row_start: int,
) -> list[Any]:
    """`_original_place_signal` in numpy for the usual signal: integer dots, one marker,
    colour and style for all of them (plotext's own lines for any other). Each cell's
    character is the one plotext gives the set of the signal's dots in it; cells outside the
    canvas or the matrix are left out. Returns the cells in another order than plotext's
    (which follows a set's order, varying from process to process); the matrix is the same."""
    arguments = (matrix, x, y, m, c, st, width_canvas, height_canvas, col_start, row_start)
    placed = _place_uniform_signal(*arguments)
    return _original_place_signal(*arguments) if placed is None else placed


def _place_uniform_signal(
    matrix: Any,
    x: list[Any],
    y: list[Any],
    m: list[Any],
    c: list[Any],
    st: list[Any],
    width_canvas: int,
    height_canvas: int,
    col_start: int,
    row_start: int,
) -> list[Any] | None:
    """place_signal's numpy way; None, with the matrix untouched, for a signal it does not
    cover."""
    count = len(x)
    uniform = (
        count > 0
        and len(y) == count
        and all(len(values) == count and values.count(values[0]) == count for values in (m, c, st))
    )
    xs, ys = (_integers(x), _integers(y)) if uniform else (None, None)
    marker = m[0] if uniform else None
    if xs is None or ys is None or not isinstance(marker, str):
        return None
    across = plotext_utility.marker_factor(marker, 2, 2, 2)
    down = plotext_utility.marker_factor(marker, 2, 3, 4)
    dotted = marker in plotext_utility.hd_symbols
    if dotted != (across * down != 1):  # a marker plotext itself would fail on
        return None
    cell_x, cell_y = xs // across, ys // down
    # Only cells on the canvas are drawn: the dots of the others are left out first.
    inside = (cell_x >= 0) & (cell_x < width_canvas) & (cell_y >= 0) & (cell_y < height_canvas)
    if not inside.any():
        return [[], [], [], [], []]  # what plotext's lines leave for a signal off the canvas
    # Each cell of the canvas gets a row of dots, numbered as plotext flattens a pattern;
    # a dot sets its one, so a cell's pattern is read off its row as bits.
    lit = np.zeros((width_canvas * height_canvas, across * down), dtype=bool)
    dot = (down - 1 - ys % down) * across + xs % across
    lit[(cell_x * height_canvas + cell_y)[inside], dot[inside]] = True
    codes = lit.astype(np.int64) @ (1 << np.arange(across * down, dtype=np.int64))
    occupied = np.flatnonzero(codes)
    cell_x, cell_y = occupied // height_canvas, occupied % height_canvas
    if dotted:
        characters = _CELL_CHARACTERS[across * down][codes[occupied]]
        if any(character is None for character in characters.tolist()):
            return None
    else:
        characters = np.full(occupied.size, marker, dtype=object)
    columns, rows = cell_x + col_start, cell_y + row_start
    # insert_element's own check: cells off the matrix are not set.
    on_matrix = (columns >= 0) & (columns < matrix.cols) & (rows >= 0) & (rows < matrix.rows)
    color, style = c[0], st[0]
    for column, row, character in zip(
        columns[on_matrix].tolist(),
        rows[on_matrix].tolist(),
        characters[on_matrix].tolist(),
        strict=True,
    ):
        matrix.marker[row][column] = character
        if color is not None:
            matrix.fullground[row][column] = color
        if style is not None:
            matrix.style[row][column] = style
    kept = int(cell_x.size)
    return [_pixels(cell_x), _pixels(cell_y), characters.tolist(), [color] * kept, [style] * kept]


# The lines of plotext's build_plot that place_signal stands for, as plotext 5.3 has them.
_PLACED_SOURCE = """\
    # Get Actual HD Markers
    x, y, m, c, st = ut.transpose([ut.brush(x[s], y[s], m[s], c[s], st[s]) for s in Signals], 5)
    xf = [[ut.marker_factor(el, 2, 2, 2) for el in m[s]] for s in Signals]
    yf = [[ut.marker_factor(el, 2, 3, 4) for el in m[s]] for s in Signals]
    test = [max(xf[s], default = 1) * max(yf[s], default = 1) != 1 for s in Signals]
    x, y, mxy = ut.transpose([ut.hd_group(x[s], y[s], xf[s], yf[s]) if test[s] else (x[s], y[s], []) for s in Signals], 3)
    m = [[ut.get_hd_marker(mxy[s][i]) if m[s][i] in ut.hd_symbols else m[s][i] for i in range(len(x[s]))] for s in Signals]

    # Add Data to Canvas
    x, y, m, c, st = ut.transpose([ut.remove_outsiders(x[s], y[s], width_canvas, height_canvas, m[s], c[s], st[s]) for s in Signals], 5)

    x, y, m, c, st = ut.transpose([ut.brush(x[s], y[s], m[s], c[s], st[s]) for s in Signals], 5)
    [[self.matrix.insert_element(x[s][i] + col_start, y[s][i] + row_start, m[s][i], c[s][i], st[s][i]) for i in range(len(x[s]))] for s in Signals]
"""
_PLACING = (
    "    x, y, m, c, st = ut.transpose([_place_signal(self.matrix, x[s], y[s], m[s], c[s],"
    " st[s], width_canvas, height_canvas, col_start, row_start) for s in Signals], 5)\n"
)


def largest_factor(markers: list[Any], hd: int, fhd: int, braille: int) -> int:
    """`max([marker_factor(el, hd, fhd, braille) for el in markers], default=1)` over the
    markers' distinct values: build_plot asks it of every point's marker (one and the same,
    hundreds of times)."""
    try:
        distinct: Any = set(markers)
    except TypeError:  # unhashable markers: plotext's way
        distinct = markers
    factors = [plotext_utility.marker_factor(el, hd, fhd, braille) for el in distinct]
    return max(factors, default=1)


# The canvas's dots per cell, found from the largest marker of each signal.
_FACTOR_SOURCE = """\
    xf = [max([ut.marker_factor(el, 2, 2, 2) for el in self.marker[s]], default = 1) for s in Signals]
    yf = [max([ut.marker_factor(el, 2, 3, 4) for el in self.marker[s]], default = 1) for s in Signals]
"""
_FACTORS = """\
    xf = [_largest_factor(self.marker[s], 2, 2, 2) for s in Signals]
    yf = [_largest_factor(self.marker[s], 2, 3, 4) for s in Signals]
"""


def _faster_build_plot() -> Callable[..., None]:
    """plotext's build_plot with the lines of `_PLACED_SOURCE` replaced by one call of
    `place_signal` per signal, and those of `_FACTOR_SOURCE` by `largest_factor`;
    plotext's own when its source is not the expected one."""
    try:
        source = textwrap.dedent(inspect.getsource(_ORIGINAL_BUILD_PLOT))
    except (OSError, TypeError):
        return _ORIGINAL_BUILD_PLOT
    for lines, faster in ((_PLACED_SOURCE, _PLACING), (_FACTOR_SOURCE, _FACTORS)):
        if source.count(lines) != 1:
            return _ORIGINAL_BUILD_PLOT
        source = source.replace(lines, faster)
    namespace = {
        **vars(plotext_build),
        "_place_signal": place_signal,
        "_largest_factor": largest_factor,
    }
    where = f"{inspect.getfile(_ORIGINAL_BUILD_PLOT)} (build_plot as ocms_tui.draw.plotext_speedups made it)"
    exec(compile(source, where, "exec"), namespace)
    built: Callable[..., None] = namespace["build_plot"]
    return built


_FASTER_BUILD_PLOT = _faster_build_plot()


def clear_plot(figure: Any) -> None:
    """`figure.clear_figure()` for a top-level figure without subplots (a widget's plot): a
    new plot (monitor) with every setting at plotext's default, the figure itself kept.
    clear_figure re-makes the whole figure, and a top-level one then makes a second, dummy
    figure and deep-copies a monitor for it: about a tenth of a follower's build. The
    figure's own settings (its size, whether it is limited to the terminal) are set again
    before every build by its owner."""
    if not (figure._is_master and figure._no_plots):
        figure.clear_figure()
        return
    figure.monitor = monitor_class()
    figure.monitor.set_date(figure.date)
    figure.monitor.set_size(figure._size)


_REPLACED = {
    "get_lines": (get_lines, _ORIGINAL_GET_LINES),
    "hd_group": (hd_group, _ORIGINAL_HD_GROUP),
    "brush": (brush, _ORIGINAL_BRUSH),
    "get_matrix_data": (get_matrix_data, _ORIGINAL_GET_MATRIX_DATA),
    "remove_outsiders": (remove_outsiders, _ORIGINAL_REMOVE_OUTSIDERS),
    "get_lim": (get_lim, _ORIGINAL_GET_LIM),
    "join": (join, _ORIGINAL_JOIN),
}
_REPLACED_METHODS = {
    "insert_element": (insert_element, _ORIGINAL_INSERT_ELEMENT),
    "set_matrices": (set_matrices, _ORIGINAL_SET_MATRICES),
}
_REPLACED_MONITOR_METHODS = {"to_time": (to_time, _ORIGINAL_TO_TIME)}
_REPLACED_BUILD_METHODS = {"build_plot": (_FASTER_BUILD_PLOT, _ORIGINAL_BUILD_PLOT)}


def install() -> None:
    """Make plotext use these (idempotent)."""
    for name, (faster, _) in _REPLACED.items():
        setattr(plotext_utility, name, faster)
    for name, (faster, _) in _REPLACED_METHODS.items():
        setattr(matrix_class, name, faster)
    for name, (faster, _) in _REPLACED_BUILD_METHODS.items():
        setattr(plotext_build.build_class, name, faster)
    for name, (faster, _) in _REPLACED_MONITOR_METHODS.items():
        setattr(monitor_class, name, faster)


def uninstall() -> None:
    """plotext's own helpers again (tests compare the two)."""
    for name, (_, original) in _REPLACED.items():
        setattr(plotext_utility, name, original)
    for name, (_, original) in _REPLACED_METHODS.items():
        setattr(matrix_class, name, original)
    for name, (_, original) in _REPLACED_BUILD_METHODS.items():
        setattr(plotext_build.build_class, name, original)
    for name, (_, original) in _REPLACED_MONITOR_METHODS.items():
        setattr(monitor_class, name, original)
