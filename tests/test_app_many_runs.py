"""Many runs in one dashboard (a parent directory of 3 and of 32 runs): run labels say what
tells the runs apart, every legend lists its lines or says how many it leaves out, plots keep
a readable height, and a series' name is never cut off."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import screen_lines, wait_for

from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run
from ocms_tui.widgets.chart_panel import DEFAULT_TOP_RUNS, MIN_PLOT_ROWS, ChartPanel

RUN_NAME = "exp_2026_12_04_vla_pretrain_run{:02d}_final"
SERIES = {"loss", "vlm_loss", "action_dit_loss", "eval_loss", "learning_rate", "epoch"}


def write_runs(parent: Path, count: int) -> None:
    for index in range(count):
        write_demo_run(parent / RUN_NAME.format(index) / "ocms_metrics", steps=60, seed=index)


def legend_rows(panel: ChartPanel, lines: list[str]) -> list[str]:
    """The panel's legend as on screen (below its plot, inside its border)."""
    region = panel.table.region
    return [lines[row][region.x : region.right] for row in range(region.y, region.bottom)]


@pytest.mark.parametrize(("runs", "size"), [(3, (160, 48)), (3, (100, 30)), (32, (160, 48))])
async def test_legends_list_or_sum_up_and_plots_stay_readable(
    tmp_path: Path, runs: int, size: tuple[int, int]
) -> None:
    write_runs(tmp_path, runs)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=size) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: len(app.query(ChartPanel)) == 6)
        await pilot.pause()
        # Labels: the runs' distinguishing part only.
        assert sorted(run.name for run in app.session.runs) == [f"run{i:02d}" for i in range(runs)]
        panels = list(app.query(ChartPanel))
        for index, panel in enumerate(panels):
            if index:
                await pilot.press("right")  # focus scrolls the next panel into view
            await wait_for(pilot, lambda: app.focused is panel)  # noqa: B023
            await pilot.pause()
            lines = screen_lines(app)
            assert panel.plot.size.height >= MIN_PLOT_ROWS - 2  # 7+ rows of curve, plus axes
            legend = legend_rows(panel, lines)
            listed = [row for row in legend[1:] if " · " in row]
            summary = [row for row in legend[1:] if "more series" in row]
            muted = [row for row in legend[1:] if "more runs, drawn grey" in row]
            assert len(listed) + len(summary) + len(muted) == len(legend) - 1
            # The leading runs are listed; every other run is drawn grey and counted.
            assert len(muted) == (runs > DEFAULT_TOP_RUNS)
            if muted:
                assert f"+{runs - DEFAULT_TOP_RUNS} more runs" in muted[0]
            if summary:
                left_out = int(summary[0].split("+")[1].split()[0])
                assert len(listed) + left_out == len(panel.listed)
            else:
                assert len(listed) == len(panel.listed)
            for row, line in zip(listed, panel.lines, strict=False):
                run_part = row.split(" · ")[0]
                assert f" · {line.label} " in row  # the series' name, whole
                assert run_part.rstrip().endswith(line.run) or run_part.rstrip().endswith("…")


async def test_a_long_run_name_gives_way_to_the_series_name(tmp_path: Path) -> None:
    for name in ("a_very_long_run_name_that_says_little_" * 2, "b_very_long_run_name"):
        write_demo_run(tmp_path / name, steps=30)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(90, 40)) as pilot:
        await app.settle()
        await pilot.pause()
        lines = screen_lines(app)
        loss = next(panel for panel in app.query(ChartPanel) if panel.name == "loss")
        legend = legend_rows(loss, lines)
        rows = [row for row in legend[1:] if " · " in row]  # below the header
        assert rows and all("…" in row.split(" · ")[0] for row in rows[:4])
        assert {row.split(" · ")[1].split()[0] for row in rows} >= {"loss", "vlm_loss"}
