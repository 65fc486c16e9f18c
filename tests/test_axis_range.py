"""Y axes for any finite doubles: pure rules, then real plotext builds of extreme ranges."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from plotext._figure import _figure_class as PlotextFigure

from ocms_tui.draw.axis_range import (
    PLOTEXT_SAFE_MAGNITUDES,
    AxisMode,
    power_label,
    scale_by_power_of_ten,
    scaled_label,
    y_axis,
)
from ocms_tui.draw.downsample import ema
from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color
from ocms_tui.follow.views import ShownSeries

LARGEST = 1.7976931348623157e308
SMALLEST = 5e-324

# Value sets that broke plotext's own ticks (OverflowError, ValueError) before this module.
EXTREME = {
    "plus-minus-1e307": [1e307, -1e307],
    "range-overflows-max-min": [LARGEST, -LARGEST],
    "largest-only": [LARGEST, 1e307],
    "subnormal": [1e-310, SMALLEST],
    "smallest-constant": [SMALLEST, SMALLEST],
    "zero-and-smallest": [0.0, SMALLEST],
    "every-magnitude": [SMALLEST, 1e-300, 1.0, 1e300, LARGEST],
    "huge-offset-tiny-span": [1e307, 1e307 * (1 + 2**-52), 1e307 * (1 + 2**-51)],
}


def arrays(values: list[float]) -> list[np.ndarray]:
    return [np.array(values, dtype=np.float64)]


def test_ordinary_ranges_are_left_to_plotext() -> None:
    for values in ([0.5, 0.25], [-3.0, 1e12], [0.0, 0.0], [1e-15, 1e15]):
        axis = y_axis(arrays(values), log_y=False)
        assert axis.mode is AxisMode.NATIVE and axis.ticks == ()
        assert axis.drawn(np.array(values)).tolist() == values
    assert y_axis(arrays([1e-3, 10.0]), log_y=True).plotext_log
    assert y_axis([], log_y=False).mode is AxisMode.NATIVE


@pytest.mark.parametrize("case", sorted(EXTREME))
@pytest.mark.parametrize("log_y", [False, True])
def test_extreme_values_are_drawn_inside_plotexts_safe_range(case: str, log_y: bool) -> None:
    values = np.array(EXTREME[case])
    if log_y:
        values = values[values > 0]
    axis = y_axis([values], log_y)
    assert axis.mode is (AxisMode.LOG10 if log_y else AxisMode.SCALED)
    assert not axis.plotext_log, "plotext's own log scale overflows on these"
    drawn = axis.drawn(values)
    assert np.isfinite(drawn).all()
    magnitudes = np.abs(drawn[drawn != 0])
    low, high = PLOTEXT_SAFE_MAGNITUDES
    assert ((magnitudes >= low) & (magnitudes <= high)).all()
    assert len(axis.ticks) == len(axis.labels) >= 1
    assert all(math.isfinite(tick) for tick in axis.ticks)
    assert len(set(axis.labels)) == len(axis.labels), axis.labels


def test_labels_name_the_real_values() -> None:
    axis = y_axis(arrays([1e307, -1e307]), log_y=False)
    assert axis.exponent == 307
    assert axis.labels == ("-1e307", "-5e306", "0", "5e306", "1e307")
    tiny = y_axis(arrays([1e-310, SMALLEST]), log_y=False)
    assert tiny.labels == ("0", "2.5e-311", "5e-311", "7.5e-311", "1e-310")
    spanning = y_axis(arrays([SMALLEST, LARGEST]), log_y=True)
    assert spanning.labels == ("1e-200", "1", "1e200")


def test_a_log_axis_prefers_whole_powers_of_ten() -> None:
    axis = y_axis(arrays([1e307, LARGEST]), log_y=True)
    assert axis.labels == ("1e307", "1e308")
    assert axis.ticks == (307.0, 308.0)


def test_scaled_labels_never_overflow_and_read_plainly_at_ordinary_sizes() -> None:
    assert scaled_label(1.7976931348623157, 308, digits=5) == "1.7977e308"
    assert scaled_label(-2.5, -311) == "-2.5e-311"
    assert scaled_label(0.0, 307) == "0"
    assert scaled_label(2.5, 2) == "250"
    assert scaled_label(1.25, -3) == "0.00125"
    assert power_label(306.5, 2) == "3.2e306"
    assert power_label(-323.0) == "1e-323"


def test_scaling_by_a_power_of_ten_keeps_the_factor_finite() -> None:
    scaled = scale_by_power_of_ten(np.array([SMALLEST, 1e-310]), 323)
    np.testing.assert_allclose(scaled, [0.494065645841247, 1e13], rtol=1e-12)
    assert scale_by_power_of_ten(np.array([LARGEST]), -308)[0] == pytest.approx(1.7976931348623157)


def test_smoothing_extreme_values_stays_finite_and_exact_in_scale() -> None:
    for values in ([1e307, -1e307, LARGEST, LARGEST], [SMALLEST, 1e-310, SMALLEST]):
        smoothed = ema(np.array(values), 0.6)
        assert np.isfinite(smoothed).all(), smoothed
        assert smoothed[0] == values[0]  # debiased: the first value is itself
        assert min(values) <= smoothed.min() and smoothed.max() <= max(values)


def build(values: list[float], log_y: bool, smoothing: float, reduce: bool) -> str | None:
    steps = np.arange(1, len(values) + 1, dtype=np.int64)
    shown = ShownSeries(smoothing, log_y).values(np.array(values, dtype=np.float64))
    series = [Series(steps, shown, series_color(0), steps_sorted=True)]
    return ChartCanvas(PlotextFigure()).build(series, PlotRequest(60, 15, log_y=log_y), reduce)


@pytest.mark.parametrize("case", sorted(EXTREME))
@pytest.mark.parametrize("log_y", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.6])
def test_real_plotext_draws_every_extreme_case(case: str, log_y: bool, smoothing: float) -> None:
    values = EXTREME[case]
    for reduce in (True, False):
        text = build(values, log_y, smoothing, reduce)
        if log_y and not any(value > 0 for value in values):
            assert text is None
            continue
        assert text is not None
        assert any("\u2801" <= char <= "\u28ff" for char in text), "braille dots drawn"


def test_real_plotext_draws_random_finite_doubles() -> None:
    rng = random.Random(13)
    for _ in range(150):
        exponents = [rng.uniform(-323, 308) for _ in range(rng.randint(1, 6))]
        values = [rng.choice((1, -1)) * 10**exponent for exponent in exponents]
        values = [value for value in values if math.isfinite(value)]
        for log_y in (False, True):
            text = build(values, log_y, 0.0, reduce=True)
            drawable = [value for value in values if value > 0] if log_y else values
            assert (text is not None) == bool(drawable), values


def test_a_log_axis_with_nothing_positive_draws_nothing_instead_of_failing() -> None:
    # plotext raised TypeError on an empty log axis (a chart of only negative values).
    assert build([-1.0, -2.0, -3.0], log_y=True, smoothing=0.0, reduce=True) is None
    assert build([-1e307, 0.0], log_y=True, smoothing=0.6, reduce=False) is None
