"""The way in on the command line: `ocms-tui verify`, `scan` and `init`.

Each `add_*_arguments` fills the sub-parser the command line made for its command (its
description, options and `runner`, the function that runs it and returns the exit code).
What runs is imported only when it runs, so building a parser stays light.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.format.arguments import path_argument


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Without --output-dir: self-test the recorder in a temporary directory. "
        "With it: check that run's metric files ($METRICS or DIR/ocms_metrics)."
    )
    parser.epilog = "Exit codes: 0 all good, 1 a problem, 2 usage error."
    parser.add_argument(
        "--output-dir", metavar="DIR", type=path_argument, help="a training run's output directory"
    )
    parser.add_argument(
        "--require-ocms",
        action="store_true",
        help="treat a missing proprietary ocms package as an error (on the Octopus platform)",
    )
    parser.set_defaults(runner=_verify)


def add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Find where a training project logs metrics (read as text, never imported or "
        "run) and what charts the recorder would make of them."
    )
    parser.epilog = "Exit codes: 0 found a place to integrate, 1 found nothing, 2 usage error."
    parser.add_argument("project", metavar="PROJECT_DIR", type=Path, help="the training project")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(runner=_scan)


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Copy the recorder (and the framework's hook) into PROJECT_DIR/migrate_to_cloudrobo/ "
        "and print the edit that wires it in, as a unified diff; --write applies it."
    )
    parser.epilog = (
        "Exit codes: 0 done (or nothing to do), 1 nothing to integrate or refused, 2 usage error."
    )
    parser.add_argument("project", metavar="PROJECT_DIR", type=Path, help="the training project")
    parser.add_argument("--write", action="store_true", help="apply the edit and copy the files")
    parser.add_argument(
        "--output-dir-expr",
        metavar="EXPR",
        help="Python expression, valid where init adds its call, for the training output "
        "directory (metrics go to $METRICS, else EXPR/ocms_metrics). Default: the HF "
        "Trainer's output_dir, Lightning's default_root_dir, MMEngine's work_dir; a plain "
        "loop writes to $METRICS, else ./ocms_metrics",
    )
    parser.add_argument(
        "--force", action="store_true", help="--write even with uncommitted changes in git"
    )
    parser.add_argument(
        "--include",
        metavar="FILE",
        action="append",
        default=[],
        help="wire FILE although it looks like it does not train (a benchmark, a sampling "
        "or evaluation script, left alone by default); repeat for several files",
    )
    parser.set_defaults(runner=_init)


def _verify(options: argparse.Namespace) -> int:
    from ocms_tui.onboard.verify import run_verify

    output_dir = None if options.output_dir is None else str(options.output_dir)
    return run_verify(output_dir, options.require_ocms)


def _init(options: argparse.Namespace) -> int:
    from ocms_tui.onboard.scaffold import run_init

    return run_init(
        options.project,
        write=options.write,
        output_dir_expr=options.output_dir_expr,
        force=options.force,
        include=options.include,
    )


def _scan(options: argparse.Namespace) -> int:
    import json

    from ocms_tui.onboard.scan import format_text, scan_project

    project: Path = options.project
    try:
        is_directory = project.is_dir()
    except OSError as error:  # Python < 3.12 raises for an inaccessible parent
        is_directory, reason = False, error.strerror
    else:
        reason = "is not a directory"
    if not is_directory:
        print(printable(f"ocms-tui scan: {project}: {reason}"), file=sys.stderr)
        return ExitCode.USAGE
    result = scan_project(project)
    if options.format == "json":
        text = json.dumps(result.as_json(), indent=2) + "\n"
    else:
        text = format_text(result)
    sys.stdout.write(encodable(text, sys.stdout))
    sys.stdout.flush()
    return ExitCode.OK if result.found else ExitCode.PROBLEMS
