"""What every benchmark module shares: sizes, interleaved timing, result rows, machine facts.

Each figure is a ratio against a baseline measured in the same run: these machines are shared
and noisy, so candidates are timed in alternating rounds (the order rotates every round) and
compared by their medians.
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

# The libraries whose versions decide the figures; printed with every table.
LIBRARIES = (
    "ocms-tui",
    "numpy",
    "polars",
    "textual",
    "plotext",
    "textual-plotext",
    "watchdog",
    "tensorboard",
    "tensorboardX",
    "protobuf",
)

Row = dict[str, Any]


@dataclass(frozen=True)
class Sizes:
    """How big and how often: `full` is the issue's sizes, `quick` keeps the same data sizes
    where the target depends on them, `tiny` only proves the harness runs (smoke test)."""

    name: str
    rows: int  # rows per chart for the load, check, memory and dashboard figures
    small_rows: int  # the "small run" side of size-independence figures
    tensorboard_steps: int
    rounds: int  # timing rounds for fast candidates
    slow_rounds: int  # timing rounds when a candidate takes seconds (pure-Python baselines)
    process_rounds: int  # timing rounds of whole commands (a fresh process each)
    latency_samples: int  # rows timed per write rate and watcher in the latency figure
    first_paint_rounds: int

    @property
    def is_tiny(self) -> bool:
        return self.name == "tiny"


FULL = Sizes("full", 1_000_000, 1_000, 100_000, 9, 3, 5, 60, 3)
QUICK = Sizes("quick", 1_000_000, 1_000, 10_000, 3, 1, 1, 6, 1)
TINY = Sizes("tiny", 20_000, 1_000, 500, 2, 1, 1, 3, 1)


@dataclass(frozen=True)
class Timing:
    samples: tuple[float, ...]  # wall seconds
    cpu_samples: tuple[float, ...]  # CPU seconds of this process and of waited-for children

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def cpu_median(self) -> float:
        """Less sensitive than wall time to other work on a shared machine."""
        return statistics.median(self.cpu_samples)


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def interleaved(
    candidates: dict[str, Callable[[], object]], rounds: int, warmup: bool = True
) -> dict[str, Timing]:
    """Wall seconds of each candidate over `rounds` alternating rounds.

    A warm-up round (not counted) brings files into the page cache and imports in, so that
    every counted run is measured in the same state.
    """
    names = list(candidates)
    if warmup:
        for name in names:
            candidates[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu_samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            candidates[name]()
            samples[name].append(time.perf_counter() - start)
            cpu_samples[name].append(_cpu_seconds() - cpu_start)
    return {name: Timing(tuple(samples[name]), tuple(cpu_samples[name])) for name in names}


def seconds(value: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    if value >= 1.0:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def make_row(
    figure: str,
    ours: str,
    baseline: str,
    ratio: float | None,
    target: str,
    met: bool | None,
    note: str = "",
) -> Row:
    """One line of the table, in the same shape as bench_recorder's rows.

    `ratio` is ours / baseline (lower is better) unless the target says otherwise; `met` is
    None when the figure could not be measured (the note says why).
    """
    return {
        "figure": figure,
        "ours": ours,
        "baseline": baseline,
        "ratio": None if ratio is None else round(ratio, 3),
        "target": target,
        "met": met,
        "note": note,
    }


def not_measured(figure: str, target: str, reason: str) -> Row:
    return make_row(figure, "-", "-", None, target, None, reason)


def machine_facts() -> list[tuple[str, str]]:
    """Date, machine and library versions, printed above the table."""
    facts = [
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("machine", f"{_cpu_model()}, {os.cpu_count()} cores, {platform.machine()}"),
        ("os", f"{platform.system()} {platform.release()}"),
        ("python", platform.python_version()),
        ("load average at start", " ".join(f"{load:.2f}" for load in os.getloadavg())),
    ]
    versions = []
    for library in LIBRARIES:
        try:
            versions.append(f"{library} {metadata.version(library)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{library} (not installed)")
    facts.append(("libraries", ", ".join(versions)))
    return facts


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ocms_tui_command(*arguments: str) -> list[str]:
    """The installed `ocms-tui` command (the console script beside this interpreter), or the
    same entry point through `python -m ocms_tui` when the script is not there."""
    script = Path(sys.executable).with_name("ocms-tui")
    if script.exists():
        return [str(script), *arguments]
    return [sys.executable, "-m", "ocms_tui", *arguments]


def process_cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time of a process so far, or of one of its threads (Linux /proc)."""
    return _stat_cpu_seconds(
        f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    )


def thread_cpu_seconds(native_id: int) -> float:
    """User + system CPU time of one thread of this process so far (Linux /proc)."""
    return _stat_cpu_seconds(f"/proc/self/task/{native_id}/stat")


def _stat_cpu_seconds(stat_path: str) -> float:
    with open(stat_path, encoding="ascii") as stat_file:
        fields = stat_file.read().rsplit(")", 1)[1].split()
    # After the command name: state is field 3 of stat(5), utime and stime fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
