"""Cost of the curve health checks: `python bench/bench_health.py [--rows N] [--rounds R]`.

Prints one table:
- full scan: every series of a run fed whole to `SeriesHealth` (what `--check` does once the
  rows are parsed), for 6 series x ROWS (target: at most 0.5 s at 1,000,000 rows) and for
  the benchmark run's 6 charts x 4 series;
- incremental: microseconds per row when rows arrive one by one (what following does),
  measured on a fresh series and after ROWS rows were fed: O(1) per row means the two match.
Medians of R rounds; the data are the benchmark's training-like curves (bench/data.py).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from data import RUN_CHARTS, chart_rows

from ocms_tui.follow.health import SeriesHealth

TARGET_SECONDS = 0.5
ONE_BY_ONE_ROWS = 5_000


def _series(rows: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for index, (_, names) in enumerate(RUN_CHARTS):
        chart = chart_rows(index, rows)
        out.extend(
            (name, chart.steps, column) for name, column in zip(names, chart.columns, strict=True)
        )
    return out


def _scan(series: list[tuple[str, np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(wall seconds, CPU seconds): on a shared machine the CPU time says what the code
    costs when the wall time also holds other processes' turns."""
    start, cpu = time.perf_counter(), time.process_time()
    for name, steps, values in series:
        SeriesHealth(name).feed(steps, values)
    return time.perf_counter() - start, time.process_time() - cpu


def _per_row(name: str, steps: np.ndarray, values: np.ndarray, warm_rows: int) -> float:
    """Microseconds per row for ONE_BY_ONE_ROWS rows fed one at a time after `warm_rows`."""
    health = SeriesHealth(name)
    if warm_rows:
        health.feed(steps[:warm_rows], values[:warm_rows])
    rows = slice(warm_rows, warm_rows + ONE_BY_ONE_ROWS)
    tail_steps, tail_values = steps[rows], values[rows]
    start = time.perf_counter()
    for position in range(len(tail_steps)):
        health.feed(tail_steps[position : position + 1], tail_values[position : position + 1])
    return (time.perf_counter() - start) / len(tail_steps) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    rows, rounds = options.rows, options.rounds
    every = _series(rows + ONE_BY_ONE_ROWS)
    trimmed = [(name, steps[:rows], values[:rows]) for name, steps, values in every]
    # Six series: the loss chart's four (divergence runs on them) and two others.
    six = trimmed[:4] + trimmed[8:10]
    table = [("measure", "median wall", "min wall", "median CPU", "target", "met")]
    for label, series in (
        (f"full scan, 6 series x {rows:,} rows", six),
        (f"full scan, 24 series x {rows:,} rows", trimmed),
    ):
        measured = [_scan(series) for _ in range(rounds)]
        times = [wall for wall, _ in measured]
        cpu = statistics.median(cpu for _, cpu in measured)
        target = f"<= {TARGET_SECONDS} s" if len(series) == 6 else "-"
        met = "-" if target == "-" else ("yes" if min(times) <= TARGET_SECONDS else "NO")
        wall = statistics.median(times)
        table.append((label, f"{wall:.3f} s", f"{min(times):.3f} s", f"{cpu:.3f} s", target, met))
    name, steps, values = every[0]
    fresh = statistics.median(_per_row(name, steps, values, 0) for _ in range(rounds))
    late = statistics.median(_per_row(name, steps, values, rows) for _ in range(rounds))
    table.append(("incremental, per row, fresh series", f"{fresh:.1f} us", "", "", "", ""))
    table.append(
        (
            f"incremental, per row, after {rows:,} rows",
            f"{late:.1f} us",
            "",
            "",
            "~ fresh",
            "yes" if late <= 2 * fresh else "NO",
        )
    )
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    for row in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


if __name__ == "__main__":
    main()
