"""Several runs: find metric directories under a parent, name them, tell their status.

Pure Python, no Textual: the dashboard's run list and `--check` with several directories
both use it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path

from ocms_recorder import METRICS_JSON

from ocms_tui.model import RunModel

MAX_SEARCH_DEPTH = 4
MAX_DIRECTORIES_SEARCHED = 5_000
# Trees that never hold a run and can be huge.
SKIPPED_DIRECTORIES = frozenset(
    {"node_modules", "__pycache__", "site-packages", "venv", "wandb", "checkpoints"}
)
LIVE_SECONDS = 30.0
# The format has no end-of-run marker: a run this long quiet is taken as finished.
FINISHED_SECONDS = 600.0


class RunStatus(str, Enum):
    WAITING = "waiting"  # no metrics.json (or no directory) yet
    LIVE = "live"
    STALE = "stale"
    FINISHED = "finished"


def run_status(
    model: RunModel,
    now: float | None = None,
    live_seconds: float = LIVE_SECONDS,
    finished_seconds: float = FINISHED_SECONDS,
) -> RunStatus:
    """Live while it writes; stale after `live_seconds` of quiet; finished after more."""
    if not model.has_metrics_json or model.last_write is None:
        return RunStatus.WAITING
    quiet = (time.time() if now is None else now) - model.last_write
    if quiet < live_seconds:
        return RunStatus.LIVE
    return RunStatus.STALE if quiet < finished_seconds else RunStatus.FINISHED


def find_metric_directories(
    root: Path,
    max_depth: int = MAX_SEARCH_DEPTH,
    max_directories: int = MAX_DIRECTORIES_SEARCHED,
) -> list[Path]:
    """Directories under `root` holding a metrics.json, breadth first, in name order.

    Hidden directories, symlinked directories and known huge trees are not entered, and
    the search stops after `max_directories` directories, so a home directory is safe.
    """
    found: list[Path] = []
    level = [root]
    visited = 0
    for _depth in range(max_depth + 1):
        next_level: list[Path] = []
        for directory in level:
            visited += 1
            if visited > max_directories:
                return sorted(found)
            try:
                with os.scandir(directory) as entries:
                    children = sorted(entries, key=lambda entry: entry.name)
            except OSError:
                continue
            names = {entry.name for entry in children}
            if METRICS_JSON in names:
                found.append(directory)
                continue  # a run's own directory holds no further runs
            next_level.extend(
                Path(entry.path)
                for entry in children
                if not entry.name.startswith(".")
                and entry.name not in SKIPPED_DIRECTORIES
                and entry.is_dir(follow_symlinks=False)
            )
        level = next_level
    return sorted(found)


def _expand(path: Path) -> list[Path]:
    """A run directory itself, or every run below a parent directory."""
    if (path / METRICS_JSON).exists() or not path.is_dir():
        return [path]  # a run, or one that has not started yet: followed as it is
    return find_metric_directories(path) or [path]


def find_runs(paths: Sequence[Path]) -> list[Path]:
    """The run directories named by `paths` (runs or parents of runs), each once, in order.
    Unnamed: names depend on every run shown together (see `name_runs`)."""
    directories: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        for directory in _expand(Path(path)):
            key = Path(os.path.abspath(directory))
            if key not in seen:
                seen.add(key)
                directories.append(directory)
    return directories


def name_runs(directories: Iterable[Path]) -> list[str]:
    """A short name for each run: its path relative to the common parent of all of them,
    without a last part every run shares (`run_1` says as much as `run_1/ocms_metrics`)."""
    absolute = [os.path.abspath(directory) for directory in directories]
    if len(absolute) == 1:
        only = Path(absolute[0])
        # `run_3/ocms_metrics` says more than `ocms_metrics`.
        return [str(Path(only.parent.name) / only.name) if only.parent.name else only.name]
    common = os.path.commonpath(absolute) if absolute else ""
    parts = [
        Path(os.path.relpath(path, common) if path != common else Path(path).name).parts
        for path in absolute
    ]
    if len(parts) > 1 and all(len(p) > 1 and p[-1] == parts[0][-1] for p in parts):
        parts = [p[:-1] for p in parts]
    return [str(Path(*p)) for p in parts]
