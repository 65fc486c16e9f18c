"""The value types of the command line's arguments (argparse `type=` callables).

Each one refuses a bad value with an `ArgumentTypeError` whose words argparse prints as a
usage error (exit 2), so no command starts work on an argument it cannot use. Shared by
the dashboard's options and the sub-commands, whatever layer a sub-command lives in.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ocms_tui.format.problems import Rule


def path_argument(text: str) -> Path:
    """A path argument; an empty one is a usage error (Path("") would mean the current
    directory, which nobody typing '' asked for)."""
    if not text:
        raise argparse.ArgumentTypeError(
            "an empty path is not allowed (it would mean the current directory)"
        )
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r}: a path cannot contain a NUL character")
    return Path(text)


def terminal_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WIDTHxHEIGHT like 160x48, got {text!r}"
        ) from None
    if not (20 <= width <= 1000 and 10 <= height <= 500):
        raise argparse.ArgumentTypeError(f"{text!r}: size must be within 20x10 .. 1000x500")
    return width, height


def add_snapshot_size(parser: argparse.ArgumentParser) -> None:
    """`--size WxH`, the terminal a `--snapshot` is drawn in (the dashboard's and diff's)."""
    parser.add_argument(
        "--size",
        type=terminal_size,
        default=(160, 48),
        metavar="WxH",
        help="--snapshot terminal size",
    )


def positive_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def poll_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError("the poll interval must be between 0.05 and 3600 seconds")
    return value


def rule_names(text: str) -> frozenset[Rule]:
    """`--fail-on non-finite,spike`: rule names, comma-separated."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {rule.value: rule for rule in Rule}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown rule {', '.join(map(repr, unknown)) or repr(text)}; rules: "
            + ", ".join(sorted(known))
        )
    return frozenset(known[name] for name in names)


def tolerance_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction such as 0.05, got {text!r}"
        ) from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError("the tolerance is a fraction between 0 and 10")
    return value
