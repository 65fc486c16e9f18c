"""An MLflow file store run: `mlruns/<experiment>/<run>/metrics/<key>`, one file per metric
(a key with `/` is a subdirectory), one line per logged value: `timestamp value step`
(stores older than MLflow 1.0 have no step: the line's position is used).
"""

from __future__ import annotations

import os
from pathlib import Path

from ocms_tui.sources.common import (
    CappedProblems,
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    open_regular_file,
)

METRICS_DIR = "metrics"
RUN_META = "meta.yaml"
MAX_METRIC_FILE_BYTES = 512 << 20
READ_CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20
MAX_SEARCH_DEPTH = 2
MAX_METRIC_FILES = 10_000
# A key is a path below metrics/; deeper than this is a hostile tree (os.walk recurses once
# per level and would hit Python's recursion limit near 1000), not a metric name.
MAX_KEY_DEPTH = 64


def is_run_directory(path: Path) -> bool:
    return (path / METRICS_DIR).is_dir() and (path / RUN_META).is_file()


def find_runs(path: Path) -> list[Path]:
    """Run directories at `path` or below it (a store, an experiment, or a run)."""
    level, found = [path], []
    for _depth in range(MAX_SEARCH_DEPTH + 1):
        next_level = []
        for directory in level:
            if is_run_directory(directory):
                found.append(directory)
                continue
            try:
                with os.scandir(directory) as entries:
                    next_level += sorted(
                        Path(entry.path)
                        for entry in entries
                        if entry.is_dir(follow_symlinks=False)
                        and not entry.name.startswith(".")
                        and entry.name != ".trash"
                    )
            except OSError:
                continue
        level = next_level
    return found


def _metric_files(metrics_dir: Path, problems: list[str]) -> list[tuple[str, Path]]:
    """(key, file) for every metric, keys with `/` from subdirectories, in key order."""
    found = []
    for root, directories, files in os.walk(metrics_dir):
        directories.sort()
        if directories and len(Path(root).relative_to(metrics_dir).parts) >= MAX_KEY_DEPTH:
            problems.append(f"{root}: directories nested over {MAX_KEY_DEPTH} deep; not read")
            directories.clear()
        for name in sorted(files):
            file = Path(root, name)
            key = file.relative_to(metrics_dir).as_posix()
            found.append((key, file))
            if len(found) >= MAX_METRIC_FILES:
                return found
    return found


def _read_metric_file(
    file: Path, key: str, builder: SeriesBuilder, bad_lines: CappedProblems
) -> bool:
    """Every `timestamp value [step]` line of one metric file into `builder`, streamed a
    chunk at a time (memory holds a chunk and the points, not the file's text). True when
    the last line is still being written (no newline yet): it is not read."""
    fd = open_regular_file(file)
    try:
        if os.fstat(fd).st_size > MAX_METRIC_FILE_BYTES:
            raise SourceError(f"{file}: larger than {MAX_METRIC_FILE_BYTES} bytes, not read")
        pending = b""
        number = 0
        while chunk := os.read(fd, READ_CHUNK_BYTES):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if len(pending) > MAX_LINE_BYTES:  # no newline for a megabyte: not a metric line
                raise SourceError(f"{file}: a line over {MAX_LINE_BYTES} bytes; not a metric file")
            for line in lines:
                number += 1
                _add_line(line, number, key, file, builder, bad_lines)
        return bool(pending)
    finally:
        os.close(fd)


def _add_line(
    line: bytes,
    number: int,
    key: str,
    file: Path,
    builder: SeriesBuilder,
    bad_lines: CappedProblems,
) -> None:
    fields = line.split()
    try:
        if len(fields) not in (2, 3):
            raise ValueError(line)
        value = float(fields[1])
        step = int(fields[2]) if len(fields) > 2 else number - 1
    except ValueError:
        bad_lines.add(f"{file}:{number}: not 'timestamp value step'; left out")
        return
    builder.add(key, step, value)


def read_mlflow_run(path: Path) -> Source:
    runs = find_runs(path)
    if not runs:
        raise SourceError(f"{path}: no MLflow run (a directory with {METRICS_DIR}/ and {RUN_META})")
    if len(runs) > 1:
        listed = ", ".join(str(run) for run in runs[:10])
        raise SourceError(f"{path}: {len(runs)} MLflow runs; give one of them: {listed}")
    run = runs[0]
    builder = SeriesBuilder()
    problems: list[str] = []
    bad_lines = CappedProblems("bad metric lines")
    incomplete = False
    for key, file in _metric_files(run / METRICS_DIR, problems):
        try:
            incomplete |= _read_metric_file(file, key, builder, bad_lines)
        except SourceError as error:
            problems.append(f"{error}; metric {key!r} left out")
    problems += bad_lines.lines()
    problems += builder.problems()
    return Source(SourceKind.MLFLOW, run, builder.series(), problems, incomplete_tail=incomplete)
