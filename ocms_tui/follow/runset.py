"""The runs a dashboard follows: discovered from its paths, rescanned, overlaid by chart name.

Pure Python, no Textual. The dashboard's worker thread owns a RunSet (it alone rescans and
refreshes); the UI reads `runs`, a tuple replaced as a whole, never mutated in place.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ocms_tui.follow.model import ChartData, RunModel
from ocms_tui.follow.runs import find_runs, name_runs
from ocms_tui.format.problems import Problem

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
    """The runs named by `paths` (runs or parents of runs), found again on `rescan()`.
    `health=False`: their models look for no spike, divergence or stall (`--no-health`)."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], health: bool = True) -> None:
        self.paths = [Path(path) for path in paths]
        self.health = health
        self.runs: tuple[TrackedRun, ...] = ()
        self._colors = 0
        self.rescan()

    def rescan(self) -> bool:
        """Search the paths again: add new runs, drop placeholders (a parent followed while
        it held no run yet) that a real run replaced; True when the list changed."""
        found = find_runs(self.paths)
        known = {_key(run.directory): run for run in self.runs}
        wanted = {_key(directory) for directory in found}
        kept = [
            run for run in self.runs if _key(run.directory) in wanted or run.model.has_metrics_json
        ]
        added = [directory for directory in found if _key(directory) not in known]
        if not added and len(kept) == len(self.runs):
            return False
        directories = [run.directory for run in kept] + added
        runs: list[TrackedRun] = []
        # Named here, once, among every run followed: a new run may change the others' names.
        for directory, name in zip(directories, name_runs(directories), strict=True):
            run = known.get(_key(directory))
            if run is None:
                run = TrackedRun(name, RunModel(directory, health=self.health), self._colors)
                self._colors += 1
            run.name = name
            runs.append(run)
        self.runs = tuple(runs)
        return True


def overlay(runs: Iterable[TrackedRun]) -> tuple[OverlayChart, ...]:
    """Charts by name across `runs`, in the order they first appear; a chart that only some
    runs have still gets its panel."""
    by_name: dict[str, list[RunChart]] = {}
    for run in runs:
        for chart in run.model.charts:
            by_name.setdefault(chart.name, []).append(RunChart(run, chart))
    return tuple(OverlayChart(name, tuple(sources)) for name, sources in by_name.items())


OutsideProblems = Callable[[Path], tuple[Problem, ...]]


def combined_problems(
    runs: Sequence[TrackedRun], outside: OutsideProblems | None = None
) -> tuple[Problem, ...]:
    """Every run's problems, after those `outside` knows of its directory (another tool's
    log converted into it: that log's own problems, named by its own files); with several
    runs each path starts with its run's name."""

    def of(run: TrackedRun) -> tuple[Problem, ...]:
        own = outside(Path(run.directory)) if outside is not None else ()
        return own + run.model.problems

    if len(runs) == 1:
        return of(runs[0])
    return tuple(
        replace(problem, path=f"{run.name}/{problem.path}") for run in runs for problem in of(run)
    )
