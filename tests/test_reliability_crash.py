"""Crash consistency: the writer is killed with SIGKILL at random moments, many of them in
the middle of a widening rewrite, and every time the directory stays readable and a resumed
recorder leaves it passing.

After each kill: metrics.json parses and has the spec's structure; `--check` reports at most
a partial-line warning, or (counted, see WIDENING_WINDOW) the instant between the recorder's
two renames when metrics.json already declares a column the CSV rows do not have yet; every
complete row holds exactly the values the writer logged for its step. Then a new recorder
resumes into the directory, logs a few steps and finishes: the check passes with no problem
at all, no temp file is left, and no logged row was lost or doubled except the rows of the
one step each kill interrupted.

OCMS_SOAK=1 runs 300 trials instead of 30.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from format_support import format_problems
from reliability_support import (
    TrainingPlan,
    assert_rows_match_plan,
    csv_rows,
    declared_y_axes,
    next_step,
    read_metrics_json,
    run_writer,
    start_writer,
    temp_files,
)

from ocms_tui.follow.checker import check_directory
from ocms_tui.format.problems import Rule

# The values (reliability_support.value_of) jump across 13 orders of magnitude from step to
# step: spikes by any measure. These tests are about the files, so they check without the
# curve health checks (health=False).

# Run in a fresh interpreter: an audit hook lists, in order, every file the recorder opens
# for writing and every rename it makes in the directory.
FILE_OPERATIONS = """
import json, os, sys
from ocms_recorder import OcmsRecorder
directory = sys.argv[1]
events = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(directory):
        if args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            events.append(("write", os.path.basename(args[0])))
    elif event == "os.rename" and str(args[1]).startswith(directory):
        events.append(("rename", os.path.basename(args[1])))
sys.addaudithook(hook)
recorder = OcmsRecorder(log_dir=directory)
for step in range(100):
    recorder.log(step=step, metrics={"loss": 1.0 / (step + 1)})
recorder.log(step=100, metrics={"loss": 0.5, "eval_loss": 0.75})  # widens loss
recorder.log(step=101, metrics={"loss": 0.5, "grad_norm": 2.0})  # adds a chart
recorder.finish()
print(json.dumps(events))
"""

TRIALS = 300 if os.environ.get("OCMS_SOAK") == "1" else 30
# A widening rewrite every 400 steps, of a loss chart that starts 40,000 rows long and grows
# wider: each rewrite copies a few MB, so a fair share of the kills land inside one.
FIRST_FILL_STEPS = 40_000
PLAN = TrainingPlan(widen_every=400, max_widenings=3 * TRIALS, widen_from=FIRST_FILL_STEPS)
WIDENING_WINDOW = "widening-window"


@dataclass
class Tally:
    """What the kills hit, for the report."""

    outcomes: Counter[str] = field(default_factory=Counter)
    kill_modes: Counter[str] = field(default_factory=Counter)
    by_mode: Counter[tuple[str, str]] = field(default_factory=Counter)
    steps_written: int = 0
    rows_checked: int = 0


def _wait_for(condition, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.0005)
    return False


def _kill_at_a_random_moment(directory: Path, process, rng: random.Random, mode: str) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL the writer: after a random delay, or while it rewrites a CSV (its temp file
    exists), or right after it replaced metrics.json."""
    if mode == "random":
        time.sleep(rng.uniform(0.02, 0.5))
    elif mode == "mid-rewrite":
        if _wait_for(lambda: any(".csv." in name for name in temp_files(directory)), 5.0):
            time.sleep(rng.uniform(0, 0.01))
    else:
        before = (directory / "metrics.json").stat().st_ino
        _wait_for(lambda: _inode(directory / "metrics.json") not in (before, None), 5.0)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def _classify(directory: Path) -> str:
    """What a reader finds right after the kill; fails on anything worse than allowed."""
    read_metrics_json(directory)  # never corrupt, never half-written
    result = check_directory(directory, settle_seconds=0.0, health=False)
    rules = {problem.rule for problem in format_problems(result.problems)}
    if rules <= {Rule.PARTIAL_LINE}:
        outcome = "partial-line" if rules else "clean"
    else:
        # The only other state allowed: metrics.json declares columns the rows lack yet.
        assert rules <= {Rule.PARTIAL_LINE, Rule.ROW_WIDTH, Rule.MISSING_CSV}, result.problems
        declared = declared_y_axes(directory)
        for problem in result.problems:
            if problem.rule is Rule.ROW_WIDTH:
                chart = problem.path.removesuffix(".csv")
                rows, _ = csv_rows(directory / problem.path)
                widths = {len(row) for row in rows}
                assert max(widths) < 1 + len(declared[chart]), (problem, widths)
        outcome = WIDENING_WINDOW
    if temp_files(directory):
        outcome += "+temp-file"
    return outcome


def run_trials(directory: Path, trials: int, seed: int) -> Tally:
    tally = Tally()
    run_writer(directory, PLAN, 0, FIRST_FILL_STEPS - 1)
    rng = random.Random(seed)
    modes = ("random", "mid-rewrite", "after-layout")
    resumed: list[int] = []
    for trial in range(trials):
        first = next_step(directory)
        mode = modes[trial % len(modes)]
        writer = start_writer(
            directory, PLAN, first, first + 10**9, pause_chance=0.2, pause_max_ms=4, seed=trial
        )
        _kill_at_a_random_moment(directory, writer, rng, mode)
        tally.kill_modes[mode] += 1
        outcome = _classify(directory)
        tally.outcomes[outcome] += 1
        tally.by_mode[mode, outcome] += 1
        # A new recorder resumes, logs a few steps and finishes: everything passes again.
        resumed_at = next_step(directory)
        resumed.append(resumed_at)
        tally.steps_written += resumed_at - first
        run_writer(directory, PLAN, resumed_at, resumed_at + 20)
        result = check_directory(directory, health=False)
        assert format_problems(result.problems) == (), (trial, mode, result.problems)
        assert temp_files(directory) == [], "a resumed recorder leaves no temp file behind"
    tally.rows_checked = assert_rows_match_plan(directory, PLAN, resumed_at=resumed)
    return tally


def _file_operations(directory: Path) -> list[tuple[str, str]]:
    result = subprocess.run(
        [sys.executable, "-B", "-c", FILE_OPERATIONS, str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [tuple(event) for event in json.loads(result.stdout)]  # type: ignore[misc]


def test_a_widening_renames_metrics_json_and_the_csv_back_to_back(tmp_path: Path) -> None:
    events = _file_operations(tmp_path)
    layouts = [i for i, event in enumerate(events) if event == ("rename", "metrics.json")]
    assert len(layouts) == 3  # loss, loss widened, grad_norm added
    widened = layouts[1]
    # The widened rows were written to their temp file before metrics.json declared them,
    # and the CSV's rename is the very next operation: nothing (no copying) in between.
    assert events[widened + 1] == ("rename", "loss.csv")
    staged = events.index(("write", f".loss.csv.{_writer_pid(events)}.tmp"))
    assert staged < widened


def test_a_chart_csv_exists_before_metrics_json_declares_it(tmp_path: Path) -> None:
    events = _file_operations(tmp_path)
    layouts = [i for i, event in enumerate(events) if event == ("rename", "metrics.json")]
    assert events.index(("write", "loss.csv")) < layouts[0]
    assert events.index(("write", "grad_norm.csv")) < layouts[2]
    assert format_problems(check_directory(tmp_path, health=False).problems) == ()


def _writer_pid(events: list[tuple[str, str]]) -> str:
    temp = next(name for kind, name in events if name.startswith(".loss.csv."))
    return temp.split(".")[3]


def test_a_resumed_recorder_removes_the_temp_files_a_killed_one_left(tmp_path: Path) -> None:
    run_writer(tmp_path, PLAN, 0, 99)
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_pid.wait()  # its pid now names no process
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        leftovers = {
            f".loss.csv.{dead_pid.pid}.tmp": b"0,1.0,,\n" * 1000,  # a copy cut short
            f".metrics.json.{dead_pid.pid}.tmp": b'{"version": 1, "cha',
        }
        kept = {
            f".loss.csv.{alive.pid}.tmp": b"another recorder's, still running",
            ".notes.tmp": b"not a recorder's temp file",
            "loss.csv.tmp": b"not hidden: not the recorder's name either",
        }
        for name, data in {**leftovers, **kept}.items():
            (tmp_path / name).write_bytes(data)
        stderr = run_writer(tmp_path, PLAN, 100, 110)
        assert sorted(temp_files(tmp_path)) == sorted(kept)
        assert stderr.count("removed a temp file a stopped recorder left") == len(leftovers)
    finally:
        alive.kill()
        alive.wait()
    assert format_problems(check_directory(tmp_path, health=False).problems) == ()


@pytest.mark.slow
def test_kill_minus_nine_at_random_moments_never_corrupts_the_directory(tmp_path: Path) -> None:
    tally = run_trials(tmp_path, TRIALS, seed=6)
    print(f"\ncrash trials: {TRIALS}, kills by mode {dict(tally.kill_modes)}")
    print(f"outcomes {dict(tally.outcomes)}")
    print(f"by kill mode {dict(sorted(tally.by_mode.items()))}")
    print(
        f"steps written by killed writers {tally.steps_written:,}, rows checked {tally.rows_checked:,}"
    )
    assert sum(tally.outcomes.values()) == TRIALS
    mid_rewrite = sum(count for outcome, count in tally.outcomes.items() if "temp-file" in outcome)
    assert mid_rewrite >= TRIALS // 6, f"too few kills landed inside a rewrite: {tally.outcomes}"
