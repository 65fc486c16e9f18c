"""Every key of the dashboard, and the mouse, on a real run directory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from app_support import append_rows, screen_text, wait_for, wait_for_text, write_layout
from plotext._figure import _figure_class as PlotextFigure
from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget

from ocms_tui.draw.plot_plan import PlotRequest
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.follow.model import RunModel
from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run
from ocms_tui.widgets import chart_panel
from ocms_tui.widgets.chart_grid import ChartGrid, grid_columns
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.chart_strip import ChartStrip
from ocms_tui.widgets.help_screen import HelpScreen
from ocms_tui.widgets.problems_pane import ProblemsPane


def panels(app: OcmsApp) -> list[ChartPanel]:
    return list(app.query(ChartPanel))


async def open_demo(pilot, app: OcmsApp) -> None:  # type: ignore[no-untyped-def]
    await app.settle()
    await wait_for(pilot, lambda: len(panels(app)) == 6 and app.focused is panels(app)[0])


async def test_view_keys_change_every_chart_or_the_focused_one(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        loss = panels(app)[0]
        builds = loss.plot.builds

        # s and l follow one rule: both change the focused chart only, and its title
        # always says the state of both.
        await wait_for_text(pilot, "loss · ema off · linear")
        await pilot.press("s")
        assert loss.view.smoothing == 0.6 and panels(app)[1].view.smoothing == 0.0
        await wait_for_text(pilot, "loss · ema 0.6 · linear", "learning_rate · ema off")
        await pilot.press("s", "s", "s")
        assert loss.view.smoothing == 0.0

        await pilot.press("l")
        assert loss.view.log_y and not panels(app)[1].view.log_y
        await wait_for_text(pilot, "loss · ema off · log", "learning_rate · ema off · linear")

        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.shared.zoom == 2
        await wait_for_text(pilot, "latest 1/4 of steps")
        await pilot.press("left_square_bracket")
        assert app.shared.zoom == 1
        await pilot.press("0")
        assert app.shared.zoom == 0

        await pilot.press("2")
        assert loss.view.hidden == {1}
        await pilot.press("9")  # the loss chart has 4 series: nothing to toggle
        assert loss.view.hidden == {1}
        await pilot.press("2")
        assert loss.view.hidden == set()
        await pilot.pause()
        assert loss.plot.builds > builds  # each change was drawn, not only recorded


async def test_focus_moves_with_arrows_and_clicks_and_enter_maximises(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=200)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        grid = app.query_one(ChartGrid)
        columns = grid.columns
        assert columns == grid_columns(*grid.scrollable_content_region.size, 6) > 1
        await pilot.press("right")
        assert app.focused is panels(app)[1]
        await pilot.press("down")
        assert app.focused is panels(app)[1 + columns]
        await pilot.press("left", "up")
        assert app.focused is panels(app)[0]

        await pilot.click(panels(app)[2])
        assert app.focused is panels(app)[2]

        await pilot.press("enter")
        assert grid.maximised is panels(app)[2]
        assert [panel.display for panel in panels(app)] == [False, False, True, False, False, False]
        await pilot.pause()
        assert panels(app)[2].region.height > 40
        await pilot.press("right")  # moving on while maximised maximises the next chart
        assert grid.maximised is panels(app)[3] and app.focused is panels(app)[3]
        await pilot.press("escape")
        assert grid.maximised is None
        assert all(panel.display for panel in panels(app))


async def test_maximise_and_restore_build_only_the_panel_that_changed_size_once(
    tmp_path: Path,
) -> None:
    """The chart strip appears with a maximised chart (the others are off screen) in the same
    frame as the new layout: the maximised panel is built at its final size only, and on
    restore the panels that kept their size are not built again."""
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        strip = app.query_one(ChartStrip)
        await pilot.pause()
        before = [panel.plot.builds for panel in panels(app)]
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert strip.display and panels(app)[0].plot.size.height > 30
        assert [panel.plot.builds for panel in panels(app)] == [before[0] + 1, *before[1:]]
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()
        assert not strip.display
        assert [panel.plot.builds for panel in panels(app)] == [before[0] + 2, *before[1:]]


async def test_restore_repaints_only_the_panel_that_was_maximised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grid keeps its columns and rows while a chart is maximised (the chart spans
    them): setting them made Textual repaint every panel's legend and plot from scratch,
    and escape drew the five panels that had kept their size anew."""
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        loss, *others = panels(app)
        sizes = [tuple(panel.size) for panel in panels(app)]
        dirtied: list[Widget] = []
        set_dirty = Widget._set_dirty

        def noting(widget: Widget, *regions: Region) -> None:
            dirtied.append(widget)
            set_dirty(widget, *regions)

        monkeypatch.setattr(Widget, "_set_dirty", noting)
        for key in ("enter", "escape"):
            dirtied.clear()
            await pilot.press(key)
            await pilot.pause()
            await pilot.pause()
            assert not any(widget in dirtied for panel in others for widget in panel.children)
        assert [tuple(panel.size) for panel in panels(app)] == sizes
        assert loss.table in dirtied and loss.plot in dirtied


async def test_enter_finds_the_maximised_view_reduced_ahead(tmp_path: Path) -> None:
    """Once a chart is focused, its series are reduced for the size enter will give its plot:
    the key reduces no column, and draws what a fresh canvas draws at that size."""
    rows = 60_000
    steps = np.arange(rows)
    rng = np.random.default_rng(3)
    values = np.cumsum(rng.standard_normal((rows, 2)), axis=0)
    lines = [f"{step},{a:.6g},{b:.6g}" for step, (a, b) in zip(steps, values, strict=True)]
    write_layout(tmp_path, {"loss": ["a", "b"], "accuracy": ["a", "b"], "lr": ["a", "b"]})
    for chart in ("loss", "accuracy", "lr"):
        append_rows(tmp_path / f"{chart}.csv", lines)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.settle()
        loss = panels(app)[0]
        await wait_for(pilot, lambda: app.focused is loss and loss.chart.rows == rows)
        # Focused again once every row is read: what was made ahead meanwhile was for the
        # rows of the first screen.
        prepared = loss.prepared_ahead
        await pilot.press("right", "left")
        await wait_for(pilot, lambda: loss.prepared_ahead > prepared and not loss.prepare_pending)
        reduced = loss.plot._canvas.columns_reduced
        builds = loss.plot.builds
        await pilot.press("enter")
        await wait_for(pilot, lambda: loss.plot.builds > builds and not loss.plot.is_stale)
        assert loss.plot.size.width > 150
        assert loss.plot._canvas.columns_reduced == reduced  # nothing reduced at the key
        series, log_y, x_range = loss._series_for_plot()
        width, height = loss.plot.size
        fresh = ChartCanvas(PlotextFigure()).build(
            series,
            PlotRequest(width, height, log_y=log_y, x_range=x_range, theme=loss.plot._theme()),
        )
        assert fresh is not None
        assert loss.plot.render().plain == Text.from_ansi(fresh, no_wrap=True).plain  # type: ignore[union-attr]


async def test_quick_keys_make_the_next_views_ahead_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each key starts the panel's one timer again: three quick presses prepare once, after
    the last of them (a timer per key prepared three times, the first two for nothing)."""
    # Longer than three presses take on a loaded machine, so that the test is about the timer.
    monkeypatch.setattr(chart_panel, "PREPARE_AFTER_SECONDS", 1.0)
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        loss = panels(app)[0]
        await wait_for(pilot, lambda: not any(panel.prepare_pending for panel in panels(app)))
        before = [panel.prepared_ahead for panel in panels(app)]
        await pilot.press("right_square_bracket", "right_square_bracket", "l")
        await wait_for(pilot, lambda: not any(panel.prepare_pending for panel in panels(app)))
        assert [
            panel.prepared_ahead - count for panel, count in zip(panels(app), before, strict=True)
        ] == [1] * 6
        assert app.shared.zoom == 2 and loss.view.log_y


async def test_the_focused_chart_smooths_ahead_within_a_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The focused chart's next smoothing is made ahead, the others' not; and not at all when
    the chart's shown values exceed PREPARE_MAX_VALUES (each would be kept as a copy)."""
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        loss, learning_rate = panels(app)[:2]
        await wait_for(pilot, lambda: loss.prepared_smoothing(0) == 0.6)
        assert learning_rate.prepared_smoothing(0) is None
        monkeypatch.setattr(chart_panel, "PREPARE_MAX_VALUES", learning_rate.chart.rows * 2 - 1)
        await pilot.press("right")
        await pilot.pause(0.6)  # past PREPARE_AFTER_SECONDS
        assert app.focused is learning_rate
        assert learning_rate.prepared_smoothing(0) is None


async def test_one_column_at_80_columns_and_the_grid_scrolls(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=200)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_demo(pilot, app)
        grid = app.query_one(ChartGrid)
        assert grid.columns == 1
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert app.focused is panels(app)[3]
        assert grid.scroll_y > 0
        assert "timing" in screen_text(app)


async def test_pause_freezes_the_screen_until_resumed(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(
        '{"version": 1, "charts": [{"name": "loss", "file": "loss.csv", "x_axis": "step",'
        ' "y_axis": ["loss"]}]}'
    )
    append_rows(tmp_path / "loss.csv", ["0,1.0", "1,0.5"])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_text(pilot, "step 1 · 2 rows")
        await pilot.press("space")
        await wait_for_text(pilot, "⏸ paused")
        assert app.state is not None
        serial = app.state.serial
        (watcher,) = app.session.watchers.values()
        watcher.take()  # forget older marks: the next one is this write's
        append_rows(tmp_path / "loss.csv", ["2,0.25"])
        assert await asyncio.to_thread(watcher.dirty.wait, 10), "the write was not seen"
        app.session.step()  # the read this write asks for, done now: paused, it reads nothing
        await pilot.pause()
        assert app.state.serial == serial  # no state was published
        assert app.session.runs[0].model.total_rows == 2
        assert "step 1 · 2 rows" in screen_text(app)
        await pilot.press("space")
        await wait_for_text(pilot, "step 2 · 3 rows", "● live")


async def test_reload_problems_help_and_quit(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=100)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_demo(pilot, app)
        charts_before = app.session.runs[0].model.charts
        fresh = RunModel(tmp_path)
        fresh.load_settled()
        await pilot.press("r")
        # The charts are replaced as the reload starts, while the state on screen is still
        # the idle one from before: the rows are checked once the reload's state is shown.
        await wait_for(
            pilot,
            lambda: (
                app.idle
                and app.session.runs[0].model.charts is not charts_before
                and app.session.runs[0].model.total_rows == fresh.total_rows
            ),
        )
        await wait_for(pilot, lambda: len(panels(app)) == 6)
        assert app.session.runs[0].model.total_rows == fresh.total_rows > 500

        pane = app.query_one(ProblemsPane)
        assert pane.display
        await pilot.press("p")
        assert not pane.display
        await pilot.press("p")
        assert pane.display

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await wait_for_text(pilot, "ocms-tui · keys", "pause / resume")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_view_key_draws_its_frame_before_the_next_smoothing_is_made(
    tmp_path: Path,
) -> None:
    """After s, the smoothing s gives next is made ahead only once the key's own frame is
    drawn: no thread competes with that frame for the interpreter."""
    write_demo_run(tmp_path, steps=400)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_demo(pilot, app)
        loss = panels(app)[0]
        await wait_for(pilot, lambda: loss.prepared_smoothing(0) == 0.6)
        for prepared in (0.9, 0.99):
            builds = loss.plot.builds
            await pilot.press("s")
            await wait_for(pilot, lambda builds=builds: loss.plot.builds > builds)
            assert loss.prepared_smoothing(0) is None  # not yet: the frame first
            await wait_for(pilot, lambda p=prepared: loss.prepared_smoothing(0) == p)
