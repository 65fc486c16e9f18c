"""Other tools' logs as ocms series: TensorBoard, HF trainer_state.json, Lightning CSVLogger,
MLflow file store. Pure Python, no Textual.

    source = read_source(Path("runs/exp1"))      # which kind: detect_kind()
    for run in source_runs(Path("output/runs")).runs:   # a parent of runs: each run
        source = read_run(run)                   # the framework's names (HF, Lightning)
    fit = fit_series(source.series, source.chart_groups)
    write_ocms_directory(Path("out"), fit, source.series, [source.path])
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ocms_recorder import METRICS_JSON

from ocms_tui.sources.common import Series, Source, SourceError, SourceKind
from ocms_tui.sources.discover import SourceRun, SourceRuns, find_source_runs
from ocms_tui.sources.frameworks import Framework, as_framework, detect_framework
from ocms_tui.sources.hf_state import find_state_file, read_hf_state
from ocms_tui.sources.lightning_csv import find_metrics_csv, read_lightning_csv
from ocms_tui.sources.mlflow import find_runs, read_mlflow_run
from ocms_tui.sources.tensorboard import has_event_files, is_event_file, read_tensorboard

__all__ = [
    "Framework",
    "Series",
    "Source",
    "SourceError",
    "SourceKind",
    "SourceRun",
    "detect_kind",
    "examine",
    "find_source_runs",
    "read_run",
    "read_source",
    "source_runs",
]

READERS: dict[SourceKind, Callable[[Path], Source]] = {
    SourceKind.TENSORBOARD: read_tensorboard,
    SourceKind.HF: read_hf_state,
    SourceKind.LIGHTNING: read_lightning_csv,
    SourceKind.MLFLOW: read_mlflow_run,
}


def detect_kind(path: Path) -> SourceKind | None:
    """Which tool wrote `path` (a file or a directory), by names only (nothing is read);
    None for an ocms directory or something else."""
    if path.is_dir() and (path / METRICS_JSON).exists():
        return None
    if not path.is_dir():  # a file, a FIFO, a name not there yet
        if is_event_file(path):
            return SourceKind.TENSORBOARD
        if find_state_file(path) is not None:
            return SourceKind.HF
        if find_metrics_csv(path) is not None:
            return SourceKind.LIGHTNING
        return None
    if find_state_file(path) is not None:
        return SourceKind.HF
    if find_metrics_csv(path) is not None:
        return SourceKind.LIGHTNING
    if find_runs(path):
        return SourceKind.MLFLOW
    if has_event_files(path):
        return SourceKind.TENSORBOARD
    return None


def read_source(path: Path) -> Source:
    kind = detect_kind(path)
    if kind is None:
        raise SourceError(
            f"{path}: not a log this can import (TensorBoard event files, trainer_state.json, "
            "a Lightning metrics.csv, an MLflow run)"
        )
    return READERS[kind](path)


def examine(path: Path) -> None:
    """Raise SourceError when `path` cannot even be looked at (a name too long, a parent
    without search permission, nothing there): the message says which, never a traceback."""
    try:
        os.stat(path)
    except OSError as error:
        raise SourceError(f"{path}: cannot examine ({error.strerror or error})") from None
    except ValueError as error:  # a NUL in the name
        raise SourceError(f"{path}: cannot examine ({error})") from None


def source_runs(path: Path) -> SourceRuns:
    """The runs of another tool's log at `path` (one, or several under a parent)."""
    examine(path)
    try:
        kind = detect_kind(path)
    except OSError as error:
        raise SourceError(f"{path}: cannot examine ({error.strerror or error})") from None
    if kind is None:
        raise SourceError(
            f"{path}: not a log this can import (TensorBoard event files, trainer_state.json, "
            "a Lightning metrics.csv, an MLflow run)"
        )
    return find_source_runs(path, kind)


def read_run(run: SourceRun, framework: Framework | None = None) -> Source:
    """One run, under the names its framework's live hook records (`framework` overrides
    what its tags and layout say)."""
    source = READERS[run.kind](run.path)
    return as_framework(source, framework or detect_framework(source))
