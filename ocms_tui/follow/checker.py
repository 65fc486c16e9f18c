"""`--check`: load a metrics directory once and list its problems."""

from __future__ import annotations

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


def check_directory(directory: str | Path, settle_seconds: float = 0.5) -> CheckResult:
    """Read the whole directory (waiting out a writer mid-widening) and report it."""
    model = RunModel(directory, settle_seconds=settle_seconds, keep_values=False)
    model.load_settled()
    charts = tuple(
        ChartSummary(chart.name, chart.rows, chart.last_step, chart.y_axis)
        for chart in model.charts
    )
    return CheckResult(Path(directory), model.problems, charts)
