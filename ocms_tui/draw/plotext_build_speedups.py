"""plotext's build step in numpy: its matrix, monitor and `build_plot`, the same characters.

After the `plotext._utility` helpers (draw.plotext_utility_speedups), most of a build was
plotext's per-dot lines that turn a signal's dots into character cells (two calls to
`marker_factor` per dot, the dot pattern of each cell, and one `insert_element` per cell).
`place_signal` does that whole step per signal in numpy; it is swapped into `build_plot`
itself, in place of exactly those lines of its source (when they read as expected; otherwise
`build_plot` stays plotext's own). The matrix's and monitor's per-cell methods are done a row
or a list at a time, and `clear_plot` empties a figure without making it anew.

draw.plotext_install swaps them into plotext's classes.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import plotext._build as plotext_build
import plotext._utility as plotext_utility
from plotext._matrix import matrix_class
from plotext._monitor import monitor_class

from ocms_tui.draw.plotext_speedups import integer_array, pixel_list

# plotext's own, taken before any is swapped.
ORIGINAL_INSERT_ELEMENT: Callable[..., None] = matrix_class.insert_element
ORIGINAL_SET_MATRICES: Callable[..., None] = matrix_class.set_matrices
ORIGINAL_BUILD_PLOT: Callable[..., None] = plotext_build.build_class.build_plot
ORIGINAL_TO_TIME: Callable[..., tuple[Any, bool]] = monitor_class.to_time
_NUMBERS = frozenset({int, float})


def to_time(self: Any, data: list[Any]) -> tuple[Any, bool]:
    """plotext's `monitor_class.to_time` (dates given as strings made times): a list of
    plain ints and floats, as every plot of ours hands it, holds no string (`set(map(type,
    data))` checks in C what plotext checks element by element at every plot call)."""
    if set(map(type, data)) <= _NUMBERS:
        return data, False
    return ORIGINAL_TO_TIME(self, data)


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
    xs, ys = (integer_array(x), integer_array(y)) if uniform else (None, None)
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
    return [
        pixel_list(cell_x),
        pixel_list(cell_y),
        characters.tolist(),
        [color] * kept,
        [style] * kept,
    ]


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
        source = textwrap.dedent(inspect.getsource(ORIGINAL_BUILD_PLOT))
    except (OSError, TypeError):
        return ORIGINAL_BUILD_PLOT
    for lines, faster in ((_PLACED_SOURCE, _PLACING), (_FACTOR_SOURCE, _FACTORS)):
        if source.count(lines) != 1:
            return ORIGINAL_BUILD_PLOT
        source = source.replace(lines, faster)
    namespace = {
        **vars(plotext_build),
        "_place_signal": place_signal,
        "_largest_factor": largest_factor,
    }
    where = f"{inspect.getfile(ORIGINAL_BUILD_PLOT)} (build_plot as ocms_tui.draw.plotext_build_speedups made it)"
    exec(compile(source, where, "exec"), namespace)
    built: Callable[..., None] = namespace["build_plot"]
    return built


FASTER_BUILD_PLOT = _faster_build_plot()


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
