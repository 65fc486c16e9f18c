"""Command line: the dashboard, `--check`, `--demo`, `--snapshot`, `verify`, `scan`, `init`,
`import` and `runs`.

Textual is imported only by the commands that open or render the dashboard, so that
`--check` in CI starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ocms_recorder import METRICS_JSON, resolve_metrics_dir

from ocms_tui import __version__
from ocms_tui.follow.report import FORMATS, ExitCode, printable
from ocms_tui.format.directories import directory_problem
from ocms_tui.format.problems import Rule
from ocms_tui.format.ranking import (
    DEFAULT_GROUP_PATTERN,
    SortError,
    SortKey,
    compile_group_pattern,
)
from ocms_tui.ui.serve import DEFAULT_HOST, DEFAULT_MAX_SESSIONS, DEFAULT_PORT

if TYPE_CHECKING:
    from ocms_tui.follow.runset import OutsideProblems
    from ocms_tui.sources.live import ConvertedSources


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WIDTHxHEIGHT like 160x48, got {text!r}"
        ) from None
    if not (20 <= width <= 1000 and 10 <= height <= 500):
        raise argparse.ArgumentTypeError(f"{text!r}: size must be within 20x10 .. 1000x500")
    return width, height


def _path(text: str) -> Path:
    """A path argument; an empty one is a usage error (Path("") would mean the current
    directory, which nobody typing '' asked for)."""
    if not text:
        raise argparse.ArgumentTypeError(
            "an empty path is not allowed (it would mean the current directory)"
        )
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r}: a path cannot contain a NUL character")
    return Path(text)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError("the poll interval must be between 0.05 and 3600 seconds")
    return value


def _rules(text: str) -> frozenset[Rule]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {rule.value: rule for rule in Rule}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown rule {', '.join(map(repr, unknown)) or repr(text)}; rules: "
            + ", ".join(sorted(known))
        )
    return frozenset(known[name] for name in names)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui",
        description=(
            "Live terminal dashboard and CI checker for Octopus ocms training metrics. "
            "DIR defaults to $METRICS, else ./ocms_metrics."
        ),
        epilog=(
            "Also: 'ocms-tui verify [--output-dir DIR] [--require-ocms]' self-tests the "
            "recorder or checks a training run's metric files. "
            "'ocms-tui scan PROJECT_DIR' finds where a training project logs metrics; "
            "'ocms-tui init PROJECT_DIR [--write]' adds the recorder to it; "
            "'ocms-tui import SRC --out DIR' converts TensorBoard, HF, Lightning or MLflow "
            "logs. 'ocms-tui runs DIR [--sort SERIES] [--top N] [--format text|json|csv]' "
            "prints a sweep's runs as a table, best first. "
            "logs. 'ocms-tui diff RUN BASELINE' compares a run with a baseline. "
            "Exit codes of --check: 0 no errors, 1 errors (or warnings with --strict), "
            "2 usage error or missing directory."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="DIR",
        type=_path,
        help="ocms metrics directories, or parents searched for them (several runs)",
    )
    parser.add_argument("--version", action="version", version=f"ocms-tui {__version__}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check DIR once, print problems, exit")
    mode.add_argument("--demo", action="store_true", help="open the dashboard on a simulated run")
    mode.add_argument(
        "--snapshot", metavar="OUT.svg", type=_path, help="render the dashboard once to an SVG"
    )
    mode.add_argument(
        "--serve",
        action="store_true",
        help="serve the dashboard to a browser (textual-serve), on 127.0.0.1 unless --host",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N", help="--serve port")
    parser.add_argument(
        "--max-sessions",
        type=_positive,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"--serve: browser sessions at once, each a dashboard process (default "
        f"{DEFAULT_MAX_SESSIONS}); more get HTTP 503",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        metavar="ADDR",
        help="--serve address (default 127.0.0.1; any other is reachable from the network)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="--check output (default: text)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="--check fails on warnings too (exit 1)"
    )
    parser.add_argument(
        "--fail-on",
        type=_rules,
        default=frozenset(),
        metavar="RULE[,RULE]",
        help="--check: these warning rules are errors (exit 1), e.g. non-finite,spike,divergence",
    )
    parser.add_argument(
        "--baseline",
        metavar="BASE",
        type=_path,
        help="dashboard / --snapshot: also draw run BASE, dotted, to compare with "
        "(see also 'ocms-tui diff')",
    )
    parser.add_argument(
        "--notify",
        action="store_true",
        help="dashboard: ring the bell and send a desktop notification (through the "
        "terminal: OSC 9 / OSC 777) once per health finding",
    )
    parser.add_argument(
        "--no-health",
        action="store_true",
        help="--check: no curve health findings (spike, divergence); see docs/health.md",
    )
    parser.add_argument(
        "--size", type=_size, default=(160, 48), metavar="WxH", help="--snapshot terminal size"
    )
    parser.add_argument(
        "--sort",
        metavar="SERIES",
        help="several runs: rank them by this series' latest value, best first (-NAME: "
        "highest first, +NAME: lowest first; default: loss, if there is one)",
    )
    parser.add_argument(
        "--top",
        type=_positive,
        default=5,
        metavar="N",
        help="several runs: draw the first N in colour, every other run grey (default 5)",
    )
    parser.add_argument(
        "--group",
        nargs="?",
        const=DEFAULT_GROUP_PATTERN,
        metavar="REGEX",
        help=f"several runs: start with runs that differ only in the part REGEX matches "
        f"(default {DEFAULT_GROUP_PATTERN}) as one line, their mean with a min-max band (g)",
    )
    parser.add_argument(
        "--poll",
        type=_seconds,
        metavar="SECONDS",
        help="poll the directory every SECONDS instead of using inotify (network filesystems)",
    )
    return parser


def build_verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui verify",
        description=(
            "Without --output-dir: self-test the recorder in a temporary directory. "
            "With it: check that run's metric files ($METRICS or DIR/ocms_metrics)."
        ),
    )
    parser.add_argument(
        "--output-dir", metavar="DIR", type=_path, help="a training run's output directory"
    )
    parser.add_argument(
        "--require-ocms",
        action="store_true",
        help="treat a missing proprietary ocms package as an error (on the Octopus platform)",
    )
    return parser


def build_scan_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui scan",
        description=(
            "Find where a training project logs metrics (read as text, never imported or "
            "run) and what charts the recorder would make of them."
        ),
        epilog="Exit codes: 0 found a place to integrate, 1 found nothing, 2 usage error.",
    )
    parser.add_argument("project", metavar="PROJECT_DIR", type=Path, help="the training project")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def build_init_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui init",
        description=(
            "Copy the recorder (and the framework's hook) into PROJECT_DIR/migrate_to_cloudrobo/ "
            "and print the edit that wires it in, as a unified diff; --write applies it."
        ),
        epilog="Exit codes: 0 done (or nothing to do), 1 nothing to integrate or refused, "
        "2 usage error.",
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
    return parser


def build_runs_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui runs",
        description=(
            "One row per run found under DIR (a sweep): status, rows, last step and, per "
            "series, its latest, min, max and the step of its best value."
        ),
        epilog=(
            "--sort loss puts the best run first: lowest first for loss-, error- and "
            "perplexity-like names, highest first for accuracy-, score-, mIoU-, f1-like "
            "names; --sort=-NAME forces highest first, --sort=+NAME lowest first. A run "
            "without the series sorts last. Exit codes: 0 runs listed, 1 no run found, "
            "2 usage error."
        ),
    )
    parser.add_argument(
        "paths", nargs="+", metavar="DIR", type=_path, help="a sweep (runs under it) or runs"
    )
    parser.add_argument(
        "--sort", metavar="SERIES", help="rank by this series' latest value (or CHART/SERIES)"
    )
    parser.add_argument("--top", type=_positive, metavar="N", help="only the first N runs")
    parser.add_argument("--format", choices=("text", "json", "csv"), default="text")
    parser.add_argument(
        "--group",
        nargs="?",
        const=DEFAULT_GROUP_PATTERN,
        metavar="REGEX",
        help=f"one row per group of runs whose names differ only in the part REGEX matches "
        f"(default {DEFAULT_GROUP_PATTERN}): the mean, min and max of the --sort series",
    )
    return parser


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction such as 0.05, got {text!r}"
        ) from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError("the tolerance is a fraction between 0 and 10")
    return value


def build_diff_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocms-tui diff",
        description=(
            "Compare a run with a baseline, series by series, at the steps both have: final "
            "value, best value and the gap between the curves, lower-better for losses and "
            "higher-better for accuracy/score/mIoU-like names (docs/health.md)."
        ),
        epilog="Exit codes: 0 no series worse beyond the tolerance, 1 one is, "
        "2 a run cannot be read or nothing can be compared.",
    )
    parser.add_argument("run", metavar="RUN", type=_path, help="the run's metrics directory")
    parser.add_argument("baseline", metavar="BASELINE", type=_path, help="the baseline's")
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
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
        type=_path,
        help="also draw the two runs overlaid (the baseline dotted) to an SVG",
    )
    parser.add_argument(
        "--size", type=_size, default=(160, 48), metavar="WxH", help="--snapshot terminal size"
    )
    parser.add_argument(
        "--lower-better",
        action="append",
        default=[],
        metavar="NAME",
        help="series NAME is better lower (repeatable)",
    )
    return parser


def _diff(options: argparse.Namespace) -> int:
    from ocms_tui.follow.diff import diff_runs, render

    result = diff_runs(
        options.run,
        options.baseline,
        options.tolerance,
        higher_better=options.higher_better,
        lower_better=options.lower_better,
    )
    sys.stdout.write(render(result, options.format))
    sys.stdout.flush()
    if options.snapshot is not None and result.error is None:
        drawn = _snapshot(
            [options.run, options.baseline],
            options.snapshot,
            options.size,
            baseline=options.baseline,
        )
        if drawn != ExitCode.OK:
            return ExitCode.USAGE
    return result.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["verify"]:
        from ocms_tui.onboard.verify import run_verify

        options = build_verify_parser().parse_args(arguments[1:])
        output_dir = None if options.output_dir is None else str(options.output_dir)
        return run_verify(output_dir, options.require_ocms)
    if arguments[:1] == ["scan"]:
        options = build_scan_parser().parse_args(arguments[1:])
        return _scan(options.project, options.format)
    if arguments[:1] == ["runs"]:
        return _runs(build_runs_parser().parse_args(arguments[1:]))
    if arguments[:1] == ["init"]:
        from ocms_tui.onboard.scaffold import run_init

        options = build_init_parser().parse_args(arguments[1:])
        return run_init(
            options.project,
            write=options.write,
            output_dir_expr=options.output_dir_expr,
            force=options.force,
            include=options.include,
        )
    if arguments[:1] == ["diff"]:
        return _diff(build_diff_parser().parse_args(arguments[1:]))
    if arguments[:1] == ["import"]:
        from ocms_tui.sources.import_command import run_import

        return run_import(arguments[1:])

    parser = build_parser()
    options = parser.parse_args(arguments)
    if options.sort is not None:
        try:
            options.sort = SortKey.parse(options.sort)
        except SortError as error:
            parser.error(str(error))
    if options.group is not None:
        try:
            options.group = compile_group_pattern(options.group)
        except SortError as error:
            parser.error(str(error))
    paths: list[Path] = options.paths or [Path(resolve_metrics_dir())]
    if options.demo:
        from ocms_tui.ui.demo import run_demo

        return run_demo(poll=options.poll)
    if options.serve:
        # Each browser session runs `ocms-tui PATHS`, which converts other tools' logs
        # itself; the server stays light (no reader, no polars).
        return _dispatch(options, paths)
    if options.snapshot is not None:
        from ocms_tui.format.output_files import output_file

        _, problem = output_file(options.snapshot)
        if problem is not None:  # before sources are converted or anything is rendered
            return _fail(f"--snapshot: {problem}")

    from ocms_tui.sources.common import SourceError
    from ocms_tui.sources.live import ConvertedSources
    from ocms_tui.sources.signals import Terminated, interrupted_exit_code
    from ocms_tui.sources.writer import WriteError

    # Other tools' logs (TensorBoard, trainer_state.json, metrics.csv, mlruns) are converted
    # into temp ocms directories, followed as they grow, removed at exit.
    converted = ConvertedSources(paths, follow=not (options.check or options.snapshot))
    try:
        with converted as run_paths:
            return _dispatch(options, run_paths, converted)
    except (SourceError, WriteError) as error:
        print(f"ocms-tui: error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except (Terminated, KeyboardInterrupt) as stop:  # the conversions are removed by now
        print("ocms-tui: interrupted", file=sys.stderr)
        return interrupted_exit_code(stop)


def _dispatch(
    options: argparse.Namespace, paths: list[Path], converted: ConvertedSources | None = None
) -> int:
    # Converted sources are named as given, with their kind, never by their temp path.
    label = converted.label() if converted is not None else None
    if options.check:
        return _check(
            paths,
            options.format,
            options.strict,
            converted,
            health=not options.no_health,
            fail_on=options.fail_on,
        )
    if options.serve:
        from ocms_tui.ui.serve import serve_dashboard

        return serve_dashboard(
            paths,
            host=options.host,
            port=options.port,
            poll=options.poll,
            max_sessions=options.max_sessions,
        )
    baseline = options.baseline
    if baseline is not None:
        paths = [*paths, baseline]
    if options.snapshot is not None:
        return _snapshot(
            paths,
            options.snapshot,
            options.size,
            options,
            label=label,
            baseline=baseline,
            outside_problems=converted.problems_of if converted is not None else None,
        )
    return _dashboard(paths, options.poll, options, label, baseline, converted)


def _dashboard(
    paths: list[Path],
    poll: float | None,
    options: argparse.Namespace,
    label: str | None = None,
    baseline: Path | None = None,
    converted: ConvertedSources | None = None,
) -> int:
    """The dashboard on `paths` (runs under parents are found there). The runs are read
    from the start, on the session's thread, while Textual is imported and the screen is
    composed; the app takes the session's states over when it is up."""
    from ocms_tui.follow.session import FollowSession, label_of
    from ocms_tui.widgets.keys import prefer_quick_escape

    prefer_quick_escape()
    session = FollowSession(
        paths,
        lambda state: None,
        poll=poll,
        directory_label=label or label_of(paths),
        wait_for_first_screen=True,
        sort=options.sort,
        outside_problems=converted.problems_of if converted is not None else None,
    )
    session.start()
    try:
        from ocms_tui.ui.launch import run_dashboard

        return run_dashboard(
            paths,
            poll=poll,
            session=session,
            top=options.top,
            group=options.group,
            notify=options.notify,
            baseline=baseline,
        )
    finally:
        session.stop()  # the app stops it too, unless it failed before it was up


def _scan(project: Path, output_format: str) -> int:
    import json

    from ocms_tui.follow.report import encodable, printable
    from ocms_tui.onboard.scan import format_text, scan_project

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
    if output_format == "json":
        text = json.dumps(result.as_json(), indent=2) + "\n"
    else:
        text = format_text(result)
    sys.stdout.write(encodable(text, sys.stdout))
    sys.stdout.flush()
    return ExitCode.OK if result.found else ExitCode.PROBLEMS


def _runs(options: argparse.Namespace) -> int:
    """`ocms-tui runs`: the run table of a sweep."""
    from ocms_tui.follow import run_table_output as output
    from ocms_tui.follow.report import encodable
    from ocms_tui.follow.run_table import group_table, load_run, rank_table
    from ocms_tui.follow.runs import find_runs, name_runs
    from ocms_tui.follow.session import label_of
    from ocms_tui.format.ranking import default_sort_series

    try:
        sort = None if options.sort is None else SortKey.parse(options.sort)
        pattern = None if options.group is None else compile_group_pattern(options.group)
    except SortError as error:
        return _fail(str(error))
    for path in options.paths:
        if not os.path.isdir(path):
            return _fail(f"{path}: not a directory")
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


def _fail(message: str) -> int:
    print(f"ocms-tui: error: {printable(message)}", file=sys.stderr)
    return ExitCode.USAGE


def _snapshot(
    paths: list[Path],
    out_path: Path,
    size: tuple[int, int],
    options: argparse.Namespace | None = None,
    label: str | None = None,
    baseline: Path | None = None,
    outside_problems: OutsideProblems | None = None,
) -> int:
    """Render once to an SVG; a usage error when there is nothing to render or nowhere to
    write it (a FIFO, a device, a directory...: see format/output_files.py), both checked
    before the dashboard starts. The SVG replaces the file whole (temp file, rename)."""
    from ocms_tui.follow.runs import find_runs
    from ocms_tui.format.output_files import output_file, replace_file

    target, output_problem = output_file(out_path)
    if target is None:
        return _fail(f"--snapshot: {output_problem}")
    nothing_there = []
    for directory in find_runs(paths):
        problem = directory_problem(directory)
        if problem is None and os.path.lexists(directory / METRICS_JSON):
            break  # a run to show (its problems, if any, are part of the picture)
        nothing_there.append(problem.message if problem else f"no {METRICS_JSON} in {directory}")
    else:
        return _fail("nothing to snapshot: " + "; ".join(nothing_there))

    from ocms_tui.ui.launch import save_snapshot

    try:
        view: dict[str, object] = {}
        if options is not None:  # the dashboard's own options (diff draws with the defaults)
            view.update(sort=options.sort, top=options.top, group=options.group)
        if label:
            view["directory_label"] = label
        if baseline is not None:
            view["baseline"] = baseline
        if outside_problems is not None:
            view["outside_problems"] = outside_problems
        replace_file(target, lambda temp: save_snapshot(paths, temp, size=size, **view))
    except OSError as error:
        return _fail(f"--snapshot: cannot write {out_path}: {error.strerror or error}")
    print(f"wrote {printable(str(out_path))}")
    return ExitCode.OK


def _check(
    paths: list[Path],
    output_format: str,
    strict: bool,
    converted: ConvertedSources | None = None,
    health: bool = True,
    fail_on: frozenset[Rule] = frozenset(),
) -> int:
    from ocms_tui.follow.checker import check_directory
    from ocms_tui.follow.report import combined_exit_code, render
    from ocms_tui.follow.runs import find_runs

    results = [
        check_directory(directory, health=health, fail_on=fail_on) for directory in find_runs(paths)
    ]
    if converted is not None:
        results = converted.as_sources(results)
    sys.stdout.write(render(results, output_format, strict, sys.stdout))
    sys.stdout.flush()
    return combined_exit_code(results, strict)


if __name__ == "__main__":
    raise SystemExit(main())
