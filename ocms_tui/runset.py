"""The runs a dashboard follows: discovered from its paths, rescanned, overlaid by chart name.

Pure Python, no Textual. The dashboard's worker thread owns a RunSet (it alone rescans and
refreshes); the UI reads `runs`, a tuple replaced as a whole, never mutated in place.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ocms_recorder import DEFAULT_SUBDIR

from ocms_tui.model import ChartData, RunModel
from ocms_tui.problems import Problem
from ocms_tui.runs import discover_runs, name_runs

RESCAN_SECONDS = 3.0  # how often parents are searched again for new runs


@dataclass(eq=False)
class TrackedRun:
    """One run followed by the dashboard. `color` is its index in discovery order: stable
    while runs come and go, so a run keeps its colour."""

    name: str
    model: RunModel
    color: int

    @property
    def directory(self) -> Path:
        return self.model.directory


@dataclass(frozen=True)
class RunChart:
    """One run's chart of a given name."""

    run: TrackedRun
    chart: ChartData


@dataclass(frozen=True)
class OverlayChart:
    """Every selected run's chart of one name, for one panel."""

    name: str
    sources: tuple[RunChart, ...]


def _key(directory: Path) -> str:
    return os.path.abspath(directory)


class RunSet:
    """The runs named by `paths` (runs or parents of runs), found again on `rescan()`."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        self.paths = [Path(path) for path in paths]
        self.runs: tuple[TrackedRun, ...] = ()
        self._colors = 0
        self.rescan()

    def rescan(self) -> bool:
        """Search the paths again: add new runs, drop placeholders (a parent followed while
        it held no run yet) that a real run replaced; True when the list changed."""
        found = [ref.directory for ref in discover_runs(self.paths)]
        known = {_key(run.directory): run for run in self.runs}
        wanted = {_key(directory) for directory in found}
        kept = [
            run for run in self.runs if _key(run.directory) in wanted or run.model.has_metrics_json
        ]
        added = [directory for directory in found if _key(directory) not in known]
        if not added and len(kept) == len(self.runs):
            return False
        runs = list(kept)
        for directory in added:
            runs.append(TrackedRun(str(directory), RunModel(directory), self._colors))
            self._colors += 1
        names = short_names([ref.name for ref in name_runs(run.directory for run in runs)])
        for run, name in zip(runs, names, strict=True):
            run.name = name
        self.runs = tuple(runs)
        return True


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


def overlay(runs: Iterable[TrackedRun]) -> tuple[OverlayChart, ...]:
    """Charts by name across `runs`, in the order they first appear; a chart that only some
    runs have still gets its panel."""
    by_name: dict[str, list[RunChart]] = {}
    for run in runs:
        for chart in run.model.charts:
            by_name.setdefault(chart.name, []).append(RunChart(run, chart))
    return tuple(OverlayChart(name, tuple(sources)) for name, sources in by_name.items())


def combined_problems(runs: Sequence[TrackedRun]) -> tuple[Problem, ...]:
    """Every run's problems; with several runs each path starts with its run's name."""
    if len(runs) == 1:
        return runs[0].model.problems
    return tuple(
        replace(problem, path=f"{run.name}/{problem.path}")
        for run in runs
        for problem in run.model.problems
    )
