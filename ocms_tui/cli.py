"""Command line: the dashboard, `--check`, `--demo`, `--snapshot` and `verify`.

Textual is imported only by the commands that open or render the dashboard, so that
`--check` in CI starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ocms_recorder import resolve_metrics_dir

from ocms_tui import __version__
from ocms_tui.report import FORMATS, ExitCode


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


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError("the poll interval must be between 0.05 and 3600 seconds")
    return value


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
            "Exit codes of --check: 0 no errors, 1 errors (or warnings with --strict), "
            "2 usage error or missing directory."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="DIR",
        type=Path,
        help="ocms metrics directories, or parents searched for them (several runs)",
    )
    parser.add_argument("--version", action="version", version=f"ocms-tui {__version__}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check DIR once, print problems, exit")
    mode.add_argument("--demo", action="store_true", help="open the dashboard on a simulated run")
    mode.add_argument(
        "--snapshot", metavar="OUT.svg", type=Path, help="render the dashboard once to an SVG"
    )
    mode.add_argument(
        "--serve",
        action="store_true",
        help="serve the dashboard to a browser (textual-serve), on 127.0.0.1 unless --host",
    )
    parser.add_argument("--port", type=int, default=8000, metavar="N", help="--serve port")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
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
        "--size", type=_size, default=(160, 48), metavar="WxH", help="--snapshot terminal size"
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
    parser.add_argument("--output-dir", metavar="DIR", help="a training run's output directory")
    parser.add_argument(
        "--require-ocms",
        action="store_true",
        help="treat a missing proprietary ocms package as an error (on the Octopus platform)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["verify"]:
        from ocms_tui.verify import run_verify

        options = build_verify_parser().parse_args(arguments[1:])
        return run_verify(options.output_dir, options.require_ocms)

    parser = build_parser()
    options = parser.parse_args(arguments)
    paths: list[Path] = options.paths or [Path(resolve_metrics_dir())]

    if options.check:
        return _check(paths, options.format, options.strict)
    if options.demo:
        from ocms_tui.demo import run_demo

        return run_demo(poll=options.poll)
    if options.serve:
        from ocms_tui.serve import serve_dashboard

        return serve_dashboard(paths, host=options.host, port=options.port, poll=options.poll)
    if options.snapshot is not None:
        from ocms_tui.app import save_snapshot

        save_snapshot(paths, options.snapshot, size=options.size)
        print(f"wrote {options.snapshot}")
        return ExitCode.OK
    from ocms_tui.app import run_dashboard

    return run_dashboard(paths, poll=options.poll)  # runs under parents are found there


def _check(paths: list[Path], output_format: str, strict: bool) -> int:
    from ocms_tui.checker import check_directory
    from ocms_tui.report import combined_exit_code, render
    from ocms_tui.runs import find_runs

    results = [check_directory(directory) for directory in find_runs(paths)]
    sys.stdout.write(render(results, output_format, strict, sys.stdout))
    sys.stdout.flush()
    return combined_exit_code(results, strict)


if __name__ == "__main__":
    raise SystemExit(main())
