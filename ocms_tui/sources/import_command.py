"""`ocms-tui import SRC --out DIR [--groups SPEC] [--framework NAME]`: another tool's logs
as an ocms directory; a parent of several runs (`output/runs/`, `lightning_logs/`,
`mlruns/`) as one ocms directory per run, `DIR/<run>/`.

Prints where every series went (chart and y-axis name) and what was left out and why.
Exit 0 when written, 2 when the source is foreign or broken, the output cannot be written,
or nothing in the source can be drawn; the source is only read, and a failure (or SIGTERM,
SIGINT) leaves no output directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ocms_recorder import ChartGroup

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.sources import Framework, SourceRun, read_run, source_runs
from ocms_tui.sources.common import Source, SourceError
from ocms_tui.sources.fitting import Fit, GroupsSpecError, fit_series, parse_groups_spec
from ocms_tui.sources.signals import Terminated, interrupted_exit_code, terminate_cleanly
from ocms_tui.sources.writer import (
    WriteError,
    Written,
    check_output_path,
    write_ocms_directory,
)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Fill the sub-parser the command line made for `import`."""
    parser.description = (
        "Convert TensorBoard event files, a HF trainer_state.json (or checkpoint dir), a "
        "Lightning CSVLogger metrics.csv or an MLflow file-store run into an ocms "
        "metrics directory. The source is only read."
    )
    parser.epilog = "Exit codes: 0 written, 2 bad or foreign source, or output not writable."
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
    parser.add_argument(
        "--framework",
        choices=[each.value for each in Framework],
        help="the framework that wrote the logs, when its tags or layout do not say: its "
        "live hook's names and charts are used (generic: grouped by name and magnitude)",
    )
    parser.set_defaults(runner=run_import)


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


def fit_run(source: Source, groups: list[ChartGroup] | None) -> Fit:
    """The charts of one run: `--groups` alone when given; else the source's groups, then
    its names, and for a generic log magnitude bands (never for a hook's mapping, whose
    charts the live hook's must equal)."""
    return fit_series(
        source.series,
        groups or source.chart_groups,
        use_structure=groups is None,
        by_magnitude=groups is None and not source.hook_mapped,
    )


def run_directory_name(run: SourceRun) -> str:
    return run.label or run.path.name or "run"


def run_import(options: argparse.Namespace) -> int:
    try:
        with terminate_cleanly():
            return _import(options)
    except (SourceError, WriteError, GroupsSpecError) as error:
        _print([f"ocms-tui import: error: {error}"], sys.stderr)
        return ExitCode.USAGE
    except (Terminated, KeyboardInterrupt) as stop:
        _print(["ocms-tui import: interrupted; nothing written"], sys.stderr)
        return interrupted_exit_code(stop)


def _import(options: argparse.Namespace) -> int:
    groups = parse_groups_spec(options.groups) if options.groups is not None else None
    framework = Framework(options.framework) if options.framework else None
    found = source_runs(options.source)
    if len(found.runs) == 1:
        source = read_run(found.runs[0], framework)
        fit = fit_run(source, groups)
        if not fit.charts:
            _print(describe(source, fit, None), sys.stderr)
            raise SourceError(f"{options.source}: no series to write")
        written = write_ocms_directory(options.out, fit, source.series, [options.source])
        _print([f"note: {note}" for note in found.notes], sys.stdout)
        _print(describe(source, fit, written), sys.stdout)
        return ExitCode.OK
    reports = _write_runs(options.out, found.runs, options.source, framework, groups)
    _print([f"{options.source}: {len(found.runs)} runs -> {options.out}/<run>/"], sys.stdout)
    _print([f"note: {note}" for note in found.notes] + reports, sys.stdout)
    return ExitCode.OK


def _write_runs(
    out: Path,
    runs: Sequence[SourceRun],
    given: Path,
    framework: Framework | None,
    groups: list[ChartGroup] | None,
) -> list[str]:
    """Each run into `out/<run>/`, one run in memory at a time, all or nothing: written
    into a hidden directory beside `out`, renamed into place once every run is there.
    Returns the report of each run."""
    check_output_path(out, [given])
    # The outermost directory that `out` needs and is not there: removed on failure.
    created = next((each for each in reversed(out.parents) if not each.exists()), None)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # mkdir (not mkdtemp's 0700) so the runs get the user's usual permissions.
        staging = out.parent / f".{out.name}.{secrets.token_hex(6)}.importing"
        staging.mkdir()
    except OSError as error:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise WriteError(f"cannot create {out}: {error.strerror or error}") from None
    try:
        reports: list[str] = []
        runs_written = 0
        for run in runs:
            source = read_run(run, framework)
            fit = fit_run(source, groups)
            written = None
            if fit.charts:
                name = run_directory_name(run)
                written = write_ocms_directory(staging / name, fit, source.series, [given])
                written = dataclasses.replace(written, directory=out / name)
                runs_written += 1
            reports += describe(source, fit, written)
        if not runs_written:
            raise SourceError(f"{given}: no series to write in any of its {len(runs)} runs")
        if out.is_dir():
            out.rmdir()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    return reports
