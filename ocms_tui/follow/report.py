"""Print check results as text, JSON or GitHub annotations; exit codes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, TextIO

from ocms_tui.format.problems import Problem, Rule, Severity, escape_code, replace_unprintable

if TYPE_CHECKING:  # the checker pulls in polars: `ocms-tui --version` and `--help` need not
    from ocms_tui.follow.checker import CheckResult


class ExitCode(IntEnum):
    OK = 0
    PROBLEMS = 1  # errors, or warnings with --strict
    USAGE = 2  # bad arguments or a directory that does not exist


FORMATS = ("text", "json", "github")


def printable(text: str) -> str:
    """`text` with unprintable characters shown as escapes instead of acting on the terminal."""
    return replace_unprintable(text, escape_code)


def encodable(text: str, stream: TextIO) -> str:
    """`text` as `stream` can write it: what its encoding lacks (é on an ASCII terminal)
    becomes an escape instead of a UnicodeEncodeError."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text


def exit_code(result: CheckResult, strict: bool) -> ExitCode:
    if result.directory_missing:
        return ExitCode.USAGE
    return ExitCode.OK if result.ok(strict) else ExitCode.PROBLEMS


def combined_exit_code(results: Sequence[CheckResult], strict: bool) -> ExitCode:
    """The worst of the runs: a missing directory (2) over problems (1) over success (0)."""
    return max((exit_code(result, strict) for result in results), default=ExitCode.USAGE)


def _display_path(result: CheckResult, problem: Problem) -> str:
    if problem.path in (".", ""):
        return str(result.directory)
    return os.path.join(result.directory, problem.path)


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def problem_lines(result: CheckResult, color: bool) -> list[str]:
    """One line per problem: `path:line: severity rule message`."""
    red, yellow, bold, reset = (
        ("\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m") if color else ("",) * 4
    )
    lines = []
    for problem in result.problems:
        where = printable(_display_path(result, problem))
        if problem.line is not None:
            where += f":{problem.line}"
        tint = red if problem.is_error else yellow
        lines.append(
            f"{bold}{where}:{reset} {tint}{problem.severity.value}{reset} "
            f"{problem.rule.value} {printable(problem.message)}"
        )
    return lines


# A chart line names this many series, then how many more (a chart may hold 1,000).
NAMES_PER_LINE = 20


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(printable(name) for name in names[:NAMES_PER_LINE])
    if len(names) > NAMES_PER_LINE:
        shown += f", and {len(names) - NAMES_PER_LINE:,} more"
    return shown


def dropped_keys(problems: Sequence[Problem]) -> list[str]:
    """The metric keys the recorder did not write (its sidecar), in its order."""
    return [
        problem.series
        for problem in problems
        if problem.rule is Rule.DROPPED_METRIC and problem.series is not None
    ]


def octopus_chart_line(name: str, y_axis: Sequence[str]) -> str:
    """`loss: loss, eval_loss`: a chart and its series in the order Octopus draws them."""
    return f"{printable(name)}: {_names(y_axis)}"


def not_written_line(dropped: Sequence[str]) -> str:
    return f"not written by the recorder: {_names([repr(key) for key in dropped])}"


def chart_lines(result: CheckResult) -> list[str]:
    """What Octopus will show: each chart with its y-axis names in the order it draws them,
    then the keys the recorder did not write."""
    directory = printable(str(result.directory))
    if not result.charts:
        lines = [] if result.directory_missing else [f"{directory}: Octopus will show no chart"]
    else:
        lines = [f"{directory}: Octopus will show {len(result.charts)} chart(s):"]
        for chart in result.charts:
            last = "" if chart.last_step is None else f", last step {chart.last_step:,}"
            summary = f"({chart.rows:,} row(s){last})"
            lines.append(f"  {octopus_chart_line(chart.name, chart.y_axis)}  {summary}")
    dropped = dropped_keys(result.problems)
    if dropped:
        lines.append("  " + not_written_line(dropped))
    return lines


def verdict_line(result: CheckResult) -> str:
    rows = sum(chart.rows for chart in result.charts)
    verdict = "ok" if result.errors == 0 else "failed"
    return (
        f"{printable(str(result.directory))}: {verdict}: {result.errors} error(s), "
        f"{result.warnings} warning(s), {len(result.charts)} chart(s), {rows:,} row(s)"
    )


def format_text(result: CheckResult, color: bool) -> str:
    lines = [*problem_lines(result, color), *chart_lines(result), verdict_line(result)]
    return "\n".join(lines) + "\n"


def _json_document(result: CheckResult, strict: bool) -> dict[str, object]:
    return {
        "ok": result.ok(strict),
        "directory": str(result.directory),
        "problems": [problem.as_dict() for problem in result.problems],
        "charts": [chart.as_dict() for chart in result.charts],
    }


def format_json(results: Sequence[CheckResult], strict: bool) -> str:
    """One run: that run's document. Several: {"ok": all ok, "runs": [documents]}."""
    if len(results) == 1:
        document = _json_document(results[0], strict)
    else:
        document = {
            "ok": all(result.ok(strict) for result in results),
            "runs": [_json_document(result, strict) for result in results],
        }
    return json.dumps(document, indent=2) + "\n"


def _escape_data(text: str) -> str:
    # GitHub's workflow-command escaping (actions/toolkit's escapeData/escapeProperty).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(result: CheckResult) -> str:
    lines = []
    for problem in result.problems:
        command = "error" if problem.severity is Severity.ERROR else "warning"
        properties = [f"file={_escape_property(printable(_display_path(result, problem)))}"]
        if problem.line is not None:
            properties.append(f"line={problem.line}")
        properties.append(f"title={_escape_property(problem.rule.value)}")
        message = _escape_data(printable(problem.message))
        lines.append(f"::{command} {','.join(properties)}::{message}")
    return "".join(line + "\n" for line in lines)


def render(results: Sequence[CheckResult], output_format: str, strict: bool, stream: TextIO) -> str:
    return encodable(_render(results, output_format, strict, stream), stream)


def _render(
    results: Sequence[CheckResult], output_format: str, strict: bool, stream: TextIO
) -> str:
    if output_format == "json":
        return format_json(results, strict)
    if output_format == "github":
        return "".join(format_github(result) for result in results)
    color = use_color(stream)
    text = "".join(format_text(result, color) for result in results)
    if len(results) > 1:
        failed = sum(not result.ok(strict) for result in results)
        text += f"{len(results)} run(s) checked, {failed} failed\n"
    return text
