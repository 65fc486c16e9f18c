"""RunModel: one metrics directory as charts, series and problems, kept up to date.

Pure Python (no Textual): the dashboard's session reads it on its own thread and publishes its
charts as frames (`follow.frames`); `--check` loads it once and reports it.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ocms_recorder import CSV_SUFFIX, METRICS_JSON

from ocms_tui.follow.chart_data import ChartData
from ocms_tui.follow.chart_file import FileState, resolve_inside
from ocms_tui.follow.health import (
    STALL_INTERVALS,
    STALL_MIN_SECONDS,
    stalled_for,
)
from ocms_tui.follow.series import SeriesStats
from ocms_tui.format.directories import DirectoryProblem, directory_problem
from ocms_tui.format.problems import Problem, Rule
from ocms_tui.format.schema import MAX_METRICS_JSON_BYTES, ChartSpec, parse_schema
from ocms_tui.format.sidecar import SIDECAR_NAME, SidecarReader

# How many recent writes make a run's pace (the `stalled` check).
PACE_WRITES = 20
# Listing a directory with a huge number of entries must stay cheap.
MAX_DIRECTORY_ENTRIES = 10_000
# While a large run loads, this many charts are read at once: polars parses without the
# GIL, and one chart's blocks alone keep about one core busy.
READ_IN_PARALLEL = 2
_chart_readers: ThreadPoolExecutor | None = None
_chart_readers_lock = threading.Lock()


def _update_charts(
    charts: list[ChartData], budget_bytes: int | None, now: float
) -> list[tuple[bool, bool, bool]]:
    """`chart.update` of each chart (each touches only its own chart), side by side while
    a sampled chart's rows are read, one after the other otherwise (a followed run's few
    new rows are not worth a thread)."""
    global _chart_readers
    if len(charts) < 2 or not any(chart.sampled for chart in charts):
        return [chart.update(budget_bytes, now) for chart in charts]
    with _chart_readers_lock:
        if _chart_readers is None:
            _chart_readers = ThreadPoolExecutor(READ_IN_PARALLEL, thread_name_prefix="ocms-load")
        readers = _chart_readers
    return list(readers.map(lambda chart: chart.update(budget_bytes, now), charts))


__all__ = ["Change", "ChartData", "RunModel", "SeriesStats"]


@dataclass(frozen=True)
class Change:
    structure: bool = False  # charts added, removed, renamed or given other series
    charts: frozenset[str] = frozenset()  # charts whose rows changed
    problems: bool = False
    more: bool = False  # data is left to read (call refresh() again)

    @property
    def any(self) -> bool:
        return self.structure or bool(self.charts) or self.problems


class RunModel:
    """A metrics directory: read fully once, then incrementally on each refresh()."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        settle_seconds: float = 1.0,
        keep_values: bool = True,
        health: bool = True,
    ) -> None:
        """`keep_values=False`: count rows and keep stats and problems, but not the series
        themselves (a one-shot check of a huge run then needs almost no memory).
        `health=False`: no spike or divergence findings (`--no-health`)."""
        self.health = health
        # The last-write times seen to grow while following: the run's own pace (`stalled`).
        self._write_times: list[float] = []
        self.directory = Path(directory)
        self.settle_seconds = settle_seconds
        self.keep_values = keep_values
        self.charts: tuple[ChartData, ...] = ()
        self.problems: tuple[Problem, ...] = ()
        self.exists = False
        self.missing: DirectoryProblem | None = None
        """Why the directory cannot be read (None while it can)."""
        self.has_metrics_json = False
        self.last_write: float | None = None
        self.loading = True  # until a refresh has read everything there was
        self.settling = False  # a chart's first row waits for metrics.json to catch up
        self._schema_problems: tuple[Problem, ...] = ()
        self._declared_files: frozenset[str] | None = None
        self._schema_identity: tuple[int, int, int, int] | None = None
        self._pending: set[str] = set()  # charts with rows left to read or held back
        self._sidecar = SidecarReader(self.directory)  # what the recorder did not write

    @property
    def total_rows(self) -> int:
        return sum(chart.rows for chart in self.charts)

    @property
    def loaded_bytes(self) -> tuple[int, int]:
        """(bytes read, bytes held) over the charts still being read; (0, 0) when none is."""
        pending = [chart.loaded_bytes for chart in self.charts if chart.name in self._pending]
        return sum(done for done, _ in pending), sum(size for _, size in pending)

    def reload(self, budget_bytes: int | None = None) -> Change:
        """Forget everything and read the directory from scratch."""
        had_charts = bool(self.charts)
        self.charts = ()
        self._schema_identity = None
        self._schema_problems = ()
        self._sidecar = SidecarReader(self.directory)
        change = self.refresh(budget_bytes)
        return Change(
            structure=change.structure or had_charts,
            charts=change.charts,
            problems=True,
            more=change.more,
        )

    def refresh(
        self,
        budget_bytes: int | None = None,
        now: float | None = None,
        files: frozenset[str] | None = None,
    ) -> Change:
        """Bring the model up to date with the disk; cost is proportional to new bytes.

        `budget_bytes` caps what one call reads per chart, so a caller can show the
        first rows of a huge run before all of it is loaded. `files`: the names a watcher
        saw change; other charts are not looked at (unless rows were left to read or held
        back last time). None: look at every chart.
        """
        now = time.monotonic() if now is None else now
        self.missing = directory_problem(self.directory)
        self.exists = self.missing is None
        structure = self._refresh_schema() if self.exists else self._forget_schema()
        changed: set[str] = set()
        more = held = False
        # A new schema, or no list of changed files: every chart is looked at.
        wanted = None if structure or files is None or METRICS_JSON in files else files
        if self.exists and (wanted is None or SIDECAR_NAME in wanted):
            self._sidecar.refresh()
        pending, self._pending = self._pending, set()
        to_read = [
            chart
            for chart in self.charts
            if wanted is None or chart.file in wanted or chart.name in pending
        ]
        for chart, (chart_changed, chart_more, chart_held) in zip(
            to_read, _update_charts(to_read, budget_bytes, now), strict=True
        ):
            if chart_more or chart_held:
                self._pending.add(chart.name)
            if chart_changed:
                changed.add(chart.name)
            more |= chart_more
            held |= chart_held
            if chart.follower.mtime is not None:
                self.last_write = max(self.last_write or 0.0, chart.follower.mtime)
        self.loading = more and not held
        self.settling = held
        if self.last_write is not None and (
            not self._write_times or self.last_write > self._write_times[-1]
        ):
            self._write_times = [*self._write_times[-PACE_WRITES:], self.last_write]
        problems = tuple(sorted(self._collect_problems(), key=Problem.sort_key))
        problems_changed = problems != self.problems
        self.problems = problems
        return Change(structure, frozenset(changed), problems_changed, more)

    def load_settled(self, timeout: float = 5.0) -> None:
        """Read everything, waiting out a writer caught between its two renames."""
        deadline = time.monotonic() + timeout
        self.refresh()
        while (self.settling or self.loading) and time.monotonic() < deadline:
            time.sleep(0.05)
            self.refresh()

    def _forget_schema(self) -> bool:
        had = bool(self.charts)
        self.charts = ()
        self.has_metrics_json = False
        self._schema_identity = None
        self._schema_problems = ()
        self._declared_files = None
        return had

    def _refresh_schema(self) -> bool:
        """Re-read metrics.json when it changed; True when the chart structure changed."""
        path, state = resolve_inside(self.directory, METRICS_JSON)
        identity: tuple[int, int, int, int] | None = None
        data: bytes | None = None
        problem: Problem | None = None
        if path is None:
            if state is FileState.OUTSIDE:
                problem = Problem(
                    Rule.UNSAFE_PATH, METRICS_JSON, "metrics.json leads outside the directory"
                )
            elif state is FileState.UNREADABLE:
                problem = Problem(
                    Rule.NOT_A_FILE,
                    METRICS_JSON,
                    "metrics.json cannot be resolved (a symlink loop?); make it a plain file",
                )
        else:
            identity, data, problem = _read_small_file(path, self._schema_identity)
        if identity is not None and identity == self._schema_identity:
            return False
        self._schema_identity = identity
        self.has_metrics_json = data is not None
        if data is None:
            self._schema_problems = (problem,) if problem else ()
            self._declared_files = None
            return self._set_specs(())
        if identity is not None:
            self.last_write = max(self.last_write or 0.0, identity[3] / 1e9)
        schema = parse_schema(data, total_size=identity[2] if identity else None)
        self._schema_problems = schema.problems
        self._declared_files = schema.declared_files
        return self._set_specs(schema.charts)

    def _set_specs(self, specs: tuple[ChartSpec, ...]) -> bool:
        current = {chart.spec: chart for chart in self.charts}
        charts = tuple(
            current.get(spec)
            or ChartData(spec, self.directory, self.settle_seconds, self.keep_values, self.health)
            for spec in specs
        )
        for chart, spec in zip(charts, specs, strict=True):
            chart.spec = spec  # equal specs may still differ in where they are declared
        structure = [chart.spec for chart in charts] != [chart.spec for chart in self.charts]
        self.charts = charts
        return structure

    def _collect_problems(self) -> list[Problem]:
        if self.missing is not None:
            return [Problem(Rule.MISSING_DIR, ".", self.missing.message)]
        problems = list(self._schema_problems)
        if not self.has_metrics_json and not problems:
            problems.append(
                Problem(
                    Rule.MISSING_METRICS_JSON,
                    METRICS_JSON,
                    "no metrics.json: the Octopus UI shows no charts without it "
                    "(OcmsRecorder writes it on the first log())",
                )
            )
        problems.extend(self._sidecar.problems)
        for chart in self.charts:
            problems.extend(chart.problems())
            problems.extend(chart.health_problems())
        problems.extend(self._stalled())
        problems.extend(self._orphan_problems())
        return problems

    def _stalled(self) -> list[Problem]:
        """`stalled`: silent far longer than the run's pace (learnt while following it)."""
        times = self._write_times
        if not self.health or len(times) < 2:
            return []
        silent = time.time() - times[-1]
        limit = stalled_for(np.diff(times).tolist(), silent)
        if limit is None:
            return []
        written = [chart for chart in self.charts if chart.last_step is not None]
        latest = max(written, key=lambda chart: chart.last_step or 0, default=None)
        return [
            Problem(
                Rule.STALLED,
                ".",
                f"no new row for {silent:,.0f} s, over {limit:,.0f} s ({STALL_INTERVALS:g}x "
                f"this run's usual interval between writes, at least {STALL_MIN_SECONDS:g} s):"
                " is the job still running?",
                chart=latest.name if latest else None,
                step=latest.last_step if latest else None,
            )
        ]

    def _orphan_problems(self) -> list[Problem]:
        declared = self._declared_files
        if declared is None:
            return []
        orphans: list[Problem] = []
        try:
            with os.scandir(self.directory) as entries:
                for count, entry in enumerate(entries):
                    if count >= MAX_DIRECTORY_ENTRIES:
                        break
                    name = entry.name
                    if name.endswith(CSV_SUFFIX) and name not in declared:
                        orphans.append(
                            Problem(
                                Rule.ORPHAN_CSV,
                                name,
                                f"{name} is not declared in metrics.json; the Octopus UI "
                                "ignores it",
                            )
                        )
        except OSError:
            pass
        return orphans


def _read_small_file(
    path: Path, known: tuple[int, int, int, int] | None
) -> tuple[tuple[int, int, int, int] | None, bytes | None, Problem | None]:
    """Read metrics.json unless its identity (dev, inode, size, mtime) is unchanged."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None, None
    except OSError as error:  # it is there, but this reader may not read it
        message = f"metrics.json cannot be read: {error.strerror or error}"
        return None, None, Problem(Rule.NOT_A_FILE, METRICS_JSON, message)
    try:
        info = os.fstat(descriptor)
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if not stat.S_ISREG(info.st_mode):
            return identity, None, Problem(Rule.NOT_A_FILE, METRICS_JSON, "not a regular file")
        if identity == known:
            return identity, b"", None
        # Reading one byte over the cap is enough for the schema to report the size.
        chunks: list[bytes] = []
        remaining = MAX_METRICS_JSON_BYTES + 1
        while remaining > 0:
            chunk = os.read(descriptor, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return identity, b"".join(chunks), None
    except OSError:
        return None, None, None
    finally:
        os.close(descriptor)
