"""Write a fitted source as an ocms directory, all or nothing, each file in one pass.

An imported directory is what a live run would have written: the bytes OcmsRecorder.log()
leaves after being called with merged_rows(series), row by row. An import knows every key
before it writes, so it lays the charts out first with the recorder's own routing
(OcmsRecorder.preview: chart groups, sanitize_key, `_2` suffixes, the series cap) and
writes each CSV once, whole, then metrics.json with the recorder's write_layout: no chart
is widened, no row waits in memory (nor can be dropped there), nothing is flushed per row.
record_rows, the row-by-row path, is kept as the reference the tests compare it with.

It is written into a temp directory beside the output and renamed into place only once
complete; a failure, Ctrl-C or SIGTERM leaves no output at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ocms_recorder import (
    MAX_STEP,
    RANK_ENV_VARS,
    OcmsRecorder,
    chart_file_name,
    write_layout,
)

from ocms_tui.format.output_files import process_umask
from ocms_tui.sources.common import Series
from ocms_tui.sources.fitting import Fit

POINTS_PER_BLOCK = 1 << 16
# Rows formatted at once: a 100-million-point import never holds its text whole.
ROWS_PER_BLOCK = 1 << 16


class WriteError(Exception):
    """The output could not be written; nothing was left behind."""


@dataclass(frozen=True)
class Written:
    directory: Path
    rows: int  # rows written, over all charts
    points: int  # values written
    y_names: dict[str, tuple[str, str]]  # series name -> (chart, y-axis name)
    recorder_notes: tuple[str, ...]  # what the recorder said (a name collision, ...)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def merged_rows(series: list[Series]) -> Iterator[tuple[int, dict[str, float]]]:
    """Every point of `series` as recorder calls: by step (stable, so a series' values at
    one step keep their order), the keys of one step in one call, and a new call at the
    same step when a key comes again (each value is kept, as its own row)."""
    if not series:
        return
    keys = np.concatenate(
        [np.full(len(each), index, dtype=np.int32) for index, each in enumerate(series)]
    )
    steps = np.concatenate([each.steps for each in series])
    values = np.concatenate([each.values for each in series])
    order = np.argsort(steps, kind="stable")
    names = [each.name for each in series]
    current_step = -1
    row: dict[str, float] = {}
    for step, key, value in _points_in_blocks(steps, keys, values, order):
        name = names[key]
        if step != current_step or name in row:
            if row:
                yield current_step, row
            row = {}
            current_step = step
        row[name] = value
    if row:
        yield current_step, row


def _points_in_blocks(
    steps: np.ndarray, keys: np.ndarray, values: np.ndarray, order: np.ndarray
) -> Iterator[tuple[int, int, float]]:
    """(step, key, value) in `order`, turned into Python objects a block at a time: the
    whole of a 100-million-point import as Python lists would take gigabytes."""
    for start in range(0, len(order), POINTS_PER_BLOCK):
        block = order[start : start + POINTS_PER_BLOCK]
        yield from zip(
            steps[block].tolist(), keys[block].tolist(), values[block].tolist(), strict=True
        )


@contextlib.contextmanager
def _as_rank_zero() -> Iterator[None]:
    """The launcher variables hidden while the recorder starts: an import run inside a
    job's shell (RANK=3) must still write."""
    saved = {name: os.environ.pop(name) for name in RANK_ENV_VARS if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def open_appender(directory: Path, fit: Fit) -> OcmsRecorder:
    """A recorder that appends to a directory this module wrote with `fit` (it resumes
    the layout of its metrics.json)."""
    with _as_rank_zero():
        return OcmsRecorder(directory, chart_groups=fit.chart_groups(), mirror_to_ocms=False)


@dataclass(frozen=True)
class _LogCalls:
    """Every point to write, in the order OcmsRecorder.log() meets it when merged_rows
    makes the calls: by step (stable), with the index of the call each point is part of."""

    names: list[str]  # key -> series name
    keys: np.ndarray  # int32
    steps: np.ndarray  # int64
    values: np.ndarray  # float64
    calls: np.ndarray  # int64, non-decreasing


def _log_calls(series: list[Series]) -> _LogCalls:
    """merged_rows' calls, computed on whole arrays. Points of one step come in series
    order, so a key met again within a call is always the point just before: a new call
    starts where the step changes or the key repeats. A step the recorder would refuse
    (outside 0..2^53 - 1) drops its point, as log() skips that snapshot."""
    by_name: dict[str, list[Series]] = {}
    for each in series:  # one name is one key for the recorder, whatever its source
        by_name.setdefault(each.name, []).append(each)
    names = list(by_name)
    lengths = [sum(len(part) for part in parts) for parts in by_name.values()]
    keys = np.repeat(np.arange(len(names), dtype=np.int32), lengths)
    steps = np.concatenate([part.steps for parts in by_name.values() for part in parts] or [[]])
    values = np.concatenate([part.values for parts in by_name.values() for part in parts] or [[]])
    steps = steps.astype(np.int64, copy=False)
    usable = (steps >= 0) & (steps <= MAX_STEP)
    if not usable.all():
        keys, steps, values = keys[usable], steps[usable], values[usable]
    order = np.argsort(steps, kind="stable")
    keys, steps = keys[order], steps[order]
    values = values.astype(np.float64, copy=False)[order]
    del order
    new_call = np.ones(len(steps), dtype=bool)
    new_call[1:] = (steps[1:] != steps[:-1]) | (keys[1:] == keys[:-1])
    return _LogCalls(names, keys, steps, values, np.cumsum(new_call) - 1)


def _keys_as_met(keys: np.ndarray) -> list[int]:
    """Each key once, in the order log() first meets it."""
    unique, first = np.unique(keys, return_index=True)
    return unique[np.argsort(first, kind="stable")].tolist()  # type: ignore[no-any-return]


def _routes(
    directory: Path, fit: Fit, names: list[str], met: list[int]
) -> list[tuple[str, str] | None]:
    """(chart, y-axis name) of each key, None when the recorder would not write it: its
    own routing (OcmsRecorder.preview) over the keys in the order log() meets them, so
    collisions get their `_2` and the series cap falls where they would."""
    with _as_rank_zero():
        router = OcmsRecorder(
            directory, chart_groups=fit.chart_groups(), enabled=False, mirror_to_ocms=False
        )
    routes: list[tuple[str, str] | None] = [None] * len(names)
    for key, (_, chart, y_name) in zip(
        met, router.preview([names[key] for key in met]), strict=True
    ):
        if chart is not None and y_name is not None:
            routes[key] = (chart, y_name)
    return routes


def _row_texts(
    row_steps: np.ndarray, rows: np.ndarray, columns: np.ndarray, values: np.ndarray, width: int
) -> str:
    """Rows as log() appends them: the step, then each column's repr(float) or an empty
    field (a gap), every row as wide as the chart's final y-axis."""
    texts = list(map(repr, values.tolist()))
    if width == 1:  # one value per row: the usual chart, joined without a grid
        steps = map(str, row_steps.tolist())
        return "".join([f"{step},{text}\n" for step, text in zip(steps, texts, strict=True)])
    grid = np.full((len(row_steps), width + 1), "", dtype=object)
    grid[:, 0] = list(map(str, row_steps.tolist()))
    cells = np.empty(len(texts), dtype=object)
    cells[:] = texts
    grid[rows, columns + 1] = cells
    return "".join([",".join(row) + "\n" for row in grid.tolist()])


def _write_chart(
    path: Path,
    calls: np.ndarray,
    steps: np.ndarray,
    columns: np.ndarray,
    values: np.ndarray,
    width: int,
) -> int:
    """One chart's CSV in one pass (a block of rows at a time); returns its row count."""
    starts = np.flatnonzero(np.concatenate(([True], calls[1:] != calls[:-1])))
    ends = np.append(starts[1:], len(calls))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with open(os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644), "wb") as handle:
        for first in range(0, len(starts), ROWS_PER_BLOCK):
            block_starts = starts[first : first + ROWS_PER_BLOCK]
            begin, end = int(block_starts[0]), int(ends[first + len(block_starts) - 1])
            rows = np.repeat(
                np.arange(len(block_starts)), ends[first : first + len(block_starts)] - block_starts
            )
            text = _row_texts(
                steps[block_starts], rows, columns[begin:end], values[begin:end], width
            )
            handle.write(text.encode("ascii"))
    return len(starts)


def write_rows(directory: Path, fit: Fit, series: list[Series]) -> Written:
    """Write `series` into `directory` as the recorder would have after logging
    merged_rows(series) call by call, byte for byte, but laid out first and each file
    written once: no chart is widened, no row waits in memory, nothing is flushed per row.

    The names come from the recorder itself (preview), the metrics.json text from its
    layout_text (write_layout), the values from repr(float), as log() writes them; the
    test suite compares the two paths byte for byte."""
    placed = {key for chart in fit.charts for key in chart.keys}
    collect = _Collect()
    logger = logging.getLogger("ocms_recorder")
    logger.addHandler(collect)
    try:
        log = _log_calls([each for each in series if each.name in placed])
        met = _keys_as_met(log.keys)
        routes = _routes(directory, fit, log.names, met)
    finally:
        logger.removeHandler(collect)
    chart_index = {chart.name: index for index, chart in enumerate(fit.charts)}
    y_axes: list[list[str]] = [[] for _ in fit.charts]
    chart_of_key = np.full(len(log.names), len(fit.charts), dtype=np.int16)
    column_of_key = np.zeros(len(log.names), dtype=np.intp)
    y_names: dict[str, tuple[str, str]] = {}
    for key in met:
        route = routes[key]
        if route is None:
            continue
        chart, y_name = route
        index = chart_index[chart]
        chart_of_key[key] = index
        column_of_key[key] = len(y_axes[index])
        y_axes[index].append(y_name)
        y_names[log.names[key]] = route
    point_charts = chart_of_key[log.keys]
    order = np.argsort(point_charts, kind="stable")  # each chart's points, in log order
    bounds = np.searchsorted(point_charts[order], np.arange(len(fit.charts) + 1))
    rows = 0
    for index, chart in enumerate(fit.charts):
        if not y_axes[index]:
            continue
        picked = order[bounds[index] : bounds[index + 1]]
        rows += _write_chart(
            directory / chart_file_name(chart.name),
            log.calls[picked],
            log.steps[picked],
            column_of_key[log.keys[picked]],
            log.values[picked],
            len(y_axes[index]),
        )
    layout = [(chart.name, y_axes[i]) for i, chart in enumerate(fit.charts) if y_axes[i]]
    if layout:  # none: the recorder would not have written a file either
        write_layout(directory, layout)  # last: it declares files already complete
    points = int(bounds[len(fit.charts)])
    return Written(directory, rows, points, y_names, tuple(collect.messages))


def record_rows(directory: Path, fit: Fit, series: list[Series]) -> Written:
    """Record `series` into `directory` through OcmsRecorder.log(), one call per row of
    merged_rows, then check every row arrived: the path import took before write_rows,
    kept as the reference write_rows is compared with (tests, bench/bench_import.py)."""
    placed = {key for chart in fit.charts for key in chart.keys}
    kept = [each for each in series if each.name in placed]
    collect = _Collect()
    logger = logging.getLogger("ocms_recorder")
    logger.addHandler(collect)
    met: dict[str, None] = {}  # keys of the calls the recorder takes, in the order it meets them
    try:
        recorder = open_appender(directory, fit)
        if not recorder.active:
            raise WriteError("the recorder would not write (not rank 0)")
        for step, row in merged_rows(kept):
            recorder.log(step=step, metrics=row)
            if 0 <= step <= MAX_STEP:
                met.update(dict.fromkeys(row))
        recorder.finish()
        routes = {
            key: (chart, name)
            for key, chart, name in recorder.preview(met)
            if chart is not None and name is not None
        }
    finally:
        logger.removeHandler(collect)
    expected_rows: dict[str, int] = {}
    points = 0
    for step, row in merged_rows(kept):
        charts = [routes[key][0] for key in row if key in routes and 0 <= step <= MAX_STEP]
        points += len(charts)
        for chart in set(charts):
            expected_rows[chart] = expected_rows.get(chart, 0) + 1
    _check_rows(directory, expected_rows, collect.messages)
    return Written(directory, sum(expected_rows.values()), points, routes, tuple(collect.messages))


def _check_rows(directory: Path, expected_rows: dict[str, int], notes: list[str]) -> None:
    """Raise WriteError unless each chart's CSV holds the rows sent to it."""
    for chart, expected in expected_rows.items():
        try:
            with open(directory / chart_file_name(chart), "rb") as handle:
                rows = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
        except OSError as error:
            rows, notes = 0, [*notes, str(error)]
        if rows != expected:
            raise WriteError(
                f"chart {chart!r}: {rows} of {expected} rows written"
                + (f" ({'; '.join(notes)})" if notes else "")
            )


def check_output_path(out: Path, sources: list[Path]) -> None:
    """Refuse an output that exists with files in it, or that lies inside a source (the
    source is never written)."""
    try:
        occupied = (out.exists() or out.is_symlink()) and (
            not out.is_dir() or out.is_symlink() or any(out.iterdir())
        )
    except OSError as error:  # a directory this user may not list
        raise WriteError(f"cannot use {out}: {error.strerror or error}") from None
    if occupied:
        raise WriteError(f"{out} already exists; give a new directory to --out")
    nearest = next((parent for parent in out.parents if parent.exists()), None)
    if nearest is not None and not nearest.is_dir():
        raise WriteError(f"cannot create {out}: {nearest} is a file, not a directory")
    resolved = out.resolve()
    for source in sources:
        root = source.resolve()
        if resolved == root or root in resolved.parents:
            raise WriteError(f"{out} is inside the source {source}, which is only read")


def _missing_ancestor(path: Path) -> Path | None:
    """The outermost directory of `path`'s parents that does not exist yet."""
    missing = None
    for ancestor in path.parents:
        if ancestor.exists():
            break
        missing = ancestor
    return missing


_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise SystemExit inside the block, as Ctrl-C raises
    KeyboardInterrupt, so that the cleanup below runs: their default action would end the
    process on the spot and leave the temp directory. Only on the main thread (where
    Python runs handlers) and only over the default action (a host's own handler stays)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    kept = {}
    for number in _STOP_SIGNALS:
        if number != signal.SIGINT and signal.getsignal(number) is signal.SIG_DFL:
            kept[number] = signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """The stop signals wait (blocked) until the block ends: a step and the note that it
    was done happen together, so the cleanup knows exactly what to undo."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:
        yield
        return
    previous = block(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, previous)


def write_ocms_directory(out: Path, fit: Fit, series: list[Series], sources: list[Path]) -> Written:
    """Write into a temp directory beside `out`, rename it to `out` when complete. On any
    failure or interruption before that rename nothing is left: neither the temp
    directory nor parents created for `out`."""
    check_output_path(out, sources)
    with _signals_raise():
        return _write_into_place(out, fit, series)


def _write_into_place(out: Path, fit: Fit, series: list[Series]) -> Written:
    created = _missing_ancestor(out)
    temp: Path | None = None
    renamed = False
    try:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            with _signals_held():
                temp = Path(
                    tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".importing", dir=out.parent)
                )
        except OSError as error:
            raise WriteError(f"cannot create {out}: {error.strerror or error}") from None
        written = write_rows(temp, fit, series)
        if not written.rows:
            raise WriteError(f"nothing to write to {out}: no value at a step 0 .. {MAX_STEP}")
        os.chmod(temp, 0o777 & ~process_umask())  # mkdtemp's 0700 is for while it is incomplete
        if out.is_dir():
            out.rmdir()  # empty (checked above): rename needs the name free
        with _signals_held():
            os.rename(temp, out)
            renamed = True
    except BaseException as error:
        if not renamed:  # a signal after the rename ends the process; the output stands
            if temp is not None:
                shutil.rmtree(temp, ignore_errors=True)
            if created is not None:
                shutil.rmtree(created, ignore_errors=True)
        if isinstance(error, OSError):
            raise WriteError(f"cannot write {out}: {error.strerror or error}") from None
        raise
    return Written(out, written.rows, written.points, written.y_names, written.recorder_notes)
