"""A plan's key: equal for plans that light the same pixels, different for plans that do
not, and sound on hostile values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from plotext._figure import _figure_class as PlotextFigure

from ocms_tui.draw.plan_key import frame, lit_pixels, plan_key
from ocms_tui.draw.plot_plan import Plan, PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color

LARGEST = 1.7976931348623157e308


def _plan(values: np.ndarray, request: PlotRequest | None = None) -> Plan:
    steps = np.arange(values.size)
    series = [Series(steps, values.astype(np.float64), series_color(0), steps_sorted=True)]
    plan = ChartCanvas(PlotextFigure()).plan(series, request or PlotRequest(50, 12))
    assert plan is not None
    return plan


def test_the_lit_pixels_are_a_set() -> None:
    x, y = np.array([0, 3, 3, 9, -1, 12]), np.array([0, 2, 2, 1, 4, -7])
    order = np.array([5, 2, 0, 4, 1, 3])
    assert lit_pixels(x, y, 10, 5) == lit_pixels(x[order], y[order], 10, 5)
    assert lit_pixels(x, y, 10, 5) != lit_pixels(x[:-1], y[:-1], 10, 5)  # one outside fewer
    assert lit_pixels(x, y, 10, 5) != lit_pixels(x[1:], y[1:], 10, 5)  # one inside fewer
    empty = np.zeros(0, dtype=np.int64)
    assert lit_pixels(empty, empty, 10, 5) == lit_pixels(empty, empty, 10, 5)
    assert lit_pixels(empty, empty, 0, 0) == b""


def test_equal_plans_have_equal_keys_and_other_pixels_other_keys() -> None:
    values = np.sin(np.arange(400) / 9.0)
    plan, same = _plan(values), _plan(values.copy())
    assert plan_key(plan, 44, 9) == plan_key(same, 44, 9)
    other = values.copy()
    other[200] = 0.9 if other[200] < 0 else -0.9  # a new pixel, same y range
    assert plan_key(plan, 44, 9) != plan_key(_plan(other), 44, 9)
    assert plan_key(plan, 44, 9) != plan_key(plan, 45, 9)
    assert plan_key(plan, 44, 9) != plan_key(plan, 44, 10)


def test_the_frame_is_the_key_without_pixels() -> None:
    plan = _plan(np.arange(50.0))
    themed = dataclasses.replace(plan, request=dataclasses.replace(plan.request, theme="pro"))
    assert frame(plan) != frame(themed)
    assert plan_key(plan, 40, 9)[: len(frame(plan))] == frame(plan)


@pytest.mark.parametrize(
    "values",
    [
        [5.0],
        [-0.0, 0.0, -0.0],
        [-LARGEST, LARGEST],
        [1e-310, 5e-324, 0.0],
        [np.nan, 1.0, np.inf, 2.0, -np.inf],
        [float(2**63)] * 40,
    ],
)
@pytest.mark.parametrize("log_y", [False, True])
def test_hostile_values_are_keyed_and_keyed_alike_twice(values: list, log_y: bool) -> None:
    array = np.array(values, dtype=np.float64)
    if log_y:
        array = np.where(array > 0, array, np.nan)
    plan = _plan(array, PlotRequest(30, 8, log_y=log_y))
    for columns, rows in ((26, 5), (1, 1), (0, 0)):
        key = plan_key(plan, columns, rows)
        assert key == plan_key(_plan(array.copy(), PlotRequest(30, 8, log_y=log_y)), columns, rows)
