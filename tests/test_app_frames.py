"""The dashboard draws frames handed to it: hand-made states, no reading thread, no disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from app_support import HandSession, chart_frame, hand_run, hand_state, screen_text, wait_for

from ocms_tui.draw.downsample import ema
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel

SIZE = (120, 36)


def falling(rows: int, start: float = 10.0) -> list[float]:
    return [start - step / 100 for step in range(rows)]


def drawn_values(panel: ChartPanel) -> list[np.ndarray]:
    series, _, _ = panel._series_for_plot()
    return [np.asarray(line.values) for line in series]


async def test_newer_frames_of_a_chart_update_its_panel_in_place(tmp_path: Path) -> None:
    session = HandSession([tmp_path])
    app = OcmsApp(tmp_path, session=session)
    first = chart_frame("loss", {"loss": falling(100)})
    async with app.run_test(size=SIZE) as pilot:
        session.show(hand_state(1, [hand_run(tmp_path, first)]))
        await wait_for(pilot, lambda: app.idle and "step 99 · 100 rows" in screen_text(app))
        panel = app.query_one(ChartPanel)
        longer = chart_frame("loss", {"loss": falling(150)}, generation=first.generation)
        session.show(hand_state(2, [hand_run(tmp_path, longer)]))
        await wait_for(pilot, lambda: "step 149 · 150 rows" in screen_text(app))
        assert app.query_one(ChartPanel) is panel  # new rows: the same panel, no new layout
        assert panel.chart is longer and first.rows == 100 and len(first.steps) == 100
        # A frame that did not change is not drawn again.
        builds = panel.plot.builds
        session.show(hand_state(3, [hand_run(tmp_path, longer)], changed=()))
        await wait_for(pilot, lambda: app.idle and app.state is not None and app.state.serial == 3)
        await pilot.pause()
        assert panel.plot.builds == builds


async def test_a_smoothing_is_view_state_made_again_for_new_rows(tmp_path: Path) -> None:
    session = HandSession([tmp_path])
    app = OcmsApp(tmp_path, session=session)
    first = chart_frame("loss", {"loss": falling(300)})
    async with app.run_test(size=SIZE) as pilot:
        session.show(hand_state(1, [hand_run(tmp_path, first)]))
        await wait_for(pilot, lambda: app.idle and "300 rows" in screen_text(app))
        panel = app.query_one(ChartPanel)
        panel.focus()
        await pilot.press("s")
        await wait_for(pilot, lambda: panel.view.smoothing == 0.6 and not panel.plot.is_stale)
        assert np.allclose(drawn_values(panel)[0], ema(first.values[0], 0.6))
        smoothed = app.shared.series.shown(first, 0, 0.6, False)
        # The file was rewritten: other rows, a new generation. The view starts afresh and
        # forgets what it made of rows no frame shows any more.
        reset = chart_frame("loss", {"loss": [-value for value in falling(40)]})
        session.show(hand_state(2, [hand_run(tmp_path, reset)]))
        await wait_for(pilot, lambda: "40 rows" in screen_text(app) and not panel.plot.is_stale)
        assert np.allclose(drawn_values(panel)[0], ema(reset.values[0], 0.6))
        assert app.shared.series.shown(first, 0, 0.6, False) is not smoothed


async def test_a_chart_given_another_series_is_laid_out_anew(tmp_path: Path) -> None:
    session = HandSession([tmp_path])
    app = OcmsApp(tmp_path, session=session)
    async with app.run_test(size=SIZE) as pilot:
        narrow = chart_frame("loss", {"loss": falling(20)})
        session.show(hand_state(1, [hand_run(tmp_path, narrow)]))
        await wait_for(pilot, lambda: app.idle and len(app.grid.panels) == 1)
        old = app.grid.panels[0]
        wide = chart_frame("loss", {"loss": falling(20), "eval": falling(20, 12.0)})
        session.show(hand_state(2, [hand_run(tmp_path, wide)]))
        await wait_for(pilot, lambda: app.idle and app.grid.panels[0] is not old)
        assert [line.label for line in app.grid.panels[0].lines] == ["loss", "eval"]
        await wait_for(pilot, lambda: "eval" in screen_text(app))
