"""Frames: what the reading thread hands the UI after each read, as values.

Pure Python and numpy, no Textual. The session reads the runs on its own thread into live
stores (`follow.series`, `follow.chart_data`) that keep growing; after each read it publishes
one frame per chart: the rows read so far as read-only array views (the store's buffers are
only ever appended to past them, or copied when they grow, so a published view never
changes), with the chart's stats, passes and health marks, and a `version` that moves
whenever any of that does. The UI draws frames and keeps its own view state (smoothing, log
scale, pyramids: `follow.views`) keyed by a frame's `generation`; it never sees a store.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.format.directories import DirectoryProblem
from ocms_tui.format.problems import Problem

# Up to this many values per append, running stats are cheaper in plain Python.
_FEW_VALUES = 16
# Frame versions and row generations, unique across every chart of the process: a cache
# keyed by one never mistakes another chart (or a chart declared anew) for it.
_versions = itertools.count(1)
_generations = itertools.count(1)


def next_version() -> int:
    return next(_versions)


def next_generation() -> int:
    return next(_generations)


def read_only(array: np.ndarray) -> np.ndarray:
    """A view of `array` that cannot be written through (the array itself stays as it is)."""
    view = array.view()
    view.flags.writeable = False
    return view


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


Mark = tuple[int, str, bool]
"""A step a chart marks on one series: (step, rule, below), see `ChartData.marks`."""


@dataclass(frozen=True, eq=False)
class ChartFrame:
    """One run's chart as of one read. Compared by identity: two frames with the same
    `version` are the same content (the session hands out the same frame while nothing
    changed). `generation` names the rows' lineage: frames of one generation hold longer
    and longer prefixes of the same series (a view cache extends what it made for an
    earlier one); a reset file, or a sample replaced by every row, starts a new one."""

    name: str  # untrusted (from metrics.json): plain text only
    file: str
    y_axis: tuple[str, ...]
    chart_id: int  # the chart as declared: a new one when metrics.json declares it anew
    generation: int
    version: int
    rows: int  # rows read (while a large file loads, more than the sample drawn)
    steps: np.ndarray  # read-only, the rows drawn
    values: tuple[np.ndarray, ...]  # read-only, one per y-axis name, as long as `steps`
    stats: tuple[SeriesStats, ...]  # one per y-axis name
    restarts: tuple[int, ...] = ()  # rows where the steps went back (see `pass_bounds`)
    passes: int = 1
    earlier_passes_dropped: bool = False
    last_step: int | None = None
    sampled: bool = False  # a sample of a large file is drawn while its rows are read
    marks: tuple[tuple[Mark, ...], ...] = ()  # one per y-axis name
    # The M4 pyramids of the raw values, built ahead on the reading thread while the rows
    # were not shown yet, handed over whole: that thread never touches them again.
    pyramids: tuple[MinMaxPyramid, ...] = ()

    def span(self) -> tuple[float, float] | None:
        """The lowest and highest step drawn (None: none)."""
        return step_span(self.steps, self.restarts, self.earlier_passes_dropped)

    def series_marks(self, series: int) -> tuple[Mark, ...]:
        return self.marks[series] if series < len(self.marks) else ()


@dataclass(frozen=True, eq=False)
class RunFrame:
    """One followed run as of one read."""

    key: str  # its absolute directory: how the dashboard names a run
    name: str  # untrusted (a directory name): plain text only
    directory: Path
    color: int  # its index in discovery order
    charts: tuple[ChartFrame, ...]
    problems: tuple[Problem, ...]
    last_write: float | None = None
    has_metrics_json: bool = False
    exists: bool = True
    missing: DirectoryProblem | None = None

    @property
    def last_step(self) -> int | None:
        return max((c.last_step for c in self.charts if c.last_step is not None), default=None)


@dataclass(frozen=True, eq=False)
class RunChartFrame:
    """One run's chart of a given name."""

    run: RunFrame
    chart: ChartFrame


@dataclass(frozen=True, eq=False)
class OverlayFrame:
    """Every selected run's chart of one name, for one panel."""

    name: str
    sources: tuple[RunChartFrame, ...]

    @property
    def structure(self) -> tuple[object, ...]:
        """What a panel is laid out for: a new one is a new panel (new runs, names or
        charts); new rows keep it."""
        return (
            self.name,
            tuple((s.run.key, s.run.name, s.chart.chart_id) for s in self.sources),
        )

    def source(self, key: str) -> RunChartFrame | None:
        return next((source for source in self.sources if source.run.key == key), None)


def overlay_frames(runs: Iterable[RunFrame]) -> tuple[OverlayFrame, ...]:
    """Charts by name across `runs`, in the order they first appear; a chart that only some
    runs have still gets its panel."""
    by_name: dict[str, list[RunChartFrame]] = {}
    for run in runs:
        for chart in run.charts:
            by_name.setdefault(chart.name, []).append(RunChartFrame(run, chart))
    return tuple(OverlayFrame(name, tuple(sources)) for name, sources in by_name.items())
