"""metrics.json -> chart specs, or problems that say what is wrong with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from ocms_recorder import (
    FORMAT_VERSION,
    MAX_CHARTS,
    MAX_METRICS_JSON_BYTES,
    MAX_SERIES_PER_CHART,
    METRICS_JSON,
    X_AXIS,
    chart_file_name,
    is_plain_file_name,
    is_valid_name,
)

from ocms_tui.format.json_lines import JsonPath, first_line_of, json_int, value_lines
from ocms_tui.format.problems import Problem, Rule

Reporter = Callable[[Rule, str, "int | None"], None]
# The line of the value at a path in metrics.json, or None where the file has no such value.
LineOf = Callable[[JsonPath], "int | None"]


# **decision**: strict JSON. Python's json reads these literals; JSON.parse does not.
NON_JSON_CONSTANTS = frozenset({"NaN", "Infinity", "-Infinity"})


def _reject_constant(literal: str) -> None:
    """json's parse_constant hook: NaN, Infinity and -Infinity are not JSON (RFC 8259)."""
    raise ValueError(
        f"{literal} is not a JSON value (strict JSON, as a browser's JSON.parse reads it); "
        "write null or a number"
    )


def _wanted_line(path: JsonPath) -> bool:
    """Only the paths a schema problem can point at: "version", and "charts" down to
    charts[i].y_axis[j] for the charts that are read plus the first one past the limit."""
    if not path:
        return True
    if path[0] not in ("version", "charts") or len(path) > 4:
        return False
    return len(path) < 2 or (type(path[1]) is int and path[1] <= MAX_CHARTS)


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
            f"it should describe at most {MAX_CHARTS} charts",
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
        document = json.loads(text, parse_constant=_reject_constant, parse_int=json_int)
    except json.JSONDecodeError as error:
        report(
            Rule.INVALID_JSON, f"not valid JSON: {error.msg} (column {error.colno})", error.lineno
        )
        return Schema((), tuple(problems))
    except RecursionError:
        report(Rule.INVALID_JSON, "not valid JSON: nested too deeply to be a chart list")
        return Schema((), tuple(problems))
    except ValueError as error:
        report(
            Rule.INVALID_JSON, f"not valid JSON: {error}", first_line_of(text, NON_JSON_CONSTANTS)
        )
        return Schema((), tuple(problems))
    lines = value_lines(text, _wanted_line)

    def line_of(*path: str | int) -> int | None:
        return lines.get(path)

    if not isinstance(document, dict):
        report(
            Rule.BAD_SCHEMA,
            f'the top level must be an object like {{"version": {FORMAT_VERSION}, '
            '"charts": [...]}',
            line_of(),
        )
        return Schema((), tuple(problems))
    version = document.get("version")
    # The number 1 as JSON.parse reads it (JSON has one number type: 1, 1.0 and 1e0 are
    # one value); not true, which Python would also call equal to 1.
    if "version" in document and not (type(version) in (int, float) and version == FORMAT_VERSION):
        report(
            Rule.BAD_SCHEMA,
            f'"version" is {_display(version)}; this format is version {FORMAT_VERSION}',
            line_of("version"),
        )
    charts = document.get("charts")
    if not isinstance(charts, list):
        what = "missing" if charts is None else f"a {type(charts).__name__}"
        report(
            Rule.BAD_SCHEMA,
            f'"charts" is {what}; it must be a list of chart objects',
            line_of("charts") if charts is not None else line_of(),
        )
        return Schema((), tuple(problems))
    if len(charts) > MAX_CHARTS:
        report(
            Rule.TOO_MANY_CHARTS,
            f"{len(charts)} charts declared; ocms shows at most {MAX_CHARTS}: "
            f"merge charts or drop some (only the first {MAX_CHARTS} are read)",
            line_of("charts", MAX_CHARTS),
        )

    specs: list[ChartSpec] = []
    seen_names: set[str] = set()
    for index, chart in enumerate(charts[:MAX_CHARTS]):
        where = f"charts[{index}]"
        if not isinstance(chart, dict):
            report(
                Rule.BAD_SCHEMA,
                f"{where} is a {type(chart).__name__}; it must be an object",
                line_of("charts", index),
            )
            continue
        spec = _check_chart(
            chart,
            where,
            lambda *path, index=index: line_of("charts", index, *path),
            seen_names,
            report,
        )
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
    line_of: LineOf,
    seen_names: set[str],
    report: Reporter,
) -> ChartSpec | None:
    """One chart object: its problems, and its spec when its CSV can still be read.

    `line_of(key, ...)` is the line of a value inside this chart; `line_of()` the chart's own.
    """
    name = chart.get("name")
    file = chart.get("file")
    y_axis = chart.get("y_axis")
    x_axis = chart.get("x_axis", X_AXIS)
    readable = True

    def line_or_chart(*path: str | int) -> int | None:
        """A missing value has no line of its own: point at its chart."""
        line = line_of(*path)
        return line_of() if line is None else line

    if not isinstance(name, str):
        report(
            Rule.BAD_SCHEMA,
            f'{where}: "name" must be a string, got {_display(name)}',
            line_or_chart("name"),
        )
        return None
    name_line = line_of("name")
    label = f"chart {name!r}"
    if name in seen_names:
        report(
            Rule.BAD_CHART_NAME,
            f"{label} is declared twice; chart names must be unique",
            name_line,
        )
        return None
    seen_names.add(name)
    if not is_valid_name(name):
        report(
            Rule.BAD_CHART_NAME,
            f"{label}: chart names may only use A-Z a-z 0-9 _ - and must not be empty",
            name_line,
        )

    if not isinstance(file, str):
        report(
            Rule.BAD_SCHEMA,
            f'{label}: "file" must be a string, got {_display(file)}',
            line_or_chart("file"),
        )
        return None
    if not is_plain_file_name(file):
        report(
            Rule.UNSAFE_PATH,
            f"{label}: file {file!r} is not a plain file name inside the directory; "
            f"use {chart_file_name(name)!r}",
            line_of("file"),
        )
        return None
    if is_valid_name(name) and file != chart_file_name(name):
        report(
            Rule.BAD_SCHEMA,
            f"{label}: file is {file!r}; the format names it {chart_file_name(name)!r}",
            line_of("file"),
        )

    if x_axis != X_AXIS:
        report(
            Rule.BAD_SCHEMA,
            f'{label}: "x_axis" is {_display(x_axis)}; it must be {json.dumps(X_AXIS)}',
            line_of("x_axis"),
        )
    if not isinstance(y_axis, list) or not y_axis:
        report(
            Rule.BAD_SCHEMA,
            f'{label}: "y_axis" must be a non-empty list of series names, got {_display(y_axis)}',
            line_or_chart("y_axis"),
        )
        return None
    if len(y_axis) > MAX_SERIES_PER_CHART:
        report(
            Rule.BAD_SCHEMA,
            f"{label} declares {len(y_axis):,} series; a chart may have at most "
            f"{MAX_SERIES_PER_CHART:,}, so it is not read: split it into several charts",
            line_of("y_axis"),
        )
        return None
    seen_series: set[str] = set()
    for position, series in enumerate(y_axis):
        series_line = line_or_chart("y_axis", position)
        if not isinstance(series, str):
            report(
                Rule.BAD_SCHEMA,
                f"{label}: y-axis entry {_display(series)} is not a string",
                series_line,
            )
            readable = False
            continue
        if series in seen_series:
            report(
                Rule.BAD_Y_AXIS_NAME,
                f"{label}: y-axis name {series!r} appears twice",
                series_line,
            )
        elif not is_valid_name(series):
            report(
                Rule.BAD_Y_AXIS_NAME,
                f"{label}: y-axis name {series!r} may only use A-Z a-z 0-9 _ - "
                "(the recorder's sanitize_key maps keys onto legal names)",
                series_line,
            )
        seen_series.add(series)
    if not readable:
        return None
    return ChartSpec(name, file, tuple(y_axis), name_line)
