"""The simulated runs: deterministic, realistic, checked by the real checker, and the live
DemoTraining thread writes through the real recorder and stops cleanly."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from ocms_tui.follow.checker import check_directory
from ocms_tui.ui.demo import (
    MARKUP_NAME,
    DemoCurves,
    DemoTraining,
    write_demo_run,
    write_problem_run,
)


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(path.read_text().splitlines()))


def _column(rows: list[list[str]], index: int) -> list[float]:
    return [float(row[index]) for row in rows if row[index] != ""]


def test_the_demo_run_is_the_same_bytes_for_the_same_arguments(tmp_path: Path) -> None:
    write_demo_run(tmp_path / "a", steps=300, seed=3)
    write_demo_run(tmp_path / "b", steps=300, seed=3)
    write_demo_run(tmp_path / "c", steps=300, seed=4)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert (tmp_path / "a" / "loss.csv").read_bytes() != (tmp_path / "c" / "loss.csv").read_bytes()


def test_the_demo_run_has_six_realistic_charts_and_passes_the_checker(tmp_path: Path) -> None:
    steps = 1000
    write_demo_run(tmp_path, steps=steps)
    layout = json.loads((tmp_path / "metrics.json").read_text())
    assert {chart["name"]: chart["y_axis"] for chart in layout["charts"]} == {
        "loss": ["loss", "vlm_loss", "action_dit_loss", "eval_loss"],
        "learning_rate": ["learning_rate", "lr_vision_tower"],
        "epoch": ["epoch"],
        "timing": ["data", "model"],
        "eval_score": ["accuracy"],
        "grad_norm": ["grad_norm"],
    }
    loss = _rows(tmp_path / "loss.csv")
    assert [int(row[0]) for row in loss] == list(range(steps))
    train, evals = _column(loss, 1), _column(loss, 4)
    assert sum(train[:100]) / 100 > 2 * sum(train[-100:]) / 100  # it learns
    assert len(evals) == 19  # every 50 steps after step 0: a mostly-gaps series
    learning_rate = _rows(tmp_path / "learning_rate.csv")
    rates = _column(learning_rate, 1)
    peak = rates.index(max(rates))
    assert 40 <= peak <= 60 and rates[0] < rates[peak] / 10 and rates[-1] < rates[peak] / 50
    assert all(abs(float(row[2]) - float(row[1]) / 10) < 1e-9 for row in learning_rate)
    accuracy = _rows(tmp_path / "eval_score.csv")
    assert [int(row[0]) for row in accuracy] == list(range(50, steps, 50))
    assert _column(accuracy, 1)[-1] > _column(accuracy, 1)[0]
    assert _column(_rows(tmp_path / "epoch.csv"), 1)[-1] == pytest.approx(4.995)
    result = check_directory(tmp_path, settle_seconds=0)
    assert result.problems == ()
    assert [chart.rows for chart in result.charts] == [steps, steps, steps, steps, 19, steps]


def test_the_demo_run_refuses_a_directory_with_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write_demo_run(tmp_path, steps=10)
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_the_curves_repeat_for_a_seed() -> None:
    first, second = DemoCurves(200, seed=9), DemoCurves(200, seed=9)
    assert [first.metrics(step) for step in range(200)] == [
        second.metrics(step) for step in range(200)
    ]


def test_the_problem_run_trips_the_rules_it_promises(tmp_path: Path) -> None:
    write_problem_run(tmp_path / "a")
    write_problem_run(tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    result = check_directory(tmp_path / "a", settle_seconds=0)
    found = {(problem.rule.value, problem.path, problem.line) for problem in result.problems}
    assert {(rule, path) for rule, path, _ in found} == {
        ("bad-y-axis-name", "metrics.json"),
        ("row-width", "loss.csv"),
        ("bad-value", "loss.csv"),
        ("step-regression", "loss.csv"),
        ("non-finite", "learning_rate.csv"),
        ("partial-line", "grad_norm.csv"),
        ("orphan-csv", "old_run.csv"),
    }
    assert ("row-width", "loss.csv", 13) in found and ("bad-value", "loss.csv", 21) in found
    assert any(MARKUP_NAME in problem.message for problem in result.problems)


def _wait_for(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_demo_training_writes_rows_live_and_stops_cleanly(tmp_path: Path) -> None:
    directory = tmp_path / "live"
    training = DemoTraining(directory, steps=100_000, rate_hz=200.0, backfill=40)
    training.start()
    assert len(_rows(directory / "epoch.csv")) >= 40  # the backfill is there when start returns
    _wait_for(lambda: training.steps_written >= 80)
    training.stop()
    assert not training.running  # its thread has ended: no row can come after this
    written = training.steps_written
    epochs = _rows(directory / "epoch.csv")
    assert [int(row[0]) for row in epochs] == list(range(written))  # nothing after stop
    reference = DemoCurves(100_000, seed=0, eval_every=50)
    assert [row[1] for row in epochs] == [
        repr(reference.metrics(step)["epoch"]) for step in range(written)
    ]
    assert check_directory(directory, settle_seconds=0).errors == 0


def test_demo_training_ends_by_itself_after_its_steps(tmp_path: Path) -> None:
    with DemoTraining(tmp_path, steps=30, rate_hz=500.0) as training:
        _wait_for(lambda: not training.running)
    assert training.steps_written == 30
    assert len(_rows(tmp_path / "loss.csv")) == 30


def test_demo_training_rejects_misuse(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DemoTraining(tmp_path, rate_hz=0)
    training = DemoTraining(tmp_path, steps=5, rate_hz=1000.0)
    training.start()
    with pytest.raises(RuntimeError):
        training.start()
    training.stop()
