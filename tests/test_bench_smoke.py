"""The benchmark harness runs end to end and prints its whole table.

Tiny sizes: the figures mean nothing here, only that every benchmark still runs against the
current code (a broken benchmark would otherwise surface only when someone regenerates the
docs/performance.md's table). Not a timed test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # -m "not slow" leaves it out of the quick run; CI runs it

BENCH = Path(__file__).resolve().parent.parent / "bench" / "run.py"
# Figures 1-10 of the benchmark issue (16 rows), the watcher's cost (1), the import group (4)
# and the screen rows of issue 19 (figure 11, CPU idle and following, is among them), and the
# sweep rows of issue 33 (also in tmux).
SCREEN_ROWS = 22
SWEEP_ROWS = 4
FIGURE_ROWS = 16 + 1 + 4 + SCREEN_ROWS + SWEEP_ROWS
HEADER = ("figure", "ours", "baseline", "ratio", "target", "met", "note")


def test_every_benchmark_runs_and_the_table_is_printed(tmp_path: Path) -> None:
    markdown = tmp_path / "performance.md"
    with subprocess.Popen(
        [sys.executable, str(BENCH), "--tiny", "--markdown", str(markdown)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as bench:
        try:
            stdout, stderr = bench.communicate(timeout=360)
        except subprocess.TimeoutExpired:
            bench.kill()
            raise
    assert bench.returncode == 0, stdout + stderr
    # A normal end leaves nothing behind either: its temporary directory (with --tiny, the
    # generated data too) and its private tmux servers are gone.
    workspace = re.search(r"temporary files: (\S+)", stderr)
    assert workspace is not None and not Path(workspace.group(1)).exists(), stderr
    tmux_directory = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    assert not list(tmux_directory.glob(f"ocms-bench-{bench.pid}-*"))
    lines = stdout.splitlines()
    facts = dict(line.split(": ", 1) for line in lines[: lines.index("")])
    assert {"date", "machine", "python", "libraries"} <= facts.keys()
    assert "polars" in facts["libraries"] and "numpy" in facts["libraries"]

    header = next(index for index, line in enumerate(lines) if line.split() == list(HEADER))
    rows = [line for line in lines[header + 2 :] if line.strip()]
    report = "\n".join(rows)
    assert not any("failed:" in row for row in rows), report
    # A measured row has a verdict; the others can only be the TensorBoard baselines when
    # the `bench` extra is not installed, and then they say how to install it.
    measured = [row for row in rows if " yes " in row or " NO " in row]
    unmeasured = [row for row in rows if row not in measured]
    expected, counted = FIGURE_ROWS, rows
    if shutil.which("tmux") is None:  # the screen and sweep figures need tmux: a row each says so
        assert sum("needs tmux" in row for row in unmeasured) == 2, report
        unmeasured = [row for row in unmeasured if "needs tmux" not in row]
        counted = [row for row in rows if "needs tmux" not in row]
        expected -= SCREEN_ROWS + SWEEP_ROWS
    if not _missing_extras():
        assert len(counted) == len(measured) == expected, report
    else:
        assert unmeasured and all("ocms-tui[bench]" in row for row in unmeasured), report
        assert len(measured) >= expected - 4, report

    table = markdown.read_text(encoding="utf-8").splitlines()
    assert "| " + " | ".join(HEADER) + " |" in table
    assert sum(line.startswith("| ") for line in table) == len(rows) + 1


def _missing_extras() -> list[str]:
    return [name for name in ("tensorboard", "tensorboardX") if find_spec(name) is None]
