"""Other tools' logs as ocms series: TensorBoard, HF trainer_state.json, Lightning CSVLogger,
MLflow file store. Pure Python, no Textual.

    source = read_source(Path("runs/exp1"))      # which kind: detect_kind()
    fit = fit_series(source.series, source.chart_groups)
    write_ocms_directory(Path("out"), fit, source.series, [source.path])
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ocms_recorder import METRICS_JSON

from ocms_tui.sources.common import Series, Source, SourceError, SourceKind
from ocms_tui.sources.hf_state import find_state_file, read_hf_state
from ocms_tui.sources.lightning_csv import find_metrics_csv, read_lightning_csv
from ocms_tui.sources.mlflow import find_runs, read_mlflow_run
from ocms_tui.sources.tensorboard import find_event_files, is_event_file, read_tensorboard

__all__ = ["Series", "Source", "SourceError", "SourceKind", "detect_kind", "read_source"]

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
    if find_event_files(path):
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
