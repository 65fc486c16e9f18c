"""`ocms-tui runs`: the run table as text, JSON or CSV.

Text is for a person (the sort series' numbers, a problem badge per run); JSON and CSV hold
every series of every run for a script or a spreadsheet. Names come from directories and
files: text and CSV show unprintable characters as escapes, CSV cells that a spreadsheet
would run as a formula are quoted as text, and JSON escapes everything it must.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from ocms_tui.follow.report import printable
from ocms_tui.follow.run_table import (
    GroupRow,
    RankedTable,
    RunSummary,
    SortKey,
    json_number,
    series_labels,
)
from ocms_tui.format.problems import Problem

OUTPUT_FORMATS = ("text", "json", "csv")
_MISSING = "—"


def number(value: float | None) -> str:
    """Six significant digits, as the dashboard's legend shows them."""
    return _MISSING if value is None else f"{value:.6g}"


def step_text(step: int | None) -> str:
    return _MISSING if step is None else f"{step:,}"


def problem_badge(problems: Sequence[Problem]) -> str:
    """`2 errors: metrics.json: ...` (the first error, or warning, says what is wrong)."""
    if not problems:
        return ""
    errors = [problem for problem in problems if problem.is_error]
    first = (errors or list(problems))[0]
    count = len(errors) or len(problems)
    kind = ("error" if errors else "warning") + ("s" if count > 1 else "")
    return printable(f"{count} {kind}: {first.path}: {first.message}")


def _columns(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if column in right else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _sort_cells(run: RunSummary, series: str | None) -> list[str]:
    if series is None:
        return []
    found = run.find(series)
    if found is None:
        return [f"{_MISSING} (no {printable(series)})", "", "", ""]
    best = "" if found.best_step is None else f"{number(found.best)} @{step_text(found.best_step)}"
    return [number(found.latest), number(found.minimum), number(found.maximum), best]


def table_text(table: RankedTable, label: str, shown_series: str | None) -> str:
    """`shown_series`: the series whose numbers are columns (the sort series, else one the
    caller picked); None: none."""
    sort = table.sort
    heading = [f"{table.total:,} run{'s' if table.total != 1 else ''} under {printable(label)}"]
    if sort is not None:
        heading.append(f"by {printable(sort.describe())}")
    if len(table.runs) < table.total:
        heading.append(f"top {len(table.runs):,}")
    header = ["#", "run", "status", "rows", "step"]
    if shown_series is not None:
        name = printable(shown_series)
        header += [f"{name} latest", "min", "max", "best @step"]
    header.append("problems")
    rows = [header]
    for position, run in enumerate(table.runs, 1):
        rows.append(
            [
                str(position),
                printable(run.name),
                run.status,
                f"{run.rows:,}",
                step_text(run.last_step),
                *_sort_cells(run, shown_series),
                problem_badge(run.problems),
            ]
        )
    right = {0, 3, 4} | ({5, 6, 7} if shown_series is not None else set())
    return "\n".join([" · ".join(heading), *_columns(rows, right)]) + "\n"


def _run_json(run: RunSummary, sort: SortKey | None) -> dict[str, object]:
    document: dict[str, object] = {
        "name": run.name,
        "directory": run.directory,
        "status": run.status,
        "rows": run.rows,
        "last_step": run.last_step,
        "series": [series.as_dict() for series in run.series],
        "problems": [problem.as_dict() for problem in run.problems],
    }
    if sort is not None:
        found = run.find(sort.series)
        document["sort_value"] = json_number(found.latest if found else None)
        if found is None:
            document["sort_note"] = f"no series {sort.series}: sorted last"
    return document


def _sort_json(sort: SortKey | None) -> dict[str, object] | None:
    if sort is None:
        return None
    return {
        "series": sort.series,
        "order": "highest first" if sort.higher_first else "lowest first",
        "direction_known": sort.known,
    }


def table_json(table: RankedTable) -> str:
    document = {
        "runs": [_run_json(run, table.sort) for run in table.runs],
        "sort": _sort_json(table.sort),
        "total_runs": table.total,
    }
    return json.dumps(document, indent=2) + "\n"


def spreadsheet_safe(text: str) -> str:
    """A cell a spreadsheet shows as text: one starting like a formula gets a leading `'`
    (a run directory may be named `=HYPERLINK(...)`)."""
    text = printable(text)
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_number(value: float | None) -> str:
    return "" if value is None else repr(value)


def table_csv(table: RankedTable) -> str:
    labels = series_labels(table.runs)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["rank", "name", "status", "rows", "last_step", "errors", "problems", "directory"]
    for label, _, _ in labels:
        header += [f"{label}:latest", f"{label}:min", f"{label}:max", f"{label}:best_step"]
    writer.writerow([spreadsheet_safe(cell) for cell in header])
    for position, run in enumerate(table.runs, 1):
        row = [
            str(position),
            spreadsheet_safe(run.name),
            run.status,
            str(run.rows),
            "" if run.last_step is None else str(run.last_step),
            str(run.errors),
            spreadsheet_safe(problem_badge(run.problems)),
            spreadsheet_safe(run.directory),
        ]
        by_key = {(series.chart, series.name): series for series in run.series}
        for _, chart, name in labels:
            found = by_key.get((chart, name))
            if found is None:
                row += ["", "", "", ""]
                continue
            row += [
                _csv_number(found.latest),
                _csv_number(found.minimum),
                _csv_number(found.maximum),
                "" if found.best_step is None else str(found.best_step),
            ]
        writer.writerow(row)
    return out.getvalue()


def groups_text(groups: Sequence[GroupRow], label: str, sort: SortKey | None) -> str:
    runs = sum(len(group.runs) for group in groups)
    heading = [f"{runs:,} runs in {len(groups):,} groups under {printable(label)}"]
    if sort is not None:
        heading.append(f"by the mean of {printable(sort.describe())}")
    header = ["#", "group", "runs"]
    if sort is not None:
        header += ["mean", "min", "max", "missing"]
    rows = [header]
    for position, group in enumerate(groups, 1):
        row = [str(position), printable(group.name), str(len(group.runs))]
        if sort is not None:
            missing = f"{group.missing} without {printable(sort.series)}" if group.missing else ""
            row += [number(group.mean), number(group.low), number(group.high), missing]
        rows.append(row)
    right = {0, 2, 3, 4, 5}
    return "\n".join([" · ".join(heading), *_columns(rows, right)]) + "\n"


def groups_json(groups: Sequence[GroupRow], sort: SortKey | None) -> str:
    document = {
        "groups": [
            {
                "name": group.name,
                "runs": [run.name for run in group.runs],
                "mean": json_number(group.mean),
                "min": json_number(group.low),
                "max": json_number(group.high),
                "missing": group.missing,
            }
            for group in groups
        ],
        "sort": _sort_json(sort),
    }
    return json.dumps(document, indent=2) + "\n"


def groups_csv(groups: Sequence[GroupRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "group", "runs", "mean", "min", "max", "missing"])
    for position, group in enumerate(groups, 1):
        writer.writerow(
            [
                str(position),
                spreadsheet_safe(group.name),
                str(len(group.runs)),
                _csv_number(group.mean),
                _csv_number(group.low),
                _csv_number(group.high),
                str(group.missing),
            ]
        )
    return out.getvalue()
