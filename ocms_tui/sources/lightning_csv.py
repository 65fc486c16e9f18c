"""A Lightning `CSVLogger` run: `metrics.csv` with a header, a `step` column, and sparse
rows (a column is empty where that metric was not logged, e.g. `val_loss` on train steps).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ocms_integrations.lightning_mapping import LIGHTNING_CHART_GROUPS
from ocms_tui.sources.common import (
    CappedProblems,
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    open_regular_file,
)

METRICS_CSV = "metrics.csv"
STEP_COLUMN = "step"
READ_CHUNK_BYTES = 1 << 20
# A CSVLogger line holds one value per metric: a line longer than this is not one.
MAX_LINE_CHARS = 1 << 20
OVERLONG_LINE = "-\n"  # stands for a line over MAX_LINE_CHARS: fails as a row, reported
_NEWLINES = ("\n", "\r")


def find_metrics_csv(path: Path) -> Path | None:
    """`path` itself, `path/metrics.csv`, or that of the latest `version_N/` below it."""
    if path.is_file():
        return path if path.name == METRICS_CSV else None
    if (path / METRICS_CSV).is_file():
        return path
    versions = version_directories(path)
    return versions[-1] / METRICS_CSV if versions else None


def version_directories(path: Path) -> list[Path]:
    """The `version_N/` runs holding a metrics.csv in `path` or its `lightning_logs/`, in
    version order."""
    versions = []
    for candidate in (path, path / "lightning_logs"):
        try:
            for child in candidate.iterdir():
                name = child.name
                if (
                    name.startswith("version_")
                    and name[8:].isdigit()
                    and (child / METRICS_CSV).is_file()
                ):
                    versions.append((int(name[8:]), child))
        except OSError:
            continue
    return [directory for _, directory in sorted(versions)]


class _LineStream:
    """The complete lines of an open file, read as they are used: memory holds one line of
    at most MAX_LINE_CHARS, not the file. A longer line is read past and given as
    OVERLONG_LINE, a row with no integer step that is reported and left out like any
    other. `incomplete` once a last line without its newline (still being written) was met;
    that line is not given."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle
        self.incomplete = False

    def __iter__(self) -> Iterator[str]:
        read = self._handle.readline
        while line := read(MAX_LINE_CHARS + 1):
            overlong = len(line) > MAX_LINE_CHARS
            while overlong and line and not line.endswith(_NEWLINES):
                line = read(MAX_LINE_CHARS + 1)
            if not line or not line.endswith(_NEWLINES):
                self.incomplete = True
                return
            yield OVERLONG_LINE if overlong else line


def _open_text(path: Path) -> TextIO:
    return io.TextIOWrapper(
        os.fdopen(open_regular_file(path), "rb", buffering=READ_CHUNK_BYTES),
        encoding="utf-8-sig",  # a BOM (a file saved by a Windows editor) is no column name
        errors="replace",
        newline="",
    )


_NO_ROW: list[str] = []  # next()'s default: the file has no line at all


def _rows(reader: Iterator[list[str]]) -> Iterator[list[str] | None]:
    """Each row of `reader`; None for a line the csv module refuses (a field beyond its
    size limit), so that one hostile line costs that row, not the import."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield None


def read_lightning_csv(path: Path) -> Source:
    found = find_metrics_csv(path)
    csv_path = found if found is None or found.is_file() else found / METRICS_CSV
    if csv_path is None:
        raise SourceError(f"{path}: no Lightning {METRICS_CSV} (nor a version_N/ holding one)")
    with _open_text(csv_path) as handle:
        lines = _LineStream(handle)
        return _read_rows(path, csv_path, lines, _rows(csv.reader(lines)))


def _read_rows(
    path: Path, csv_path: Path, lines: _LineStream, reader: Iterator[list[str] | None]
) -> Source:
    header = next(reader, _NO_ROW)
    if header is _NO_ROW:
        if lines.incomplete:  # the header itself is still being written
            return Source(SourceKind.LIGHTNING, path, [], incomplete_tail=True)
        raise SourceError(f"{csv_path}: empty; not a CSVLogger metrics.csv")
    header = header or []
    if STEP_COLUMN not in header:
        raise SourceError(f"{csv_path}: no '{STEP_COLUMN}' column; not a CSVLogger metrics.csv")
    step_index = header.index(STEP_COLUMN)
    columns: list[tuple[int, str]] = []
    problems: list[str] = []
    for index, name in enumerate(header):
        if index == step_index:
            continue
        if name in (other for _, other in columns) or name == STEP_COLUMN:
            problems.append(f"{csv_path}: column {name!r} appears twice; the second is left out")
            continue
        columns.append((index, name))
    builder = SeriesBuilder()
    bad_fields = CappedProblems(f"bad fields in {csv_path}")
    for line_number, fields in enumerate(reader, start=2):
        if fields == []:
            continue  # a blank line
        try:
            if fields is None:
                raise ValueError("not readable as CSV")
            step = int(fields[step_index])
        except (ValueError, IndexError):
            bad_fields.add(f"{csv_path}:{line_number}: no integer step; row left out")
            continue
        for index, name in columns:
            text = fields[index] if index < len(fields) else ""
            if not text:
                continue  # not logged at this step: a gap, not a zero
            try:
                value = float(text)
            except ValueError:
                bad_fields.add(f"{csv_path}:{line_number}: {name!r} {text!r} is not a number")
                continue
            builder.add(name, step, value)
    problems += bad_fields.lines()
    problems += builder.problems()
    return Source(
        SourceKind.LIGHTNING,
        path,
        builder.series(),
        problems,
        incomplete_tail=lines.incomplete,
        chart_groups=list(LIGHTNING_CHART_GROUPS),  # the names the live callback maps alike
    )
