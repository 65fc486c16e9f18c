"""Run every benchmark and print one table: `python bench/run.py [--quick] [--markdown FILE]`.

Each figure is a ratio against a baseline measured in the same run, with the absolute numbers
beside it; the table starts with the date, the machine and the library versions. Test data is
generated into a temporary directory (deterministic seeds) and removed afterwards.
`--markdown FILE` writes the same table as Markdown, for the README's Performance section.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import bench_recorder
from common import FULL, QUICK, TINY, Row, Sizes, machine_facts, not_measured
from data import Workspace

COLUMNS = ("figure", "ours", "baseline", "ratio", "target", "met", "note")
# The baselines that only the benchmarks need (the `bench` extra); without them a group
# says what to install instead of failing.
OPTIONAL_PACKAGES = frozenset({"tensorboard", "tensorboardX"})


def _recorder(sizes: Sizes, workspace: Workspace) -> list[Row]:
    widen_bytes = (
        bench_recorder.WIDEN_TINY_BYTES if sizes.is_tiny else bench_recorder.WIDEN_FULL_BYTES
    )
    return bench_recorder.run(quick=sizes is not FULL) + bench_recorder.widening_rows(widen_bytes)


def _module(name: str) -> Callable[[Sizes, Workspace], list[Row]]:
    """A benchmark module's run(), imported only when it is run (the dashboard imports
    Textual, TensorBoard imports a lot): a missing extra fails one group, not the table."""

    def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
        module = __import__(name)
        return module.run(sizes, workspace)

    return run


# Figures 1-11 of the benchmark issue, in its order.
GROUPS: dict[str, tuple[str, Callable[[Sizes, Workspace], list[Row]]]] = {
    "recorder": ("1: recorder log(), and while a big chart widens", _recorder),
    "load": ("2-3: cold load vs polars, csv.reader and TensorBoard", _module("bench_load")),
    "check": ("4-5: ocms-tui --check", _module("bench_check")),
    "follow": ("6-7: incremental refresh and latency", _module("bench_follow")),
    "dashboard": ("8, 9: chart build, first paint", _module("bench_dashboard")),
    "memory": ("10: memory per value", _module("bench_memory")),
    "import": ("import: TensorBoard reader vs TensorBoard's loaders", _module("bench_import")),
    "screen": (
        "issue 19: freshness, CPU, keys and start on screen (tmux)",
        _module("bench_screen"),
    ),
    "sweep": (
        "issue 33: a sweep of hundreds of runs on screen (tmux)",
        _module("bench_sweep"),
    ),
}


def run_groups(sizes: Sizes, names: list[str]) -> tuple[list[Row], bool]:
    """Rows of every group asked for, and whether all of them ran to the end."""
    rows: list[Row] = []
    complete = True
    workspace = Workspace()
    try:
        for name in names:
            title, run = GROUPS[name]
            started = time.perf_counter()
            print(f"running {title} ...", file=sys.stderr, flush=True)
            try:
                rows.extend(run(sizes, workspace))
            except ModuleNotFoundError as error:
                if (error.name or "").split(".")[0] not in OPTIONAL_PACKAGES:
                    raise
                rows.append(
                    not_measured(title, "-", f"needs {error.name}: pip install 'ocms-tui[bench]'")
                )
            except Exception as error:  # one broken group must not hide the others
                complete = False
                traceback.print_exc()
                rows.append(not_measured(title, "-", f"failed: {type(error).__name__}: {error}"))
            print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    finally:
        workspace.close()
    return rows, complete


def _cell(row: Row, column: str) -> str:
    value = row[column]
    if column == "met":
        return {True: "yes", False: "NO", None: "-"}[value]
    if column == "ratio":
        return "-" if value is None else f"{value:g}"
    return str(value)


def format_text(facts: list[tuple[str, str]], rows: list[Row], sizes: Sizes) -> str:
    lines = [f"{key}: {value}" for key, value in facts]
    lines.append(f"sizes: {sizes.name}")
    lines.append("")
    widths = {
        column: max(len(column), *(len(_cell(row, column)) for row in rows)) for column in COLUMNS
    }
    lines.append("  ".join(column.ljust(widths[column]) for column in COLUMNS).rstrip())
    lines.append("  ".join("-" * widths[column] for column in COLUMNS))
    for row in rows:
        lines.append("  ".join(_cell(row, c).ljust(widths[c]) for c in COLUMNS).rstrip())
    return "\n".join(lines) + "\n"


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_markdown(facts: list[tuple[str, str]], rows: list[Row], sizes: Sizes) -> str:
    lines = [f"- **{key}**: {_markdown_cell(value)}" for key, value in facts]
    lines.append(f"- **sizes**: `{sizes.name}` (`python bench/run.py{_flag(sizes)}`)")
    lines.append("")
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_markdown_cell(_cell(row, c)) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _flag(sizes: Sizes) -> str:
    return "" if sizes is FULL else f" --{sizes.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer rounds: under 2 minutes")
    size.add_argument(
        "--tiny", action="store_true", help="tiny sizes, only proves the harness runs (tests)"
    )
    parser.add_argument("--markdown", metavar="FILE", type=Path, help="also write the table here")
    parser.add_argument(
        "--only",
        metavar="GROUP",
        action="append",
        choices=list(GROUPS),
        help=f"run only these groups (repeatable): {', '.join(GROUPS)}",
    )
    options = parser.parse_args(argv)
    sizes = TINY if options.tiny else QUICK if options.quick else FULL
    facts = machine_facts()
    started = time.perf_counter()
    names = [name for name in GROUPS if not options.only or name in options.only]
    rows, complete = run_groups(sizes, names)
    facts.append(("benchmark wall time", f"{time.perf_counter() - started:.0f} s"))
    print(format_text(facts, rows, sizes), end="")
    if options.markdown is not None:
        options.markdown.write_text(format_markdown(facts, rows, sizes), encoding="utf-8")
        print(f"wrote {options.markdown}", file=sys.stderr)
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
