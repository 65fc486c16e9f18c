"""The dashboard's command-line options: `ocms-tui [DIR ...] [options]`, the form without a
command, whose parser the command line builds from `add_dashboard_arguments`; and the same
options given again to the dashboard of each `--serve` session (`served_options`).

Plain argparse, no Textual: `ocms-tui --help` and `--check` import this.
"""

from __future__ import annotations

import argparse

from ocms_tui import __version__
from ocms_tui.follow.report import FORMATS
from ocms_tui.format.arguments import (
    add_snapshot_size,
    path_argument,
    poll_seconds,
    positive_count,
    rule_names,
)
from ocms_tui.format.ranking import DEFAULT_GROUP_PATTERN

# --serve binds loopback unless told otherwise (see ui/serve.py).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Each session is a dashboard process: a handful serves a team, and a page that opens
# websockets in a loop cannot fork the machine to death.
DEFAULT_MAX_SESSIONS = 4


def add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    """DIR and the options of `ocms-tui` without a command."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="DIR",
        type=path_argument,
        help="ocms metrics directories, or parents searched for them (several runs)",
    )
    parser.add_argument("--version", action="version", version=f"ocms-tui {__version__}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check DIR once, print problems, exit")
    mode.add_argument("--demo", action="store_true", help="open the dashboard on a simulated run")
    mode.add_argument(
        "--snapshot",
        metavar="OUT.svg",
        type=path_argument,
        help="render the dashboard once to an SVG",
    )
    mode.add_argument(
        "--serve",
        action="store_true",
        help="serve the dashboard to a browser (textual-serve), on 127.0.0.1 unless --host",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N", help="--serve port")
    parser.add_argument(
        "--max-sessions",
        type=positive_count,
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
        type=rule_names,
        default=frozenset(),
        metavar="RULE[,RULE]",
        help="--check: these warning rules are errors (exit 1), e.g. non-finite,spike,divergence",
    )
    parser.add_argument(
        "--baseline",
        metavar="BASE",
        type=path_argument,
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
        help="no curve health findings (spike, divergence, stall) in --check or the "
        "dashboard's problems and run list; see docs/health.md",
    )
    add_snapshot_size(parser)
    parser.add_argument(
        "--sort",
        metavar="SERIES",
        help="several runs: rank them by this series' latest value, best first (-NAME: "
        "highest first, +NAME: lowest first; default: loss, if there is one)",
    )
    parser.add_argument(
        "--top",
        type=positive_count,
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
        type=poll_seconds,
        metavar="SECONDS",
        help="poll the directory every SECONDS instead of using inotify (network filesystems)",
    )


def served_options(options: argparse.Namespace) -> list[str]:
    """The dashboard's own options, for the dashboard of each --serve session (after the
    `=`, a value like -loss is never taken for an option)."""
    served = [f"--top={options.top}"]
    for option, value in (("--sort", options.sort), ("--group", options.group)):
        if value is not None:
            served.append(f"{option}={value}")
    if options.baseline is not None:  # the sessions' working directory is not promised
        served.append(f"--baseline={options.baseline.absolute()}")
    flags = (("--notify", options.notify), ("--no-health", options.no_health))
    served += [option for option, on in flags if on]
    return served
