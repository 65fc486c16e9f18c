"""plotext's pixel arithmetic on numpy arrays gives exactly plotext's pixels and limits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ocms_tui.draw import plotext_speedups, plotext_utility_speedups


def test_pixels_asked_again_for_the_same_points_are_the_ones_made_before() -> None:
    """A follower's canvas keys a plan by its lit pixels, then plotext's build asks for the
    same ones: the second time they are not computed again. Equal inputs (other arrays, the
    same numbers) give the very arrays made the first time, read-only; other numbers (or
    other limits) give their own."""
    rng = np.random.default_rng(7)
    values = rng.standard_normal(400)
    limits = [float(values.min()), float(values.max())]
    first = plotext_speedups.matrix_pixels(values, limits, 90)
    again = plotext_speedups.matrix_pixels(values.copy(), list(limits), 90)
    assert again is first and not first.flags.writeable
    expected = plotext_speedups.ORIGINAL_GET_MATRIX_DATA(values.tolist(), limits, 90)
    assert first.tolist() == expected
    assert plotext_speedups.matrix_pixels(values, limits, 91).tolist() != expected
    assert plotext_speedups.matrix_pixels(values, [limits[0], 2 * limits[1]], 90) is not first

    xs = np.arange(400, dtype=np.int64) // 4
    lines = plotext_speedups.line_pixels(xs, first)
    assert plotext_speedups.line_pixels(xs.copy(), first.copy()) is lines
    assert all(not array.flags.writeable for array in lines)
    points = list(range(400))
    reference = plotext_utility_speedups.ORIGINAL_GET_LINES(xs.tolist(), first.tolist(), points)
    assert [array.tolist() for array in lines] == reference
    changed = first.copy()
    changed[-1] += 1
    assert plotext_speedups.line_pixels(xs, changed)[1].tolist()[-1] == int(changed[-1])
    # Fewer than two points: copies, never the caller's own arrays made read-only.
    one = np.array([3], dtype=np.int64)
    plotext_speedups.line_pixels(one, one)
    assert one.flags.writeable


LARGEST = 1.7976931348623157e308
HOSTILE_VALUES = [
    [5.0],
    [-0.0, 0.0, -0.0],
    [-LARGEST, LARGEST],
    [5e-324, 1e-310, 0.0],
    [float(2**63), float(2**63) + 4096.0],
    [3.0] * 40,
]


@pytest.mark.parametrize("values", HOSTILE_VALUES)
@pytest.mark.parametrize("copies", [1, 40])  # below and above the numpy threshold
def test_pixels_and_limits_of_hostile_values_are_plotexts(values: list, copies: int) -> None:
    array = np.array(values * copies, dtype=np.float64)
    want_limits = plotext_speedups.ORIGINAL_GET_LIM(array.tolist())
    got_limits = plotext_speedups.limits([array])
    assert got_limits == want_limits
    assert [math.copysign(1, v) for v in got_limits] == [math.copysign(1, v) for v in want_limits]
    if not math.isfinite(want_limits[1] - want_limits[0]):
        # A span past the largest double: plotext's own mapping fails on it (the y axis is
        # scaled into plotext's safe range before it gets there: draw.axis_range).
        with pytest.raises(ValueError):
            plotext_speedups.ORIGINAL_GET_MATRIX_DATA(array.tolist(), want_limits, 9)
        return
    for bins in (1, 2, 97):
        want = plotext_speedups.ORIGINAL_GET_MATRIX_DATA(array.tolist(), want_limits, bins)
        assert plotext_speedups.matrix_pixels(array, want_limits, bins).tolist() == want


def test_limits_of_nothing_nan_and_infinity_are_plotexts() -> None:
    for arrays in (
        [],
        [np.zeros(0)],
        [np.array([np.nan] * 40)],
        [np.array([1.0] * 39 + [np.inf])],
        [np.array([-np.inf] + [2.0] * 39)],
        [np.array([1.0, 2.0]), np.zeros(0), np.array([3.0] * 40)],
    ):
        joined = np.concatenate(arrays) if arrays else np.zeros(0)
        got = plotext_speedups.limits(arrays)
        want = plotext_speedups.ORIGINAL_GET_LIM(joined.tolist())
        assert np.array_equal(
            np.array(got, dtype=float), np.array(want, dtype=float), equal_nan=True
        )


def test_lines_of_no_point_one_point_and_far_points_are_plotexts() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert [a.tolist() for a in plotext_speedups.line_pixels(empty, empty)] == [[], [], []]
    one = np.array([-7], dtype=np.int64)
    assert [a.tolist() for a in plotext_speedups.line_pixels(one, one)] == [[-7], [-7], [0]]
    xs = np.array([-(10**4), 10**4, 10**4, -3], dtype=np.int64)
    ys = np.array([0, 3, -(10**4), -3], dtype=np.int64)
    want = plotext_utility_speedups.ORIGINAL_GET_LINES(xs.tolist(), ys.tolist(), list(range(4)))
    assert [a.tolist() for a in plotext_speedups.line_pixels(xs, ys)] == want


def test_separate_segments_are_plotexts_lines_each() -> None:
    rng = np.random.default_rng(3)
    x0, y0, x1, y1 = (rng.integers(-50, 50, 60) for _ in range(4))
    got_x, got_y = plotext_speedups.segment_pixels(x0, y0, x1, y1)
    want_x: list[int] = []
    want_y: list[int] = []
    for k in range(60):  # each segment's pixels up to its end, its end after all of them
        line = plotext_utility_speedups.ORIGINAL_GET_LINES(
            [int(x0[k]), int(x1[k])], [int(y0[k]), int(y1[k])], ["braille"] * 2
        )
        want_x += line[0][:-1]
        want_y += line[1][:-1]
    assert got_x.tolist() == want_x + x1.tolist()
    assert got_y.tolist() == want_y + y1.tolist()
    empty = np.zeros(0, dtype=np.int64)
    assert [a.size for a in plotext_speedups.segment_pixels(empty, empty, empty, empty)] == [0, 0]
