"""The runs a path holds: a parent directory of runs is several runs, as a parent of ocms
directories is. `output/runs/<name>/` (what `tensorboard --logdir` is given),
`lightning_logs/version_N/`, `mlruns/<experiment>/<run>/`: each is one run, labelled by
its path below the directory given. A run's name is its label, never part of a series'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ocms_tui.sources.common import SourceKind
from ocms_tui.sources.lightning_csv import METRICS_CSV, version_directories
from ocms_tui.sources.mlflow import find_runs
from ocms_tui.sources.tensorboard import search_event_files


@dataclass(frozen=True)
class SourceRun:
    label: str  # its path below the directory given ("" when it is that directory)
    path: Path
    kind: SourceKind


@dataclass(frozen=True)
class SourceRuns:
    runs: tuple[SourceRun, ...]
    notes: tuple[str, ...] = field(default=())  # what the search left out, and why


def find_source_runs(path: Path, kind: SourceKind) -> SourceRuns:
    """Every run of `kind` at `path` (itself one run, or a parent of several)."""
    if kind is SourceKind.TENSORBOARD and path.is_dir():
        search = search_event_files(path)
        directories = sorted({file.parent for file in search.files}, key=lambda each: each.parts)
        tops: list[Path] = []
        for directory in directories:
            # A directory with event files below one that has its own is a run-within-a-run
            # (Keras' train/ and validation/, add_scalars' subdirectories): part of it.
            if not any(top == directory or top in directory.parents for top in tops):
                tops.append(directory)
        runs = [SourceRun(_label(path, top), top, kind) for top in tops]
        return SourceRuns(tuple(runs) or (SourceRun("", path, kind),), search.notes)
    if kind is SourceKind.LIGHTNING and path.is_dir() and not (path / METRICS_CSV).is_file():
        versions = version_directories(path)
        if versions:
            return SourceRuns(tuple(SourceRun(_label(path, each), each, kind) for each in versions))
    if kind is SourceKind.MLFLOW:
        found = find_runs(path)
        if found:
            return SourceRuns(tuple(SourceRun(_label(path, each), each, kind) for each in found))
    return SourceRuns((SourceRun("", path, kind),))


def _label(root: Path, run: Path) -> str:
    return "" if run == root else run.relative_to(root).as_posix()
