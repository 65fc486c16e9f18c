"""Small terminals (80x24, 60x20): every chart is listed and reachable, nothing is cut without
an ellipsis, a maximised chart fills the screen whatever comes and goes around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import screen_lines, screen_text, wait_for

from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run
from ocms_tui.widgets.chart_grid import ChartGrid
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.chart_strip import ChartStrip, strip_window
from ocms_tui.widgets.key_footer import KeyFooter
from ocms_tui.widgets.status_bar import StatusBar

CHARTS = ["loss", "learning_rate", "epoch", "timing", "eval_score", "grad_norm"]


def line_of(widget: object) -> str:
    return str(widget.render()).rstrip()  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_every_chart_is_listed_and_reached_by_the_arrows(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    write_demo_run(tmp_path / "ocms_metrics", steps=300)
    app = OcmsApp(tmp_path / "ocms_metrics", watch=False)
    async with app.run_test(size=size) as pilot:
        await app.settle()
        strip = app.query_one(ChartStrip)
        await wait_for(pilot, lambda: strip.display and isinstance(app.focused, ChartPanel))
        visited = []
        for index, name in enumerate(CHARTS):
            if index:
                await pilot.press("right")
            await wait_for(pilot, lambda: app.focused.name == name)  # noqa: B023
            await pilot.pause()
            # The focused chart is on screen, and named in the strip, highlighted.
            assert app.focused.region.height > 0
            assert app.focused.region in app.query_one(ChartGrid).region
            shown = line_of(strip)
            assert f" {name} " in f"{shown} "
            assert len(shown) <= size[0]
            visited.append(name)
            # Charts left out of the strip are counted, never silently dropped.
            listed = [chart for chart in CHARTS if f" {chart} " in f"{shown} "]
            hidden_before = int(shown.split("◂")[1].split()[0]) if "◂" in shown else 0
            hidden_after = int(shown.split("+")[-1].rstrip("▸")) if shown.endswith("▸") else 0
            assert hidden_before + len(listed) + hidden_after == len(CHARTS)
        assert visited == CHARTS

        # A click on a name in the strip focuses that chart.
        await pilot.click(ChartStrip, offset=(line_of(strip).index("epoch") + 1, 0))
        await wait_for(pilot, lambda: app.focused.name == "epoch")


async def test_wide_terminals_show_every_panel_and_no_strip(tmp_path: Path) -> None:
    write_demo_run(tmp_path / "ocms_metrics", steps=100)
    app = OcmsApp(tmp_path / "ocms_metrics", watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.settle()
        await pilot.pause()
        assert not app.query_one(ChartStrip).display
        assert all(name in screen_text(app) for name in CHARTS)


@pytest.mark.parametrize("width", [60, 80, 120])
async def test_status_bar_and_footer_are_never_cut_without_an_ellipsis(
    tmp_path: Path, width: int
) -> None:
    directory = tmp_path / ("a_rather_long_experiment_directory_name" * 2) / "ocms_metrics"
    write_demo_run(directory, steps=50)
    app = OcmsApp(directory, watch=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await app.settle()
        await pilot.pause()
        lines = screen_lines(app)
        status, footer = lines[0].strip(), lines[-1].strip()
        assert status == line_of(app.query_one(StatusBar))[: len(status) - 1] + "…" or (
            status == line_of(app.query_one(StatusBar))
        )
        # The counts outlive the directory's middle; the footer keeps the help key.
        assert "6 charts · 274 rows" in status and "…" in status
        assert "metrics" in status  # the end of the path: the run's own directory
        assert footer.startswith("q Quit ? Help")
        assert footer.endswith("p Problems") or footer.endswith("…")
        assert (width < 80) == footer.endswith("…")


async def test_a_maximised_chart_fills_the_grid_as_the_problems_pane_comes_and_goes(
    tmp_path: Path,
) -> None:
    write_demo_run(tmp_path / "ocms_metrics", steps=100)
    app = OcmsApp(tmp_path / "ocms_metrics", watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.settle()
        await pilot.press("enter")
        grid = app.query_one(ChartGrid)
        for _ in range(3):
            await pilot.press("p")
            await pilot.pause()
            await pilot.pause()
            panel = grid.maximised
            assert panel is not None
            assert panel.region.height == grid.region.height  # no blank rows under it
            assert panel.region.bottom == app.query_one(KeyFooter).region.y or (
                app.query_one("ProblemsPane").display
            )


def test_the_strip_window_keeps_the_focused_chart_and_counts_the_rest() -> None:
    widths = [6, 15, 7, 8, 12, 11]
    assert strip_window(widths, 0, 200) == (0, 6)
    for focused in range(6):
        for width in (20, 30, 45):
            start, end = strip_window(widths, focused, width)
            assert start <= focused < end
            left = len(f"◂{start} ") if start else 0
            right = len(f" +{6 - end}▸") if end < 6 else 0
            cells = left + sum(widths[start:end]) + (end - start - 1) + right
            # Fits, or the focused chart alone is too wide (the widget's ellipsis cuts it).
            assert cells <= width or (start, end) == (focused, focused + 1)
        start, end = strip_window(widths, focused, 45)
        assert end - start > 1
