"""The runs a dashboard follows: discovered from its paths, rescanned, overlaid by chart name.

Pure Python, no Textual. The dashboard's worker thread owns a RunSet (it alone rescans and
refreshes); the UI gets `run_frame`s, values made after each read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ocms_tui.follow.frames import RunFrame
from ocms_tui.follow.model import RunModel
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


def _key(directory: Path) -> str:
    return os.path.abspath(directory)


def run_key(run: TrackedRun) -> str:
    """How the dashboard names a run: its absolute directory."""
    return _key(run.directory)


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


def run_frame(run: TrackedRun) -> RunFrame:
    """The run as of now, as a value for the UI (see `follow.frames`); its charts' frames
    are the same objects while they do not change."""
    model = run.model
    return RunFrame(
        key=run_key(run),
        name=run.name,
        directory=run.directory,
        color=run.color,
        charts=tuple(chart.frame() for chart in model.charts),
        problems=model.problems,
        last_write=model.last_write,
        has_metrics_json=model.has_metrics_json,
        exists=model.exists,
        missing=model.missing,
    )


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
