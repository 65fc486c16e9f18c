"""Run every benchmark and print one table: `python bench/run.py [--quick] [--markdown FILE]`.

Each figure is a ratio against a baseline measured in the same run, with the absolute numbers
beside it; the table starts with the date, the machine and the library versions. Test data is
generated into a temporary directory (deterministic seeds) and removed afterwards.
`--markdown FILE` writes the same table as Markdown, for docs/performance.md.

Stopped by Ctrl-C, SIGTERM or SIGHUP (a `timeout`, a closed terminal), it ends what it
started before it exits: the private tmux servers of the screen figures with their
dashboards (daemons, out of its process group: they outlived a `timeout` by an hour), and
every process under it.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

import bench_recorder
from common import FULL, QUICK, TINY, Row, Sizes, machine_facts, not_measured
from data import FIXTURES, Workspace

COLUMNS = ("figure", "ours", "baseline", "ratio", "target", "met", "note")
# The baselines that only the benchmarks need (the `bench` extra); without them a group
# says what to install instead of failing.
OPTIONAL_PACKAGES = frozenset({"tensorboard", "tensorboardX"})


def _recorder(sizes: Sizes, workspace: Workspace) -> list[Row]:
    widen_bytes = {
        "tiny": bench_recorder.WIDEN_TINY_BYTES,
        "quick": bench_recorder.WIDEN_QUICK_BYTES,
    }.get(sizes.name, bench_recorder.WIDEN_FULL_BYTES)
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


def run_groups(
    sizes: Sizes, names: list[str], fixtures: Path | None = None
) -> tuple[list[Row], bool]:
    """Rows of every group asked for, and whether all of them ran to the end. `fixtures`:
    where generated data is kept between benchmark runs (None: made afresh, then removed)."""
    rows: list[Row] = []
    complete = True
    workspace = Workspace(fixtures)
    print(
        f"data: {fixtures or 'generated afresh'}; temporary files: {workspace.root}",
        file=sys.stderr,
        flush=True,
    )
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


class Stopped(BaseException):
    """A signal asked the benchmark to end (a BaseException, as KeyboardInterrupt is: a
    group's `except Exception` must not swallow it)."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = number


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# The screen figures name their tmux servers so (bench_screen.TmuxDashboard).
TMUX_SOCKET_PREFIX = "ocms-bench-"
GRACE_SECONDS = 3.0


def own_tmux_sockets(pid: int) -> list[Path]:
    """The private tmux servers process `pid` started (their sockets still on disk)."""
    directory = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    return sorted(map(Path, glob.glob(str(directory / f"{TMUX_SOCKET_PREFIX}{pid}-*"))))


def descendants(pid: int) -> list[int]:
    """Every live process under `pid` (children, their children...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":  # a zombie is already dead, only not yet reaped
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _signal_all(pids: list[int], number: int) -> None:
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


def stop_everything_started() -> None:
    """Kill the private tmux servers (and the dashboards in their panes) and every process
    this benchmark started and left running: SIGTERM, then SIGKILL after GRACE_SECONDS."""
    leftovers: list[int] = []
    for socket in own_tmux_sockets(os.getpid()):
        tmux = ["tmux", "-S", str(socket)]
        try:
            panes = subprocess.run(
                [*tmux, "list-panes", "-a", "-F", "#{pane_pid}"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.split()
            subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            panes = []
        leftovers += [int(pane) for pane in panes if pane.isdigit()]
    leftovers += descendants(os.getpid())
    _signal_all(leftovers, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while any(_alive(pid) for pid in leftovers) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_all(
        [pid for pid in leftovers if _alive(pid)] + descendants(os.getpid()), signal.SIGKILL
    )
    for socket in own_tmux_sockets(os.getpid()):  # a server killed hard leaves its socket
        socket.unlink(missing_ok=True)


def _ignore_stop_signals() -> None:
    for number in (*STOP_SIGNALS, signal.SIGINT):
        signal.signal(number, signal.SIG_IGN)


@contextmanager
def ended_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP unwind the benchmark as Ctrl-C does (its `finally` blocks close
    dashboards and remove the workspace); whatever way it ends, what it started is ended.

    Only the first signal unwinds: `timeout` sends its SIGTERM twice (to the benchmark, then
    to its whole process group), and a terminal's Ctrl-C may be pressed again; a second
    exception raised inside the `finally` blocks would cut their cleanup short (it once
    left the workspace's 1 GB behind)."""

    def stop(number: int, _frame: FrameType | None) -> None:
        _ignore_stop_signals()
        raise Stopped(number)

    def interrupt(_number: int, _frame: FrameType | None) -> None:
        _ignore_stop_signals()
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, stop) for number in STOP_SIGNALS}
    previous_interrupt = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        _ignore_stop_signals()
        try:
            stop_everything_started()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            signal.signal(signal.SIGINT, previous_interrupt)


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
    fixtures = parser.add_mutually_exclusive_group()
    fixtures.add_argument(
        "--fixtures",
        metavar="DIR",
        type=Path,
        help=f"where generated data is kept between runs (default {FIXTURES}; with --tiny:"
        " made afresh)",
    )
    fixtures.add_argument(
        "--fresh",
        action="store_true",
        help="generate the data into the temporary directory and remove it afterwards",
    )
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
    kept = None if options.fresh else options.fixtures or (None if options.tiny else FIXTURES)
    try:
        with ended_on_signals():
            rows, complete = run_groups(sizes, names, kept)
    except KeyboardInterrupt:
        print("stopped (Ctrl-C); everything it started has been ended", file=sys.stderr)
        return 128 + signal.SIGINT
    except Stopped as stopped:
        print(f"stopped ({stopped}); everything it started has been ended", file=sys.stderr)
        return 128 + stopped.number
    facts.append(("benchmark wall time", f"{time.perf_counter() - started:.0f} s"))
    print(format_text(facts, rows, sizes), end="")
    if options.markdown is not None:
        options.markdown.write_text(format_markdown(facts, rows, sizes), encoding="utf-8")
        print(f"wrote {options.markdown}", file=sys.stderr)
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
