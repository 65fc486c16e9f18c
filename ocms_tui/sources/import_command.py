"""`ocms-tui import SRC --out DIR [--groups SPEC]`: another tool's logs as an ocms directory.

Prints where every series went (chart and y-axis name) and what was left out and why.
Exit 0 when written, 2 when the source is foreign or broken, the output cannot be written,
or nothing in the source can be drawn; the source is only read, and a failure leaves no
output directory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.sources import read_source
from ocms_tui.sources.common import Source, SourceError
from ocms_tui.sources.fitting import Fit, GroupsSpecError, fit_series, parse_groups_spec
from ocms_tui.sources.writer import WriteError, Written, write_ocms_directory


def build_import_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui import",
        description=(
            "Convert TensorBoard event files, a HF trainer_state.json (or checkpoint dir), a "
            "Lightning CSVLogger metrics.csv or an MLflow file-store run into an ocms "
            "metrics directory. The source is only read."
        ),
        epilog="Exit codes: 0 written, 2 bad or foreign source, or output not writable.",
    )
    parser.add_argument("source", type=Path, metavar="SRC")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="the ocms directory to create (must not exist, or be empty)",
    )
    parser.add_argument(
        "--groups",
        metavar="SPEC",
        help="charts as 'NAME=PATTERN[,PATTERN];NAME=...' (shell patterns on the source's "
        "names); replaces the default grouping",
    )
    return parser


def describe(source: Source, fit: Fit, written: Written | None) -> list[str]:
    """The report: where each series went, what was left out and why, the source's notes."""
    points = sum(len(each) for each in source.series)
    lines = [
        f"{source.path} ({source.kind.value}): {len(source.series)} series, {points} points"
        + (f" -> {written.directory} ({written.rows} rows)" if written else "")
    ]
    if source.incomplete_tail:
        lines.append("  (its last record is still being written: read up to it)")
    names = written.y_names if written else {}
    for chart in fit.charts:
        lines.append(f"chart {chart.name}:")
        for placement in (each for each in fit.placements if each.chart == chart.name):
            y_name = names.get(placement.series, (chart.name, "?"))[1]
            lines.append(f"  {_quoted(placement.series)} -> {y_name}  ({placement.reason})")
    left_out = [(each.series, each.reason) for each in fit.left_out]
    left_out += list(source.left_out.items())
    if left_out:
        lines.append("left out:")
        lines += [f"  {_quoted(name)}: {reason}" for name, reason in left_out]
    notes = list(source.problems) + list(written.recorder_notes if written else ())
    if notes:
        lines.append("notes:")
        lines += [f"  {note}" for note in notes]
    return lines


def _quoted(name: str) -> str:
    """A source's name as written there; printable() escapes what must not reach a
    terminal (repr would show an undecodable byte as \\udcff instead of \\xff)."""
    return f"'{name}'"


def _print(lines: Sequence[str], stream: TextIO) -> None:
    for line in lines:
        stream.write(encodable(printable(line), stream) + "\n")
    stream.flush()


def run_import(arguments: Sequence[str]) -> int:
    options = build_import_parser().parse_args(arguments)
    try:
        groups = parse_groups_spec(options.groups) if options.groups is not None else None
        source = read_source(options.source)
        fit = fit_series(source.series, groups or source.chart_groups, use_structure=groups is None)
        if not fit.charts:
            _print(describe(source, fit, None), sys.stderr)
            raise SourceError(f"{options.source}: no series to write")
        written = write_ocms_directory(options.out, fit, source.series, [options.source])
    except (SourceError, WriteError, GroupsSpecError) as error:
        _print([f"ocms-tui import: error: {error}"], sys.stderr)
        return ExitCode.USAGE
    _print(describe(source, fit, written), sys.stdout)
    return ExitCode.OK
