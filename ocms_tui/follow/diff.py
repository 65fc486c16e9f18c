"""`ocms-tui diff RUN BASELINE`: is a run worse than a baseline, series by series?

Every series the two runs share (same chart, same name) is compared at the steps both have:
- final: the median of the last `FINAL_POINTS` shared steps (one noisy last row alone would
  make two runs of the same code differ by their noise);
- best: the lowest (or highest) value over the shared steps;
- gap: the mean relative difference of the curves over the shared steps.
Each is a relative change against the baseline, signed so that positive is better for that
series (`format/direction.py` says which way is better). A series is worse when one of the
three is worse than `-tolerance`. Series whose name says no direction (a learning rate, a
step time) are listed but never make a run worse, unless named in `--higher-better` or
`--lower-better`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from ocms_tui.follow.model import RunModel
from ocms_tui.format.direction import higher_is_better, says_direction
from ocms_tui.format.problems import escape_code, replace_unprintable

FINAL_POINTS = 10
DEFAULT_TOLERANCE = 0.05
FORMATS = ("text", "json", "github", "markdown")
# A baseline value this close to zero is compared in absolute terms: a relative change
# against 0 is infinite for any difference.
_TINY = 1e-12


class Verdict(str, Enum):
    WORSE = "worse"
    BETTER = "better"
    SAME = "same"  # within the tolerance
    NO_DIRECTION = "no direction"  # compared, but its name says no better way
    NO_SHARED_STEPS = "no shared steps"


@dataclass(frozen=True)
class SeriesDiff:
    chart: str
    series: str
    higher_better: bool | None  # None: the name says no direction
    shared_steps: int
    final: tuple[float, float] = (math.nan, math.nan)  # (run, baseline)
    best: tuple[float, float] = (math.nan, math.nan)
    changes: dict[str, float] = field(default_factory=dict)  # final/best/gap: + is better
    verdict: Verdict = Verdict.NO_SHARED_STEPS

    def as_dict(self) -> dict[str, object]:
        def number(value: float) -> float | str | None:
            if math.isnan(value):
                return None
            return value if math.isfinite(value) else repr(value)  # JSON has no inf

        return {
            "chart": self.chart,
            "series": self.series,
            "better": {True: "higher", False: "lower", None: None}[self.higher_better],
            "shared_steps": self.shared_steps,
            "final": {"run": number(self.final[0]), "baseline": number(self.final[1])},
            "best": {"run": number(self.best[0]), "baseline": number(self.best[1])},
            "change": {name: number(value) for name, value in self.changes.items()},
            "verdict": self.verdict.value,
        }


@dataclass(frozen=True)
class DiffResult:
    run: Path
    baseline: Path
    tolerance: float
    series: tuple[SeriesDiff, ...] = ()
    error: str | None = None  # why nothing could be compared

    @property
    def worse(self) -> tuple[SeriesDiff, ...]:
        return tuple(diff for diff in self.series if diff.verdict is Verdict.WORSE)

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return 2
        return 1 if self.worse else 0


def _last_value_per_step(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique steps with the last finite value logged at each (a re-logged step of
    a resumed run, or a train and an eval row at one step: the last one wins)."""
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    reversed_steps = steps[::-1]
    unique, first_in_reversed = np.unique(reversed_steps, return_index=True)
    return unique, values[::-1][first_in_reversed]


def _relative(run: float, base: float, higher: bool) -> float:
    """(run - base) / |base|, signed so that positive is better."""
    with np.errstate(over="ignore", invalid="ignore"):
        difference = float(np.float64(run) - np.float64(base))
        scale = abs(base) if abs(base) > _TINY else 1.0
        change = difference / scale
    return (change if higher else -change) + 0.0  # + 0.0: no "-0.0%" in a table


def compare_series(
    chart: str,
    name: str,
    run: tuple[np.ndarray, np.ndarray],
    baseline: tuple[np.ndarray, np.ndarray],
    tolerance: float,
    higher_better: Collection[str] = (),
    lower_better: Collection[str] = (),
) -> SeriesDiff:
    run_steps, run_values = _last_value_per_step(*run)
    base_steps, base_values = _last_value_per_step(*baseline)
    shared, in_run, in_base = np.intersect1d(
        run_steps, base_steps, assume_unique=True, return_indices=True
    )
    declared = name in higher_better or name in lower_better
    direction = (
        (name in higher_better or (name not in lower_better and higher_is_better(name)))
        if declared or says_direction(name)
        else None
    )
    if not len(shared):
        return SeriesDiff(chart, name, direction, 0)
    ours, theirs = run_values[in_run], base_values[in_base]
    tail = max(1, min(FINAL_POINTS, len(shared) // 10))
    final = (float(np.median(ours[-tail:])), float(np.median(theirs[-tail:])))
    higher = bool(direction)
    pick = np.max if higher else np.min
    best = (float(pick(ours)), float(pick(theirs)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scale = np.where(np.abs(theirs) > _TINY, np.abs(theirs), 1.0)
        gap = float(np.mean((ours - theirs) / scale))
    changes = {
        "final": _relative(*final, higher),
        "best": _relative(*best, higher),
        "gap": (gap if higher else -gap) + 0.0,
    }
    if direction is None:
        verdict = Verdict.NO_DIRECTION
    elif any(change < -tolerance for change in changes.values()):
        verdict = Verdict.WORSE
    elif any(change > tolerance for change in changes.values()):
        verdict = Verdict.BETTER
    else:
        verdict = Verdict.SAME
    return SeriesDiff(chart, name, direction, len(shared), final, best, changes, verdict)


def _load(directory: Path) -> tuple[RunModel | None, str | None]:
    model = RunModel(directory, settle_seconds=0.0, health=False)
    model.load_settled()
    if model.missing is not None:
        return None, f"{directory}: {model.missing.message}"
    if not model.charts:
        return None, f"{directory}: no charts (no readable metrics.json)"
    return model, None


def diff_runs(
    run: Path,
    baseline: Path,
    tolerance: float = DEFAULT_TOLERANCE,
    higher_better: Collection[str] = (),
    lower_better: Collection[str] = (),
) -> DiffResult:
    ours, error = _load(run)
    theirs, base_error = _load(baseline)
    if ours is None or theirs is None:
        return DiffResult(run, baseline, tolerance, error=error or base_error)
    base_charts = {chart.name: chart for chart in theirs.charts}
    diffs = []
    for chart in ours.charts:
        other = base_charts.get(chart.name)
        if other is None:
            continue
        for index, name in enumerate(chart.y_axis):
            if name not in other.y_axis:
                continue
            diffs.append(
                compare_series(
                    chart.name,
                    name,
                    (chart.steps(), chart.values(index)),
                    (other.steps(), other.values(other.y_axis.index(name))),
                    tolerance,
                    higher_better,
                    lower_better,
                )
            )
    if not diffs:
        error = "the two runs share no series (same chart and series name): nothing to compare"
    elif all(diff.verdict is Verdict.NO_SHARED_STEPS for diff in diffs):
        error = "the two runs share no step in any series: nothing to compare"
    return DiffResult(run, baseline, tolerance, tuple(diffs), error)


# Output


def _printable(text: str) -> str:
    return replace_unprintable(text, escape_code)


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g}"


def _percent(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value * 100:+.1f}%"


def _summary(result: DiffResult) -> str:
    if result.error is not None:
        return f"cannot compare: {_printable(result.error)}"
    worse = len(result.worse)
    return (
        f"{len(result.series)} series compared, {worse} worse than the baseline beyond "
        f"{result.tolerance:.1%}"
    )


def _rows(result: DiffResult) -> list[list[str]]:
    rows = []
    for diff in result.series:
        better = {True: "higher", False: "lower", None: "-"}[diff.higher_better]
        rows.append(
            [
                _printable(f"{diff.chart}/{diff.series}"),
                better,
                str(diff.shared_steps),
                f"{_number(diff.final[0])} vs {_number(diff.final[1])}",
                _percent(diff.changes.get("final")),
                f"{_number(diff.best[0])} vs {_number(diff.best[1])}",
                _percent(diff.changes.get("best")),
                _percent(diff.changes.get("gap")),
                diff.verdict.value,
            ]
        )
    return rows


_HEADER = ["series", "better", "steps", "final", "Δ final", "best", "Δ best", "Δ gap", "verdict"]


def format_text(result: DiffResult) -> str:
    head = f"{_printable(str(result.run))} vs baseline {_printable(str(result.baseline))}\n"
    rows = [_HEADER, *_rows(result)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADER))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    body = "\n".join(line.rstrip() for line in lines) + "\n" if result.series else ""
    return head + body + _summary(result) + "\n"


def format_markdown(result: DiffResult) -> str:
    """A table for $GITHUB_STEP_SUMMARY (Δ: + is better for that series)."""
    verdict = "❌ worse" if result.worse else ("⚠️ not compared" if result.error else "✅ ok")
    lines = [
        f"### ocms-tui diff: {verdict}",
        "",
        f"`{_printable(str(result.run))}` vs baseline `{_printable(str(result.baseline))}`, "
        f"tolerance {result.tolerance:.1%} (Δ: positive is better)",
        "",
    ]
    if result.series:
        lines.append("| " + " | ".join(_HEADER) + " |")
        lines.append("|" + "---|" * len(_HEADER))
        for row in _rows(result):
            cells = [cell.replace("|", "\\|") for cell in row]
            if row[-1] == Verdict.WORSE.value:
                cells[-1] = f"**{cells[-1]}**"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def format_json(result: DiffResult) -> str:
    document = {
        "ok": result.exit_code == 0,
        "run": str(result.run),
        "baseline": str(result.baseline),
        "tolerance": result.tolerance,
        "error": result.error,
        "series": [diff.as_dict() for diff in result.series],
    }
    return json.dumps(document, indent=2) + "\n"


def format_github(result: DiffResult) -> str:
    def escape(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    if result.error is not None:
        return f"::error title=ocms-tui diff::{escape(_printable(result.error))}\n"
    lines = []
    for diff in result.worse:
        changes = ", ".join(
            f"{name} {_percent(value)}" for name, value in diff.changes.items() if value < 0
        )
        message = _printable(
            f"{diff.chart}/{diff.series} is worse than the baseline ({changes}; "
            f"final {_number(diff.final[0])} vs {_number(diff.final[1])})"
        )
        lines.append(f"::error title=ocms-tui diff::{escape(message)}")
    lines.append(f"::notice title=ocms-tui diff::{escape(_summary(result))}")
    return "\n".join(lines) + "\n"


def render(result: DiffResult, output_format: str) -> str:
    formatter = {
        "json": format_json,
        "github": format_github,
        "markdown": format_markdown,
    }.get(output_format, format_text)
    return formatter(result)
