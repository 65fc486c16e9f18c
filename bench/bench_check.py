"""Figures 4 and 5: `ocms-tui --check` as a user runs it, on a clean and on a broken run.

Every side is a fresh process (`ocms-tui --check DIR` against `python bench/baselines.py`),
so each pays for its interpreter and imports: the comparison is command against command.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from baselines import command
from common import Row, Sizes, interleaved, make_row, ocms_tui_command, seconds
from data import LOSS_CHART, RUN_CHARTS, Workspace
from ocms_recorder import chart_file_name

from ocms_tui.follow.reader import CsvFollower
from ocms_tui.format.problems import Rule

SERIES = 4
BAD_VALUE = b"oops"


def run_command(argv: list[str], expected_exit: int) -> str:
    finished = subprocess.run(argv, capture_output=True, text=True, check=False)
    if finished.returncode != expected_exit:
        raise AssertionError(
            f"{' '.join(argv)} exited {finished.returncode}, expected {expected_exit}:\n"
            f"{finished.stdout}{finished.stderr}"
        )
    return finished.stdout


def break_one_row(path: Path) -> int:
    """Replace the value of the middle row's first series by junk; returns its line number.

    The file is replaced (written beside, renamed over), never changed in place.
    """
    data = path.read_bytes()
    start = data.index(b"\n", len(data) // 2) + 1
    end = data.index(b"\n", start)
    fields = data[start:end].split(b",")
    fields[1] = BAD_VALUE
    replacement = path.with_name(path.name + ".broken")
    replacement.write_bytes(data[:start] + b",".join(fields) + data[end:])
    os.replace(replacement, path)
    return data.count(b"\n", 0, start) + 1


def exact_lines_used(directory: Path, file_name: str, y_axis: tuple[str, ...]) -> tuple[int, int]:
    """(lines the exact per-line parser read, all lines) when the reader loads this file."""
    follower = CsvFollower(directory, file_name, y_axis)
    result = follower.poll()
    return sum(part.exact_lines for part in result.parts), follower.lines_read


def figure_clean(sizes: Sizes, workspace: Workspace) -> Row:
    directory = workspace.run(sizes.rows)
    files = [directory / chart_file_name(name) for name, _ in RUN_CHARTS]
    ours_argv = ocms_tui_command("--check", str(directory))
    polars_argv = command("polars-plain", SERIES, files)
    timings = interleaved(
        {
            "ours": lambda: run_command(ours_argv, 0),
            "polars": lambda: run_command(polars_argv, 0),
        },
        sizes.process_rounds,
        warmup=False,  # fresh processes; the run's files are in the page cache (Workspace)
    )
    ours, theirs = timings["ours"].median, timings["polars"].median
    return make_row(
        f"ocms-tui --check, clean run of {len(files)} charts x {sizes.rows:,} rows"
        " vs plain polars.read_csv of the 6 files",
        seconds(ours),
        seconds(theirs),
        ours / theirs,
        "<= 2.0",
        ours / theirs <= 2.0,
        "both as fresh processes (interpreter and imports included); polars with no schema"
        " and no conversion, as a user would type it; CPU time"
        f" {timings['ours'].cpu_median / timings['polars'].cpu_median:.2f}x",
    )


def figure_one_bad_row(sizes: Sizes, workspace: Workspace) -> Row:
    directory = workspace.copy(workspace.run(sizes.rows), "one-bad-row", linked=True)
    loss_file = chart_file_name(LOSS_CHART[0])
    bad_line = break_one_row(directory / loss_file)
    ours_argv = ocms_tui_command("--check", str(directory))
    naive_argv = command("csv-reader", SERIES, [directory / loss_file])

    def check_finds_the_row() -> None:
        report = run_command(ours_argv, 1)
        if f"{loss_file}:{bad_line}: error {Rule.BAD_VALUE.value}" not in report:
            raise AssertionError(f"--check did not report line {bad_line}:\n{report}")

    timings = interleaved(
        {"ours": check_finds_the_row, "csv.reader": lambda: run_command(naive_argv, 0)},
        sizes.slow_rounds,
        warmup=False,  # the file was just written: it is in the page cache
    )
    exact, lines = exact_lines_used(directory, loss_file, LOSS_CHART[1])
    elsewhere = sum(
        exact_lines_used(directory, chart_file_name(name), y_axis)[0]
        for name, y_axis in RUN_CHARTS
        if name != LOSS_CHART[0]
    )
    ours, theirs = timings["ours"].median, timings["csv.reader"].median
    return make_row(
        f"ocms-tui --check, same run with one bad row (line {bad_line:,} of {loss_file})"
        f" vs csv.reader + float() over that one file",
        seconds(ours),
        seconds(theirs),
        ours / theirs,
        "<= 1.0",
        ours / theirs <= 1.0,
        f"exact per-line parser read {exact:,} of {lines:,} lines ({exact / lines:.2%}) of"
        f" that file and {elsewhere:,} lines of the other {len(RUN_CHARTS) - 1} charts",
    )


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    return [figure_clean(sizes, workspace), figure_one_bad_row(sizes, workspace)]
