"""Following a run draws only what changed: the widget shows plotext's text, and the
dashboard builds a plot when a row changes it and skips the build when a row changes no
pixel (the canvas's own promises: tests/test_plotting.py)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
from app_support import append_rows, wait_for, wait_for_text, write_layout
from plotext._figure import _figure_class
from plotext_support import followed_series

from ocms_tui.draw.plot_plan import PlotRequest
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.chart_plot import picture_text


def test_the_widget_text_is_plotexts_text() -> None:
    from rich.text import Text

    rng = np.random.default_rng(4)
    steps = np.arange(5000)
    series = followed_series(
        steps, [rng.standard_normal(5000) + i for i in range(3)], ("braille",) * 3
    )
    for theme in ("textual-dark", "textual-light", "pro", None):
        canvas = ChartCanvas(_figure_class())
        plan = canvas.plan(series, PlotRequest(60, 16, theme=theme))
        assert plan is not None
        picture = canvas.draw(plan, series)
        assert picture is not None
        assert picture_text(picture) == Text.from_ansi(picture.ansi(), no_wrap=True)


SIZE = (120, 40)
ROWS = 20_000


def _value(step: int) -> float:
    return 0.5 + 0.1 * math.sin(step)


async def test_a_followed_run_builds_when_a_row_changes_the_plot_and_only_then(
    tmp_path: Path,
) -> None:
    write_layout(tmp_path, {"loss": ["loss", "eval_loss"]})
    append_rows(tmp_path / "loss.csv", [f"{step},{_value(step)!r}," for step in range(ROWS)])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, f"step {ROWS - 1:,} · {ROWS:,} rows")
        plot = app.query_one(ChartPanel).plot
        await wait_for(pilot, lambda: not plot.is_stale)

        async def append(step: int, value: float) -> None:
            append_rows(tmp_path / "loss.csv", [f"{step},{value!r},"])
            await wait_for_text(pilot, f"step {step:,} · {step + 1:,} rows")
            await wait_for(pilot, lambda: not plot.is_stale)

        # The first new row grows the x axis (with headroom): a new picture.
        builds = plot.builds
        await append(ROWS, 0.5)
        assert plot.builds == builds + 1 and plot.drawn_through == ROWS
        # Rows within the last pixel column's range: numbers change, the plot is not built.
        builds, unchanged, picture = plot.builds, plot.unchanged, str(plot.render())
        for step in range(ROWS + 1, ROWS + 4):
            await append(step, 0.55)
            await wait_for_text(pilot, "0.55")
        assert plot.builds == builds and plot.unchanged == unchanged + 3
        assert plot.drawn_through == ROWS + 3 and str(plot.render()) == picture
        # A new highest value must be drawn: built, and the picture differs.
        await append(ROWS + 4, 7.25)
        await wait_for_text(pilot, "7.25")
        assert plot.builds == builds + 1 and str(plot.render()) != picture
        assert plot.drawn_through == ROWS + 4


def _write_two_charts(directory: Path) -> None:
    """A finished run of two charts (three series) of 3,000 rows."""
    write_layout(directory, {"loss": ["loss", "eval_loss"], "lr": ["lr"]})
    rows = [f"{step},{_value(step)!r},{step * 0.5!r}" for step in range(3000)]
    append_rows(directory / "loss.csv", rows)
    append_rows(directory / "lr.csv", [f"{step},{1 / (step + 1)!r}" for step in range(3000)])


async def test_the_plot_is_painted_as_textual_paints_its_text(tmp_path: Path) -> None:
    """The strips made from plotext's matrix are, segment for segment and style for style
    (offsets included), those Textual makes of the picture's text, in every theme."""
    from textual.visual import Visual, visualize

    _write_two_charts(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 2,999 · 3,000 rows")
        for theme in ("textual-dark", "textual-light", "nord"):
            app.theme = theme
            await pilot.pause()
            for panel in app.query(ChartPanel):
                plot = panel.plot
                width, height = plot.size
                painted = [plot.render_line(y) for y in range(height)]
                text = visualize(plot, plot.render(), markup=False)
                expected = Visual.to_strips(plot, text, width, height, plot.visual_style)
                assert [list(strip) for strip in painted] == [list(strip) for strip in expected]


async def test_a_plot_goes_to_the_screen_as_textuals_styles_cache_gives_it(
    tmp_path: Path,
) -> None:
    """ChartPlot.render_lines skips Textual's per-line styling (and the ANSI filter, for
    truecolor styles): what it gives is strip for strip what Textual's own render_lines
    gives, whole and cropped, in themes of truecolor and of ANSI colours, and with a border
    (which goes Textual's way)."""
    from textual.geometry import Region
    from textual.widget import Widget

    _write_two_charts(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 2,999 · 3,000 rows")
        skipped_filter = kept_filter = 0
        for theme, border in (
            ("textual-dark", None),
            ("textual-light", None),
            ("ansi-dark", None),
            ("textual-dark", ("round", "red")),
        ):
            app.theme = theme
            for panel in app.query(ChartPanel):
                panel.plot.styles.border = border or ("none", "red")
            await pilot.pause()
            for panel in app.query(ChartPanel):
                plot = panel.plot
                width, height = plot.size
                for crop in (
                    Region(0, 0, width, height),
                    Region(3, 1, width - 5, height // 2),
                ):
                    painted = [list(strip) for strip in plot.render_lines(crop)]
                    plot._styles_cache.clear()
                    assert painted == [list(strip) for strip in Widget.render_lines(plot, crop)]
                if plot._cell_styles.truecolor:
                    skipped_filter += 1
                else:
                    kept_filter += 1
        assert skipped_filter and kept_filter  # both ways were taken


async def test_a_plot_not_on_screen_is_not_built_until_shown(tmp_path: Path) -> None:
    """With one chart maximised, new rows build only the shown chart's plot; the others are
    built when the grid shows them again, with the rows that arrived meanwhile."""
    write_layout(tmp_path, {"loss": ["loss"], "lr": ["lr"]})
    append_rows(tmp_path / "loss.csv", [f"{step},{_value(step)!r}" for step in range(500)])
    append_rows(tmp_path / "lr.csv", [f"{step},{_value(step)!r}" for step in range(500)])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 499 · 500 rows")
        loss, lr = list(app.query(ChartPanel))
        loss.focus()
        await pilot.press("enter")  # maximise the loss chart
        await wait_for(pilot, lambda: not lr.plot.region)
        builds = lr.plot.builds
        for step in range(500, 503):
            append_rows(tmp_path / "loss.csv", [f"{step},{9.0 + step!r}"])
            append_rows(tmp_path / "lr.csv", [f"{step},{9.0 + step!r}"])
            await wait_for(pilot, lambda shown=step: loss.plot.drawn_through == shown)
        assert lr.plot.builds == builds and lr.plot.is_stale
        await pilot.press("escape")  # the grid again
        await wait_for(pilot, lambda: lr.plot.drawn_through == 502)
        assert lr.plot.builds > builds  # built for the grid (its layout may take two sizes)


async def test_a_followed_plot_repaints_only_changed_lines_and_shows_the_whole_picture(
    tmp_path: Path,
) -> None:
    """Rows under the same axes repaint only the plot's lines that changed; what the screen
    then holds (Textual's cached lines plus the repainted ones) is line for line what a
    full repaint of the new picture gives."""
    from textual.geometry import Region

    write_layout(tmp_path, {"loss": ["loss", "noise"]})
    rng = random.Random(2)
    rows = [f"{step},{_value(step)!r},{rng.random()!r}" for step in range(1000)]
    append_rows(tmp_path / "loss.csv", rows)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 999 · 1,000 rows")
        plot = app.query_one(ChartPanel).plot
        await wait_for(pilot, lambda: not plot.is_stale)
        width, height = plot.size
        whole = Region(0, 0, width, height)
        for step in range(1000, 1040, 2):
            new = [f"{s},{_value(s)!r},{rng.random()!r}" for s in (step, step + 1)]
            append_rows(tmp_path / "loss.csv", new)
            await wait_for_text(pilot, f"step {step + 1:,} · {step + 2:,} rows")
            await wait_for(pilot, lambda: not plot.is_stale)
            await pilot.pause()
            shown = [list(strip) for strip in plot.render_lines(whole)]
            plot.refresh()  # everything painted again from the picture
            assert shown == [list(strip) for strip in plot.render_lines(whole)]
        assert 0 < plot.lines_repainted < 20 * height  # some reads repainted some lines only
