"""ChartData: one chart of a run, its rows read from its CSV, its problems, its frames.

Pure Python (no Textual). `RunModel` holds one per chart metrics.json declares; the reading
thread alone calls `update`, and hands the UI `frame()`, an immutable value.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.follow.chart_file import FileState
from ocms_tui.follow.frames import ChartFrame, Mark, next_version, read_only
from ocms_tui.follow.health import SeriesHealth
from ocms_tui.follow.picture import PictureTally, picture_problems
from ocms_tui.follow.preview_sample import Preview
from ocms_tui.follow.reader import CsvFollower
from ocms_tui.follow.series import SeriesStats, SeriesStore
from ocms_tui.format.parse import ParsedRows
from ocms_tui.format.problems import Problem, Rule
from ocms_tui.format.schema import ChartSpec


class ChartData:
    """One chart: its spec from metrics.json and the rows read from its CSV.

    A file too large for one read is shown first from a sample of its rows (its whole step
    range and its latest row, see `CsvFollower.preview`) while every row is read behind it;
    the rows replace the sample at once when the last of them is read. Meanwhile `rows`
    counts the rows read, the series and stats are the sample's (`SeriesStats.sampled`),
    and `version` does not move, so that nothing is drawn twice during a load.
    """

    def __init__(
        self,
        spec: ChartSpec,
        directory: Path,
        settle_seconds: float,
        keep_values: bool = True,
        health: bool = True,
    ) -> None:
        self.spec = spec
        self._watch_health = health
        self._health = self._new_health()
        self.follower = CsvFollower(
            directory, spec.file, spec.y_axis, settle_seconds, chart=spec.name
        )
        self._store = SeriesStore(len(spec.y_axis), keep_values)
        self._tally = PictureTally(spec.y_axis)
        self._picture: tuple[int, list[Problem]] | None = None  # (rows, their problems)
        self._preview: SeriesStore | None = None
        self._preview_identity: tuple[int, int] | None = None
        # The raw values' M4 pyramids of the rows read behind a sample, built here while
        # they are not shown; handed over with the frames of those rows (see `frame`).
        self._pyramids: tuple[MinMaxPyramid, ...] = ()
        self._frame: tuple[tuple[object, ...], ChartFrame] | None = None
        self.chart_id = next_version()
        self.version = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def file(self) -> str:
        return self.spec.file

    @property
    def y_axis(self) -> tuple[str, ...]:
        return self.spec.y_axis

    @property
    def rows(self) -> int:
        """Rows read from the file (while a sample is shown, fewer than the file holds)."""
        return self._store.rows

    @property
    def sampled(self) -> bool:
        """A sample of the file is shown while its rows are read (see the class)."""
        return self._preview is not None

    @property
    def _shown_store(self) -> SeriesStore:
        return self._store if self._preview is None else self._preview

    def drawn(self) -> SeriesStore:
        """The rows on screen now (the sample, or every row read). A drawing takes it once
        and reads steps, values and pyramids from it: the sample is replaced on a loading
        thread, and separate reads around that moment would pair the sample's steps with
        the first rows' values."""
        return self._shown_store

    @property
    def loaded_bytes(self) -> tuple[int, int]:
        """(bytes read, bytes the file held when last looked at)."""
        follower = self.follower
        return min(follower.offset, follower.size), follower.size

    @property
    def last_step(self) -> int | None:
        return self._shown_store.last_step

    def steps(self) -> np.ndarray:
        return self._shown_store.steps()

    def values(self, series: int) -> np.ndarray:
        return self._shown_store.values(series)

    def stats(self, series: int) -> SeriesStats:
        stats = self._shown_store.stats(series)
        return stats if self._preview is None else dataclasses.replace(stats, sampled=True)

    @property
    def restarts(self) -> tuple[int, ...]:
        """Rows where the steps went back: the run started again (see `pass_bounds`)."""
        return self._shown_store.restarts

    @property
    def passes(self) -> int:
        return self._shown_store.passes

    @property
    def earlier_passes_dropped(self) -> bool:
        """More restarts than MAX_KEPT_PASSES: only the latest passes are drawn."""
        return self._shown_store.earlier_passes_dropped

    @property
    def nbytes(self) -> int:
        return self._store.nbytes

    def update(self, budget_bytes: int | None, now: float) -> tuple[bool, bool, bool]:
        """Read new rows. Returns (changed on screen, more to read, held back to settle).

        A file larger than `budget_bytes` that nothing was read of yet is only sampled by
        this call: its first screen waits for nothing else; the next calls read its rows.
        """
        if budget_bytes is not None and self._take_preview(budget_bytes):
            self.version += 1
            return True, True, False
        result = self.follower.poll(budget_bytes, now, self._reset_store, self._append)
        changed = result.reset
        loaded = not result.more and not result.held
        if self._preview is not None and (
            loaded or self.follower.identity != self._preview_identity
        ):
            # Every row is read (or the file sampled is gone): the rows replace the sample.
            self._drop_preview()
            changed = True
        elif self._preview is None and result.rows > 0:
            changed = True
        if changed:
            self.version += 1
        return changed, result.more, result.held

    def _take_preview(self, larger_than: int) -> bool:
        if self._preview is not None or self._store.rows or not self._store.keep_values:
            return False
        preview: Preview | None = self.follower.preview(larger_than)
        if preview is None:
            return False
        store = SeriesStore(len(self.spec.y_axis))
        store.append(preview.rows)
        self._preview, self._preview_identity = store, preview.identity
        return True

    def _drop_preview(self) -> None:
        self._preview = self._preview_identity = None

    def frame(self) -> ChartFrame:
        """The chart as of now, as a value for another thread: the same frame while nothing
        in it changed. Call it on the reading thread, between reads."""
        store = self._shown_store
        key = (
            self.spec,
            store.generation,
            store.rows,
            self._store.rows,
            self.version,
            len(self.follower.problems),
        )
        if self._frame is not None and self._frame[0] == key:
            return self._frame[1]
        series = range(len(self.spec.y_axis))
        frame = ChartFrame(
            name=self.name,
            file=self.file,
            y_axis=self.y_axis,
            chart_id=self.chart_id,
            generation=store.generation,
            version=next_version(),
            rows=self.rows,
            steps=read_only(store.steps()),
            values=tuple(read_only(store.values(index)) for index in series),
            stats=tuple(self.stats(index) for index in series),
            restarts=store.restarts,
            passes=store.passes,
            earlier_passes_dropped=store.earlier_passes_dropped,
            last_step=store.last_step,
            sampled=self.sampled,
            marks=self.all_marks(),
            # Handed over once the rows they cover are drawn: this thread stops there.
            pyramids=self._pyramids if store is self._store else (),
        )
        self._frame = (key, frame)
        return frame

    def _new_health(self) -> tuple[SeriesHealth, ...]:
        return tuple(SeriesHealth(name) for name in self.spec.y_axis) if self._watch_health else ()

    def _reset_store(self) -> None:
        self._store = SeriesStore(len(self.spec.y_axis), self._store.keep_values)
        self._health = self._new_health()
        self._drop_preview()
        self._pyramids = ()
        self._tally = PictureTally(self.spec.y_axis)
        self._picture = None

    def _append(self, parsed: ParsedRows) -> None:
        store = self._store
        if store.rows == 0:
            # Size the buffers once for the whole file instead of growing them.
            store.reserve(max(parsed.rows, int(self.follower.expected_rows() * 1.02)))
        self._tally.add(parsed.steps, parsed.columns, store.append(parsed))
        for health, column in zip(self._health, parsed.columns, strict=False):
            health.feed(parsed.steps, column)
        if self._preview is not None:
            # The rows are not on screen yet, so no other thread draws from their M4
            # pyramids: build those of the raw values here, block by block beside the
            # parsing, instead of all at once on the UI thread when the rows are shown.
            if len(self._pyramids) != len(self.spec.y_axis):
                self._pyramids = tuple(MinMaxPyramid() for _ in self.spec.y_axis)
            for series, pyramid in enumerate(self._pyramids):
                pyramid.extend(store.values(series))

    def picture_problems(self) -> list[Problem]:
        """What the picture gets wrong (`follow.picture`), over every row read so far."""
        tally = self._tally
        if self._picture is None or self._picture[0] != tally.rows:
            self._picture = (tally.rows, picture_problems(self.name, self.file, tally))
        return self._picture[1]

    def problems(self) -> list[Problem]:
        """The file's problems and the picture's, each naming this chart. Steps that are an
        epoch index go back once per epoch: one `epoch-index-step` says so instead of a
        `step-regression` line per epoch."""
        picture = self.picture_problems()
        found = self.file_problems()
        if any(problem.rule is Rule.EPOCH_INDEX_STEP for problem in picture):
            found = [problem for problem in found if problem.rule is not Rule.STEP_REGRESSION]
        return [
            problem if problem.chart is not None else dataclasses.replace(problem, chart=self.name)
            for problem in found
        ] + picture

    def health_problems(self) -> list[Problem]:
        """Spikes and divergences of this chart's series (with those the rows so far end in)."""
        return [
            Problem(
                Rule(finding.rule),
                self.file,
                finding.message,
                chart=self.name,
                series=health.name,
                step=finding.step,
            )
            for health in self._health
            for finding in (*health.findings, *health.pending())
        ]

    def marks(self, series: int) -> tuple[Mark, ...]:
        """Steps of series `series` a chart marks: (step, rule, below). A nan or inf is
        marked above the curve (nothing can draw it), a -inf below it, a spike or the
        start of a divergence above it; the first MAX_PROBLEMS_PER_RULE_AND_FILE of each."""
        return self.all_marks()[series]

    def all_marks(self) -> tuple[tuple[Mark, ...], ...]:
        """`marks` of every series, from one pass over the problems."""
        found: dict[str, set[Mark]] = {name: set() for name in self.y_axis}
        for problem in (*self.follower.problems, *self.health_problems()):
            if problem.series in found and problem.step is not None:
                below = " is -inf;" in problem.message
                found[problem.series].add((problem.step, problem.rule.value, below))
        return tuple(tuple(sorted(found[name])) for name in self.y_axis)

    def file_problems(self) -> list[Problem]:
        """Row problems found so far plus the file's current state."""
        follower = self.follower
        problems = list(follower.problems)
        label = f"chart {self.name!r}"
        if follower.state is FileState.MISSING:
            problems.append(
                Problem(
                    Rule.MISSING_CSV,
                    self.file,
                    f"{label} is declared in metrics.json but {self.file} does not exist",
                )
            )
        elif follower.state is FileState.OUTSIDE:
            problems.append(
                Problem(
                    Rule.UNSAFE_PATH,
                    self.file,
                    f"{self.file} is a symlink leading outside the metrics directory; not read",
                )
            )
        elif follower.state is FileState.NOT_A_FILE:
            problems.append(
                Problem(Rule.NOT_A_FILE, self.file, f"{self.file} is not a regular file; not read")
            )
        elif follower.state is FileState.UNREADABLE:
            problems.append(
                Problem(Rule.NOT_A_FILE, self.file, f"{self.file} cannot be read (symlink loop?)")
            )
        elif follower.partial_line and follower.lone_carriage_return_in_tail:
            problems.append(
                Problem(
                    Rule.LONE_CR,
                    self.file,
                    "rows are separated by a lone \\r (so this reads as one unfinished line); "
                    "end every row with \\n or \\r\\n",
                    follower.lines_read + 1,
                )
            )
        elif follower.partial_line:
            problems.append(
                Problem(
                    Rule.PARTIAL_LINE,
                    self.file,
                    "the last line has no newline yet (a row still being written, or a crash)",
                    follower.lines_read + 1,
                )
            )
        elif follower.lines_read == 0 and follower.size == 0:
            problems.append(Problem(Rule.EMPTY_CHART, self.file, f"{label} has no rows yet"))
        return problems
