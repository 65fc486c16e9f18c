"""Open other tools' logs in the dashboard: each source converted into an ocms directory
under a private temp root, and converted again when it grows.

Pure Python, no Textual: the dashboard follows the converted directories as it follows any
run. TensorBoard sources are re-read from where they stopped (event files only grow); the
others are small and re-read whole. A conversion is written beside the live directory and
its files renamed over the live ones (CSVs first, metrics.json last), so the dashboard sees
whole files, as it does from the recorder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
from ocms_recorder import METRICS_JSON, OcmsRecorder, sanitize_key

from ocms_tui.follow.checker import CheckResult
from ocms_tui.follow.runs import find_metric_directories
from ocms_tui.format.problems import Problem, Rule
from ocms_tui.sources import READERS, SourceRun, detect_kind, source_runs
from ocms_tui.sources.common import Series, Source, SourceKind
from ocms_tui.sources.fitting import Fit, fit_series
from ocms_tui.sources.frameworks import Framework, as_framework, detect_framework
from ocms_tui.sources.signals import terminate_cleanly
from ocms_tui.sources.tensorboard import TensorBoardSource
from ocms_tui.sources.writer import merged_rows, open_appender, write_ocms_directory

FOLLOW_SECONDS = 2.0
DISCOVER_EVERY_ROUNDS = 5  # a parent is searched for new runs every 10 seconds
MAX_SIGNATURE_FILES = 10_000


def foreign_kind(path: Path) -> SourceKind | None:
    """The kind of another tool's log at `path`; None for ocms runs or parents of them
    (an HF output dir holding ocms_metrics/ beside checkpoint-N/ stays an ocms run)."""
    try:
        if (path / METRICS_JSON).exists() or (path.is_dir() and find_metric_directories(path)):
            return None
        return detect_kind(path)
    except (OSError, ValueError):  # a name too long, a parent without permission: not a
        return None  # source; the dashboard or the check says what is wrong with the path


def _signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Sizes and modification times of the files of a source: what changes as it grows."""
    if not path.is_dir():
        with contextlib.suppress(OSError):
            info = path.stat()
            return ((str(path), info.st_size, info.st_mtime_ns),)
        return ()
    found = []
    for root, directories, files in os.walk(path):
        directories[:] = sorted(name for name in directories if not name.startswith("."))
        for name in sorted(files):
            with contextlib.suppress(OSError):
                info = os.stat(os.path.join(root, name))
                found.append((os.path.join(root, name), info.st_size, info.st_mtime_ns))
            if len(found) >= MAX_SIGNATURE_FILES:
                return tuple(found)
    return tuple(found)


def _date_like(directory: Path, signature: tuple[tuple[str, int, int], ...]) -> None:
    """Give the converted files the time the source was last written: the dashboard then
    calls a log finished hours ago idle or finished, and a growing one live."""
    newest = max((mtime for _, _, mtime in signature), default=None)
    if newest is None:
        return
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            with contextlib.suppress(OSError):
                os.utime(directory / name, ns=(newest, newest))


class ConvertedSource:
    """One source and the ocms directory it is converted into.

    While the source only grows (every series' earlier points unchanged, no new series on a
    chart), its new points are appended by a recorder kept open on the directory; anything
    else (a new tag, a rewritten file) converts the whole source again.
    """

    def __init__(self, run: SourceRun, directory: Path, framework: Framework | None = None) -> None:
        self.run = run
        self.path = run.path
        self.kind = run.kind
        self.directory = directory
        # Resolved once: the dashboard asks for every run directory on each read.
        self.resolved_directory = directory.resolve()
        self.framework = framework  # detected from the first series read, then kept
        self.problems: list[str] = []  # the source's own, from its last read
        self.damaged = False
        self._tensorboard = (
            TensorBoardSource(run.path) if run.kind is SourceKind.TENSORBOARD else None
        )
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._appender: OcmsRecorder | None = None
        self._fit: Fit | None = None
        self._written: dict[str, Series] = {}  # what the directory holds, per series
        self.error: str | None = None

    def _read(self) -> Source:
        source = self._tensorboard.read() if self._tensorboard else READERS[self.kind](self.path)
        framework = self.framework or detect_framework(source)
        if self.framework is None and source.series:
            self.framework = framework
        source = as_framework(source, framework)
        self.problems = list(source.problems)
        self.damaged = source.damaged
        return source

    def update(self) -> bool:
        """Convert again if the source changed; True when the directory changed."""
        signature = _signature(self.path)
        if signature == self._signature:
            return False
        self._signature = signature
        source = self._read()
        fit = fit_series(source.series, source.chart_groups, by_magnitude=not source.hook_mapped)
        if not fit.charts:  # nothing logged yet: the dashboard waits for metrics.json
            return False
        tails = self._new_points(source.series, fit)
        if tails is not None and self._appender is not None:
            for step, row in merged_rows(tails):
                self._appender.log(step=step, metrics=row)
        else:
            self._rewrite(source, fit)
        self._written = {each.name: each for each in source.series}
        _date_like(self.directory, signature)
        return tails is None or bool(tails)

    def _new_points(self, series: list[Series], fit: Fit) -> list[Series] | None:
        """Each placed series' points after those already written; None when the source
        did not only grow (or the layout changed): then it is converted again."""
        if self._appender is None or self._fit is None or fit.charts != self._fit.charts:
            return None
        placed = {key for chart in fit.charts for key in chart.keys}
        tails = []
        for each in series:
            if each.name not in placed:
                continue
            old = self._written.get(each.name)
            count = 0 if old is None else len(old)
            if len(each) < count or (
                old is not None
                and not (
                    np.array_equal(each.steps[:count], old.steps)
                    and np.array_equal(each.values[:count], old.values, equal_nan=True)
                )
            ):
                return None
            if len(each) > count:
                tails.append(Series(each.name, each.steps[count:], each.values[count:]))
        return tails

    def _rewrite(self, source: Source, fit: Fit) -> None:
        self.close()
        staging = self.directory.parent / f".{self.directory.name}.next"
        shutil.rmtree(staging, ignore_errors=True)
        written = write_ocms_directory(staging, fit, source.series, [self.path])
        names = sorted(os.listdir(staging), key=lambda name: name == METRICS_JSON)
        for name in names:  # CSVs first: metrics.json never declares a file not there yet
            os.replace(staging / name, self.directory / name)
        shutil.rmtree(staging, ignore_errors=True)
        # Appending is safe only where each key has its own sanitized name: a recorder
        # resuming the layout gives colliding keys their `_2` in the order it meets them.
        if all(sanitize_key(key) == name for key, (_, name) in written.y_names.items()):
            self._appender = open_appender(self.directory, fit)
            self._fit = fit

    def own_problems(self) -> tuple[Problem, ...]:
        """What the source's reader said of it (a damaged file, files left out), as problems
        named by the source's own files."""
        return tuple(_source_problem(note) for note in self.problems)

    def close(self) -> None:
        if self._appender is not None:
            appender, self._appender, self._fit = self._appender, None, None
            appender.finish()


def _source_problem(note: str) -> Problem:
    """A reader's note as a problem of the file it names (`<file>: offset 88: ...`), so
    that every report format, GitHub annotations too, points at the source's own file."""
    head, separator, rest = note.partition(": ")
    if separator and os.path.isfile(head):
        return Problem(Rule.SOURCE_PROBLEM, os.path.abspath(head), rest)
    return Problem(Rule.SOURCE_PROBLEM, ".", note)


class ConvertedSources:
    """`with ConvertedSources(paths) as paths:` the paths with every foreign source replaced
    by its converted ocms directory, followed in a thread while the block runs."""

    def __init__(self, paths: list[Path], follow: bool = True) -> None:
        self.paths = paths
        self.follow = follow
        self.converted: list[ConvertedSource] = []
        self.notes: tuple[str, ...] = ()  # what the search for runs left out
        self._signals = contextlib.ExitStack()
        self._named: list[str] = []  # each path as given, a foreign one with its kind
        self._parents: list[tuple[Path, Path]] = []  # (a foreign path, its converted base)
        self._root: Path | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> list[Path]:
        result = []
        # Until __exit__: a SIGTERM while converting, checking or snapshotting unwinds
        # through __exit__, which removes the conversions (the dashboard handles it itself).
        self._signals.enter_context(terminate_cleanly())
        try:
            for path in self.paths:
                kind = foreign_kind(path)
                self._named.append(str(path) if kind is None else f"{path} ({kind.value})")
                if kind is None:
                    result.append(path)
                    continue
                if self._root is None:
                    self._root = Path(tempfile.mkdtemp(prefix="ocms-tui-import-"))
                found = source_runs(path)
                self.notes += found.notes
                base = self._directory_for(path, kind)
                self._parents.append((path, base))
                for converted in self._add_runs(base, found.runs):
                    converted.update()
                result.append(base)
        except BaseException:
            self._remove()
            self._signals.close()
            raise
        if self.follow and self.converted:
            self._thread = threading.Thread(target=self._follow, name="ocms-import", daemon=True)
            self._thread.start()
        return result

    def label(self) -> str | None:
        """How the status line names what is followed: the paths as given, each foreign
        one with its kind (`./output/runs (tensorboard)`); None when none is foreign."""
        if not self.converted:
            return None
        return ", ".join(self._named)

    def as_sources(self, results: list[CheckResult]) -> list[CheckResult]:
        """Check results of converted directories named after their sources (`runs/x
        (tensorboard)`, never the temp path), with the source's own problems added: a
        damaged source is never a plain "ok"."""
        named = []
        for result in results:
            converted = self.source_of(result.directory)
            if converted is None:
                named.append(result)
                continue
            own = converted.own_problems()
            named.append(
                dataclasses.replace(
                    result,
                    directory=Path(f"{converted.path} ({converted.kind.value})"),
                    problems=own + result.problems,
                )
            )
        return named

    def problems_of(self, directory: Path) -> tuple[Problem, ...]:
        """The own problems of the source converted into `directory` (none for a run that
        is not a conversion), for the dashboard's problems pane."""
        converted = self.source_of(directory)
        return () if converted is None else converted.own_problems()

    def source_of(self, directory: Path) -> ConvertedSource | None:
        """The converted source written into `directory`, if it is one."""
        if not self.converted:
            return None  # plain ocms runs: nothing to resolve
        resolved = directory.resolve()
        for converted in self.converted:
            if converted.resolved_directory == resolved:
                return converted
        return None

    def _directory_for(self, path: Path, kind: SourceKind) -> Path:
        """`<root>/<parent>/<name> (<kind>)`: the run list names a run by its path below
        the runs' common parent, so it reads `exp/run (tensorboard)`."""
        assert self._root is not None
        absolute = path.resolve()
        parent = self._root / (absolute.parent.name or "source")
        parent.mkdir(parents=True, exist_ok=True)
        base = f"{absolute.name or 'source'} ({kind.value})"
        name, number = base, 1
        while (parent / name).exists():
            number += 1
            name = f"{base} {number}"
        (parent / name).mkdir()
        return parent / name

    def _add_runs(self, base: Path, runs: Sequence[SourceRun]) -> list[ConvertedSource]:
        """A converted directory for each run not converted yet: `base` for the path given
        when it is one run, `base/<run>/` for each run of a parent."""
        known = {converted.path for converted in self.converted}
        added = []
        for run in runs:
            if run.path in known:
                continue
            directory = base / run.label if run.label else base
            directory.mkdir(parents=True, exist_ok=True)
            added.append(ConvertedSource(run, directory))
        self.converted += added
        return added

    def _new_runs(self) -> None:
        """Runs started under a parent since it was opened (a new `runs/<name>/`)."""
        for path, base in self._parents:
            try:
                self._add_runs(base, source_runs(path).runs)
            except Exception:  # the parent mid-change: look again next time
                continue

    def _follow(self) -> None:
        rounds = 0
        while not self._stop.wait(FOLLOW_SECONDS):
            rounds += 1
            if rounds % DISCOVER_EVERY_ROUNDS == 0:
                self._new_runs()
            for converted in self.converted:
                try:
                    converted.update()
                    converted.error = None
                except Exception as error:  # a source mid-rewrite: try again next time
                    converted.error = str(error)

    def _remove(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for converted in self.converted:
            converted.close()
        self._remove()
        self._signals.close()
