"""The legend table paints a line at a time: the same strips Textual makes of its text, only
the lines whose text changed painted again, nothing at all for a read that brought nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import append_rows, screen_lines, wait_for, wait_for_text, write_layout
from textual.app import App, ComposeResult
from textual.content import Content
from textual.visual import Visual

from ocms_tui.draw.series_style import series_color, series_marker
from ocms_tui.follow.model import SeriesStats
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.series_table import SeriesRow, SeriesTable, format_number


def _stats(latest: float | None, step: int | None, sampled: bool = False) -> SeriesStats:
    low = None if latest is None else latest - 1.5
    high = None if latest is None else latest * 3 + 1e6
    return SeriesStats(latest, step, low, high, count=1, sampled=sampled)


TABLES: dict[str, tuple[list[SeriesRow], int | None, int, int]] = {
    "one run": (
        [
            SeriesRow("loss", series_color(0), _stats(0.25, 999), False),
            SeriesRow("eval_loss", series_color(1), _stats(0.5, 900), False),  # @900
            SeriesRow("lr", series_color(2), _stats(None, None), True),  # hidden, no value
        ],
        999,
        1000,
        1,
    ),
    "runs overlaid": (
        [
            SeriesRow(
                f"series_{index}",
                series_color(run),
                _stats(index * 1.25e-7, 40),
                index == 3,
                series_marker(index),
                f"exp_run{run:02d}_with_a_long_name",
            )
            for run in range(3)
            for index in range(4)
        ],
        40,
        123_456,
        3,
    ),
    "hostile names, loading": (
        [
            SeriesRow("[bold]x[/] \x1b[31mred\u202e", series_color(0), _stats(7.0, 5, True), False),
            SeriesRow("名前の長いシリーズ", series_color(1), _stats(-2.0, 5, True), False),
        ],
        5,
        6,
        1,
    ),
}


class TableApp(App[None]):
    def __init__(self, limit: int | None) -> None:
        super().__init__()
        self.tables = {name: SeriesTable() for name in TABLES}
        self.limit = limit

    def compose(self) -> ComposeResult:
        yield from self.tables.values()

    def on_mount(self) -> None:
        for name, table in self.tables.items():
            table.limit(self.limit)
            table.show(*TABLES[name])


@pytest.mark.parametrize("width", [120, 52, 30, 9])
@pytest.mark.parametrize("limit", [None, 3])
async def test_lines_are_painted_as_textual_paints_the_tables_text(
    width: int, limit: int | None
) -> None:
    """Segment for segment and style for style (offsets included), in every theme, wide and
    narrow (a line too wide for the table wraps, as Textual's own path wraps it)."""
    app = TableApp(limit)
    async with app.run_test(size=(width, 60)) as pilot:
        for theme in ("textual-dark", "textual-light", "nord"):
            app.theme = theme
            await pilot.pause()
            for table in app.tables.values():
                table_width, height = table.size
                painted = [table.render_line(y) for y in range(height)]
                content = Content.from_rich_text(table.render(), console=app.console)
                expected = Visual.to_strips(table, content, table_width, height, table.visual_style)
                expected += [painted[-1]] * (height - len(expected))  # blank lines below
                assert [list(strip) for strip in painted] == [list(strip) for strip in expected]


def _legend(app: OcmsApp, panel: ChartPanel) -> list[str]:
    region = panel.table.region
    lines = screen_lines(app)
    return [lines[row][region.x : region.right].strip() for row in range(region.y, region.bottom)]


async def test_new_rows_show_their_exact_numbers_and_repaint_only_their_lines(
    tmp_path: Path,
) -> None:
    write_layout(tmp_path, {"loss": ["loss", "eval_loss", "aux"]})
    rows = [f"{step},{1 / (step + 1)!r},{0.5 + step % 3!r},2.5" for step in range(200)]
    append_rows(tmp_path / "loss.csv", rows)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "step 199 · 200 rows")
        panel = app.query_one(ChartPanel)
        table = panel.table
        await wait_for(pilot, lambda: table.shown_last_step == 199 and not panel.plot.is_stale)
        await pilot.pause()

        # A row that changes the first series' latest value only (as wide as the column): the
        # header and that line.
        made, repainted = table.strips_made, table.lines_repainted
        append_rows(tmp_path / "loss.csv", ["200,0.0625,1.5,2.5"])
        await wait_for(pilot, lambda: table.shown_last_step == 200)
        await pilot.pause()
        assert table.lines_repainted == repainted + 2
        assert table.strips_made == made + 2
        legend = _legend(app, panel)
        assert legend[0].startswith("step 200 · 201 rows")
        assert legend[1].split()[1:3] == ["loss", "0.0625"]
        assert legend[1].split()[-1] == format_number(1.0)  # max: step 0's 1/1
        assert legend[2].split()[1:] == ["eval_loss", "1.5", "0.5", "2.5"]
        assert legend[3].split()[1:] == ["aux", "2.5", "2.5", "2.5"]

        # Several rows in one read, every value new: every line, with the last row's numbers.
        made, repainted = table.strips_made, table.lines_repainted
        append_rows(tmp_path / "loss.csv", ["201,7,-3,4", "202,0.123456789,-4.25,1e-300"])
        await wait_for(pilot, lambda: table.shown_last_step == 202)
        await pilot.pause()
        assert table.lines_repainted == repainted + 4 and table.strips_made == made + 4
        legend = _legend(app, panel)
        assert legend[0].startswith("step 202 · 203 rows")
        assert legend[1].split()[1:] == [
            "loss",
            format_number(0.123456789),
            format_number(1 / 200),
            "7",
        ]
        assert legend[2].split()[1:] == ["eval_loss", "-4.25", "-4.25", "2.5"]
        assert legend[3].split()[1:] == ["aux", "1e-300", "1e-300", "4"]


async def test_a_read_that_brings_nothing_repaints_nothing(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss", "eval_loss"], "lr": ["lr"]})
    append_rows(tmp_path / "loss.csv", [f"{step},{step % 7!r},1" for step in range(300)])
    append_rows(tmp_path / "lr.csv", [f"{step},{1 / (step + 1)!r}" for step in range(300)])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "step 299 · 300 rows")
        panels = list(app.query(ChartPanel))
        await wait_for(
            pilot,
            lambda: all(
                panel.table.shown_last_step == 299 and not panel.plot.is_stale for panel in panels
            ),
        )
        await pilot.pause()
        before = [(p.table.strips_made, p.table.lines_repainted, p.plot.builds) for p in panels]
        for _ in range(3):
            await app.settle()  # a read of everything on disk: nothing new
            for panel in panels:
                panel.show_new_data()
            await pilot.pause()
        after = [(p.table.strips_made, p.table.lines_repainted, p.plot.builds) for p in panels]
        assert after == before
        assert all(not panel.table._repaint_regions for panel in panels)
