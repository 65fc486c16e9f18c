"""Helpers for the recorder tests (no tests here): read a metrics directory back with plain
csv/json, independent of ocms_tui's reader."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ocms_recorder import DROP_REASONS, SIDECAR, __version__

RECORDER_DIR = Path(__file__).resolve().parents[1] / "recorder"
RECORDER_FILE = RECORDER_DIR / "ocms_recorder.py"

# The start of a script (run with run_python(code, directory, RECORDER_DIR)): a chart bigger
# than the recorder widens on its caller's thread, so a new key makes it copy on a thread
# of its own while the rows logged meanwhile wait in memory. Defines directory, csv_path, rows.
BIG_CHART = """
import os, sys
sys.path.insert(0, sys.argv[2])
from ocms_recorder import WIDEN_INLINE_BYTES, OcmsRecorder, write_layout
directory = sys.argv[1]
csv_path = os.path.join(directory, "loss.csv")
rows = WIDEN_INLINE_BYTES // 10 + 1000
write_layout(directory, {"loss": ["loss"]})
with open(csv_path, "wb") as handle:
    handle.write(b"".join(b"%d,0.5\\n" % step for step in range(rows)))
"""

TEN_METRICS = {
    "loss": 0.5,
    "vlm_loss": 0.25,
    "action_dit_loss": 0.125,
    "learning_rate": 1e-4,
    "learning_rate/vision_tower": 1e-5,
    "epoch": 1,
    "timing/data": 0.01,
    "timing/model": 0.2,
    "accuracy": 0.75,
    "grad_norm": 1.5,
}


def read_layout(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "metrics.json").read_text(encoding="utf-8"))


def y_axes(directory: Path) -> dict[str, list[str]]:
    return {chart["name"]: chart["y_axis"] for chart in read_layout(directory)["charts"]}


def read_rows(directory: Path, chart_file: str) -> list[list[str]]:
    text = (directory / chart_file).read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), f"{chart_file} ends in a partial line"
    return list(csv.reader(text.splitlines()))


def assert_consistent(directory: Path) -> None:
    """The directory at rest: every declared CSV exists and each row is 1 + len(y_axis)
    wide, with an integer step; metrics.json has the spec's exact structure."""
    layout = read_layout(directory)
    assert set(layout) == {"version", "charts"} and layout["version"] == 1
    assert len(layout["charts"]) <= 6
    for chart in layout["charts"]:
        assert list(chart) == ["name", "file", "x_axis", "y_axis"]
        assert chart["file"] == chart["name"] + ".csv" and chart["x_axis"] == "step"
        for row in read_rows(directory, chart["file"]):
            assert len(row) == 1 + len(chart["y_axis"]), (chart["name"], row)
            assert row[0].isdigit()
            for field in row[1:]:
                assert field == "" or isinstance(float(field), float)
    leftovers = [path.name for path in directory.iterdir() if path.name.endswith(".tmp")]
    assert leftovers == []


def read_sidecar(directory: Path) -> dict[str, Any]:
    """The recorder's `.ocms-recorder.json`, checked against its exact layout: strict JSON
    (no NaN), the five fields, and in each entry of "dropped" the six fields, a known
    reason, a count of at least one and first_step <= last_step."""

    def no_constants(name: str) -> Any:
        raise AssertionError(f"{name} in strict JSON")

    text = (directory / SIDECAR).read_text(encoding="utf-8")
    document = json.loads(text, parse_constant=no_constants)
    assert list(document) == ["format", "version", "recorder", "chart_groups", "dropped"]
    assert document["format"] == "ocms-recorder" and document["version"] == 1
    assert document["recorder"] == __version__
    for group in document["chart_groups"]:
        assert list(group) == ["chart", "accepts"] and all(
            isinstance(v, str) for v in group.values()
        )
    for entry in document["dropped"]:
        assert list(entry) == ["key", "reason", "first_step", "last_step", "count", "message"]
        assert entry["reason"] in DROP_REASONS
        assert (entry["key"] is None) == (entry["reason"] == "step-too-large")
        assert 0 <= entry["first_step"] <= entry["last_step"] and entry["count"] >= 1
        assert isinstance(entry["message"], str) and entry["message"]
    return document


def dropped(directory: Path) -> dict[tuple[Any, str], tuple[int, int, int]]:
    """(key, reason) -> (first_step, last_step, count) of the sidecar's entries."""
    return {
        (entry["key"], entry["reason"]): (entry["first_step"], entry["last_step"], entry["count"])
        for entry in read_sidecar(directory)["dropped"]
    }


def warnings_from_recorder(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "ocms_recorder" and record.levelname == "WARNING"
    ]


def run_python(code: str, *args: object) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (its arguments after it), with a timeout so that a hang
    fails the test instead of blocking the suite."""
    return subprocess.run(
        [sys.executable, "-B", "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
