"""Runs checked and compared on the command line: `ocms-tui --check`, `ocms-tui runs` (a
sweep's table) and the arguments of `ocms-tui diff` (whose `--snapshot` draws with the
dashboard, so the command line gives it its `runner`).

Each `add_*_arguments` fills the sub-parser the command line made for its command. The
readers are imported only when a command runs, so building a parser stays light.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ocms_recorder import METRICS_JSON

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.format.arguments import (
    add_snapshot_size,
    path_argument,
    positive_count,
    tolerance_fraction,
)
from ocms_tui.format.directories import directory_problem
from ocms_tui.format.problems import Rule
from ocms_tui.format.ranking import DEFAULT_GROUP_PATTERN, SortError, SortKey, compile_group_pattern

if TYPE_CHECKING:
    from ocms_tui.follow.checker import CheckResult


def add_runs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "One row per run found under DIR (a sweep): status, rows, last step and, per "
        "series, its latest, min, max and the step of its best value."
    )
    parser.epilog = (
        "--sort loss puts the best run first: lowest first for loss-, error- and "
        "perplexity-like names, highest first for accuracy-, score-, mIoU-, f1-like "
        "names; --sort=-NAME forces highest first, --sort=+NAME lowest first. A run "
        "without the series sorts last. Exit codes: 0 runs listed, 1 no run found, "
        "2 usage error."
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        type=path_argument,
        help="a sweep (runs under it) or runs",
    )
    parser.add_argument(
        "--sort", metavar="SERIES", help="rank by this series' latest value (or CHART/SERIES)"
    )
    parser.add_argument("--top", type=positive_count, metavar="N", help="only the first N runs")
    parser.add_argument("--format", choices=("text", "json", "csv"), default="text")
    parser.add_argument(
        "--group",
        nargs="?",
        const=DEFAULT_GROUP_PATTERN,
        metavar="REGEX",
        help=f"one row per group of runs whose names differ only in the part REGEX matches "
        f"(default {DEFAULT_GROUP_PATTERN}): the mean, min and max of the --sort series",
    )
    parser.set_defaults(runner=_runs)


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Compare a run with a baseline, series by series, at the steps both have: final "
        "value, best value and the gap between the curves, lower-better for losses and "
        "higher-better for accuracy/score/mIoU-like names (docs/health.md)."
    )
    parser.epilog = (
        "Exit codes: 0 no series worse beyond the tolerance, 1 one is, "
        "2 a run cannot be read or nothing can be compared."
    )
    parser.add_argument(
        "run", metavar="RUN", type=path_argument, help="the run's metrics directory"
    )
    parser.add_argument("baseline", metavar="BASELINE", type=path_argument, help="the baseline's")
    parser.add_argument(
        "--tolerance",
        type=tolerance_fraction,
        default=0.05,
        metavar="FRACTION",
        help="how much worse a series may be (relative, default 0.05 = 5%%)",
    )
    parser.add_argument("--format", choices=("text", "json", "github", "markdown"), default="text")
    parser.add_argument(
        "--higher-better",
        action="append",
        default=[],
        metavar="NAME",
        help="series NAME is better higher (repeatable; wins over its name)",
    )
    parser.add_argument(
        "--snapshot",
        metavar="OUT.svg",
        type=path_argument,
        help="also draw the two runs overlaid (the baseline dotted) to an SVG",
    )
    add_snapshot_size(parser)
    parser.add_argument(
        "--lower-better",
        action="append",
        default=[],
        metavar="NAME",
        help="series NAME is better lower (repeatable)",
    )


def fail(message: str) -> int:
    """A usage error, said in one line on stderr."""
    print(f"ocms-tui: error: {printable(message)}", file=sys.stderr)
    return ExitCode.USAGE


def nothing_to_show(paths: list[Path]) -> str | None:
    """Why no run under `paths` can be drawn (each one's reason), or None when one can
    (its problems, if any, are part of the picture)."""
    from ocms_tui.follow.runs import find_runs

    nothing_there = []
    for directory in find_runs(paths):
        problem = directory_problem(directory)
        if problem is None and os.path.lexists(directory / METRICS_JSON):
            return None
        nothing_there.append(problem.message if problem else f"no {METRICS_JSON} in {directory}")
    return "; ".join(nothing_there)


def check_runs(
    paths: list[Path],
    output_format: str,
    strict: bool,
    *,
    health: bool = True,
    fail_on: frozenset[Rule] = frozenset(),
    as_sources: Callable[[list[CheckResult]], list[CheckResult]] | None = None,
) -> int:
    """`ocms-tui --check`: every run under `paths` checked once, printed, and the exit
    code. `as_sources` names converted runs after the logs they came from."""
    from ocms_tui.follow.checker import check_directory
    from ocms_tui.follow.report import combined_exit_code, render
    from ocms_tui.follow.runs import find_runs

    results = [
        check_directory(directory, health=health, fail_on=fail_on) for directory in find_runs(paths)
    ]
    if as_sources is not None:
        results = as_sources(results)
    sys.stdout.write(render(results, output_format, strict, sys.stdout))
    sys.stdout.flush()
    return combined_exit_code(results, strict)


def _runs(options: argparse.Namespace) -> int:
    """`ocms-tui runs`: the run table of a sweep."""
    from ocms_tui.follow import run_table_output as output
    from ocms_tui.follow.run_table import group_table, load_run, rank_table
    from ocms_tui.follow.runs import find_runs, name_runs
    from ocms_tui.follow.session import label_of
    from ocms_tui.format.ranking import default_sort_series

    try:
        sort = None if options.sort is None else SortKey.parse(options.sort)
        pattern = None if options.group is None else compile_group_pattern(options.group)
    except SortError as error:
        return fail(str(error))
    for path in options.paths:
        if not os.path.isdir(path):
            return fail(f"{path}: not a directory")
    directories = [
        directory
        for directory in find_runs(options.paths)
        if (directory / METRICS_JSON).exists() or os.path.lexists(directory / METRICS_JSON)
    ]
    if not directories:
        shown = ", ".join(str(path) for path in options.paths)
        print(
            printable(f"ocms-tui runs: no run (a directory with {METRICS_JSON}) under {shown}"),
            file=sys.stderr,
        )
        return ExitCode.PROBLEMS
    runs = [
        load_run(directory, name)
        for directory, name in zip(directories, name_runs(directories), strict=True)
    ]
    label = label_of(options.paths)
    if pattern is not None:
        groups = group_table(runs, pattern, sort)[: options.top]
        if options.format == "json":
            text = output.groups_json(groups, sort)
        elif options.format == "csv":
            text = output.groups_csv(groups)
        else:
            text = output.groups_text(groups, label, sort)
    else:
        table = rank_table(runs, sort, options.top)
        if options.format == "json":
            text = output.table_json(table)
        elif options.format == "csv":
            text = output.table_csv(table)
        else:
            names = (series.name for run in runs for series in run.series)
            shown_series = sort.series if sort is not None else default_sort_series(names)
            text = output.table_text(table, label, shown_series)
    sys.stdout.write(encodable(text, sys.stdout))
    sys.stdout.flush()
    return ExitCode.OK
