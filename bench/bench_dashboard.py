"""Figures 8 and 9: the dashboard's drawing and first paint.

8. Chart build: the 6 charts of a run, 4 series each, built by the dashboard's own builder
   (`ChartCanvas`: M4 to the canvas width, then plotext, its matrix read as runs of one
   colour, as ChartPlot does before it paints) at the plot sizes the app lays out on a
   160x48 terminal, for 1,000,000 and for 1,000 rows per chart. Every build reduces every
   column (no M4 kept from the build before: that is what a followed run saves).
9. First paint: from the start of the app (`OcmsApp` created and run headless with Textual's
   `run_test` at 160x48) to the moment every chart panel has rendered its plot with rows in
   it and its legend with the run's latest step, so the whole step range. A large CSV is
   shown from a sample of its rows first (and the status says it is loading) while every
   row is read; the note gives the time until every row is loaded as well.
Figure 11 (CPU idle and while following a run) is measured on the real command in tmux,
idle and following apart: `bench_screen`.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from common import Row, Sizes, interleaved, make_row, seconds
from data import Workspace
from rich.text import Text
from textual_plotext.plot import Plot

from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plot_render import Picture
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color
from ocms_tui.follow.model import ChartData, RunModel
from ocms_tui.follow.views import SeriesViews
from ocms_tui.widgets.chart_plot import ChartPlot

TERMINAL = (160, 48)


def plot_sizes(directory: Path) -> list[tuple[int, int]]:
    """The plot area of every chart panel when the app shows `directory` at 160x48."""
    from ocms_tui.ui.app import OcmsApp

    async def measure() -> list[tuple[int, int]]:
        app = OcmsApp(directory, watch=False)
        app.animation_level = "none"
        async with app.run_test(size=TERMINAL) as pilot:
            await app.settle()
            await pilot.pause()
            return [(panel.plot.size.width, panel.plot.size.height) for panel in app.grid.panels]

    return asyncio.run(measure())


class _ChartBuilder:
    """One chart's canvas, kept across builds as the panel keeps its plot."""

    def __init__(self, chart: ChartData, size: tuple[int, int]) -> None:
        self.chart = chart
        self.request = PlotRequest(*size)
        self.canvas = ChartCanvas(Plot())
        self.views = SeriesViews()

    def build(self) -> Picture:
        chart = self.chart
        frame = chart.frame()
        # As the panel draws: the chart's frame, each series with the M4 pyramid kept in the
        # view cache.
        series = [
            Series(
                frame.steps,
                frame.values[index],
                series_color(index),
                steps_sorted=True,
                pyramid=self.views.shown(frame, index, 0.0, False).pyramid,
            )
            for index in range(len(chart.y_axis))
        ]
        self.canvas.forget(reductions=True)
        plan = self.canvas.plan(series, self.request)
        built = self.canvas.draw(plan, series) if plan is not None else None
        if built is None:
            raise AssertionError(f"chart {chart.name} drew nothing")
        return built


def figure_chart_build(sizes: Sizes, workspace: Workspace) -> Row:
    small_run, big_run = workspace.run(sizes.small_rows), workspace.run(sizes.rows)
    panel_sizes = plot_sizes(small_run)
    builders: dict[str, list[_ChartBuilder]] = {}
    for label, directory in (("big", big_run), ("small", small_run)):
        model = RunModel(directory)
        model.refresh()
        builders[label] = [
            _ChartBuilder(chart, size)
            for chart, size in zip(model.charts, panel_sizes, strict=True)
        ]

    def build_all(label: str) -> None:
        for builder in builders[label]:
            builder.build()

    timings = interleaved(
        {"big": lambda: build_all("big"), "small": lambda: build_all("small")}, sizes.rounds
    )
    big, small = timings["big"].median, timings["small"].median
    drawn = sum(builder.canvas.points_drawn for builder in builders["big"])
    stored = sum(4 * builder.chart.rows for builder in builders["big"])
    width, height = panel_sizes[0]
    return make_row(
        f"chart build, 6 charts x 4 series at {TERMINAL[0]}x{TERMINAL[1]} (plots {width}x{height}):"
        f" {sizes.rows:,} vs {sizes.small_rows:,} points per series",
        seconds(big),
        seconds(small),
        big / small,
        "< 1.5",
        big / small < 1.5,
        f"M4 handed plotext {drawn:,} of {stored:,} points; both rebuilt with warm canvases",
    )


def _shows_rows(plot: ChartPlot) -> bool:
    """The plot has been drawn, and with rows (not its "no rows yet" text).

    `render()` of a plot that is not stale hands back what was drawn, without building.
    """
    if not plot.builds or plot.is_stale:
        return False
    drawn = plot.render()
    return isinstance(drawn, Text) and drawn.plain != plot.empty_text


async def _first_paint(
    directory: Path, rows: int, until_loaded: bool
) -> tuple[float, float | None]:
    """(seconds to the first paint with rows in every chart and the last step, `rows` - 1,
    in every legend; seconds until every row is loaded when `until_loaded`)."""
    from ocms_tui.ui.app import OcmsApp

    started = time.perf_counter()
    app = OcmsApp(directory)
    app.animation_level = "none"
    first_paint = None
    async with app.run_test(size=TERMINAL):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            panels = app.grid.panels
            if (
                first_paint is None
                and len(panels) == len(app.session.runs[0].model.charts) > 0
                and all(_shows_rows(panel.plot) for panel in panels)
                and all(panel.table.shown_last_step == rows - 1 for panel in panels)
            ):
                first_paint = time.perf_counter() - started
            if first_paint is not None and not until_loaded:
                return first_paint, None
            if first_paint is not None and app.idle:
                return first_paint, time.perf_counter() - started
            await asyncio.sleep(0.002)
    raise AssertionError(f"the dashboard did not paint {directory} within two minutes")


def figure_first_paint(sizes: Sizes, workspace: Workspace) -> Row:
    small_run, big_run = workspace.run(sizes.small_rows), workspace.run(sizes.rows)
    samples: dict[str, list[float]] = {"big": [], "small": []}
    full_load = None
    for round_index in range(sizes.first_paint_rounds):
        small = asyncio.run(_first_paint(small_run, sizes.small_rows, until_loaded=False))
        samples["small"].append(small[0])
        # How long the whole load takes is said once, from the first round.
        first_paint, loaded = asyncio.run(
            _first_paint(big_run, sizes.rows, until_loaded=round_index == 0)
        )
        samples["big"].append(first_paint)
        full_load = loaded if loaded is not None else full_load
    big, small = statistics.median(samples["big"]), statistics.median(samples["small"])
    return make_row(
        f"time to first paint, 6 charts x {sizes.rows:,} rows vs 6 x {sizes.small_rows:,} rows"
        f" ({TERMINAL[0]}x{TERMINAL[1]}, headless)",
        seconds(big),
        seconds(small),
        big / small,
        "< 3",
        big / small < 3,
        "first paint = every panel's plot rendered with rows and its legend with the last"
        f" step (a sample of the rows while they load); all {6 * sizes.rows:,} rows"
        f" loaded after {seconds(full_load or 0.0)}; medians of {sizes.first_paint_rounds}",
    )


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    return [
        figure_chart_build(sizes, workspace),
        figure_first_paint(sizes, workspace),
    ]
