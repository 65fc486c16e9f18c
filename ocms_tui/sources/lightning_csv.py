"""A Lightning `CSVLogger` run: `metrics.csv` with a header, a `step` column, and sparse
rows (a column is empty where that metric was not logged, e.g. `val_loss` on train steps).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path

from ocms_tui.sources.common import (
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    open_regular_file,
)

METRICS_CSV = "metrics.csv"
STEP_COLUMN = "step"
READ_CHUNK_BYTES = 1 << 20
MAX_LISTED_PROBLEMS = 20


def find_metrics_csv(path: Path) -> Path | None:
    """`path` itself, `path/metrics.csv`, or that of the latest `version_N/` below it."""
    if path.is_file():
        return path if path.name == METRICS_CSV else None
    if (path / METRICS_CSV).is_file():
        return path
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
                    versions.append((int(name[8:]), child / METRICS_CSV))
        except OSError:
            continue
    return max(versions)[1] if versions else None


def _lines(path: Path) -> tuple[list[str], bool]:
    """The complete lines of the file (streamed in chunks) and whether a last line was
    still being written (no newline yet)."""
    fd = open_regular_file(path)
    decoder = io.TextIOWrapper(
        os.fdopen(fd, "rb", buffering=READ_CHUNK_BYTES),
        encoding="utf-8",
        errors="replace",
        newline="",
    )
    with decoder:
        lines = decoder.readlines()
    incomplete = bool(lines) and not lines[-1].endswith(("\n", "\r"))
    return (lines[:-1] if incomplete else lines), incomplete


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
    lines, incomplete = _lines(csv_path)
    reader = _rows(csv.reader(lines))
    if not lines:
        if incomplete:  # the header itself is still being written
            return Source(SourceKind.LIGHTNING, path, [], incomplete_tail=True)
        raise SourceError(f"{csv_path}: empty; not a CSVLogger metrics.csv")
    header = next(reader, None) or []
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
    bad_lines = 0
    for line_number, fields in enumerate(reader, start=2):
        if fields == []:
            continue  # a blank line
        try:
            if fields is None:
                raise ValueError("not readable as CSV")
            step = int(fields[step_index])
        except (ValueError, IndexError):
            bad_lines += 1
            if bad_lines <= MAX_LISTED_PROBLEMS:
                problems.append(f"{csv_path}:{line_number}: no integer step; row left out")
            continue
        for index, name in columns:
            text = fields[index] if index < len(fields) else ""
            if not text:
                continue  # not logged at this step: a gap, not a zero
            try:
                value = float(text)
            except ValueError:
                bad_lines += 1
                if bad_lines <= MAX_LISTED_PROBLEMS:
                    problems.append(f"{csv_path}:{line_number}: {name!r} {text!r} is not a number")
                continue
            builder.add(name, step, value)
    if bad_lines > MAX_LISTED_PROBLEMS:
        problems.append(f"{csv_path}: {bad_lines - MAX_LISTED_PROBLEMS} more bad fields")
    problems += builder.problems()
    return Source(
        SourceKind.LIGHTNING, path, builder.series(), problems, incomplete_tail=incomplete
    )
