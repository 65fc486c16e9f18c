"""Command line: `ocms-tui [DIR ...] [options]` is the dashboard (or, with `--check`,
`--snapshot`, `--serve`, `--demo`, what it does instead), and `ocms-tui COMMAND ...` runs
one of the sub-commands: verify, scan, init, import, runs, diff.

The sub-commands are argparse sub-parsers. The dashboard has no command name, as it never
had: when the first argument is not a command's name, `main` hands every argument to the
dashboard's sub-parser, a default sub-parser that `--help` does not list as a command (its
`-h` shows the whole command line's help). So a first argument naming a command is that
command; a directory of that name is given as `./runs` (or after `--`). A first argument
that is neither an existing path nor a command but is one typo away from a command's name
is refused (exit 2) rather than waited for as a directory that does not exist yet.

Each command's arguments and code live in the layer of what it does (onboard/commands.py,
sources/import_command.py, follow/commands.py; the dashboard's options in ui/options.py);
this module builds the parser and starts the dashboard. A sub-parser is filled only for the
command that runs, so `--help` and `--check` import no other command's code, and Textual
only when the dashboard is opened or rendered (so that `--check` in CI starts fast).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ocms_recorder import resolve_metrics_dir

from ocms_tui.follow.commands import (
    add_diff_arguments,
    add_runs_arguments,
    check_runs,
    fail,
    nothing_to_show,
)
from ocms_tui.follow.report import ExitCode, printable
from ocms_tui.format.ranking import SortError, SortKey, compile_group_pattern
from ocms_tui.onboard.commands import add_init_arguments, add_scan_arguments, add_verify_arguments
from ocms_tui.ui.options import add_dashboard_arguments, served_options

if TYPE_CHECKING:
    from ocms_tui.follow.runset import OutsideProblems
    from ocms_tui.sources.live import ConvertedSources

# The dashboard's sub-parser: what runs when the first argument names no command. Not a
# command: main() never takes this name from the arguments (`ocms-tui X` is a directory X).
DASHBOARD = "(dashboard)"
USAGE = (
    "%(prog)s [DIR ...] [options]\n       %(prog)s COMMAND [options]  ('%(prog)s COMMAND --help')"
)
# A first argument this close to a command's name, and no path, is taken for a typo.
TYPO_CUTOFF = 0.75


def _import_arguments(parser: argparse.ArgumentParser) -> None:
    # Imported here only: the readers of other tools' logs load numpy.
    from ocms_tui.sources.import_command import add_import_arguments

    add_import_arguments(parser)


def _diff_arguments(parser: argparse.ArgumentParser) -> None:
    add_diff_arguments(parser)
    parser.set_defaults(runner=_diff)  # its --snapshot draws with the dashboard


# Every command: the line `ocms-tui --help` shows for it, and what fills its sub-parser
# (arguments, description and `runner`, which runs it and returns the exit code).
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "verify": (
        "self-test the recorder, or check a training run's metric files",
        add_verify_arguments,
    ),
    "scan": ("find where a training project logs metrics (read, never run)", add_scan_arguments),
    "init": (
        "add the recorder to a training project (--write applies the edit)",
        add_init_arguments,
    ),
    "import": (
        "convert TensorBoard, HF, Lightning or MLflow logs into an ocms directory",
        _import_arguments,
    ),
    "runs": ("print a sweep's runs as a table, best first", add_runs_arguments),
    "diff": ("compare a run with a baseline, series by series", _diff_arguments),
}


class _WholeHelp(argparse.Action):
    """`-h` of the dashboard's sub-parser: the help of the whole command line, commands
    included (`ocms-tui --help` reaches the dashboard's sub-parser like any option)."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str,
        whole: argparse.ArgumentParser,
        help: str | None = None,
    ) -> None:
        super().__init__(
            option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help
        )
        self.whole = whole

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        self.whole.print_help()
        parser.exit()


def build_parser(configured: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line: one sub-parser per command, filled when named in
    `configured` (every one when None), and the dashboard's (always filled).

    The dashboard's arguments are also given to the top parser, for its help only: `main`
    always parses through a sub-parser."""
    parser = argparse.ArgumentParser(
        prog="ocms-tui",
        usage=USAGE,
        description=(
            "Live terminal dashboard and CI checker for Octopus ocms training metrics. "
            "DIR defaults to $METRICS, else ./ocms_metrics."
        ),
        epilog=(
            "Exit codes of --check: 0 no errors, 1 errors (or warnings with --strict), "
            "2 usage error or missing directory. A directory named like a command is "
            "given as ./NAME."
        ),
    )
    # Added before DIR, so that the command, when there is one, takes every argument.
    commands = parser.add_subparsers(
        title="commands", metavar="COMMAND", dest="command", prog="ocms-tui"
    )
    for name, (summary, add_arguments) in COMMANDS.items():
        command = commands.add_parser(name, help=summary)
        command.set_defaults(command_parser=command)
        if configured is None or name in configured:
            add_arguments(command)
    dashboard = commands.add_parser(DASHBOARD, prog="ocms-tui", add_help=False)
    dashboard.set_defaults(command_parser=dashboard)
    dashboard.add_argument(
        "-h", "--help", action=_WholeHelp, whole=parser, help="show this help message and exit"
    )
    add_dashboard_arguments(dashboard)
    dashboard.set_defaults(runner=partial(_open, dashboard))
    add_dashboard_arguments(parser)
    # DIR, after the command, matches nothing: it must not set the command's DIRs to [].
    parser.set_defaults(paths=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = arguments[0] if arguments[:1] and arguments[0] in COMMANDS else None
    if command is None:
        typo = _mistyped_command(arguments[0]) if arguments else None
        if typo is not None:
            return fail(typo)
        arguments = [DASHBOARD, *arguments]
    parser = build_parser(configured={command} if command else ())
    options, unknown = parser.parse_known_args(arguments)
    if unknown:  # said with the usage of the command they were given to
        options.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return options.runner(options)


def _mistyped_command(first: str) -> str | None:
    """Why `first` looks like a mistyped command: not an option, no path (none exists
    there, it names no folder) and close to a command's name. None otherwise."""
    if first.startswith("-") or os.sep in first or os.path.lexists(first):
        return None
    close = difflib.get_close_matches(first, COMMANDS, n=1, cutoff=TYPO_CUTOFF)
    if not close:
        return None
    return (
        f"{first!r} is no command and no directory: did you mean 'ocms-tui {close[0]}'? "
        f"(a directory still to be created is given as ./{first})"
    )


def _open(parser: argparse.ArgumentParser, options: argparse.Namespace) -> int:
    """`ocms-tui [DIR ...] [options]`: the dashboard, or what --check, --snapshot, --serve
    or --demo do instead."""
    served = served_options(options)  # as typed: each --serve session reads them again
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
        # Each browser session runs `ocms-tui OPTIONS PATHS`, which converts other tools'
        # logs itself; the server stays light (no reader, no polars).
        from ocms_tui.ui.serve import serve_dashboard

        return serve_dashboard(
            paths,
            host=options.host,
            port=options.port,
            poll=options.poll,
            max_sessions=options.max_sessions,
            dashboard_options=served,
        )
    if options.snapshot is not None:
        from ocms_tui.format.output_files import output_file

        _, problem = output_file(options.snapshot)
        if problem is not None:  # before sources are converted or anything is rendered
            return fail(f"--snapshot: {problem}")

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


def _dispatch(
    options: argparse.Namespace, paths: list[Path], converted: ConvertedSources | None = None
) -> int:
    # Converted sources are named as given, with their kind, never by their temp path.
    label = converted.label() if converted is not None else None
    if options.check:
        return check_runs(
            paths,
            options.format,
            options.strict,
            health=not options.no_health,
            fail_on=options.fail_on,
            as_sources=converted.as_sources if converted is not None else None,
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
        health=not options.no_health,
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
    from ocms_tui.format.output_files import output_file, replace_file

    target, output_problem = output_file(out_path)
    if target is None:
        return fail(f"--snapshot: {output_problem}")
    nothing_there = nothing_to_show(paths)
    if nothing_there is not None:
        return fail(f"nothing to snapshot: {nothing_there}")

    from ocms_tui.ui.launch import save_snapshot

    try:
        view: dict[str, object] = {}
        if options is not None:  # the dashboard's own options (diff draws with the defaults)
            view.update(sort=options.sort, top=options.top, group=options.group)
            view["health"] = not options.no_health
        if label:
            view["directory_label"] = label
        if baseline is not None:
            view["baseline"] = baseline
        if outside_problems is not None:
            view["outside_problems"] = outside_problems
        replace_file(target, lambda temp: save_snapshot(paths, temp, size=size, **view))
    except OSError as error:
        return fail(f"--snapshot: cannot write {out_path}: {error.strerror or error}")
    print(f"wrote {printable(str(out_path))}")
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
