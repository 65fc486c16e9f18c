"""Compact, append-only storage for one chart's rows, readable while it grows."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ocms_tui.draw.downsample import EmaState, ema_extend
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.format.parse import ParsedRows

_GROWTH = 1.5
# Up to this many values per append, running stats are cheaper in plain Python.
_FEW_VALUES = 16


def step_regressions(steps: np.ndarray, previous_step: int | None) -> np.ndarray:
    """Positions in `steps` where a step is below the one before it (`previous_step` comes
    before the first): a run that started again (a re-run into the same directory, a resume
    that logs steps again). Equal steps are not a restart."""
    if not len(steps):
        return np.zeros(0, dtype=np.int64)
    back = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    if previous_step is not None and int(steps[0]) < previous_step:
        back = np.concatenate(([0], back))
    return back.astype(np.int64)


# A file may restart its steps on every other row; only the latest passes are kept apart
# (and drawn), so that such a file costs a few lines, not one per row.
MAX_KEPT_PASSES = 8


def pass_bounds(
    rows: int, restarts: tuple[int, ...], earlier_dropped: bool = False
) -> list[tuple[int, int]]:
    """The rows [start, stop) of each pass over the steps: split at every restart (row
    positions from `step_regressions`, those at or past `rows` ignored). Within a pass the
    steps never go down, so a pass draws as a line that never goes backwards.
    `earlier_dropped`: `restarts` are only the latest ones; the rows before the first of
    them belong to passes left out."""
    kept = [restart for restart in restarts if 0 < restart < rows]
    # With earlier passes dropped and none of the kept ones read yet, nothing is drawn
    # rather than a line through passes that go back.
    starts = kept if earlier_dropped else [0, *kept]
    if not starts:
        return []
    return [(start, stop) for start, stop in zip(starts, [*starts[1:], rows], strict=True)]


def step_span(
    steps: np.ndarray, restarts: tuple[int, ...], earlier_dropped: bool = False
) -> tuple[float, float] | None:
    """The lowest and highest step of the passes drawn (see `pass_bounds`; None: none), from
    each pass's first and last step, as steps never go down within one: min() and max() of
    a 1,000,000-row chart cost about 1 ms, on every zoom, for every panel, several times."""
    ends = [
        (int(steps[start]), int(steps[stop - 1]))
        for start, stop in pass_bounds(len(steps), restarts, earlier_dropped)
        if stop > start
    ]
    if not ends:
        return None
    return float(min(low for low, _ in ends)), float(max(high for _, high in ends))


class GrowableArray:
    """A numpy buffer that grows geometrically. Views handed out stay valid forever:
    growing copies into a new array and never writes into an old one's visible part."""

    def __init__(self, dtype: type) -> None:
        self._data = np.empty(0, dtype=dtype)
        self._length = 0

    def __len__(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        return len(self._data)

    def reserve(self, capacity: int) -> None:
        if capacity > len(self._data):
            grown = np.empty(capacity, dtype=self._data.dtype)
            grown[: self._length] = self._data[: self._length]
            self._data = grown

    def extend(self, values: np.ndarray) -> None:
        needed = self._length + len(values)
        if needed > len(self._data):
            self.reserve(max(needed, int(len(self._data) * _GROWTH)))
        self._data[self._length : needed] = values
        self._length = needed

    def view(self, length: int) -> np.ndarray:
        view = self._data[:length]
        view.flags.writeable = False
        return view


@dataclass(frozen=True)
class SeriesStats:
    latest: float | None = None  # last value that is not a gap
    latest_step: int | None = None
    minimum: float | None = None  # over finite values
    maximum: float | None = None
    count: int = 0  # values that are not gaps
    # Of a sample of the rows (a large file still loading): the latest value is exact,
    # minimum, maximum and count are not final.
    sampled: bool = False

    def updated(self, steps: np.ndarray, values: np.ndarray) -> SeriesStats:
        if not len(values):
            return self
        if len(values) <= _FEW_VALUES:
            return self._updated_few(steps, values.tolist())
        # Two reductions answer everything for a series without gaps (the common case):
        # min() and max() are NaN exactly when the chunk has a gap.
        low, high = float(values.min()), float(values.max())
        present, last = len(values), len(values) - 1
        if math.isnan(low):
            gaps = np.isnan(values)
            present -= int(np.count_nonzero(gaps))
            if not present:
                return self
            last -= int(np.argmin(gaps[::-1]))  # the last position that is not a gap
            low, high = float(np.fmin.reduce(values)), float(np.fmax.reduce(values))
        bounds: tuple[float, float] | None = (low, high)
        if not (math.isfinite(low) and math.isfinite(high)):  # inf is a value, not a bound
            finite = values[np.isfinite(values)]
            bounds = (float(finite.min()), float(finite.max())) if len(finite) else None
        minimum, maximum = self.minimum, self.maximum
        if bounds is not None:
            minimum = bounds[0] if minimum is None else min(minimum, bounds[0])
            maximum = bounds[1] if maximum is None else max(maximum, bounds[1])
        return SeriesStats(
            latest=float(values[last]),
            latest_step=int(steps[last]),
            minimum=minimum,
            maximum=maximum,
            count=self.count + present,
        )

    def _updated_few(self, steps: np.ndarray, values: list[float]) -> SeriesStats:
        """The same as `updated`, in plain Python: a live run appends a row or two at a
        time, and numpy's per-call cost would dwarf the work."""
        last, present = -1, 0
        minimum, maximum = self.minimum, self.maximum
        for index, value in enumerate(values):
            if value != value:  # NaN: a gap
                continue
            last, present = index, present + 1
            if math.isfinite(value):
                minimum = value if minimum is None else min(minimum, value)
                maximum = value if maximum is None else max(maximum, value)
        if not present:
            return self
        return SeriesStats(
            latest=values[last],
            latest_step=int(steps[last]),
            minimum=minimum,
            maximum=maximum,
            count=self.count + present,
        )


class ShownSeries:
    """One series as a chart draws it at one view setting (smoothing weight, log axis), kept
    current as rows arrive: the smoothed values are extended, never recomputed, and the M4
    pyramid over them is extended at each draw. Lives with its store (a reset file starts
    afresh); only the thread that draws uses it.

    A log view is made from `base`, the same series at the same smoothing on a linear axis:
    a log axis only turns values <= 0 into gaps, so while the series has none (a loss, a
    learning rate) the log view *is* its base, values and pyramid alike, and toggling the
    axis copies nothing. The first value <= 0 makes it keep a copy of its own."""

    def __init__(self, smoothing: float, log_y: bool, base: ShownSeries | None = None) -> None:
        """`base` (a log view only): the linear view it is made from, kept by the caller;
        one of its own when not given."""
        if log_y and base is None:
            base = ShownSeries(smoothing, False)
        if base is not None and (not log_y or base.log_y or base.smoothing != smoothing):
            raise ValueError("a log view's base is its linear view at the same smoothing")
        self.smoothing = smoothing
        self.log_y = log_y
        self._base = base
        self._pyramid = MinMaxPyramid()
        self._shown: GrowableArray | None = None  # own values, when they differ from base's
        self._ema = EmaState()
        self._positive_rows = 0  # a linear view: its first values known to be none <= 0

    @property
    def derived(self) -> bool:
        """The values differ from the stored ones (a smoothing of its own, or a log view of
        a series with values <= 0)."""
        return self.smoothing > 0 or self._shown is not None

    @property
    def holds_copy(self) -> bool:
        """This view keeps values of its own (8 bytes a row), not those of another."""
        return self._shown is not None

    @property
    def pyramid(self) -> MinMaxPyramid:
        """The pyramid over the values `values` returned last."""
        if self._base is not None and self._shown is None:
            return self._base.pyramid
        return self._pyramid

    def values(self, raw: np.ndarray) -> np.ndarray:
        """The shown values of the series whose stored values are `raw` (a longer prefix of
        the same series each time)."""
        if self._base is not None:
            return self._log_values(self._base.values(raw))
        if self.smoothing <= 0:
            return raw
        shown = self._own_values()
        done = len(shown)
        if len(raw) > done:
            new, self._ema = ema_extend(raw[done:], self.smoothing, self._ema)
            shown.extend(new)
        return shown.view(len(raw))

    def _own_values(self) -> GrowableArray:
        if self._shown is None:
            self._shown = GrowableArray(np.float64)
        return self._shown

    def positive_rows(self, values: np.ndarray) -> int:
        """How many of the first of `values` (this linear view's values so far) are none
        <= 0 (NaN, a gap, counts as positive). Known values are not looked at again: kept
        by the linear view, so that each log view made from it (`l` pressed again, or at a
        smoothing made ahead, where `SeriesStore.prepare` counts them) does not scan the
        whole series (at 1,000,000 rows a third of `l`)."""
        known = self._positive_rows
        if known < len(values):
            not_positive = values[known:] <= 0
            if not_positive.any():
                self._positive_rows = known + int(not_positive.argmax())
            else:
                self._positive_rows = len(values)
        return self._positive_rows

    def _log_values(self, linear: np.ndarray) -> np.ndarray:
        """`linear` with values <= 0 as gaps: a log axis has no place for them."""
        if self._shown is None:
            assert self._base is not None
            if self._base.positive_rows(linear) == len(linear):
                return linear
            self._pyramid = MinMaxPyramid()  # base's pyramid picked points now gaps
        shown = self._own_values()
        done = len(shown)
        if len(linear) > done:
            new = linear[done:]
            shown.extend(np.where(new > 0, new, np.nan))
        return shown.view(len(linear))


class SeriesStore:
    """Steps plus one float column per y-axis name (NaN = gap), with running stats.

    One thread appends; others may read at any time: `rows` is published last, so a
    reader that takes `rows` first always sees buffers at least that long. With
    `keep_values=False` only counts and stats are kept (a one-shot check needs no series).
    """

    def __init__(self, series: int, keep_values: bool = True) -> None:
        self._steps = GrowableArray(np.int64)
        self._columns = [GrowableArray(np.float64) for _ in range(series)]
        self._stats = tuple(SeriesStats() for _ in range(series))
        self.keep_values = keep_values
        self.rows = 0
        self.last_step: int | None = None
        self._shown: dict[tuple[int, float, bool], ShownSeries] = {}
        self._prepared: dict[int, ShownSeries] = {}  # per series: a smoothing made ahead
        self.restarts: tuple[int, ...] = ()
        """The latest rows where the steps went back (a pass began again), at most
        MAX_KEPT_PASSES - 1 of them."""
        self.restart_count = 0

    @property
    def passes(self) -> int:
        return self.restart_count + 1

    @property
    def earlier_passes_dropped(self) -> bool:
        return self.restart_count > len(self.restarts)

    def reserve(self, rows: int) -> None:
        if not self.keep_values:
            return
        self._steps.reserve(rows)
        for column in self._columns:
            column.reserve(rows)

    def append(self, parsed: ParsedRows) -> np.ndarray:
        """Add the rows; returns the positions among them where the steps went back."""
        if not parsed.rows:
            return np.zeros(0, dtype=np.int64)
        if self.keep_values:
            self._steps.extend(parsed.steps)
            for column, values in zip(self._columns, parsed.columns, strict=True):
                column.extend(values)
        back = step_regressions(parsed.steps, self.last_step)
        if back.size:
            # The numbers describe the latest pass: they start again with it.
            first = int(back[-1])
            self._stats = tuple(
                SeriesStats().updated(parsed.steps[first:], values[first:])
                for values in parsed.columns
            )
            latest = (back[-(MAX_KEPT_PASSES - 1) :] + self.rows).tolist()
            self.restarts = (*self.restarts, *latest)[-(MAX_KEPT_PASSES - 1) :]
            self.restart_count += int(back.size)
        else:
            self._stats = tuple(
                stats.updated(parsed.steps, values)
                for stats, values in zip(self._stats, parsed.columns, strict=True)
            )
        self.last_step = int(parsed.steps[-1])
        self.rows += parsed.rows
        return back

    def steps(self) -> np.ndarray:
        return self._steps.view(min(self.rows, len(self._steps)))

    def values(self, series: int) -> np.ndarray:
        column = self._columns[series]
        return column.view(min(self.rows, len(column)))

    def stats(self, series: int) -> SeriesStats:
        return self._stats[series]

    def shown(self, series: int, smoothing: float, log_y: bool) -> ShownSeries:
        """The drawing state of a series at a view setting, made at its first use. Kept per
        series: the stored values' own (no copy), the setting asked for and, for a log view,
        its linear base; every other setting is dropped, since each smoothing is a copy of
        the series (8 bytes a value) and the view changes far less often than rows arrive."""
        key = (series, smoothing, log_y)
        found = self._shown.get(key)
        if found is None:
            base = self.shown(series, smoothing, False) if log_y else None
            kept = {key, (series, 0.0, False), (series, smoothing, False)}
            for other in [k for k in self._shown if k[0] == series and k not in kept]:
                del self._shown[other]
            prepared = self._prepared.get(series)
            if not log_y and prepared is not None and prepared.smoothing == smoothing:
                found = self._prepared.pop(series)
            else:
                found = ShownSeries(smoothing, log_y, base)
            self._shown[key] = found
        return found

    def prepare(self, series: int, smoothing: float) -> Callable[[], None]:
        """Smooth `series` and build its pyramid now, off the books: safe on any thread
        while another appends or draws, so a smoothing the user is likely to ask for next
        costs the drawing thread nothing. Returns the call that hands the result over; make
        it on the drawing thread. The first `shown` of that smoothing then takes it (only
        the rows that arrived meanwhile are left to smooth); another prepared smoothing of
        the series replaces it (one copy of the series at most)."""
        prepared = ShownSeries(smoothing, False)
        values = prepared.values(self.values(series))
        prepared.pyramid.extend(values)
        prepared.positive_rows(values)

        def hand_over() -> None:
            if (series, smoothing, False) not in self._shown:
                self._prepared[series] = prepared

        return hand_over

    def prepared_smoothing(self, series: int) -> float | None:
        """The smoothing made ahead for `series` and not yet taken by `shown`, if any."""
        prepared = self._prepared.get(series)
        return prepared.smoothing if prepared is not None else None

    @property
    def nbytes(self) -> int:
        return (self._steps.capacity * 8) + sum(column.capacity * 8 for column in self._columns)
