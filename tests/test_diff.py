"""`ocms-tui diff RUN BASELINE`: comparisons as plain functions, the command as a subprocess."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from app_support import svg_text
from ocms_recorder import OcmsRecorder
from sources_support import run_cli as run_ocms

from ocms_tui.follow.diff import Verdict, compare_series, diff_runs, format_markdown


def write_run(directory: Path, rows: dict[int, dict[str, float]]) -> Path:
    recorder = OcmsRecorder(log_dir=str(directory))
    for step, metrics in rows.items():
        recorder.log(step=step, metrics=metrics)
    recorder.finish()
    return directory


def curve(scale: float = 1.0, steps: range = range(200), seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        step: {
            "loss": scale * (0.3 + 2 * math.exp(-step / 50)) * (1 + 0.05 * rng.uniform(-1, 1)),
            "accuracy": min(1.0, (0.9 - 0.5 * math.exp(-step / 50)) / scale),
            "learning_rate": 1e-3,
        }
        for step in steps
    }


def series(steps, values):
    return np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64)


def test_a_higher_loss_is_worse_and_a_lower_one_better() -> None:
    base = series(range(100), np.linspace(2, 1, 100))
    worse = compare_series("loss", "loss", series(range(100), np.linspace(2, 1.2, 100)), base, 0.05)
    better = compare_series(
        "loss", "loss", series(range(100), np.linspace(2, 0.8, 100)), base, 0.05
    )
    assert worse.verdict is Verdict.WORSE and worse.changes["final"] < -0.05
    assert better.verdict is Verdict.BETTER and better.changes["final"] > 0.05


def test_accuracy_is_higher_better_and_the_user_can_say_so_of_any_name() -> None:
    base = series(range(100), np.linspace(0.5, 0.9, 100))
    lower = series(range(100), np.linspace(0.5, 0.8, 100))
    assert compare_series("eval", "eval_accuracy", lower, base, 0.05).verdict is Verdict.WORSE
    assert compare_series("x", "throughput", lower, base, 0.05).verdict is Verdict.NO_DIRECTION
    declared = compare_series("x", "throughput", lower, base, 0.05, higher_better=["throughput"])
    assert declared.verdict is Verdict.WORSE and declared.higher_better is True
    flipped = compare_series(
        "e", "eval_accuracy", lower, base, 0.05, lower_better=["eval_accuracy"]
    )
    assert flipped.verdict is Verdict.BETTER


def test_within_the_tolerance_is_the_same() -> None:
    base = series(range(100), np.linspace(2, 1, 100))
    close = series(range(100), np.linspace(2, 1, 100) * 1.03)
    assert compare_series("loss", "loss", close, base, 0.05).verdict is Verdict.SAME
    assert compare_series("loss", "loss", close, base, 0.01).verdict is Verdict.WORSE


def test_only_shared_steps_count_and_a_relogged_step_keeps_its_last_value() -> None:
    base = series([0, 10, 20, 30], [4.0, 3.0, 2.0, 1.0])
    # A resumed run: steps 20 and 30 logged twice, the later values win; step 40 not shared.
    run = series([0, 10, 20, 30, 20, 30, 40], [4.0, 3.0, 9.0, 9.0, 2.0, 1.0, 50.0])
    diff = compare_series("loss", "loss", run, base, 0.05)
    assert diff.shared_steps == 4 and diff.verdict is Verdict.SAME


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ([math.nan] * 5, [1.0] * 5),  # all NaN: nothing shared
        ([1.0], [1.0]),  # a single row
        ([0.25] * 5, [0.25] * 5),  # constant
        ([1e307] * 5, [-1e307] * 5),  # the difference overflows
        ([5e-324] * 5, [0.0] * 5),  # the smallest subnormal against zero
        ([math.inf] * 5, [1.0] * 5),
    ],
)
def test_odd_series_compare_without_failing(ours, theirs) -> None:
    diff = compare_series(
        "loss", "loss", series(range(len(ours)), ours), series(range(len(theirs)), theirs), 0.05
    )
    assert diff.verdict in set(Verdict)
    json.dumps(diff.as_dict(), allow_nan=False)  # valid JSON whatever the numbers


def test_diff_runs_reads_two_directories(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", curve())
    run = write_run(tmp_path / "run", curve(scale=1.2, seed=1))
    result = diff_runs(run, base)
    verdicts = {(d.chart, d.series): d.verdict for d in result.series}
    assert verdicts == {
        ("loss", "loss"): Verdict.WORSE,
        ("learning_rate", "learning_rate"): Verdict.NO_DIRECTION,
        ("eval_score", "accuracy"): Verdict.WORSE,
    }
    assert result.exit_code == 1
    assert diff_runs(base, base).exit_code == 0


def test_the_markdown_is_one_table_row_per_series(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", curve())
    run = write_run(tmp_path / "run", curve(scale=1.2, seed=1))
    markdown = format_markdown(diff_runs(run, base))
    lines = markdown.splitlines()
    assert lines[0] == "### ocms-tui diff: ❌ worse"
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + 3 and table[1].startswith("|---|")
    assert "| loss/loss | lower | 200 |" in markdown and "**worse**" in markdown


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return run_ocms("diff", *arguments)


def test_the_command_exits_0_1_or_2(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", curve())
    run = write_run(tmp_path / "run", curve(scale=1.2, seed=1))
    disjoint = write_run(tmp_path / "later", curve(steps=range(500, 600)))
    same = run_cli(str(base), str(base))
    assert same.returncode == 0 and "0 worse" in same.stdout
    worse = run_cli(str(run), str(base), "--format", "json")
    assert worse.returncode == 1
    assert json.loads(worse.stdout)["ok"] is False
    relaxed = run_cli(str(run), str(base), "--tolerance", "0.5")
    assert relaxed.returncode == 0
    missing = run_cli(str(tmp_path / "nowhere"), str(base))
    assert missing.returncode == 2 and "does not exist" in missing.stdout
    nothing = run_cli(str(disjoint), str(base), "--format", "github")
    assert nothing.returncode == 2
    assert nothing.stdout.startswith("::error title=ocms-tui diff::")
    assert "no step" in nothing.stdout
    bad = run_cli(str(run), str(base), "--tolerance", "lots")
    assert bad.returncode == 2 and "tolerance" in bad.stderr


def test_a_name_from_a_file_cannot_drive_the_terminal(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", curve())
    markdown = run_cli(str(tmp_path / "x\x1b[31m"), str(base), "--format", "markdown")
    assert "\x1b" not in markdown.stdout and markdown.returncode == 2


def test_diff_snapshot_draws_both_runs(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", curve())
    run = write_run(tmp_path / "run", curve(scale=1.2, seed=1))
    out = tmp_path / "diff.svg"
    drawn = run_cli(str(run), str(base), "--snapshot", str(out), "--size", "100x30")
    assert drawn.returncode == 1  # the verdict, not the drawing, decides
    assert f"wrote {out}" in drawn.stdout
    assert "baseline base · loss" in svg_text(out.read_text(encoding="utf-8"))
