"""M4 reduction and debiased EMA: exactness against references, and the same plotext canvas."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from plotext._figure import _figure_class as PlotextFigure

from ocms_tui.draw.downsample import (
    POLARS_EMA_FROM,
    EmaState,
    M4Memo,
    ema,
    ema_extend,
    m4,
    pixel_columns,
)
from ocms_tui.draw.plotting import ChartCanvas, PlotRequest, Series, series_color
from ocms_tui.draw.pyramid import MinMaxPyramid


def reference_m4(x: np.ndarray, y: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """M4 by its definition: one pass per pixel column over a monotonic series."""
    keep = np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) <= 4 * width:
        return x, y
    columns = pixel_columns(x, float(x.min()), float(x.max()), width)
    chosen: set[int] = set()
    for column in np.unique(columns):
        members = np.flatnonzero(columns == column)
        chosen |= {
            int(members[0]),
            int(members[-1]),
            int(members[np.argmin(y[members])]),
            int(members[np.argmax(y[members])]),
        }
    index = sorted(chosen)
    return x[index], y[index]


def tensorboard_ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing loop, written out as in its source."""
    last, finite_count, out = 0.0, 0, []
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        finite_count += 1
        out.append(last / (1 - weight**finite_count))
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("seed", range(20))
def test_m4_equals_the_definition_on_random_monotonic_series(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 6000))
    width = int(rng.integers(1, 300))
    steps = np.sort(rng.integers(0, int(rng.integers(1, 50_000)), size=n))
    values = rng.normal(size=n)
    values[rng.random(n) < 0.2] = np.nan
    got_x, got_y = m4(steps, values, width)
    want_x, want_y = reference_m4(steps, values, width)
    np.testing.assert_array_equal(got_x, want_x)
    np.testing.assert_array_equal(got_y, want_y)
    assert got_x.dtype == steps.dtype


def test_m4_bounds_the_output_and_keeps_every_spike() -> None:
    steps = np.arange(1_000_000)
    values = np.zeros(1_000_000)
    values[[123_457, 654_321]] = [50.0, -70.0]
    x, y = m4(steps, values, 200)
    assert len(x) <= 4 * 200
    assert y.max() == 50.0 and y.min() == -70.0
    assert {123_457, 654_321} <= set(x.tolist())
    assert x[0] == 0 and x[-1] == 999_999


@pytest.mark.parametrize("x_range", [None, (1_000.0, 30_000.0)])
def test_m4_with_sorted_steps_promised_gives_the_same_points(x_range) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    steps = np.sort(rng.integers(0, 50_000, size=40_000))
    values = rng.normal(size=40_000)
    values[rng.random(40_000) < 0.3] = np.nan
    promised = m4(steps, values, 150, x_range=x_range, x_sorted=True)
    checked = m4(steps, values, 150, x_range=x_range)
    np.testing.assert_array_equal(promised[0], checked[0])
    np.testing.assert_array_equal(promised[1], checked[1])


def test_m4_edge_cases() -> None:
    empty_x, empty_y = m4(np.array([], dtype=np.int64), np.array([]), 100)
    assert empty_x.size == 0 and empty_y.size == 0
    x, y = m4(np.arange(10), np.arange(10.0), 0)
    assert x.size == 0 and y.size == 0
    x, y = m4(np.arange(5), np.array([np.nan, 1.0, np.inf, -np.inf, 2.0]), 10)
    assert x.tolist() == [1, 4] and y.tolist() == [1.0, 2.0]
    x, y = m4(np.full(1000, 7), np.arange(1000.0), 3)  # one step: one column
    assert sorted(y.tolist()) == [0.0, 999.0]
    with pytest.raises(ValueError):
        m4(np.arange(3), np.arange(4.0), 10)


def test_m4_x_range_drops_points_outside_and_uses_the_range_for_columns() -> None:
    steps = np.arange(10_000)
    values = np.sin(steps / 100.0)
    x, y = m4(steps, values, 50, x_range=(8_000, 9_999))
    assert y.size == x.size
    assert x.min() == 8_000 and x.max() == 9_999
    assert len(x) <= 200


def test_m4_keeps_a_resumed_run_as_two_passes() -> None:
    # A run crashed at step 10,000 and resumed from a checkpoint at step 8,000.
    steps = np.concatenate([np.arange(0, 10_000), np.arange(8_000, 15_000)])
    values = np.concatenate([np.linspace(5, 1, 10_000), np.linspace(1.5, 0.5, 7_000)])
    x, _y = m4(steps, values, 100)
    backward = np.flatnonzero(np.diff(x) < 0)
    assert len(backward) == 1
    assert x[backward[0]] == 9_999 and x[backward[0] + 1] == 8_000
    assert len(x) <= 2 * 4 * 100


def test_m4_bounds_the_work_when_steps_jump_back_and_forth() -> None:
    rng = np.random.default_rng(3)
    steps = rng.integers(0, 1_000_000, size=200_000)
    values = rng.normal(size=200_000)
    x, y = m4(steps, values, 100)
    assert len(x) <= 4 * 100
    assert y.max() == values.max() and y.min() == values.min()


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.9, 0.99, 0.999])
def test_ema_matches_tensorboard_and_keeps_gaps(weight: float) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(loc=3.0, size=20_000) * np.exp(rng.normal(size=20_000))
    values[rng.random(20_000) < 0.1] = np.nan
    values[7] = np.inf
    smoothed = ema(values, weight)
    want = tensorboard_ema(values, weight)
    assert np.array_equal(np.isfinite(smoothed), np.isfinite(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(smoothed[finite], want[finite], rtol=1e-9, atol=1e-12)


def test_ema_is_debiased_and_rejects_bad_weights() -> None:
    assert ema(np.full(50, 2.5), 0.9) == pytest.approx(np.full(50, 2.5))
    assert ema(np.array([4.0]), 0.99)[0] == pytest.approx(4.0)  # not 0.04: debiased
    assert ema(np.array([]), 0.6).size == 0
    assert np.isnan(ema(np.array([np.nan, np.nan]), 0.6)).all()
    with pytest.raises(ValueError):
        ema(np.arange(3.0), 1.0)


def _build(series: list[Series], request: PlotRequest, reduce: bool) -> str | None:
    return ChartCanvas(PlotextFigure()).build(series, request, reduce=reduce)


def _random_walk(rng: np.random.Generator, n: int) -> np.ndarray:
    walk = np.cumsum(rng.normal(size=n))
    walk[rng.integers(0, n, size=5)] += rng.normal(scale=80, size=5)  # spikes
    return walk


def _cases() -> dict[str, list[Series]]:
    rng = np.random.default_rng(7)
    n = 20_000
    steps = np.arange(n) * 3
    sparse = np.full(n, np.nan)
    sparse[::97] = rng.normal(size=len(sparse[::97]))
    resumed_steps = np.concatenate([np.arange(0, 12_000), np.arange(9_000, 17_000)])
    return {
        "three series with gaps": [
            Series(steps, _random_walk(rng, n), series_color(0), steps_sorted=True),
            Series(steps, np.exp(-steps / 20_000.0) + rng.normal(size=n) * 0.02, series_color(1)),
            Series(steps, sparse, series_color(2), steps_sorted=True),
        ],
        "resumed run": [
            Series(resumed_steps, _random_walk(rng, resumed_steps.size), series_color(0)),
        ],
        "positive values": [
            Series(steps, np.exp(rng.normal(size=n)) * 1e-4, series_color(3), steps_sorted=True),
        ],
    }


@pytest.mark.parametrize("size", [(80, 20), (52, 14), (120, 30)])
@pytest.mark.parametrize("case", list(_cases()))
def test_m4_reduced_series_build_the_same_plotext_canvas(case: str, size: tuple[int, int]) -> None:
    series = _cases()[case]
    request = PlotRequest(width=size[0], height=size[1])
    reduced = _build(series, request, reduce=True)
    assert reduced is not None
    assert reduced == _build(series, request, reduce=False)


def test_same_canvas_on_a_log_axis_and_a_zoomed_x_range() -> None:
    series = _cases()["positive values"]
    for request in (
        PlotRequest(width=80, height=20, log_y=True),
        PlotRequest(width=80, height=20, x_range=(30_000.0, 50_000.0)),
    ):
        reduced = _build(series, request, reduce=True)
        assert reduced is not None
        assert reduced == _build(series, request, reduce=False)


def test_reduction_draws_far_fewer_points() -> None:
    series = _cases()["three series with gaps"]
    canvas = ChartCanvas(PlotextFigure())
    canvas.build(series, PlotRequest(width=80, height=20))
    reduced_points = canvas.points_drawn
    canvas.build(series, PlotRequest(width=80, height=20), reduce=False)
    assert reduced_points * 10 < canvas.points_drawn


@pytest.mark.parametrize("seed", range(3))
def test_m4_with_a_memo_gives_the_same_points_and_reduces_only_changed_columns(seed: int) -> None:
    """A series growing a few rows at a time (gaps, ties, infinities), reduced at a fixed
    range and width with a memo and without: the same points, and per growth only the
    columns whose rows changed are asked of the pyramid. A new range or width, or other
    rows, are reduced in full."""
    rng = np.random.default_rng(40 + seed)
    total = 60_000
    steps = np.cumsum(rng.integers(0, 3, total)).astype(np.int64)
    values = rng.standard_normal(total).round(1)
    values[rng.random(total) < 0.2] = np.nan
    values[rng.random(total) < 0.005] = np.inf
    memo, pyramid, plain_pyramid = M4Memo(), MinMaxPyramid(block=64), MinMaxPyramid(block=64)
    seen, width = 20_000, 97
    x_range = (float(steps[0]), float(steps[-1]) + 50.0)
    calls = 0
    while seen < total:
        seen = min(total, seen + int(rng.integers(1, 400)))
        if rng.random() < 0.05:
            width = int(rng.integers(20, 200))
        if rng.random() < 0.05:
            x_range = (float(rng.integers(0, 1000)), x_range[1])
        rows = (0, seen) if rng.random() < 0.9 else (int(rng.integers(0, 100)), seen)
        before = memo.columns_reduced
        got = m4(steps, values, width, x_range, x_sorted=True, pyramid=pyramid, rows=rows,
                 memo=memo)  # fmt: skip
        want = m4(steps, values, width, x_range, x_sorted=True, pyramid=plain_pyramid,
                  rows=rows)  # fmt: skip
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1], equal_nan=True)
        calls += 1
        assert memo.columns_reduced - before <= width
    # Most growths changed a column or two, not all of them.
    assert memo.columns_reduced < calls * width / 4


def test_series_sharing_their_steps_find_their_columns_once_and_others_do_not() -> None:
    """One picture's series with the same steps array (a chart's four) search their pixel
    columns once; other steps (another chart's, a copy, a list made into an array for the
    call and freed after it, whose address the next one may reuse) search their own, and
    every series gets the points it gets alone."""
    rng = np.random.default_rng(12)
    total, width = 50_000, 90
    steps = np.cumsum(rng.integers(1, 3, total)).astype(np.int64)
    shifted = steps + 7  # same length, other columns
    x_range = (float(steps[0]), float(shifted[-1]))
    shared: dict = {}  # type: ignore[type-arg]
    calls = [(steps, 0), (steps, 1), (steps[:-10], 2), (shifted, 3), (steps.copy(), 4)]
    calls += [(list(shifted), 5), (list(steps), 6)]
    for x, seed in calls:
        values = np.random.default_rng(seed).standard_normal(total)[: len(x)]
        values[::97] = np.nan
        got = m4(x, values, width, x_range, x_sorted=True, pyramid=MinMaxPyramid(),
                 shared_columns=shared)  # fmt: skip
        want = m4(x, values, width, x_range, x_sorted=True, pyramid=MinMaxPyramid())
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1], equal_nan=True)
    # steps and steps[:-10] share an address and differ in their rows: two entries; shifted
    # and the copy one each; the lists none.
    assert len(shared) == 4


def test_m4_of_a_view_shown_again_reduces_no_column() -> None:
    """The same rows, range and width again (a key back to a view, a view made ahead): the
    memo's points, no column asked of the pyramid; rows added past the range change none."""
    rng = np.random.default_rng(9)
    steps = np.arange(200_000, dtype=np.int64)
    values = rng.standard_normal(steps.size)
    memo, pyramid = M4Memo(), MinMaxPyramid(block=64)
    x_range = (50_000.0, 150_000.0)
    first = m4(steps, values, 150, x_range, x_sorted=True, pyramid=pyramid, memo=memo,
               rows=(0, 180_000))  # fmt: skip
    reduced = memo.columns_reduced
    for rows in ((0, 180_000), (0, 200_000)):
        again = m4(steps, values, 150, x_range, x_sorted=True, pyramid=pyramid, memo=memo,
                   rows=rows)  # fmt: skip
        assert np.array_equal(again[0], first[0]) and np.array_equal(again[1], first[1])
        assert memo.columns_reduced == reduced
    fresh = m4(steps, values, 150, x_range, x_sorted=True, pyramid=MinMaxPyramid(block=64))
    assert np.array_equal(fresh[0], first[0]) and np.array_equal(fresh[1], first[1])


@pytest.mark.parametrize("weight", [0.6, 0.9, 0.99, 0.999])
@pytest.mark.parametrize("magnitude", [1.0, 1e300, 1e-310])
def test_an_ema_started_in_polars_and_extended_in_numpy_matches_tensorboard(
    weight: float, magnitude: float
) -> None:
    """A long series started afresh is smoothed by polars (POLARS_EMA_FROM values or more),
    the rows after it by the blockwise numpy code from the state polars left: together they
    give TensorBoard's loop, gaps (NaN, inf, -inf) kept as gaps and left out of the average,
    at ordinary, huge and subnormal magnitudes."""
    rng = np.random.default_rng(int(weight * 1000))
    count = POLARS_EMA_FROM * 3
    values = rng.normal(loc=3.0, size=count) * np.exp(rng.normal(size=count)) * magnitude
    values[rng.random(count) < 0.2] = np.nan
    values[[5, 900, 9000]] = [np.inf, -np.inf, np.inf]
    first = POLARS_EMA_FROM + 17
    head, state = ema_extend(values[:first], weight, EmaState())
    tail, state = ema_extend(values[first:], weight, state)
    smoothed = np.concatenate((head, tail))
    want = tensorboard_ema(values, weight)
    assert np.array_equal(np.isfinite(smoothed), np.isfinite(want))
    assert np.array_equal(np.isnan(smoothed), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(smoothed[finite], want[finite], rtol=1e-9, atol=0)
    assert state.count == int(np.count_nonzero(np.isfinite(values)))


def _views(size: tuple[int, int]) -> list[PlotRequest]:
    """What view keys ask a panel for, in turn: a first draw, the log axis, a zoomed range,
    another size (maximise), the zoom reset."""
    width, height = size
    return [
        PlotRequest(width, height),
        PlotRequest(width, height, log_y=True),
        PlotRequest(width, height, log_y=True, x_range=(9_000.0, 30_000.0)),
        PlotRequest(width + 37, height + 11, x_range=(9_000.0, 30_000.0)),
        PlotRequest(width, height),
    ]


def _with_pyramids(series: list[Series]) -> list[Series]:
    """`series` as the dashboard hands them over: sorted steps with a pyramid kept."""
    return [
        replace(line, pyramid=MinMaxPyramid(), steps_sorted=True)
        for line in series
        if line.steps_sorted
    ]


@pytest.mark.parametrize("size", [(80, 20), (52, 14), (158, 37)])
@pytest.mark.parametrize(
    ("case", "pyramids"),
    [(case, False) for case in _cases()]
    + [(case, True) for case, series in _cases().items() if _with_pyramids(series)],
)
def test_a_view_at_a_new_size_or_axis_builds_plotext_once(
    case: str, size: tuple[int, int], pyramids: bool
) -> None:
    """plotext's canvas width follows from our own y labels, so each new view (size, log
    axis, zoomed range) is one plotext build, not one at a guessed width and another at the
    real one, and draws what the full series draw."""
    linear = _with_pyramids(_cases()[case]) if pyramids else _cases()[case]
    # As the dashboard gives a log axis its series: values <= 0 as gaps, a pyramid of its own.
    logarithmic = [
        replace(
            line,
            values=np.where(line.values > 0, line.values, np.nan),
            pyramid=MinMaxPyramid() if line.pyramid else None,
        )
        for line in linear
    ]
    figure = PlotextFigure()
    canvas = ChartCanvas(figure)
    for request in _views(size):
        series = logarithmic if request.log_y else linear
        before = canvas.plotext_builds
        plan = canvas.plan(series, request)
        assert plan is not None
        picture = canvas.draw(plan, series)
        full = _build(series, request, reduce=False)
        if picture is None:  # nothing drawable in this view (e.g. a log axis of negatives)
            assert full is None
            continue
        assert canvas.plotext_builds - before == 1, request
        assert len(figure.monitor.matrix.Cols_canvas) == plan.canvas_columns
        assert picture.ansi() == full


def test_a_wrong_frame_is_corrected_once_and_remembered() -> None:
    """Should plotext's frame not be the width foreseen (the read-back is the fallback), the
    first build is done again at the real canvas width, and the next views build once."""
    series = _cases()["positive values"]
    canvas = ChartCanvas(PlotextFigure())
    canvas._frame_columns = 5  # a frame plotext does not draw
    requests = _views((80, 20))
    builds = []
    for request in requests:
        before = canvas.plotext_builds
        assert canvas.build(series, request) == _build(series, request, reduce=False)
        builds.append(canvas.plotext_builds - before)
    assert builds[0] == 2
    assert builds[1:] == [1] * (len(requests) - 1)


class _CountingPyramid(MinMaxPyramid):
    """A real pyramid that counts the pixel columns it is asked about."""

    columns_asked = 0

    def m4_indices(self, values: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        self.columns_asked += len(starts)
        return super().m4_indices(values, starts, stops)


def test_a_view_shown_again_reduces_nothing_again() -> None:
    """Zoom reset and restore come back to a view drawn before: its M4 columns are kept, so
    the pyramid is asked nothing, and the picture is still the full series'."""
    rng = np.random.default_rng(3)
    steps = np.arange(200_000)
    pyramid = _CountingPyramid()
    series = [Series(steps, _random_walk(rng, steps.size), series_color(0), True, pyramid=pyramid)]
    canvas = ChartCanvas(PlotextFigure())
    whole, zoomed = PlotRequest(80, 20), PlotRequest(80, 20, x_range=(150_000.0, 199_999.0))
    maximised = PlotRequest(150, 40)
    for request in (whole, zoomed, maximised):
        canvas.build(series, request)
    for request in (whole, zoomed, maximised):
        asked = pyramid.columns_asked
        assert canvas.build(series, request) == _build(series, request, reduce=False)
        assert pyramid.columns_asked == asked


def test_a_prepared_view_is_drawn_without_reducing_again() -> None:
    """A view prepared ahead (the next zoom) is then drawn with one plotext build, asking the
    pyramid nothing, and draws what the full series draw."""
    rng = np.random.default_rng(5)
    steps = np.arange(300_000)
    pyramid = _CountingPyramid()
    series = [Series(steps, _random_walk(rng, steps.size), series_color(0), True, pyramid=pyramid)]
    canvas = ChartCanvas(PlotextFigure())
    canvas.build(series, PlotRequest(80, 20))
    for zoom in (1, 2, 3):
        zoomed = PlotRequest(80, 20, x_range=(299_999 - 299_999 / 2**zoom, 299_999.0))
        canvas.prepare(series, zoomed)
        asked, builds = pyramid.columns_asked, canvas.plotext_builds
        assert canvas.build(series, zoomed) == _build(series, zoomed, reduce=False)
        assert pyramid.columns_asked == asked
        assert canvas.plotext_builds == builds + 1
