"""Compact, append-only storage for one chart's rows, readable while it grows."""

from __future__ import annotations

import numpy as np

from ocms_tui.follow.frames import (
    MAX_KEPT_PASSES,
    SeriesStats,
    next_generation,
    pass_bounds,
    step_span,
)
from ocms_tui.format.parse import ParsedRows

__all__ = [
    "MAX_KEPT_PASSES",
    "GrowableArray",
    "SeriesStats",
    "SeriesStore",
    "pass_bounds",
    "step_regressions",
    "step_span",
]

_GROWTH = 1.5


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


class SeriesStore:
    """Steps plus one float column per y-axis name (NaN = gap), with running stats.

    The reading thread alone appends and reads it; other threads get frames
    (`ChartData.frame`): read-only views up to `rows`, which appends never write into (they
    write past them, or into a new buffer when one grows). With `keep_values=False` only
    counts and stats are kept (a one-shot check needs no series).
    """

    def __init__(self, series: int, keep_values: bool = True) -> None:
        self._steps = GrowableArray(np.int64)
        self._columns = [GrowableArray(np.float64) for _ in range(series)]
        self._stats = tuple(SeriesStats() for _ in range(series))
        self.keep_values = keep_values
        self.rows = 0
        self.last_step: int | None = None
        self.generation = next_generation()
        """Names these rows for view caches (see `ChartFrame.generation`)."""
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

    @property
    def nbytes(self) -> int:
        return (self._steps.capacity * 8) + sum(column.capacity * 8 for column in self._columns)
