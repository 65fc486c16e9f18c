"""The grey layer of a sweep in the dashboard (real app, Pilot): a key that leaves the grey
runs' data and view as they were, or comes back to a view shown before, reduces no grey run
again; new rows of a grey run do."""

from __future__ import annotations

from pathlib import Path

from app_support import append_rows, screen_lines, wait_for, write_layout

from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel

SIZE = (160, 48)
RUNS = 24  # 5 in colour, 19 grey
ROWS = 300


def write_sweep(parent: Path) -> None:
    for index in range(RUNS):
        directory = parent / f"lr_{index:02d}"
        directory.mkdir(parents=True)
        final = 0.05 + index * 0.01
        append_rows(
            directory / "loss.csv",
            [f"{step},{final + (ROWS - step) * 0.002!r}" for step in range(ROWS)],
        )
        write_layout(directory, {"loss": ["loss"]})


def plot_rows(app: OcmsApp, panel: ChartPanel) -> list[str]:
    """The plot as on screen."""
    region = panel.plot.region
    lines = screen_lines(app)
    return [lines[row][region.x : region.right] for row in range(region.y, region.bottom)]


async def test_keys_that_leave_the_grey_runs_reduce_nothing_and_new_rows_do(
    tmp_path: Path,
) -> None:
    write_sweep(tmp_path)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        await wait_for(pilot, lambda: bool(app.query(ChartPanel)))
        loss = app.query_one(ChartPanel)
        await wait_for(pilot, lambda: app.focused is loss and loss.plot.builds > 0)
        await pilot.pause()
        assert loss.muted_runs == RUNS - 5
        cache = loss.plot._canvas.layer_cache
        first = plot_rows(app, loss)
        reduced = cache.reductions
        assert reduced >= 1

        async def press(key: str) -> None:
            await pilot.press(key)
            await pilot.pause()
            await wait_for(pilot, lambda: not loss.plot.is_stale)

        # l twice: another y axis, then this one again (the loss has no value <= 0: the log
        # view is the same data).
        await press("l")
        await press("l")
        assert cache.reductions == reduced
        await press("]")  # a new x range: reduced
        zoomed = cache.reductions
        assert zoomed > reduced
        await press("0")  # back to the view shown before: kept
        assert cache.reductions == zoomed
        assert plot_rows(app, loss) == first
        builds = loss.plot.builds
        await pilot.press("l")
        await pilot.pause()
        await wait_for(pilot, lambda: loss.plot.builds > builds and not loss.plot.is_stale)
        assert cache.reductions == zoomed  # a new y axis: the same columns
        assert plot_rows(app, loss) != first
        # New rows of a grey run: other data, reduced again and drawn.
        await pilot.press("l")
        await pilot.pause()
        before = cache.reductions
        append_rows(tmp_path / "lr_20" / "loss.csv", [f"{ROWS},5.0"])
        await app.settle()
        await wait_for(pilot, lambda: cache.reductions > before and not loss.plot.is_stale)
        await pilot.pause()
        assert plot_rows(app, loss) != first
