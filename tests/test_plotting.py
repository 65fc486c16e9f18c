"""The chart canvas: M4-reduced series draw the very picture the full series draw, each new
view is one plotext build, views shown again or prepared ahead reduce nothing again, and a
plan said to be on screen builds exactly the picture on screen."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from plotext._figure import _figure_class as PlotextFigure
from plotext_support import followed_series

from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.draw.series_style import series_color


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


@pytest.mark.parametrize(("rows", "log_y"), [(300, False), (20_000, False), (20_000, True)])
def test_a_plan_said_to_be_on_screen_builds_exactly_the_picture_on_screen(
    rows: int, log_y: bool
) -> None:
    """Rows appended a few at a time, now and then a new highest value: whenever the canvas
    says the plan is what it shows, a real build of that plan gives the very same text."""
    rng = np.random.default_rng(rows)
    total = rows + 400
    steps = np.arange(total, dtype=np.int64)
    noisy = np.abs(1.0 + 0.3 * rng.standard_normal(total)) + 0.01
    walk = np.abs(np.cumsum(rng.standard_normal(total)) * 0.01) + 0.5
    sparse = np.where(steps % 50 == 0, 1.5 + rng.random(total), np.nan)
    markers = ("braille", "braille", "+")
    request = PlotRequest(51, 14, log_y=log_y, theme="textual-dark")
    canvas, reference = ChartCanvas(PlotextFigure()), ChartCanvas(PlotextFigure())
    shown = None
    skipped = built = spikes_seen = 0
    end = rows
    while end < total:
        end = min(total, end + int(rng.integers(1, 6)))
        spike = rng.random() < 0.1
        if spike:
            noisy[end - 1] = 10.0 * (1 + spikes_seen)  # a new highest value: a new picture
            spikes_seen += 1
        series = followed_series(steps[:end], [noisy[:end], walk[:end], sparse[:end]], markers)
        plan = canvas.plan(series, request)
        assert plan is not None
        if shown is not None and canvas.shows(plan):
            assert not spike
            skipped += 1
            rebuilt = reference.draw(plan, series)
            assert rebuilt is not None and rebuilt.ansi() == shown
        else:
            picture = canvas.draw(plan, series)
            assert picture is not None
            shown = picture.ansi()
            built += 1
        assert canvas.drawn is not None and canvas.drawn.data_through == end - 1
    assert built > spikes_seen
    if rows >= 20_000:  # most new rows of a long run light no other pixel
        assert skipped > built


LARGEST = 1.7976931348623157e308


@pytest.mark.parametrize(
    ("steps", "values"),
    [
        ([], []),  # no rows
        ([4], [1.0]),  # one point
        ([0, 1, 2], [np.nan, np.nan, np.nan]),  # only gaps
        ([0, 1, 2], [np.inf, -np.inf, np.inf]),  # nothing finite
        ([0, 1, 2, 3], [-0.0, 0.0, -0.0, 0.0]),
        ([0, 1, 2, 3], [-LARGEST, LARGEST, -LARGEST, LARGEST]),
        ([0, 1, 2], [5e-324, 1e-310, 0.0]),
        ([-(2**62), 0, 2**62], [1.0, 2.0, 3.0]),  # huge steps
        ([7, 7, 7, 7], [1.0, 5.0, 2.0, 4.0]),  # every row at one step
        (list(range(5000)), [np.nan if i % 3 else 1e308 * (-1) ** i for i in range(5000)]),
    ],
)
@pytest.mark.parametrize("log_y", [False, True])
@pytest.mark.parametrize("size", [(60, 16), (3, 2), (1, 1)])
def test_hostile_values_draw_what_the_full_series_draw_or_nothing(
    steps: list, values: list, log_y: bool, size: tuple[int, int]
) -> None:
    """Reduced or not, hostile series build the same text, or both nothing; never fail."""
    array = np.array(values, dtype=np.float64)
    if log_y:  # as the dashboard gives a log axis its series
        array = np.where(array > 0, array, np.nan)
    series = [
        Series(np.array(steps, dtype=np.int64), array, series_color(0), steps_sorted=sorted_)
        for sorted_ in (True,)
    ]
    series.append(replace(series[0], pyramid=MinMaxPyramid(), color=series_color(1)))
    request = PlotRequest(*size, log_y=log_y)
    reduced = _build(series, request, reduce=True)
    assert reduced == _build(series, request, reduce=False)
    if not np.isfinite(array).any():
        assert reduced is None
