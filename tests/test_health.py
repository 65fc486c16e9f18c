"""Curve health detectors (follow/health.py) as plain functions, and through RunModel."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from ocms_tui.follow.health import (
    LEVEL_BLOCK,
    STALL_MIN_SECONDS,
    SeriesHealth,
    scan,
    stalled_for,
)
from ocms_tui.follow.model import RunModel

ROWS = 1000
STEPS = np.arange(ROWS, dtype=np.int64) * 5


def noisy_loss(seed: int = 0, noise: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (0.3 + 2.0 * np.exp(-np.arange(ROWS) / 200)) * (1 + noise * rng.uniform(-1, 1, ROWS))


def rules(findings) -> list[tuple[str, int]]:
    return [(finding.rule, finding.step) for finding in findings]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", ["loss", "eval_accuracy", "grad_norm"])
def test_healthy_noisy_curves_raise_nothing(seed: int, name: str) -> None:
    assert scan(name, STEPS, noisy_loss(seed)) == []


def test_a_x20_spike_is_found_at_its_step_and_named() -> None:
    values = noisy_loss()
    values[600] *= 20
    findings = scan("loss", STEPS, values)
    assert rules(findings) == [("spike", 3000)]
    assert findings[0].value == values[600]
    assert "loss spikes to" in findings[0].message and "step 3000" in findings[0].message


def test_a_downward_spike_of_a_series_around_zero_is_found() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(0.0, 1.0, ROWS)
    values[500] = -40.0
    assert rules(scan("reward", STEPS, values)) == [("spike", 2500)]


def test_a_short_burst_is_one_spike_and_a_new_level_is_none() -> None:
    values = noisy_loss(noise=0.05)
    values[400:403] *= 30  # three rows out, then back: one spike
    values[700:] *= 30  # out for good: a new level (a loss term switched on), not a spike
    findings = scan("aux", STEPS, values)
    assert rules(findings) == [("spike", 2000)]
    assert "(3 rows)" in findings[0].message


def test_an_exponential_rise_of_a_loss_is_divergence_near_its_start() -> None:
    values = noisy_loss()
    rise = np.arange(ROWS - 600)
    values[600:] += 0.5 * (2.0 ** (rise / 20) - 1)
    findings = scan("train_loss", STEPS, values)
    assert [finding.rule for finding in findings] == ["divergence"]
    assert 5 * (600 - LEVEL_BLOCK) <= findings[0].step <= 5 * (600 + 48)


def test_divergence_is_for_loss_like_names_only() -> None:
    values = noisy_loss()
    values[600:] += 0.5 * (2.0 ** (np.arange(ROWS - 600) / 20) - 1)
    assert "divergence" not in [finding.rule for finding in scan("throughput", STEPS, values)]


def test_a_flat_noisy_loss_never_diverges() -> None:
    rng = np.random.default_rng(3)
    steps = np.arange(200_000, dtype=np.int64)
    for values in (rng.normal(5, 1, len(steps)), 5 * (1 + 0.3 * rng.uniform(-1, 1, len(steps)))):
        assert [f for f in scan("loss", steps, values) if f.rule == "divergence"] == []


@pytest.mark.parametrize("chunk", [1, 3, 7, 16, 17, 100, 999])
def test_rows_one_by_one_or_all_at_once_give_the_same_findings(chunk: int) -> None:
    values = noisy_loss()
    values[300] *= 25
    values[301] = math.nan  # a gap inside the excursion's neighbourhood
    values[800:] += 0.5 * (2.0 ** (np.arange(ROWS - 800) / 15) - 1)
    health = SeriesHealth("loss")
    for start in range(0, ROWS, chunk):
        health.feed(STEPS[start : start + chunk], values[start : start + chunk])
    assert health.findings + health.pending() == scan("loss", STEPS, values)
    assert rules(scan("loss", STEPS, values))[0] == ("spike", 1500)


def test_a_spike_in_the_last_row_is_pending_then_confirmed_or_dropped() -> None:
    values = noisy_loss(noise=0.05)
    health = SeriesHealth("loss")
    health.feed(STEPS[:500], np.concatenate((values[:499], [values[499] * 20])))
    assert health.findings == [] and rules(health.pending()) == [("spike", 2495)]
    health.feed(STEPS[500:501], values[500:501])  # back inside: confirmed
    assert rules(health.findings) == [("spike", 2495)] and health.pending() == []


@pytest.mark.parametrize(
    "values",
    [
        np.full(500, math.nan),
        np.full(500, 0.25),
        np.zeros(500),
        np.array([0.7]),
        np.array([]),
        np.full(500, 1e307),
        np.full(500, 5e-324),
        np.full(500, math.inf),
        1e307 * (1 + 0.3 * np.random.default_rng(0).uniform(-1, 1, 500)),
        -1e307 * (1 + 0.3 * np.random.default_rng(0).uniform(-1, 1, 500)),
        np.where(np.arange(500) % 2, 5e-324, 1e-323),  # subnormals, neighbours in binary
        np.where(np.arange(500) % 2, 1.7e308, -1.7e308),  # the widest alternation
    ],
    ids=lambda values: f"{len(values)}-rows",
)
def test_odd_series_raise_no_finding_and_never_fail(values: np.ndarray) -> None:
    steps = np.arange(len(values), dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning leaks either
        assert scan("loss", steps, values) == []


def test_each_pass_of_a_restarted_run_is_judged_on_its_own() -> None:
    # A re-run into the same directory: 100 falling rows, then steps 0-29 again at a
    # higher level. Against the first pass that would be a divergence; it is not one.
    steps = np.concatenate((np.arange(100), np.arange(30))).astype(np.int64)
    values = np.concatenate((10.0 - np.arange(100) / 20, 20.0 + np.arange(30)))
    assert scan("loss", steps, values) == []
    health = SeriesHealth("loss")  # the same, row by row
    for row in range(len(steps)):
        health.feed(steps[row : row + 1], values[row : row + 1])
    assert health.findings + health.pending() == []
    # A spike in the second pass is still found, at its step.
    again = noisy_loss(noise=0.05)
    again[700] *= 20
    restarted = np.concatenate((STEPS[:500], STEPS[:500])).astype(np.int64)
    assert rules(scan("loss", restarted, again)) == [("spike", int(restarted[700]))]


def test_steps_going_back_on_every_row_stay_cheap_and_quiet() -> None:
    import time

    steps = np.tile([1, 0], 200_000).astype(np.int64)
    values = np.random.default_rng(0).uniform(1, 2, len(steps))
    started = time.process_time()
    assert scan("loss", steps, values) == []
    assert time.process_time() - started < 5.0


def test_stalled_needs_a_pace_and_a_silence_far_beyond_it() -> None:
    assert stalled_for([1.0, 1.0], 10_000) is None  # no pace known yet
    assert stalled_for([1.0, 1.0, 1.0], STALL_MIN_SECONDS - 1) is None
    assert stalled_for([1.0, 1.0, 1.0], STALL_MIN_SECONDS + 1) == STALL_MIN_SECONDS
    assert stalled_for([60.0, 60.0, 50.0], 601.0) == 600.0
    assert stalled_for([60.0, 60.0, 50.0], 500.0) is None


def write_run(directory: Path, values: list[float]) -> None:
    from ocms_recorder import OcmsRecorder

    recorder = OcmsRecorder(log_dir=str(directory))
    for step, value in enumerate(values):
        recorder.log(step=step, metrics={"loss": value, "accuracy": 0.5})
    recorder.finish()


def test_the_model_reports_findings_with_chart_series_and_step(tmp_path: Path) -> None:
    values = noisy_loss(noise=0.05)[:300].tolist()
    values[200] *= 20
    values[250] = math.inf
    write_run(tmp_path, values)
    model = RunModel(tmp_path, settle_seconds=0.0)
    model.load_settled()
    found = {(p.rule.value, p.chart, p.series, p.step) for p in model.problems}
    assert found == {("spike", "loss", "loss", 200), ("non-finite", "loss", "loss", 250)}
    quiet = RunModel(tmp_path, settle_seconds=0.0, health=False)
    quiet.load_settled()
    assert [p.rule.value for p in quiet.problems] == ["non-finite"]


def test_the_model_finds_a_spike_in_rows_appended_later(tmp_path: Path) -> None:
    values = noisy_loss(noise=0.05)[:300].tolist()
    write_run(tmp_path, values[:200])
    model = RunModel(tmp_path, settle_seconds=0.0)
    model.load_settled()
    assert [p for p in model.problems if p.rule.value == "spike"] == []
    with (tmp_path / "loss.csv").open("a") as handle:
        handle.write(f"200,{values[200] * 20!r}\n201,{values[201]!r}\n")
    change = model.refresh()
    assert change.problems
    assert [(p.rule.value, p.step) for p in model.problems] == [("spike", 200)]


DATA = Path(__file__).parent / "data"


def check_cli(*arguments: str):  # type: ignore[no-untyped-def]
    from sources_support import run_cli

    return run_cli("--check", *arguments)


def test_check_warns_and_fail_on_makes_health_rules_errors() -> None:
    import json

    warned = check_cli(str(DATA / "spike"))
    assert warned.returncode == 0 and "warning spike loss spikes to" in warned.stdout
    failed = check_cli(str(DATA / "spike"), "--fail-on", "non-finite,spike,divergence")
    assert failed.returncode == 1 and "error spike" in failed.stdout
    document = json.loads(
        check_cli(str(DATA / "divergence"), "--format", "json", "--fail-on", "divergence").stdout
    )
    [problem] = document["problems"]
    assert (problem["rule"], problem["severity"]) == ("divergence", "error")
    assert (problem["chart"], problem["series"], problem["step"]) == ("loss", "loss", 113)
    nan = json.loads(check_cli(str(DATA / "non-finite"), "--format", "json").stdout)
    assert {k: nan["problems"][0][k] for k in ("chart", "series", "step")} == {
        "chart": "loss",
        "series": "loss",
        "step": 2,
    }
    github = check_cli(str(DATA / "spike"), "--format", "github", "--fail-on", "spike")
    assert github.stdout.startswith("::error file=") and "title=spike::" in github.stdout


def test_no_health_turns_the_findings_off_and_unknown_rules_are_refused() -> None:
    quiet = check_cli(str(DATA / "spike"), "--no-health", "--strict")
    assert quiet.returncode == 0 and "0 warning(s)" in quiet.stdout
    refused = check_cli(str(DATA / "spike"), "--fail-on", "spikes")
    assert refused.returncode == 2 and "unknown rule 'spikes'" in refused.stderr


def test_a_followed_run_that_goes_silent_is_stalled(tmp_path: Path) -> None:
    import os
    import time

    values = noisy_loss(noise=0.05)[:40].tolist()
    write_run(tmp_path, values[:10])
    csv = tmp_path / "loss.csv"
    start = time.time() - 1000  # the run wrote a row every 10 s, then nothing for ~960 s
    for path in tmp_path.iterdir():
        os.utime(path, (start, start))
    model = RunModel(tmp_path, settle_seconds=0.0)
    for index in range(4):
        with csv.open("a") as handle:
            handle.write(f"{10 + index},{values[10 + index]!r}\n")
        os.utime(csv, (start + 10 * index, start + 10 * index))
        model.refresh()
    [stalled] = [p for p in model.problems if p.rule.value == "stalled"]
    assert (stalled.chart, stalled.step) == ("loss", 13)
    assert "over 120 s" in stalled.message and "is the job still running?" in stalled.message
    with csv.open("a") as handle:  # it writes again: no longer stalled
        handle.write(f"14,{values[14]!r}\n")
    model.refresh()
    assert [p for p in model.problems if p.rule.value == "stalled"] == []
    # A run only loaded once (as --check does) has no pace: never stalled.
    once = RunModel(tmp_path, settle_seconds=0.0)
    once.load_settled()
    assert [p for p in once.problems if p.rule.value == "stalled"] == []


def test_a_chart_marks_the_steps_of_its_findings(tmp_path: Path) -> None:
    values = noisy_loss(noise=0.05)[:300].tolist()
    values[100], values[150], values[200] = math.nan, -math.inf, values[200] * 20
    write_run(tmp_path, values)
    model = RunModel(tmp_path, settle_seconds=0.0)
    model.load_settled()
    loss = next(chart for chart in model.charts if chart.name == "loss")
    assert loss.marks(0) == (
        (100, "non-finite", False),
        (150, "non-finite", True),
        (200, "spike", False),
    )


def test_a_series_judged_keeps_a_few_values_not_the_rows_it_was_fed() -> None:
    """What a block leaves for the next (the values of an unfinished block) is kept on its
    own: a view of it held every row fed (7 KB a series at 2,000 rows, 180 MB at 500 runs)."""
    import tracemalloc

    rng = np.random.default_rng(3)
    rows = 100_003  # not a whole number of blocks: values are carried over
    tracemalloc.start()
    try:
        health = SeriesHealth("loss")
        steps = np.arange(rows, dtype=np.int64)
        health.feed(steps, 2.0 - np.log1p(steps) * 0.1 + rng.standard_normal(rows) * 0.01)
        del steps
        kept, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept < 64_000, f"{kept:,} bytes kept after feeding {rows:,} rows"
