"""plotext's pixel arithmetic on numpy arrays, output for output the same as plotext's.

Where plotext maps values to canvas pixels (`get_matrix_data`), finds an axis's limits
(`get_lim`) and draws the straight lines between points (`get_lines`), these functions do the
same on whole arrays. The chart canvas keys a picture by the pixels these give
(draw.plan_key), the background layer draws its pixels with them (draw.layer), and plotext's
own helpers, swapped for faster ones (draw.plotext_utility_speedups), call them.

The pixel lists handed to plotext are remembered with the int64 array each was made from
(`pixel_list`), so the next helper takes the array instead of checking and converting every
element again; to plotext they are plain lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotext._utility as plotext_utility

# plotext's own, taken before any is swapped (draw.plotext_install): the few-point cases.
ORIGINAL_GET_MATRIX_DATA: Callable[..., list[Any]] = plotext_utility.get_matrix_data
ORIGINAL_GET_LIM: Callable[..., list[Any]] = plotext_utility.get_lim
# Below this many points numpy's per-call cost outweighs the loop it replaces.
FEW_POINTS = 32
_INT = frozenset({int})


# Lists made by these helpers -> (the list, the array it was made from). The list is kept
# with its array so that its id cannot be reused by another list while it is remembered;
# plotext only reads these lists and builds new ones from them, never changes one in place.
_ARRAYS: dict[int, tuple[list[int], np.ndarray]] = {}
_REMEMBERED = 256  # a build makes about a dozen per signal; older ones are forgotten


def pixel_list(array: np.ndarray) -> list[int]:
    """`array` as the list of ints plotext expects, remembered for the next helper."""
    values: list[int] = array.tolist()
    if len(_ARRAYS) >= _REMEMBERED:
        del _ARRAYS[next(iter(_ARRAYS))]  # the oldest: dicts keep insertion order
    _ARRAYS[id(values)] = (values, array)
    return values


def integer_array(values: Sequence[Any]) -> np.ndarray | None:
    """`values` as an int64 array when every one is a plain int (pixel coordinates); None for
    anything else (None gaps, strings of dates), which plotext's own code handles."""
    remembered = _ARRAYS.get(id(values))
    if remembered is not None and remembered[0] is values:
        return remembered[1]
    if set(map(type, values)) != _INT:  # the check in C: no Python loop over the values
        return None
    return np.fromiter(values, dtype=np.int64, count=len(values))


def repeated_along(values: list[Any], source: np.ndarray) -> list[Any]:
    """`[values[i] for i in source]`; one marker, colour or style for a whole signal (the
    usual case) is repeated without a Python loop."""
    if values and values.count(values[0]) == len(values):
        return [values[0]] * int(source.size)
    return [values[index] for index in source.tolist()]


def pixel_keys(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
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


def matrix_pixels(values: np.ndarray, lim: list[float], bins: int) -> np.ndarray:
    """`get_matrix_data` of finite float64 `values` with float limits, as a read-only int64
    array (a few values go through plotext's own code, as `get_matrix_data` sends them)."""
    key = ("matrix", values.dtype.str, values.tobytes(), *map(repr, lim), bins)
    result: np.ndarray = _remembered(key, lambda: _matrix_pixels(values, lim, bins))
    return result


def _matrix_pixels(values: np.ndarray, lim: list[float], bins: int) -> np.ndarray:
    if values.size < FEW_POINTS:
        return np.array(ORIGINAL_GET_MATRIX_DATA(values.tolist(), lim, bins), dtype=np.int64)
    scaled = 0.5 + (bins - 1) * (values - lim[0]) / (lim[1] - lim[0])
    scaled = scaled * 10**8
    floor = np.floor(scaled)
    rounded = np.where(scaled - floor < 0.5, floor, np.ceil(scaled)) * 10 ** (-8)
    return np.floor(rounded).astype(np.int64)


def limits(arrays: list[np.ndarray]) -> list[Any]:
    """`get_lim` of the joined float64 `arrays` (as lists of floats they would be)."""
    joined = np.concatenate(arrays) if arrays else np.zeros(0)
    if joined.size < FEW_POINTS:
        return ORIGINAL_GET_LIM(joined.tolist())
    return ORIGINAL_GET_LIM(joined.tolist()) if ambiguous(joined) else extremes(joined)


def extremes(values: np.ndarray) -> list[Any]:
    return [float(values.min()), float(values.max())]


def ambiguous(values: np.ndarray) -> bool:
    """Where numpy's extremes may differ from plotext's: NaN, all equal, zeros of both
    signs."""
    low, high = float(values.min()), float(values.max())
    if low != low or low == high:
        return True
    if low == 0.0 or high == 0.0:
        signs = np.signbit(values[values == 0.0])
        return bool(signs.any() and not signs.all())
    return False
