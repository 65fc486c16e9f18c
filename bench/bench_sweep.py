"""A sweep as a person meets it: `python -m ocms_tui SWEEP` in tmux at 160x48, read off the
screen (bench_screen's harness), against one run holding as many rows.

- complete on screen: from the command's start until the status line counts every row of
  every run and no longer says loading, and every legend on screen shows the last step;
  500 runs x 6 charts x 2,000 rows against one run of 6 x 1,000,000 rows (the same rows),
  launched alternately so both meet the same machine (it is shared: the ratio is the figure);
- keys on the sweep: from `send-keys` until the screen stops changing, p50 and max;
- memory: the dashboard's peak resident set (VmHWM) on the sweep;
- 2,000 runs x 6 charts x 500 rows: found and drawn (complete on screen as above).
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench_screen import KEYS, Screen, TmuxDashboard, _percentile, _settle, _settle_quietly
from common import Row, Sizes, make_row, not_measured, seconds
from data import RUN_CHARTS, Workspace

CHARTS = len(RUN_CHARTS)


@dataclass(frozen=True)
class _Plan:
    runs: int
    rows: int
    many_runs: int
    many_rows: int
    launches: int  # of the sweep and of the one big run, alternately
    key_rounds: int  # in the first launch of the sweep, once it is complete


PLANS = {
    "full": _Plan(runs=500, rows=2_000, many_runs=2_000, many_rows=500, launches=2, key_rounds=2),
    # A tenth of the runs: what a sweep costs more than one run of as many rows, its keys
    # and its memory, and hundreds of runs found and drawn, in under half a minute.
    "quick": _Plan(runs=50, rows=2_000, many_runs=200, many_rows=100, launches=1, key_rounds=1),
    "tiny": _Plan(runs=20, rows=200, many_runs=50, many_rows=50, launches=1, key_rounds=1),
}


def _complete(total_rows: int, last_step: int) -> Callable[[Screen], bool]:
    every_row = f"{total_rows:,} rows"

    def done(screen: Screen) -> bool:
        status = screen.lines[0] if screen.lines else ""
        steps = screen.steps
        return (
            every_row in status
            and "loading" not in status
            and bool(steps)
            and min(steps) == last_step
            and bool(screen.plot)
        )

    return done


def _launch(directory: Path, total_rows: int, last_step: int, keys: int = 0) -> dict[str, object]:
    """One launch: seconds to complete on screen, then `keys` rounds of the keys, peak RSS."""
    screen = TmuxDashboard(directory)
    try:
        done = screen.wait_for(_complete(total_rows, last_step), timeout=600)
        result: dict[str, object] = {"complete": done.at - screen.started}
        pressed: list[float] = []
        _settle_quietly(screen)
        for _ in range(keys):
            for key, _label in KEYS:
                try:
                    pressed.append(_settle(screen, key))
                except AssertionError:  # nothing changed within _settle's wait: counted
                    pressed.append(math.inf)
        result["keys"] = pressed
        result["rss_mb"] = _peak_rss_mb(screen.pid)
    finally:
        screen.close()
    return result


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    if shutil.which("tmux") is None:
        return [not_measured("sweep figures (tmux)", "-", "needs tmux on PATH")]
    plan = PLANS[sizes.name]
    runs, rows = plan.runs, plan.rows
    big_rows = runs * rows  # one run holding as many rows per chart
    many_runs, many_rows = plan.many_runs, plan.many_rows
    sweep = workspace.sweep(runs, rows)
    single = workspace.run(big_rows)
    launches = plan.launches
    sweep_results, single_results = [], []
    for launch in range(launches):  # alternately, so that both meet the same machine
        keys = plan.key_rounds if launch == 0 else 0
        sweep_results.append(_launch(sweep, runs * rows * CHARTS, rows - 1, keys=keys))
        single_results.append(_launch(single, big_rows * CHARTS, big_rows - 1))
    keyed = sweep_results[0]
    many = workspace.sweep(many_runs, many_rows)
    many_result = _launch(many, many_runs * many_rows * CHARTS, many_rows - 1)
    where = "`python -m ocms_tui` in tmux 160x48"
    sweep_time = _percentile([float(r["complete"]) for r in sweep_results], 0.5)  # type: ignore[arg-type]
    single_time = _percentile([float(r["complete"]) for r in single_results], 0.5)  # type: ignore[arg-type]
    ratio = sweep_time / single_time
    keys: list[float] = keyed["keys"]  # type: ignore[assignment]
    p50, longest = _percentile(keys, 0.5), max(keys)
    unanswered = sum(math.isinf(key) for key in keys)
    rss = float(keyed["rss_mb"])  # type: ignore[arg-type]
    many_time = float(many_result["complete"])  # type: ignore[arg-type]
    return [
        make_row(
            f"sweep complete on screen, {runs} runs x {CHARTS} x {rows:,} rows vs one run of"
            f" {CHARTS} x {big_rows:,} ({where})",
            seconds(sweep_time),
            seconds(single_time),
            ratio,
            "ratio <= 1.5",
            ratio <= 1.5,
            (f"medians of {launches} alternating launches" if launches > 1 else "one launch each")
            + "; complete = every row counted, not loading, every legend on screen at the last"
            " step",
        ),
        make_row(
            f"keys on the sweep of {runs} runs ({where})",
            f"p50 {seconds(p50)}, max {seconds(longest)}",
            "-",
            None,
            "p50 <= 150 ms, max <= 300 ms",
            p50 <= 0.150 and longest <= 0.300,
            f"{len(keys)} presses of {', '.join(label for _, label in KEYS)};"
            f" settled = no change for 0.6 s; {unanswered} changed nothing within 5 s (inf)",
        ),
        make_row(
            f"peak memory on the sweep of {runs} runs ({where})",
            f"{rss:,.0f} MB",
            "-",
            None,
            "<= 1 GB",
            rss <= 1024,
            "VmHWM of the dashboard process after the keys",
        ),
        make_row(
            f"{many_runs:,} runs x {CHARTS} x {many_rows} rows found and drawn ({where})",
            seconds(many_time),
            "-",
            None,
            "<= 10 s",
            many_time <= 10.0,
            "complete on screen as above",
        ),
    ]
