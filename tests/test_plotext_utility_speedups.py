"""The numpy helpers swapped into `plotext._utility` return exactly what plotext's own return."""

from __future__ import annotations

import math
import random

import pytest
from plotext_support import random_points

from ocms_tui.draw import plotext_speedups, plotext_utility_speedups


@pytest.mark.slow  # plotext's own code on 150 random lines: about 5 s
def test_lines_and_dot_groups_match_plotext_on_random_points() -> None:
    rng = random.Random(7)
    for _ in range(150):
        x, y = random_points(rng)
        markers = ["braille"] * len(x)
        colors = [(rng.randint(0, 2), 0, 0) for _ in x]
        styles = ["default"] * len(x)
        expected = plotext_utility_speedups.ORIGINAL_GET_LINES(x, y, markers, colors, styles)
        assert plotext_utility_speedups.get_lines(x, y, markers, colors, styles) == expected
        line_x, line_y = expected[0], expected[1]
        for across, down in ((2, 4), (2, 2), (1, 1)):
            factors = ([across] * len(line_x), [down] * len(line_x))
            assert plotext_utility_speedups.hd_group(
                line_x, line_y, *factors
            ) == plotext_utility_speedups.ORIGINAL_HD_GROUP(line_x, line_y, *factors)


def test_unusual_input_goes_to_plotexts_own_code() -> None:
    # A None gap, one point, a float coordinate: the cases the numpy versions do not handle.
    assert plotext_utility_speedups.get_lines([1, None, 3], [1, 2, 3], ["a"] * 3) == (
        plotext_utility_speedups.ORIGINAL_GET_LINES([1, None, 3], [1, 2, 3], ["a"] * 3)
    )
    assert plotext_utility_speedups.get_lines([4], [5], ["a"]) == [[4], [5], ["a"]]
    floats = ([0, 1.0, 5], [0, 3, 9], [2, 2, 2], [4, 4, 4])
    assert plotext_utility_speedups.hd_group(*floats) == plotext_utility_speedups.ORIGINAL_HD_GROUP(
        *floats
    )


def test_pixels_and_brushing_match_plotext() -> None:
    rng = random.Random(3)
    for _ in range(200):
        bins = rng.randint(2, 400)
        low = rng.uniform(-1e6, 1e6)
        high = low + rng.choice((1e-3, 1.0, 7.0, 1e5))
        count = rng.randint(1, 300)
        data = [rng.uniform(low, high) for _ in range(count)]
        # Values on the pixel edges, where half-up rounding decides: the hard cases.
        data += [low + (high - low) * (k + 0.5) / (bins - 1) for k in range(bins - 1)]
        data += [low, high]
        expected = plotext_speedups.ORIGINAL_GET_MATRIX_DATA(data, [low, high], bins)
        assert plotext_utility_speedups.get_matrix_data(data, [low, high], bins) == expected
        x, y = random_points(rng)
        x, y = x * 3, y * 3  # repeats
        constant = (["braille"] * len(x), [(1, 2, 3)] * len(x), ["default"] * len(x))
        got = plotext_utility_speedups.brush(x, y, *constant)
        want = plotext_utility_speedups.ORIGINAL_BRUSH(x, y, *constant)
        assert sorted(zip(*got, strict=True)) == sorted(zip(*want, strict=True))
        assert len(got[0]) == len(want[0])


def test_outsiders_limits_and_joins_match_plotext() -> None:
    rng = random.Random(11)
    for _ in range(200):
        x, y = random_points(rng)
        x, y = x * 2, y * 2
        width, height = rng.randint(1, 60), rng.randint(1, 60)
        markers = [rng.choice("ab") for _ in x]
        # Colours and styles may be longer than the points (plotext passes them so).
        longer = [(1, 2, 3)] * (len(x) + rng.randint(0, 5))
        got = plotext_utility_speedups.remove_outsiders(
            x, y, width, height, markers, longer, longer
        )
        want = plotext_utility_speedups.ORIGINAL_REMOVE_OUTSIDERS(
            x, y, width, height, markers, longer, longer
        )
        assert got == want
        # Arrays handed on from an earlier helper give the same result as plain lists.
        pixel_x = plotext_utility_speedups.get_matrix_data(
            [float(value) for value in x], [-200.0, 200.0], 400
        )
        pixel_y = plotext_utility_speedups.get_matrix_data(
            [float(value) for value in y], [-200.0, 200.0], 400
        )
        assert plotext_utility_speedups.remove_outsiders(
            pixel_x, pixel_y, 250, 250, markers, longer
        ) == plotext_utility_speedups.ORIGINAL_REMOVE_OUTSIDERS(
            list(pixel_x), list(pixel_y), 250, 250, markers, longer
        )
        values = [rng.uniform(-5, 5) for _ in range(rng.randint(0, 80))]
        values += rng.choice(([], [0.0], [-0.0, 0.0], [float("nan")], [float("inf")], [1]))
        if rng.random() < 0.2:
            values = [2.5] * len(values)  # all equal: plotext spreads the limits
        got_lim = plotext_utility_speedups.get_lim(values)
        want_lim = plotext_speedups.ORIGINAL_GET_LIM(values)
        assert got_lim == want_lim
        assert [math.copysign(1, v) for v in got_lim] == [math.copysign(1, v) for v in want_lim]
        nested = [values, [x, [y, 3]], 7, [], "ab"]
        assert plotext_utility_speedups.join(nested) == plotext_utility_speedups.ORIGINAL_JOIN(
            nested
        )
