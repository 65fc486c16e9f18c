"""A run that starts again (issue 18.4): steps that go back split a series into passes; each
pass is drawn as its own line, so no line is drawn backwards, and the legend's numbers are
the latest pass's, which the header names."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from app_support import append_rows, wait_for, wait_for_text, write_layout

from ocms_tui.draw.downsample import m4
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.draw.series_style import EARLIER_PASS_MARKER, MARKER
from ocms_tui.follow.series import (
    MAX_KEPT_PASSES,
    SeriesStore,
    pass_bounds,
    step_regressions,
    step_span,
)
from ocms_tui.format.parse import ParsedRows
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.chart_panel import ChartPanel


def test_step_regressions_are_found_within_and_across_chunks() -> None:
    steps = np.array([0, 1, 2, 2, 1, 5, 0, 0, 3], dtype=np.int64)
    assert step_regressions(steps, None).tolist() == [4, 6]  # equal steps are no restart
    assert step_regressions(steps, 7).tolist() == [0, 4, 6]  # below the last chunk's end
    assert step_regressions(steps, 0).tolist() == [4, 6]
    assert step_regressions(np.zeros(0, dtype=np.int64), 5).tolist() == []


def test_pass_bounds_cover_every_row_once() -> None:
    assert pass_bounds(10, ()) == [(0, 10)]
    assert pass_bounds(10, (4, 7)) == [(0, 4), (4, 7), (7, 10)]
    # A restart the reader has not published rows for yet is left out.
    assert pass_bounds(5, (4, 7)) == [(0, 4), (4, 5)]
    assert pass_bounds(0, ()) == [(0, 0)]


def test_only_the_latest_passes_are_kept_apart() -> None:
    assert pass_bounds(10, (4, 7), earlier_dropped=True) == [(4, 7), (7, 10)]
    assert pass_bounds(3, (4, 7), earlier_dropped=True) == []  # none of them read yet
    store = SeriesStore(1)
    # A hostile file: the steps go back on every other row, 20,000 times.
    steps = np.tile(np.array([1, 0], dtype=np.int64), 20_000)
    for chunk in range(0, steps.size, 7_000):
        part = steps[chunk : chunk + 7_000]
        append(store, part.tolist(), [1.0] * part.size)
    assert store.passes == 20_001 and store.earlier_passes_dropped
    assert len(store.restarts) == MAX_KEPT_PASSES - 1
    assert store.restarts[-1] == steps.size - 1
    assert len(pass_bounds(store.rows, store.restarts, True)) == MAX_KEPT_PASSES - 1


def test_step_span_is_the_extent_of_the_passes_drawn() -> None:
    """The zoom's x range comes from each pass's ends: every row's min and max while all
    passes are drawn, those of the drawn rows when earlier passes were dropped."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        chunks = [
            np.sort(rng.integers(-50, 1_000, size=int(rng.integers(1, 30))))
            for _ in range(int(rng.integers(1, 12)))
        ]
        steps = np.concatenate(chunks).astype(np.int64)
        store = SeriesStore(1)
        append(store, steps.tolist(), [1.0] * steps.size)
        drawn = pass_bounds(store.rows, store.restarts, store.earlier_passes_dropped)
        rows = np.concatenate([steps[start:stop] for start, stop in drawn])
        span = step_span(store.steps(), store.restarts, store.earlier_passes_dropped)
        assert span == (float(rows.min()), float(rows.max()))
        if not store.earlier_passes_dropped:
            assert span == (float(steps.min()), float(steps.max()))
    assert step_span(np.zeros(0, dtype=np.int64), ()) is None
    assert step_span(np.arange(3, dtype=np.int64), (4, 7), earlier_dropped=True) is None


def append(store: SeriesStore, steps: list[int], values: list[float]) -> None:
    store.append(ParsedRows(np.array(steps, dtype=np.int64), [np.array(values)], len(steps)))


def test_store_numbers_describe_the_latest_pass() -> None:
    store = SeriesStore(1)
    append(store, list(range(100)), [float(100 - step) for step in range(100)])
    assert store.passes == 1 and store.stats(0).minimum == 1.0
    # Re-run into the same directory: steps 0.. again, in a chunk of its own and within one.
    append(store, [0, 1, 2], [50.0, 60.0, 55.0])
    assert store.restarts == (100,) and store.passes == 2
    stats = store.stats(0)
    assert (stats.latest, stats.minimum, stats.maximum, stats.count) == (55.0, 50.0, 60.0, 3)
    append(store, [3, 4, 1, 2], [70.0, 80.0, 7.0, 8.0])
    assert store.restarts == (100, 105)
    stats = store.stats(0)
    assert (stats.latest, stats.minimum, stats.maximum, stats.latest_step) == (8.0, 7.0, 8.0, 2)
    assert pass_bounds(store.rows, store.restarts) == [(0, 100), (100, 105), (105, 107)]


def test_m4_of_one_pass_with_the_whole_series_pyramid() -> None:
    """Each pass is reduced by the one pyramid of the whole series (indices stay global)."""
    rng = np.random.default_rng(2)
    first = np.arange(30_000, dtype=np.int64)
    steps = np.concatenate((first, first[:20_000]))
    values = rng.standard_normal(steps.size)
    pyramid = MinMaxPyramid(block=64)
    for start, stop in pass_bounds(steps.size, tuple(step_regressions(steps, None).tolist())):
        extent = (0.0, 29_999.0)
        got = m4(steps, values, 200, extent, x_sorted=True, pyramid=pyramid, rows=(start, stop))
        expected = m4(steps[start:stop], values[start:stop], 200, extent, x_sorted=True)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        assert np.all(np.diff(got[0]) >= 0)


async def test_a_rerun_into_the_same_directory_never_draws_a_line_backwards(
    tmp_path: Path,
) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    append_rows(tmp_path / "loss.csv", [f"{step},{10.0 - step / 20}" for step in range(100)])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "step 99 · 100 rows")
        # The script runs again into the same directory: steps 0-29 once more.
        append_rows(tmp_path / "loss.csv", [f"{step},{20.0 + step}" for step in range(30)])
        await wait_for_text(pilot, "pass 2 · step 29 · 130 rows", "run restarted")
        panel = app.query_one(ChartPanel)
        await wait_for(pilot, lambda: not panel.plot.is_stale)
        # The numbers are those of the second pass only.
        stats = panel.chart.stats[0]
        assert (stats.latest, stats.minimum, stats.maximum) == (49.0, 20.0, 49.0)
        # What plotext was handed: one line per pass, none with a step going back.
        monitor = panel.plot.plt.monitor
        lines = [list(x) for x in monitor.x]
        assert len(lines) == 2
        assert all(all(b >= a for a, b in itertools.pairwise(x)) for x in lines)
        assert lines[1][0] == 0 and lines[1][-1] == 29  # the latest pass, drawn last
        assert [marker[0] for marker in monitor.marker] == [EARLIER_PASS_MARKER, MARKER]


async def test_a_file_that_restarts_on_every_other_row_draws_a_few_lines(tmp_path: Path) -> None:
    """Hostile: 10,000 restarts. The panel draws the latest passes only, and says so."""
    write_layout(tmp_path, {"loss": ["loss"]})
    append_rows(tmp_path / "loss.csv", [f"{step % 2},{step / 100}" for step in range(20_000)])
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_text(pilot, "pass 10,000", f"latest {MAX_KEPT_PASSES} of 10,000 passes")
        panel = app.query_one(ChartPanel)
        await wait_for(pilot, lambda: not panel.plot.is_stale)
        assert len(panel.plot.plt.monitor.x) <= MAX_KEPT_PASSES
        assert panel.chart.stats[0].latest == 199.99
