"""The background layer (runs drawn muted): many series drawn as one set of pixels light
exactly the pixels their own lines would, on linear, scaled and log axes, zoomed or not."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from plotext._figure import _figure_class

from ocms_tui.draw import plotext_speedups
from ocms_tui.draw.layer import layer_columns, layer_pixels
from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas

GREY = (118, 118, 118)


def curves(count: int, rows: int = 2_000, scale: float = 1.0, gaps: bool = False) -> list:
    """Noisy walks, each in its own band of values (lines that never share a cell: plotext
    draws a cell shared by two lines as the last one's, the layer as both)."""
    rng = np.random.default_rng(7)
    steps = np.arange(rows, dtype=np.int64) * 10
    made = []
    for index in range(count):
        values = (1 + index + np.cumsum(rng.standard_normal(rows)) * 0.002) * scale
        if gaps:
            values[rng.random(rows) < 0.5] = np.nan
        made.append((steps, values))
    return made


def pictures(pairs: list, request: PlotRequest, leader: bool) -> tuple[str | None, str | None]:
    def build(layer: bool) -> str | None:
        series = [Series(s, v, GREY, steps_sorted=True, layer=layer) for s, v in pairs]
        if leader:
            steps = pairs[0][0]
            values = 1.5 + 0.3 * np.sin(steps / 2_000.0)
            series.append(Series(steps, values * (pairs[0][1][0] / 1.0), (0, 130, 200), True))
        return ChartCanvas(_figure_class()).build(series, request)

    return build(True), build(False)


@pytest.mark.parametrize("log_y", [False, True])
@pytest.mark.parametrize("leader", [False, True])
@pytest.mark.parametrize("scale", [1.0, 1e-9])  # 1e-9: the axis is scaled (x 1e-9)
def test_the_layer_draws_the_pictures_its_lines_would(
    log_y: bool, leader: bool, scale: float
) -> None:
    layered, separate = pictures(curves(4, scale=scale), PlotRequest(60, 15, log_y=log_y), leader)
    assert layered is not None and layered == separate


def test_zoomed_sparse_and_with_gaps() -> None:
    pairs = curves(3, rows=300, gaps=True)
    request = PlotRequest(70, 14, x_range=(1_000.0, 2_500.0))
    layered, separate = pictures(pairs, request, leader=False)
    assert layered is not None and layered == separate


def test_runs_with_other_steps_are_reduced_apart() -> None:
    first = curves(2, rows=100)
    other = [(np.arange(50, dtype=np.int64) * 7, np.linspace(5.0, 6.0, 50))]
    columns = layer_columns([*first, *other], (0.0, 990.0), 40)
    assert len(columns) == 2  # the two runs sharing steps together, the other apart
    assert columns[0].low.shape[0] == 2 and columns[1].low.shape[0] == 1
    layered, separate = pictures([*first, *other], PlotRequest(50, 12), leader=False)
    assert layered == separate


def test_a_series_with_no_finite_value_draws_nothing_and_breaks_nothing() -> None:
    steps = np.arange(10, dtype=np.int64)
    empty = (steps, np.full(10, np.nan))
    layered, separate = pictures([empty, *curves(1, rows=10)], PlotRequest(40, 10), False)
    assert layered == separate
    only_empty = ChartCanvas(_figure_class()).build(
        [Series(steps, np.full(10, np.nan), GREY, True, layer=True)], PlotRequest(40, 10)
    )
    assert only_empty is None


def test_lines_crossing_and_sharing_cells_light_what_plotexts_lines_would() -> None:
    """Many runs over the same values (cells shared), with gaps and jumps: the layer lights
    each column's span of each run and plotext's own line (segment_pixels, its get_line
    arithmetic) between a run's neighbouring columns, pixel for pixel, listed one by one."""
    rng = np.random.default_rng(11)
    steps = np.arange(400, dtype=np.int64) * 3
    pairs = []
    for _ in range(40):
        values = np.cumsum(rng.standard_normal(400))
        values[rng.random(400) < 0.2] = np.nan
        values[rng.integers(0, 400, 3)] *= 50  # jumps: lines across many rows
        pairs.append((steps, values))
    width, height = 120, 60
    (group,) = layer_columns(pairs, (0.0, 1_197.0), width)
    finite = group.values()
    y_limits = [float(finite.min()), float(finite.max())]
    x, y = layer_pixels([group], lambda values: values, y_limits, width, height)
    lit = set(zip(x.tolist(), y.tolist(), strict=True))

    def row(values: np.ndarray) -> np.ndarray:
        pixels = np.full(values.size, -1)
        present = np.isfinite(values)
        pixels[present] = plotext_speedups.matrix_pixels(values[present], y_limits, height)
        return pixels

    expected: set[tuple[int, int]] = set()
    for series in range(len(pairs)):
        first, low, high, last = (
            row(getattr(group, name)[series]) for name in ("first", "low", "high", "last")
        )
        present = np.flatnonzero(low >= 0)
        for column in present:
            expected |= {(int(group.x[column]), y) for y in range(low[column], high[column] + 1)}
        for before, after in itertools.pairwise(present):
            xs, ys = plotext_speedups.segment_pixels(
                group.x[[before]], last[[before]], group.x[[after]], first[[after]]
            )
            expected |= set(zip(xs.tolist(), ys.tolist(), strict=True))
    assert lit == expected and len(lit) > width


def test_a_log_axis_with_grey_values_at_or_below_zero_draws_what_the_lines_would() -> None:
    """A log view turns values <= 0 into gaps (follow.series.ShownSeries): a grey run
    crossing zero is drawn in pieces, as its own lines would be."""
    pairs = curves(3, rows=500)
    steps, values = pairs[1]
    crossing = values - 2.0  # from above 0 to below it and back
    pairs[1] = (steps, np.where(crossing > 0, crossing, np.nan))
    layered, separate = pictures(pairs, PlotRequest(60, 15, log_y=True), leader=True)
    assert layered is not None and layered == separate


def grey(pairs: list) -> list[Series]:
    return [Series(s, v, GREY, steps_sorted=True, layer=True) for s, v in pairs]


def test_a_view_shown_again_reuses_its_layer_and_new_data_is_reduced_again() -> None:
    pairs = curves(6, rows=800)
    canvas = ChartCanvas(_figure_class())
    cache = canvas.layer_cache
    full, zoomed = PlotRequest(60, 15), PlotRequest(60, 15, x_range=(4_000.0, 7_990.0))
    wider = PlotRequest(90, 15)
    first = canvas.build(grey(pairs), full)
    for request in (zoomed, wider):  # each view's width foreseen once
        canvas.build(grey(pairs), request)
    canvas.build(grey(pairs), full)
    reduced = cache.reductions
    assert canvas.build(grey(pairs), full) == first  # the same view: nothing reduced
    assert canvas.build(grey(pairs), PlotRequest(60, 15, log_y=True)) is not None
    for request in (zoomed, full, wider, full):  # ] then 0, enter then escape
        canvas.build(grey(pairs), request)
    assert cache.reductions == reduced
    assert canvas.build(grey(pairs), full) == first
    # New rows: other arrays (a longer view of the store): reduced again, and drawn right
    # (on a fixed x range: a canvas drawn before keeps some room on its axis).
    fixed = PlotRequest(60, 15, x_range=(0.0, 8_000.0))
    before = canvas.build(grey(pairs), fixed)
    reduced = cache.reductions
    grown = [(np.append(steps, 8_000), np.append(values, 1.5)) for steps, values in pairs]
    after = canvas.build(grey(grown), fixed)
    assert cache.reductions > reduced
    assert after == ChartCanvas(_figure_class()).build(grey(grown), fixed) != before


def test_arrays_freed_and_made_again_at_the_same_address_are_not_taken_for_the_old() -> None:
    """A freed buffer's address is often the next array's: kept columns are only those of
    arrays still alive."""
    canvas = ChartCanvas(_figure_class())
    request = PlotRequest(50, 12)
    steps = np.arange(500, dtype=np.int64)
    for level in (1.0, 5.0, 9.0):
        values = [np.linspace(level, level + index + 1.0, 500) for index in range(4)]
        drawn = canvas.build(grey([(steps, v) for v in values]), request)
        expected = ChartCanvas(_figure_class()).build(grey([(steps, v) for v in values]), request)
        assert drawn == expected
        del values
