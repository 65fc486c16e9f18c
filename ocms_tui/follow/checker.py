"""`--check`: load a metrics directory once and list its problems."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from ocms_tui.follow.model import RunModel
from ocms_tui.format.problems import Problem, Rule


@dataclass(frozen=True)
class ChartSummary:
    name: str
    rows: int
    last_step: int | None
    y_axis: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "rows": self.rows,
            "last_step": self.last_step,
            "y_axis": list(self.y_axis),
        }


@dataclass(frozen=True)
class CheckResult:
    directory: Path
    problems: tuple[Problem, ...]
    charts: tuple[ChartSummary, ...]

    @property
    def errors(self) -> int:
        return sum(problem.is_error for problem in self.problems)

    @property
    def warnings(self) -> int:
        return len(self.problems) - self.errors

    @property
    def directory_missing(self) -> bool:
        return any(problem.rule is Rule.MISSING_DIR for problem in self.problems)

    def ok(self, strict: bool = False) -> bool:
        return not self.problems if strict else self.errors == 0


def check_directory(
    directory: str | Path,
    settle_seconds: float = 0.5,
    health: bool = True,
    fail_on: Collection[Rule] = (),
) -> CheckResult:
    """Read the whole directory (waiting out a writer mid-widening) and report it.
    `health=False`: no spike or divergence findings (--no-health). `fail_on`: warning rules
    that count as errors (--fail-on)."""
    model = RunModel(directory, settle_seconds=settle_seconds, keep_values=False, health=health)
    model.load_settled()
    charts = tuple(
        ChartSummary(chart.name, chart.rows, chart.last_step, chart.y_axis)
        for chart in model.charts
    )
    return CheckResult(Path(directory), failing(model.problems, fail_on), charts)


def failing(problems: tuple[Problem, ...], rules: Collection[Rule]) -> tuple[Problem, ...]:
    """The problems with those of `rules` made errors: the one place --fail-on acts."""
    if not rules:
        return problems
    return tuple(
        dataclasses.replace(problem, failing=True) if problem.rule in rules else problem
        for problem in problems
    )
