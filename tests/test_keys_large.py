"""Every view key on charts of 1,000,000 rows, in the real app: the title says the new view and
the plot is the picture a plain M4 of independently derived values draws (no pyramid, no
prepared smoothing, no shared log view): what the fast paths draw is what they should."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from app_support import wait_for, write_layout
from plotext._figure import _figure_class as PlotextFigure
from rich.text import Text
from terminal_support import Terminal

from ocms_tui.draw.downsample import ema
from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel

ROWS = 1_000_000
SIZE = (160, 48)


def noisy_run(directory: Path) -> dict[str, list[np.ndarray]]:
    """Two charts of three series: a noisy positive loss, a mostly-gaps eval series, and a
    series that crosses zero (a log axis gaps it there)."""
    rng = np.random.default_rng(19)
    steps = np.arange(ROWS, dtype=np.int64)
    charts: dict[str, list[np.ndarray]] = {}
    for chart in ("loss", "grad_norm"):
        loss = (2.0 * np.exp(-steps / 200_000) + 0.1) * (1 + 0.3 * rng.random(ROWS))
        evaluated = np.full(ROWS, np.nan)
        evaluated[::100] = loss[::100] * 1.1
        crossing = np.sin(steps / 50_000) + 0.05 * rng.standard_normal(ROWS)
        charts[chart] = [loss, evaluated, crossing]
        columns = {"step": steps} | {
            f"c{index}": pl.Series(values).fill_nan(None)
            for index, values in enumerate(charts[chart])
        }
        pl.DataFrame(columns).write_csv(directory / f"{chart}.csv", include_header=False)
    write_layout(directory, {chart: ["loss", "eval", "crossing"] for chart in charts})
    return charts


@pytest.fixture(scope="module")
def million_row_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, list[np.ndarray]]]:
    """The run both tests read (neither writes to it): made once, about 2 s of CPU."""
    directory = tmp_path_factory.mktemp("million_rows")
    return directory, noisy_run(directory)


def expected_picture(
    panel: ChartPanel,
    values: list[np.ndarray],
    smoothing: float,
    log_y: bool,
    x_range: tuple[float, float] | None,
) -> str:
    shown = [ema(series, smoothing) if smoothing else series for series in values]
    if log_y:
        shown = [np.where(series > 0, series, np.nan) for series in shown]
    steps = np.arange(ROWS, dtype=np.int64)
    series = [
        Series(steps, series, line.color, steps_sorted=True, marker=line.marker)
        for line, series in zip(panel.lines, shown, strict=True)
    ]
    width, height = panel.plot.size
    request = PlotRequest(width, height, log_y=log_y, x_range=x_range)
    built = ChartCanvas(PlotextFigure()).build(series, request)
    assert built is not None
    return Text.from_ansi(built, no_wrap=True).plain


def shown_picture(panel: ChartPanel) -> str:
    return panel.plot.render().plain  # type: ignore[union-attr]


@pytest.mark.slow  # a million rows per chart: 2 s of CPU
async def test_each_view_key_draws_the_right_picture_at_a_million_rows(
    million_row_run: tuple[Path, dict[str, list[np.ndarray]]],
) -> None:
    directory, data = million_row_run
    app = OcmsApp(directory, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        loss, grad_norm = app.query(ChartPanel)
        await wait_for(pilot, lambda: app.focused is loss and loss.chart.rows == ROWS)
        half = (ROWS - 1) / 2, float(ROWS - 1)

        async def press(key: str, redrawn: ChartPanel) -> None:
            builds, plotext_builds = redrawn.plot.builds, redrawn.plot.plotext_builds
            await pilot.press(key)
            await wait_for(
                pilot, lambda: redrawn.plot.builds > builds and not redrawn.plot.is_stale
            )
            # A new axis, range or size is one plotext build: its canvas width was foreseen.
            assert redrawn.plot.plotext_builds - plotext_builds == redrawn.plot.builds - builds

        # The focused chart's next smoothing is made ahead, off the UI thread.
        await wait_for(
            pilot, lambda: all(loss.prepared_smoothing(index) == 0.6 for index in range(3))
        )
        await press("s", loss)
        assert Text.from_markup(loss.border_title).plain == "loss · ema 0.6 · linear"
        assert all(loss.prepared_smoothing(index) != 0.6 for index in range(3))  # taken
        assert shown_picture(loss) == expected_picture(loss, data["loss"], 0.6, False, None)

        await press("l", loss)
        assert Text.from_markup(loss.border_title).plain == "loss · ema 0.6 · log"
        assert shown_picture(loss) == expected_picture(loss, data["loss"], 0.6, True, None)

        await press("right_square_bracket", grad_norm)
        assert "latest 1/2 of steps" in str(loss.border_subtitle)
        assert shown_picture(loss) == expected_picture(loss, data["loss"], 0.6, True, half)
        assert shown_picture(grad_norm) == expected_picture(
            grad_norm, data["grad_norm"], 0.0, False, half
        )

        await pilot.press("right")
        assert app.focused is grad_norm
        await press("enter", grad_norm)
        assert not loss.display and grad_norm.plot.size.width > 150
        assert shown_picture(grad_norm) == expected_picture(
            grad_norm, data["grad_norm"], 0.0, False, half
        )

        await pilot.press("escape")
        await pilot.pause()
        assert loss.display and grad_norm.plot.size.width < 100
        await press("0", loss)
        assert loss.border_subtitle is None
        assert shown_picture(loss) == expected_picture(loss, data["loss"], 0.6, True, None)
        assert shown_picture(grad_norm) == expected_picture(
            grad_norm, data["grad_norm"], 0.0, False, None
        )


@pytest.mark.slow  # a million rows per chart in a process: 8 s of CPU
def test_quitting_while_smoothings_are_made_ahead_exits_at_once(
    million_row_run: tuple[Path, dict[str, list[np.ndarray]]],
) -> None:
    """The real command in a pty: s and → start a thread smoothing 1,000,000-row series
    0.25 s later; q pressed while such threads run ends the process promptly, every time
    (a thread waiting on a loop that stopped would keep the interpreter from exiting)."""
    directory, _ = million_row_run
    for attempt in range(3):
        terminal = Terminal([sys.executable, "-m", "ocms_tui", str(directory)], SIZE)
        terminal.wait_for("1,000,000 rows", timeout=60)
        terminal.pump(0.5)
        for key in (b"s", b"\x1b[C", b"s")[: attempt + 1]:
            terminal.press(key)
            terminal.pump(0.3)  # the thread started 0.25 s after the key
        started = time.monotonic()
        terminal.press(b"q")
        assert terminal.exit_code(timeout=10) == 0
        assert time.monotonic() - started < 5
