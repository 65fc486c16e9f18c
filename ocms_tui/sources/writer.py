"""Write a fitted source as an ocms directory, all or nothing.

The rows go through the recorder itself (OcmsRecorder with the fit's chart groups), so an
imported directory is what a live run would have written: same names, same collision
suffixes, same files. It is written into a temp directory beside the output and renamed
into place only once every chart holds every row; a failure leaves no output at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ocms_recorder import METRICS_JSON, RANK_ENV_VARS, OcmsRecorder, chart_file_name

from ocms_tui.sources.common import Series
from ocms_tui.sources.fitting import Fit

POINTS_PER_BLOCK = 1 << 16


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


def write_rows(directory: Path, fit: Fit, series: list[Series]) -> Written:
    """Record `series` into `directory` with the recorder, then check every row arrived."""
    placed = {key for chart in fit.charts for key in chart.keys}
    kept = [each for each in series if each.name in placed]
    chart_of = {key: chart.name for chart in fit.charts for key in chart.keys}
    collect = _Collect()
    logger = logging.getLogger("ocms_recorder")
    logger.addHandler(collect)
    expected_rows: dict[str, int] = {chart.name: 0 for chart in fit.charts}
    first_seen: dict[str, list[str]] = {chart.name: [] for chart in fit.charts}
    seen: set[str] = set()
    points = 0
    try:
        recorder = open_appender(directory, fit)
        if not recorder.active:
            raise WriteError("the recorder would not write (not rank 0)")
        for step, row in merged_rows(kept):
            recorder.log(step=step, metrics=row)
            points += len(row)
            charts_hit = set()
            for key in row:
                chart = chart_of[key]
                charts_hit.add(chart)
                if key not in seen:
                    seen.add(key)
                    first_seen[chart].append(key)
            for chart in charts_hit:
                expected_rows[chart] += 1
        recorder.finish()
    finally:
        logger.removeHandler(collect)
    y_names = _read_back(directory, first_seen, expected_rows, collect.messages)
    return Written(directory, sum(expected_rows.values()), points, y_names, tuple(collect.messages))


def _read_back(
    directory: Path,
    first_seen: dict[str, list[str]],
    expected_rows: dict[str, int],
    notes: list[str],
) -> dict[str, tuple[str, str]]:
    """The y-axis name each key got (the recorder appends a column per new key, in the
    order it meets them), after checking each CSV holds every row sent to it."""
    try:
        layout = json.loads((directory / METRICS_JSON).read_text("utf-8"))
        charts = {entry["name"]: entry["y_axis"] for entry in layout["charts"]}
        y_names = {}
        for chart, keys in first_seen.items():
            if not keys:
                continue
            with open(directory / chart_file_name(chart), "rb") as handle:
                rows = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
            if rows != expected_rows[chart] or len(charts[chart]) != len(keys):
                raise WriteError(
                    f"chart {chart!r}: {rows} of {expected_rows[chart]} rows written"
                    + (f" ({'; '.join(notes)})" if notes else "")
                )
            y_names.update(
                {key: (chart, name) for key, name in zip(keys, charts[chart], strict=True)}
            )
        return y_names
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise WriteError(
            f"the written directory is incomplete: {error}"
            + (f" ({'; '.join(notes)})" if notes else "")
        ) from error


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
    resolved = out.resolve()
    for source in sources:
        root = source.resolve()
        if resolved == root or root in resolved.parents:
            raise WriteError(f"{out} is inside the source {source}, which is only read")


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for a moment, for every
    thread; the dashboard converts sources in a thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _missing_ancestor(path: Path) -> Path | None:
    """The outermost directory of `path`'s parents that does not exist yet."""
    missing = None
    for ancestor in path.parents:
        if ancestor.exists():
            break
        missing = ancestor
    return missing


def write_ocms_directory(out: Path, fit: Fit, series: list[Series], sources: list[Path]) -> Written:
    """Write into a temp directory beside `out`, rename it to `out` when complete. On any
    failure nothing is left: neither the temp directory nor parents created for `out`."""
    check_output_path(out, sources)
    created = _missing_ancestor(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".importing", dir=out.parent))
    except OSError as error:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise WriteError(f"cannot create {out}: {error.strerror or error}") from None
    try:
        written = write_rows(temp, fit, series)
        os.chmod(temp, 0o777 & ~_umask())  # mkdtemp's 0700 is for while it is incomplete
        if out.is_dir():
            out.rmdir()  # empty (checked above): rename needs the name free
        os.rename(temp, out)
    except BaseException as error:
        shutil.rmtree(temp, ignore_errors=True)
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        if isinstance(error, OSError):
            raise WriteError(f"cannot write {out}: {error}") from None
        raise
    return Written(out, written.rows, written.points, written.y_names, written.recorder_notes)
