"""Any finite double draws: the real dashboard and the real --snapshot on extreme CSVs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app_support import screen_text, svg_text, wait_for, write_layout

from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel

ROOT = Path(__file__).resolve().parent.parent

# 1e307 with -1e307 in one series (max - min overflows), the largest double, subnormals.
ROWS = {
    "loss": [
        "1,1e307,-1e307",
        "2,-1e307,1e307",
        "3,1.7976931348623157e308,-1.7976931348623157e308",
        "4,1e307,-1e307",
    ],
    "tiny": ["1,5e-324", "2,1e-310", "3,5e-324", "4,1e-310"],
    "mixed": ["1,5e-324,-1e307", "2,1e-300,1.0", "3,1e300,0", "4,1.7976931348623157e308,"],
}
Y_AXES = {"loss": ["a", "b"], "tiny": ["t"], "mixed": ["m", "n"]}


def write_extreme_run(directory: Path) -> None:
    write_layout(directory, Y_AXES)
    for chart, rows in ROWS.items():
        (directory / f"{chart}.csv").write_text("".join(row + "\n" for row in rows))


def test_snapshot_of_extreme_values_is_written(tmp_path: Path) -> None:
    write_extreme_run(tmp_path)
    output = tmp_path / "extreme.svg"
    finished = subprocess.run(
        [sys.executable, "-m", "ocms_tui", str(tmp_path), "--snapshot", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert "Traceback" not in finished.stderr, finished.stderr
    assert finished.returncode == 0
    text = svg_text(output.read_text(encoding="utf-8"))
    # Axis labels name the real values; the legend keeps its exact numbers.
    for label in ("1e308┤", "-1e308┤", "1e-310┤", "5e-311┤", "5e307┤"):
        assert label in text, label
    for number in ("1.79769e+308", "-1.79769e+308", "4.94066e-324", "-1e+307"):
        assert number in text, number


async def test_dashboard_draws_extreme_values_linear_log_and_smoothed(tmp_path: Path) -> None:
    write_extreme_run(tmp_path)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: len(app.query(ChartPanel)) == 3)
        panels = list(app.query(ChartPanel))
        # Linear: scaled axes labelled with the real values; legend numbers exact.
        await wait_for_axis_labels(pilot, "1e308", "-1e308", "1e-310", "5e-311")
        text = screen_text(app)
        assert "1.79769e+308" in text and "4.94066e-324" in text and "-1e+307" in text
        # Smoothing and a log axis on each chart (both act on the focused one): still
        # drawn, labelled in powers.
        for panel in panels:
            panel.focus()
            await pilot.press("s", "l")
        await wait_for(pilot, lambda: all(p.view.log_y and p.view.smoothing for p in panels))
        await wait_for_axis_labels(pilot, "1e307", "1e-320", "1e300")
        assert all(panel.plot.builds > 1 for panel in panels)
        assert not any("no rows yet" in str(panel.plot.render()) for panel in panels)
        for panel in panels:  # smoothing off again, still on log axes
            panel.focus()
            await pilot.press("s", "s", "s")
        await wait_for(pilot, lambda: not any(panel.view.smoothing for panel in panels))
        await wait_for_axis_labels(pilot, "1e308", "1e-320", "1e-200")


async def wait_for_axis_labels(pilot, *labels: str) -> None:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: all(f"{label}┤" in screen_text(pilot.app) for label in labels))
