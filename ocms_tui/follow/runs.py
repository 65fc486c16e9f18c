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

from ocms_recorder import DEFAULT_SUBDIR, METRICS_JSON

from ocms_tui.follow.frames import RunFrame
from ocms_tui.follow.model import RunModel

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
    model: RunModel | RunFrame,
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
    return short_names([str(Path(*p)) for p in parts])


# Separators of words inside one directory name ("-" and "." are not: 1e-4, 0.5).
_WORD_SEPARATORS = "_ "
MIN_SHARED_WORDS = 5  # characters: a shorter shared part ("lr_", "run_") is kept, it reads better
SHORT_ENOUGH = 12  # names this short are left whole: `run_1` reads better than `1`


def short_names(names: Sequence[str]) -> list[str]:
    """What tells the runs apart: the path components every run shares at either end go,
    and a trailing `ocms_metrics` (the recorder's default, which says nothing), then - for
    long names - the words (split at `_`) every name shares at either end.
    `sweep/lr_1e-4_seed0_bs512/ocms_metrics` and `sweep/lr_3e-4_seed0_bs512/ocms_metrics`
    become `lr_1e-4` and `lr_3e-4`. Names that would become empty or equal stay whole."""
    if len(names) < 2 or len(set(names)) < len(names):
        return list(names)
    parts = [Path(name).parts for name in names]
    parts = [p[:-1] if len(p) > 1 and p[-1] == DEFAULT_SUBDIR else p for p in parts]
    while all(len(p) > 1 for p in parts) and len({p[0] for p in parts}) == 1:
        parts = [p[1:] for p in parts]
    while all(len(p) > 1 for p in parts) and len({p[-1] for p in parts}) == 1:
        parts = [p[:-1] for p in parts]
    shortened = [str(Path(*p)) for p in parts]
    if len(set(shortened)) < len(shortened):
        return list(names)
    return _strip_shared_words(shortened)


def _strip_shared_words(names: list[str]) -> list[str]:
    if max(map(len, names)) <= SHORT_ENOUGH:
        return names
    prefix = _common_start(names)
    suffix = _common_start([name[::-1] for name in names])[::-1]
    # Cut only just after (before) a separator, so no word is split.
    head = max((i + 1 for i, c in enumerate(prefix) if c in _WORD_SEPARATORS), default=0)
    tail = max((i + 1 for i, c in enumerate(reversed(suffix)) if c in _WORD_SEPARATORS), default=0)
    head = head if head >= MIN_SHARED_WORDS else 0
    tail = tail if tail >= MIN_SHARED_WORDS else 0
    stripped = [name[head : len(name) - tail] for name in names]
    if any(not name for name in stripped) or len(set(stripped)) < len(stripped):
        return names
    return stripped


def _common_start(texts: list[str]) -> str:
    """The characters every text starts with."""
    first, last = min(texts), max(texts)
    length = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first)
    )
    return first[:length]
