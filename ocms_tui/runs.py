"""Several runs: find metric directories under a parent, name them, tell their status.

Pure Python, no Textual: the dashboard's run list and `--check` with several directories
both use it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class RunRef:
    name: str  # the directory relative to the runs' common parent
    directory: Path


class RunStatus(str, Enum):
    """The one status of a run (or of the runs a dashboard follows): the run list, the status
    bar and the help all use it. Quiet runs are described, not judged: the format has no
    end-of-run marker, so a long quiet run is only presumed finished."""

    WAITING = "waiting"  # no metrics.json (or no directory) yet
    LOADING = "loading"  # being read for the first time
    LIVE = "live"  # written in the last LIVE_SECONDS
    IDLE = "idle"  # quiet for a while (the badge says how long)
    FINISHED = "finished"  # quiet for FINISHED_SECONDS or more
    PAUSED = "paused"  # the dashboard stopped following


def quiet_status(
    quiet_seconds: float | None,
    live_seconds: float = LIVE_SECONDS,
    finished_seconds: float = FINISHED_SECONDS,
) -> RunStatus:
    """LIVE, IDLE or FINISHED for a run last written `quiet_seconds` ago (None: never)."""
    if quiet_seconds is None:
        return RunStatus.WAITING
    if quiet_seconds < live_seconds:
        return RunStatus.LIVE
    return RunStatus.IDLE if quiet_seconds < finished_seconds else RunStatus.FINISHED


def run_status(
    model: RunModel,
    now: float | None = None,
    live_seconds: float = LIVE_SECONDS,
    finished_seconds: float = FINISHED_SECONDS,
) -> RunStatus:
    """Live while it writes; idle after `live_seconds` of quiet; finished after more."""
    if not model.has_metrics_json or model.last_write is None:
        return RunStatus.WAITING
    quiet = (time.time() if now is None else now) - model.last_write
    return quiet_status(quiet, live_seconds, finished_seconds)


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
    try:
        is_run = os.path.lexists(path / METRICS_JSON) or not path.is_dir()
    except (OSError, ValueError):  # a name too long, a parent without permission
        is_run = True  # the model says what is wrong with it
    if is_run:
        return [path]  # a run, or one that has not started yet: followed as it is
    return find_metric_directories(path) or [path]


def discover_runs(paths: Sequence[Path]) -> list[RunRef]:
    """The runs named by `paths` (runs or parents of runs), each once, with short names."""
    directories: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        for directory in _expand(Path(path)):
            key = Path(os.path.abspath(directory))
            if key not in seen:
                seen.add(key)
                directories.append(directory)
    return name_runs(directories)


def name_runs(directories: Iterable[Path]) -> list[RunRef]:
    """Name each run by its path relative to the common parent of all of them."""
    directories = list(directories)
    absolute = [os.path.abspath(directory) for directory in directories]
    if len(absolute) == 1:
        only = Path(absolute[0])
        # `run_3/ocms_metrics` says more than `ocms_metrics`.
        name = str(Path(only.parent.name) / only.name) if only.parent.name else only.name
        return [RunRef(name, directories[0])]
    common = os.path.commonpath(absolute)
    return [
        RunRef(os.path.relpath(path, common) if path != common else Path(path).name, directory)
        for path, directory in zip(absolute, directories, strict=True)
    ]
