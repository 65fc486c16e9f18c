"""Reduce and smooth series before they are drawn: M4 aggregation and debiased EMA.

Pure numpy, no Textual: the dashboard calls these, tests and benchmarks call them directly.

M4 (Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014)
keeps, for every pixel column of a line chart, the first, last, minimum and maximum point.
A line rasterised from those at most four points per column lights exactly the pixels the
full series lights, so a 1,000,000-point series draws like a 1,000-point one and no spike is
lost. The column of a point is computed with plotext's own formula, so the columns here are
the columns plotext draws.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import polars as pl

from ocms_tui.draw.pyramid import MinMaxPyramid, sorted_unique

FloatArray = npt.NDArray[np.float64]

# From this many values, an EMA started afresh runs in polars (compiled, without the GIL: a
# chart's next smoothing is made ahead on a thread): 5.6 ms instead of 10 ms per 1,000,000.
POLARS_EMA_FROM = 4096
# Exponent budget for the blockwise EMA: weight**-block stays below 1e100, far from overflow.
_MAX_SCALE_EXPONENT = 100 * math.log(10)


def pixel_columns(x: npt.ArrayLike, lo: float, hi: float, width: int) -> npt.NDArray[np.int64]:
    """The pixel column of each x in a canvas `width` pixels wide spanning [lo, hi].

    Mirrors plotext's `get_matrix_data` (round to 8 decimals, then floor), so M4 buckets and
    plotext's drawn columns coincide.
    """
    scaled = np.array(x, dtype=np.float64)
    if hi == lo or width <= 1:
        return np.zeros(scaled.shape, dtype=np.int64)
    scaled -= lo
    scaled *= (width - 1) / (hi - lo)
    scaled += 0.5
    np.round(scaled, 8, out=scaled)
    np.floor(scaled, out=scaled)
    return scaled.astype(np.int64)


def m4(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    width: int,
    x_range: tuple[float, float] | None = None,
    *,
    x_sorted: bool = False,
    pyramid: MinMaxPyramid | None = None,
    rows: tuple[int, int] | None = None,
    memo: M4Memo | None = None,
    shared_columns: SharedColumns | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """Reduce (x, y) to at most four points per pixel column, keeping the drawn picture.

    Gaps (NaN, and inf, which no chart can draw) are dropped first. With `x_range`, points
    outside it are dropped and the columns span exactly that range (set the same limits on the
    plot). Steps that go backwards (a resumed run) split the series into monotonic runs that
    are reduced one by one, so the backward jump is drawn as in the full series; when the runs
    together span too many columns, the series is sorted by step first to bound the work.
    `x_sorted=True` promises non-decreasing x and saves a pass over the data. A `pyramid`
    kept for `y` (extended here) answers each column's four points from block summaries
    instead of a pass over the points in view: the same points in O(width x log n); it is
    used for sorted x within an `x_range`. `rows` reduces only those rows [start, stop) of
    x and y (one pass of a restarted run) without losing the pyramid's indexing. A `memo`
    (with a pyramid) keeps each column's points: the next call for the same series, grown,
    reduces only the columns whose rows changed (while a run is followed: the last).
    `shared_columns`, one dict for the series of one picture, lets the series that share
    their steps (a chart's columns) find their pixel columns once, with the pyramid.
    Returns new arrays (or the inputs, when there is nothing to drop); `x` keeps its dtype.
    """
    xs = np.asarray(x)
    ys = np.asarray(y, dtype=np.float64)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError(f"x and y must be 1-d arrays of one length, got {xs.shape}, {ys.shape}")
    first, last = rows if rows is not None else (0, xs.size)
    if x_range is not None and x_sorted:
        # Sorted steps: the range is a slice, found by binary search instead of a mask.
        start = first + int(_search(xs[first:last], x_range[0], side="left"))
        stop = first + int(_search(xs[first:last], x_range[1], side="right"))
        if pyramid is not None and stop - start > 4 * width and width >= 1:
            # Columns are shared by the steps' address: only for steps the caller holds.
            shared = shared_columns if xs is x else None
            return _m4_pyramid(xs, ys, start, stop, x_range, width, pyramid, memo, shared)
        xs, ys = xs[start:stop], ys[start:stop]
    elif rows is not None:
        xs, ys = xs[first:last], ys[first:last]
    keep = np.isfinite(ys)
    if x_range is not None and not x_sorted:
        keep &= (xs >= x_range[0]) & (xs <= x_range[1])
    if not keep.all():
        xs, ys = xs[keep], ys[keep]
    if width < 1 or xs.size == 0:
        return xs[:0], ys[:0]
    if x_range is None:
        lo, hi = (float(xs[0]), float(xs[-1])) if x_sorted else (float(xs.min()), float(xs.max()))
    else:
        lo, hi = float(x_range[0]), float(x_range[1])
    if xs.size <= 4 * width:
        return xs, ys

    backward = [] if x_sorted else (np.flatnonzero(xs[1:] < xs[:-1]) + 1).tolist()
    bounds = [0, *backward, xs.size]
    runs = list(itertools.pairwise(bounds))
    if len(runs) > 1:
        first_columns = pixel_columns(xs[bounds[:-1]], lo, hi, width)
        last_columns = pixel_columns(xs[[stop - 1 for _, stop in runs]], lo, hi, width)
        if int(np.sum(last_columns - first_columns + 1)) > 8 * width:
            order = np.argsort(xs, kind="stable")
            xs, ys = xs[order], ys[order]
            runs = [(0, xs.size)]
    kept = [start + _m4_run(xs[start:stop], ys[start:stop], lo, hi, width) for start, stop in runs]
    index = np.concatenate(kept)
    return xs[index], ys[index]


@dataclass
class M4Memo:
    """The columns of one series' last pyramid M4 and the points chosen in them. Valid for
    that series only while its values are only appended to (what its pyramid assumes too)."""

    pyramid: MinMaxPyramid | None = None
    x_range: tuple[float, float] = (0.0, 0.0)
    width: int = 0
    starts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    stops: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    index: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    rows: tuple[int, int] = (0, 0)  # the rows [start, stop) in the x range
    columns_reduced: int = 0  # columns the pyramid was asked about, all calls together


def _m4_pyramid(
    xs: np.ndarray,
    ys: FloatArray,
    start: int,
    stop: int,
    x_range: tuple[float, float],
    width: int,
    pyramid: MinMaxPyramid,
    memo: M4Memo | None = None,
    shared_columns: SharedColumns | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """M4 of the sorted rows [start, stop) by the pyramid. Gap rows stay in the columns'
    index ranges: the pyramid never picks them, so the columns match those of the finite
    points that `m4` computes otherwise. With a `memo` of the same series, range and width,
    the leading columns whose rows are unchanged keep their points."""
    pyramid.extend(ys)
    lo, hi = float(x_range[0]), float(x_range[1])
    kept = (
        memo is not None
        and memo.pyramid is pyramid
        and memo.x_range == (lo, hi)
        and memo.width == width
    )
    if kept and memo is not None and memo.rows == (start, stop):
        # The same rows in the same columns (a view shown again: a key back to it, one made
        # ahead): the same points, without the column search over a 1,000,000-row series.
        return xs[memo.index], ys[memo.index]
    if kept and memo is not None and memo.rows[0] == start <= memo.rows[1] <= stop:
        # Grown: a column's first row depends only on the rows up to it, so the columns
        # before the last one kept start where they did; only the rest is searched (a
        # search of every column's edge was half the M4 of a followed 1,000,000-row series).
        # A kept memo has a column at least: it was made from more than 4 x width rows.
        resume = int(memo.starts[-1])
        tail = _columns_from(xs, resume, stop, lo, hi, width, shared_columns)
        starts = np.concatenate((memo.starts[:-1], tail))
    else:
        starts = _columns_from(xs, start, stop, lo, hi, width, shared_columns)
    stops = np.append(starts[1:], stop)
    same = 0
    if kept and memo is not None:
        count = min(starts.size, memo.starts.size)
        differs = (starts[:count] != memo.starts[:count]) | (stops[:count] != memo.stops[:count])
        same = int(np.argmax(differs)) if differs.any() else count
    boundary = int(starts[same]) if same < starts.size else stop
    index = pyramid.m4_indices(ys, starts[same:], stops[same:])
    if same and memo is not None:
        index = np.concatenate((memo.index[memo.index < boundary], index))
    if memo is not None:
        memo.pyramid, memo.x_range, memo.width = pyramid, (lo, hi), width
        memo.starts, memo.stops, memo.index = starts, stops, index
        memo.rows = (start, stop)
        memo.columns_reduced += starts.size - same
    return xs[index], ys[index]


# The first row of every pixel column of some sorted rows, by where those rows lie in memory
# (their steps' data address and stride), the rows and the columns.
SharedColumns = dict[tuple[int, int, int, int, float, float, int], npt.NDArray[np.int64]]


def _columns_from(
    xs: np.ndarray,
    start: int,
    stop: int,
    lo: float,
    hi: float,
    width: int,
    shared: SharedColumns | None,
) -> npt.NDArray[np.int64]:
    """Index of the first row of every non-empty pixel column of the sorted rows
    [start, stop) of `xs`. The four series of a chart have the same steps: their columns are
    the same, and searching a 1,000,000-row series' column edges is a fifth of its M4. Keyed
    by address, valid while the arrays live: `shared` lives for one picture, whose series
    hold their steps, and rows in place are never rewritten (a store only appends)."""
    if shared is None:
        return start + _column_starts(xs[start:stop], lo, hi, width)
    key = (xs.ctypes.data, xs.strides[0], start, stop, lo, hi, width)
    found = shared.get(key)
    if found is None:
        found = shared[key] = start + _column_starts(xs[start:stop], lo, hi, width)
    return found


def _m4_run(
    x: np.ndarray, y: FloatArray, lo: float, hi: float, width: int
) -> npt.NDArray[np.int64]:
    """Indices of the first, last, min and max point of each column of one monotonic run."""
    starts = _column_starts(x, lo, hi, width)
    stops = np.append(starts[1:], x.size)
    chosen = [starts, stops - 1]
    # One argmin/argmax per column: a Python loop over at most `width` columns costs less
    # than any vectorised per-point bookkeeping over a long series.
    for bound in (np.argmin, np.argmax):
        chosen.append(
            np.fromiter(
                (start + bound(y[start:stop]) for start, stop in zip(starts, stops, strict=True)),
                dtype=np.int64,
                count=starts.size,
            )
        )
    return sorted_unique(np.concatenate(chosen))


def _column_starts(x: np.ndarray, lo: float, hi: float, width: int) -> npt.NDArray[np.int64]:
    """Index of the first point of every non-empty pixel column of a non-decreasing run.

    Binary search on the column edges instead of computing the column of every point; points
    within rounding distance of an edge get their exact column from `pixel_columns`.
    """
    first, last = pixel_columns(x[[0, -1]], lo, hi, width).tolist()
    if last == first:
        return np.zeros(1, dtype=np.int64)
    columns = np.arange(first + 1, last + 1)
    pixel = (hi - lo) / (width - 1)
    edges = lo + (columns - 0.5) * pixel
    tolerance = pixel * 1e-7 + 8 * np.finfo(np.float64).eps * max(abs(lo), abs(hi))
    left = _search(x, edges - tolerance, side="left")
    right = _search(x, edges + tolerance, side="right")
    starts = left.copy()
    for k in np.flatnonzero(right > left).tolist():
        near_edge = pixel_columns(x[left[k] : right[k]], lo, hi, width)
        starts[k] += int(np.count_nonzero(near_edge < columns[k]))
    starts = sorted_unique(np.concatenate(([0], starts)))
    return starts[starts < x.size]


def _search(sorted_x: np.ndarray, bounds: npt.ArrayLike, side: str) -> np.ndarray:
    """np.searchsorted for float bounds that never casts an integer `sorted_x` to float (a
    copy of the whole series per call): for integers, x >= b is x >= ceil(b), x <= b is
    x <= floor(b)."""
    if not np.issubdtype(sorted_x.dtype, np.integer):
        return np.searchsorted(sorted_x, bounds, side=side)  # type: ignore[call-overload]
    info = np.iinfo(sorted_x.dtype)
    rounded = np.ceil(bounds) if side == "left" else np.floor(bounds)
    clipped = np.clip(rounded, info.min, info.max).astype(sorted_x.dtype)
    return np.searchsorted(sorted_x, clipped, side=side)  # type: ignore[call-overload]


@dataclass(frozen=True)
class EmaState:
    """Where an EMA stopped: the zero-started average and how many finite values it took."""

    average: float = 0.0
    count: int = 0


def ema(y: npt.ArrayLike, weight: float) -> FloatArray:
    """Exponential moving average, debiased like TensorBoard's smoothing slider.

    `smoothed_t = last_t / (1 - weight**k_t)` with `last_t = weight * last_{t-1} +
    (1 - weight) * y_t`, `last` starting at 0 and `k_t` the number of finite values so far.
    Gaps (NaN, inf) do not enter the average and stay gaps in the result. `weight` 0 returns
    a copy.
    """
    return ema_extend(y, weight, EmaState())[0]


def ema_extend(y: npt.ArrayLike, weight: float, state: EmaState) -> tuple[FloatArray, EmaState]:
    """The EMA of values that follow those `state` ended with, and the state after them: a
    growing series is smoothed once, piece by piece, with the result of `ema` on the whole
    (to rounding)."""
    ys = np.array(y, dtype=np.float64)
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    finite = np.isfinite(ys)
    gapless = bool(finite.all())
    values = ys if gapless else ys[finite]  # no gather and scatter in the common case
    if weight == 0.0 or values.size == 0:
        return ys, state
    # The block sums scale terms up by as much as e**_MAX_SCALE_EXPONENT: values near the
    # double's limits (1e307) would overflow, subnormal ones (5e-324) lose every digit.
    # Dividing by a power of two near the largest magnitude is exact, and undone at the end.
    # ldexp(0.5, e) = 2**(e - 1): representable for every double, subnormals included.
    largest = max(float(np.max(np.abs(values))), abs(state.average))
    scale = math.ldexp(0.5, math.frexp(largest)[1])
    log_weight = math.log(weight)
    if state.count == 0 and values.size >= POLARS_EMA_FROM:
        # polars' adjusted EMA, sum(w**i * x[t-i]) / sum(w**i), is the debiased average.
        debiased = pl.Series(values / scale).ewm_mean(alpha=1.0 - weight, adjust=True)
        smoothed = debiased.to_numpy() * scale
        # The zero-started average the numpy path would carry on from: undebiased.
        last_average = float(smoothed[-1]) * -math.expm1(values.size * log_weight)
        after = EmaState(last_average, int(values.size))
        if gapless:
            return smoothed, after
        ys[finite] = smoothed
        return ys, after
    zero_started = _decaying_cumsum((1.0 - weight) * (values / scale), weight)
    # weight**k falls below 2**-70 after `fading` values: from there on it can change no
    # double (the carried-in average is no longer felt, the debiasing divisor is 1.0), so
    # the powers are computed for the first values only.
    fading = int(-70 * math.log(2) / log_weight) + 1
    if state.average:
        head = min(values.size, fading)
        zero_started[:head] += (state.average / scale) * np.exp(np.arange(1, head + 1) * log_weight)
    debiased = max(0, min(values.size, fading - state.count))
    if debiased:
        counts = np.arange(state.count + 1, state.count + debiased + 1, dtype=np.float64)
        zero_started[:debiased] /= -np.expm1(counts * log_weight)
    last_average = float(zero_started[-1])
    if debiased == values.size:  # the last value was divided: undo it for the state
        last_average *= -math.expm1((state.count + values.size) * log_weight)
    zero_started *= scale
    after = EmaState(last_average * scale, state.count + int(values.size))
    if gapless:
        return zero_started, after
    ys[finite] = zero_started
    return ys, after


def _decaying_cumsum(terms: FloatArray, decay: float) -> FloatArray:
    """`c_k = decay * c_{k-1} + terms_k` with `c_{-1} = 0`, vectorised in blocks.

    Within a block the recurrence has the closed form `decay**j * cumsum(terms * decay**-j)`;
    blocks are short enough that `decay**-j` cannot overflow, and only the block ends are
    chained in Python.
    """
    n = terms.size
    block = int(max(1, min(n, _MAX_SCALE_EXPONENT // -math.log(decay))))
    blocks = -(-n // block)
    padded = np.zeros(blocks * block)
    padded[:n] = terms
    grid = padded.reshape(blocks, block)
    offsets = np.arange(block, dtype=np.float64)
    local = np.cumsum(grid * decay**-offsets, axis=1) * decay**offsets
    carry_in = np.zeros(blocks)
    decay_per_block = decay**block
    carried = 0.0
    for index, block_end in enumerate(local[:, -1].tolist()):
        carry_in[index] = carried
        carried = decay_per_block * carried + block_end
    local += carry_in[:, None] * decay ** (offsets + 1.0)
    return local.reshape(-1)[:n]
