"""Shared by the framework tests: an offline, deterministic environment, and a reader that
checks a training run's metric directory two independent ways (csv/json here, and the
installed `ocms-tui --check` command)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class RecordedChart:
    y_axis: list[str]
    rows: list[list[str]]

    def steps(self) -> list[int]:
        return [int(row[0]) for row in self.rows]

    def series(self, name: str) -> dict[int, float]:
        """Step -> value of one y-axis column, leaving out the steps where it is empty."""
        column = 1 + self.y_axis.index(name)
        return {int(row[0]): float(row[column]) for row in self.rows if row[column] != ""}


@dataclass
class RecordedRun:
    directory: Path
    charts: dict[str, RecordedChart]
    check_report: dict[str, object]

    def series(self, chart: str, name: str) -> dict[int, float]:
        return self.charts[chart].series(name)


def ocms_tui_command() -> list[str]:
    """The installed console script of this environment (not whatever is first on PATH)."""
    script = Path(sys.executable).with_name("ocms-tui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ocms_tui"]


def read_recorded_run(
    metrics_dir: Path, allowed_warnings: frozenset[str] = frozenset()
) -> RecordedRun:
    """Read a metric directory back and assert it is well-formed and passes the checker;
    `allowed_warnings` names the checker rules expected to warn (e.g. `step-regression`
    for a run written twice into one directory)."""
    layout = json.loads((metrics_dir / "metrics.json").read_text())
    charts: dict[str, RecordedChart] = {}
    for chart in layout["charts"]:
        assert chart["x_axis"] == "step"
        assert chart["file"] == chart["name"] + ".csv"
        text = (metrics_dir / chart["file"]).read_text()
        assert text.endswith("\n"), f"{chart['file']} ends in a partial row"
        rows = list(csv.reader(text.splitlines()))
        width = 1 + len(chart["y_axis"])
        assert rows, f"{chart['file']} has no rows"
        assert all(len(row) == width for row in rows), f"{chart['file']}: a row is not {width} wide"
        for row in rows:
            assert int(row[0]) >= 0
            assert all(math.isfinite(float(value)) for value in row[1:] if value != "")
        charts[chart["name"]] = RecordedChart(list(chart["y_axis"]), rows)
    assert len(charts) <= 6

    completed = subprocess.run(
        [
            *ocms_tui_command(),
            "--check",
            str(metrics_dir),
            "--format",
            "json",
            *([] if allowed_warnings else ["--strict"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    problems = report["problems"]
    assert all(p["severity"] == "warning" and p["rule"] in allowed_warnings for p in problems)
    checked = {chart["name"]: chart for chart in report["charts"]}
    assert set(checked) == set(charts)
    for name, chart in charts.items():
        assert checked[name]["rows"] == len(chart.rows)
        assert checked[name]["y_axis"] == chart.y_axis
    return RecordedRun(metrics_dir, charts, report)


@pytest.fixture
def recorded_run() -> Callable[[Path], RecordedRun]:
    return read_recorded_run


@pytest.fixture(autouse=True)
def offline_training_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No downloads, no experiment trackers, no metric dir inherited from the caller."""
    monkeypatch.delenv("METRICS", raising=False)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("WANDB_DISABLED", "true")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    # Two shared cores: more torch threads than that only adds contention.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
