"""Soak: a writer process logs 200,000 steps through the recorder (the loss chart widened
half-way, a chart added at three quarters, random pauses) while a RunModel in this process
follows it live. At every refresh the model holds an exact prefix of what was written and
no error; at the end it holds exactly every row (none lost, none doubled) and the check
passes with no problem at all.

OCMS_SOAK=1 logs 2,000,000 steps with a widening every 100,000 instead (run by hand).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from format_support import format_problems
from reliability_support import TrainingPlan, assert_exact_prefix, expected_arrays, start_writer

from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.format.problems import Rule

# The values of these runs (reliability_support.value_of) jump across 13 orders of
# magnitude from step to step by design: spikes by any measure. These tests are about the
# files, so they read them without the curve health checks (health=False, --no-health).
pytestmark = pytest.mark.slow  # -m "not slow" leaves it out of the quick run; CI runs it

LONG = os.environ.get("OCMS_SOAK") == "1"
STEPS = 2_000_000 if LONG else 200_000
PLAN = (
    TrainingPlan(
        widen_at=STEPS // 2,
        new_chart_at=STEPS * 3 // 4,
        widen_every=100_000,
        max_widenings=8,
        widen_from=STEPS // 8,
    )
    if LONG
    else TrainingPlan(widen_at=STEPS // 2, new_chart_at=STEPS * 3 // 4)
)

Expected = dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]


@dataclass
class FollowLog:
    refreshes: int = 0
    rows_seen: list[int] = field(default_factory=list)
    warnings_seen: set[Rule] = field(default_factory=set)
    reloads: int = 0


def follow_until_written(directory: Path, expected: Expected, seed: int) -> FollowLog:
    writer = start_writer(
        directory, PLAN, 0, STEPS - 1, pause_chance=0.001, pause_max_ms=20, seed=seed
    )
    model = RunModel(directory, health=False)
    log = FollowLog()
    rng = random.Random(seed)
    versions: dict[str, tuple[object, int]] = {}
    try:
        while writer.poll() is None:
            model.refresh()
            log.refreshes += 1
            if model.has_metrics_json:  # before the first log() there is nothing to check
                errors = [problem for problem in model.problems if problem.is_error]
                assert errors == [], errors
                log.warnings_seen.update(problem.rule for problem in model.problems)
            changed = {
                chart.name
                for chart in model.charts
                if versions.get(chart.name) != (chart, chart.version)
            }
            log.reloads += sum(
                1
                for chart in model.charts
                if chart.name in versions and versions[chart.name][0] is not chart
            )
            versions = {chart.name: (chart, chart.version) for chart in model.charts}
            if changed:
                assert_exact_prefix(model, expected)
            log.rows_seen.append(model.total_rows)
            time.sleep(rng.uniform(0, 0.005))
    finally:
        _, stderr = writer.communicate(timeout=600)
    assert writer.returncode == 0, stderr
    assert stderr == "", f"the recorder warned: {stderr}"
    model.load_settled()
    assert_exact_prefix(model, expected, complete=True)
    assert format_problems(model.problems) == ()
    return log


def test_a_live_reader_gets_every_row_exactly_once(tmp_path: Path) -> None:
    started = time.monotonic()
    expected = expected_arrays(PLAN, range(STEPS))
    log = follow_until_written(tmp_path, expected, seed=2)
    written = sum(len(steps) for steps, _ in expected.values())
    result = check_directory(tmp_path, health=False)
    assert format_problems(result.problems) == ()
    assert sum(chart.rows for chart in result.charts) == written
    # The reader really followed along: it saw the run grow in many steps, not just the end.
    assert log.refreshes > 50 and len(set(log.rows_seen)) > 20
    # Transient warnings only: a row half-written, or a new chart's CSV created (empty) an
    # instant before metrics.json declares it.
    assert log.warnings_seen <= {Rule.PARTIAL_LINE, Rule.EMPTY_CHART, Rule.ORPHAN_CSV}
    print(
        f"\nsoak: {STEPS:,} steps, {written:,} rows written and read back exactly, "
        f"{log.refreshes:,} live refreshes, {log.reloads} chart reloads (widenings), "
        f"transient warnings {sorted(rule.value for rule in log.warnings_seen)}, "
        f"{time.monotonic() - started:.1f} s"
    )
