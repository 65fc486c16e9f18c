"""metrics.json -> chart specs, or problems that say what is wrong with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ocms_recorder import (
    MAX_CHARTS,
    MAX_METRICS_JSON_BYTES,
    MAX_SERIES_PER_CHART,
    METRICS_JSON,
    X_AXIS,
    chart_file_name,
    is_plain_file_name,
    is_valid_name,
)

from ocms_tui.problems import Problem, Rule

Reporter = Callable[[Rule, str, "int | None"], None]


@dataclass(frozen=True)
class ChartSpec:
    name: str
    file: str
    y_axis: tuple[str, ...]
    # Where the chart is declared; moving it in the file does not make it another chart.
    line: int | None = field(default=None, compare=False)

    @property
    def width(self) -> int:
        """Fields per CSV row: the step plus one per y-axis name."""
        return 1 + len(self.y_axis)


@dataclass(frozen=True)
class Schema:
    charts: tuple[ChartSpec, ...]
    problems: tuple[Problem, ...]
    # Every file a chart names, also past the 6-chart limit; None when the chart list
    # could not be read at all (then no CSV can be called an orphan).
    declared_files: frozenset[str] | None = None


def _find_name(text: str, name: str, start: int) -> tuple[int | None, int]:
    """(1-based line, index) of the next `name` as a JSON string at or after `start`;
    (None, start) when it is not found, for pointing a problem at its chart."""
    index = text.find(json.dumps(name), start)
    if index < 0:
        return None, start
    return text.count("\n", 0, index) + 1, index


def _display(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_schema(data: bytes, total_size: int | None = None) -> Schema:
    """Validate metrics.json bytes (`total_size`: the file's size when `data` was cut short).

    Never raises for anything the file contains.
    """
    problems: list[Problem] = []

    def report(rule: Rule, message: str, line: int | None = None) -> None:
        problems.append(Problem(rule, METRICS_JSON, message, line))

    size = max(len(data), total_size or 0)
    if size > MAX_METRICS_JSON_BYTES:
        report(
            Rule.BAD_SCHEMA,
            f"metrics.json is {size:,} bytes, over the {MAX_METRICS_JSON_BYTES:,}-byte cap; "
            "it should describe at most 6 charts",
        )
        return Schema((), tuple(problems))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        report(
            Rule.INVALID_JSON, f"metrics.json is not UTF-8 text (byte {error.start}); rewrite it"
        )
        return Schema((), tuple(problems))
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        report(
            Rule.INVALID_JSON, f"not valid JSON: {error.msg} (column {error.colno})", error.lineno
        )
        return Schema((), tuple(problems))
    except RecursionError:
        report(Rule.INVALID_JSON, "not valid JSON: nested too deeply to be a chart list")
        return Schema((), tuple(problems))
    except ValueError as error:
        report(Rule.INVALID_JSON, f"not valid JSON: {error}")
        return Schema((), tuple(problems))

    if not isinstance(document, dict):
        report(
            Rule.BAD_SCHEMA, 'the top level must be an object like {"version": 1, "charts": [...]}'
        )
        return Schema((), tuple(problems))
    version = document.get("version")
    # Only the integer 1: JSON's true, 1.0 and null compare or convert to it in Python.
    if "version" in document and (type(version) is not int or version != 1):
        report(Rule.BAD_SCHEMA, f'"version" is {_display(version)}; this format is version 1', 1)
    charts = document.get("charts")
    if not isinstance(charts, list):
        what = "missing" if charts is None else f"a {type(charts).__name__}"
        report(Rule.BAD_SCHEMA, f'"charts" is {what}; it must be a list of chart objects')
        return Schema((), tuple(problems))
    if len(charts) > MAX_CHARTS:
        report(
            Rule.TOO_MANY_CHARTS,
            f"{len(charts)} charts declared; ocms shows at most {MAX_CHARTS}: "
            "merge charts or drop some (only the first 6 are read)",
        )

    specs: list[ChartSpec] = []
    seen_names: set[str] = set()
    search_from = 0
    for index, chart in enumerate(charts[:MAX_CHARTS]):
        where = f"charts[{index}]"
        if not isinstance(chart, dict):
            report(Rule.BAD_SCHEMA, f"{where} is a {type(chart).__name__}; it must be an object")
            continue
        name = chart.get("name")
        line = None
        if isinstance(name, str):
            line, search_from = _find_name(text, name, search_from)
        spec = _check_chart(chart, where, line, seen_names, report)
        if spec is not None:
            specs.append(spec)
    declared = frozenset(
        chart["file"]
        for chart in charts
        if isinstance(chart, dict) and isinstance(chart.get("file"), str)
    )
    return Schema(tuple(specs), tuple(problems), declared)


def _check_chart(
    chart: dict[str, object],
    where: str,
    line: int | None,
    seen_names: set[str],
    report: Reporter,
) -> ChartSpec | None:
    """One chart object: its problems, and its spec when its CSV can still be read."""
    name = chart.get("name")
    file = chart.get("file")
    y_axis = chart.get("y_axis")
    x_axis = chart.get("x_axis", X_AXIS)
    readable = True

    if not isinstance(name, str):
        report(Rule.BAD_SCHEMA, f'{where}: "name" must be a string, got {_display(name)}', line)
        return None
    label = f"chart {name!r}"
    if name in seen_names:
        report(Rule.BAD_CHART_NAME, f"{label} is declared twice; chart names must be unique", line)
        return None
    seen_names.add(name)
    if not is_valid_name(name):
        report(
            Rule.BAD_CHART_NAME,
            f"{label}: chart names may only use A-Z a-z 0-9 _ - and must not be empty",
            line,
        )

    if not isinstance(file, str):
        report(Rule.BAD_SCHEMA, f'{label}: "file" must be a string, got {_display(file)}', line)
        return None
    if not is_plain_file_name(file):
        report(
            Rule.UNSAFE_PATH,
            f"{label}: file {file!r} is not a plain file name inside the directory; "
            f"use {chart_file_name(name)!r}",
            line,
        )
        return None
    if is_valid_name(name) and file != chart_file_name(name):
        report(
            Rule.BAD_SCHEMA,
            f"{label}: file is {file!r}; the format names it {chart_file_name(name)!r}",
            line,
        )

    if x_axis != X_AXIS:
        report(Rule.BAD_SCHEMA, f'{label}: "x_axis" is {_display(x_axis)}; it must be "step"', line)
    if not isinstance(y_axis, list) or not y_axis:
        report(
            Rule.BAD_SCHEMA,
            f'{label}: "y_axis" must be a non-empty list of series names, got {_display(y_axis)}',
            line,
        )
        return None
    if len(y_axis) > MAX_SERIES_PER_CHART:
        report(
            Rule.BAD_SCHEMA,
            f"{label} declares {len(y_axis):,} series; a chart may have at most "
            f"{MAX_SERIES_PER_CHART:,}, so it is not read: split it into several charts",
            line,
        )
        return None
    seen_series: set[str] = set()
    for series in y_axis:
        if not isinstance(series, str):
            report(
                Rule.BAD_SCHEMA, f"{label}: y-axis entry {_display(series)} is not a string", line
            )
            readable = False
            continue
        if series in seen_series:
            report(Rule.BAD_Y_AXIS_NAME, f"{label}: y-axis name {series!r} appears twice", line)
        elif not is_valid_name(series):
            report(
                Rule.BAD_Y_AXIS_NAME,
                f"{label}: y-axis name {series!r} may only use A-Z a-z 0-9 _ - "
                "(the recorder's sanitize_key maps keys onto legal names)",
                line,
            )
        seen_series.add(series)
    if not readable:
        return None
    return ChartSpec(name, file, tuple(y_axis), line)
