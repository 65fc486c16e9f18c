"""Figure 10: memory per stored value, and the peak while loading, in a fresh process.

Definitions (Linux /proc):
- the parser is used once on a small run first: its thread pools and allocator arenas are
  a fixed cost, not a cost per value (the note shows it: "one-time parser start-up");
- growth = settled RSS after the load - RSS just before it: what holding the chart costs.
  "Settled": gc done and RSS sampled until it stops falling, because polars' allocator
  hands freed pages back a second or two after a parse;
- bytes per value = growth / (rows x series), against 8 bytes (a raw double); the steps
  (8 bytes a row) are part of what is held, so 10 bytes is the floor for 4 series;
- peak = the kernel's RSS high-water mark during the load (reset just before it through
  /proc/self/clear_refs) - the same starting RSS; peak / growth must stay under 3.

Run alone: `python bench/bench_memory.py --child DIR WARM_UP_DIR ROWS SERIES QUIET_S` prints
the raw numbers.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import Row, Sizes, make_row
from data import LOSS_CHART, Workspace

_PAGE = os.sysconf("SC_PAGE_SIZE")
_SETTLED_BYTES = 512 * 1024
QUIET_SECONDS = 2.0  # polars' allocator hands pages back in steps about a second apart


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _reset_peak() -> bool:
    """Restart the kernel's high-water mark (VmHWM) from the current RSS, where allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _peak_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _settled_resident_bytes(quiet_seconds: float, limit_seconds: float = 12.0) -> int:
    """RSS once it has not fallen for `quiet_seconds` (freed memory handed back).

    polars' allocator returns pages in steps, about a second after a parse and then
    again; a shorter quiet period stops between two steps.
    """
    gc.collect()
    deadline = time.monotonic() + limit_seconds
    lowest = _resident_bytes()
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < quiet_seconds:
        time.sleep(0.25)
        current = _resident_bytes()
        if current < lowest - _SETTLED_BYTES:
            quiet_since = time.monotonic()
        lowest = min(lowest, current)
    return _resident_bytes()


def measure_in_this_process(
    directory: Path, warm_up: Path, rows: int, series: int, quiet_seconds: float
) -> dict[str, int | bool]:
    from ocms_tui.follow.model import RunModel

    # Nothing big was parsed yet, so nothing big is waiting to be handed back: a short wait.
    cold = _settled_resident_bytes(quiet_seconds / 4)
    RunModel(warm_up).refresh()
    model = RunModel(directory)
    before = _settled_resident_bytes(quiet_seconds / 4)
    peak_was_reset = _reset_peak()
    model.refresh()
    peak = _peak_bytes()
    after = _settled_resident_bytes(quiet_seconds)
    chart = model.charts[0]
    if chart.rows != rows or len(chart.y_axis) != series:
        raise AssertionError(f"loaded {chart.rows} rows of {len(chart.y_axis)} series")
    return {
        "start_up": before - cold,
        "before": before,
        "after": after,
        "peak": peak,
        "peak_was_reset": peak_was_reset,
        "store_nbytes": chart.nbytes,
    }


def figure_memory(sizes: Sizes, workspace: Workspace) -> Row:
    series = len(LOSS_CHART[1])
    directory = workspace.run(sizes.rows, charts=1)
    warm_up = workspace.run(sizes.small_rows, charts=1)
    argv = [sys.executable, __file__, "--child", str(directory), str(warm_up)]
    quiet_seconds = 0.5 if sizes.is_tiny else QUIET_SECONDS
    child = subprocess.run(
        [*argv, str(sizes.rows), str(series), str(quiet_seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    facts = json.loads(child.stdout)
    values = sizes.rows * series
    growth = facts["after"] - facts["before"]
    peak_growth = facts["peak"] - facts["before"]
    per_value = growth / values
    peak_ratio = peak_growth / growth
    peak_how = (
        "high-water mark reset before the load"
        if facts["peak_was_reset"]
        else ("high-water mark of the whole process (could not reset it)")
    )
    return make_row(
        f"memory per stored value, {sizes.rows:,} rows x {series} series (RSS growth / values)"
        " vs a raw double",
        f"{per_value:.2f} B/value",
        "8 B/value",
        per_value / 8,
        "< 12 B/value (1.5); peak < 3x final",
        per_value < 12 and peak_ratio < 3,
        f"peak during load {peak_ratio:.2f}x the final growth ({peak_growth / 1e6:.0f} MB vs"
        f" {growth / 1e6:.0f} MB; {peak_how}); buffers {facts['store_nbytes'] / values:.2f}"
        f" B/value incl. steps; RSS {facts['before'] / 1e6:.0f} -> {facts['after'] / 1e6:.0f} MB"
        f" after a one-time parser start-up of {facts['start_up'] / 1e6:.0f} MB",
    )


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    return [figure_memory(sizes, workspace)]


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"] or len(sys.argv) != 7:
        raise SystemExit("usage: bench_memory.py --child DIR WARM_UP_DIR ROWS SERIES QUIET_S")
    directory, warm_up = Path(sys.argv[2]), Path(sys.argv[3])
    rows, series, quiet = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    print(json.dumps(measure_in_this_process(directory, warm_up, rows, series, quiet)))
