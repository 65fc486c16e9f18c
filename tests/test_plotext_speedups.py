"""The numpy helpers swapped into plotext return exactly what plotext's own return."""

from __future__ import annotations

import random

import numpy as np
import pytest
from plotext._figure import _figure_class

from ocms_tui import plotext_speedups
from ocms_tui.plotting import ChartCanvas, PlotRequest, Series, series_color


def _random_points(rng: random.Random) -> tuple[list[int], list[int]]:
    count = rng.randint(2, 80)
    # Negative and repeated coordinates, vertical and horizontal runs: all of a line's cases.
    span = rng.choice((1, 3, 20, 120))
    return (
        [rng.randint(-span, span) for _ in range(count)],
        [rng.randint(-span, span) for _ in range(count)],
    )


@pytest.mark.slow  # plotext's own code on 150 random lines: about 5 s
def test_lines_and_dot_groups_match_plotext_on_random_points() -> None:
    rng = random.Random(7)
    for _ in range(150):
        x, y = _random_points(rng)
        markers = ["braille"] * len(x)
        colors = [(rng.randint(0, 2), 0, 0) for _ in x]
        styles = ["default"] * len(x)
        expected = plotext_speedups._ORIGINAL_GET_LINES(x, y, markers, colors, styles)
        assert plotext_speedups.get_lines(x, y, markers, colors, styles) == expected
        line_x, line_y = expected[0], expected[1]
        for across, down in ((2, 4), (2, 2), (1, 1)):
            factors = ([across] * len(line_x), [down] * len(line_x))
            assert plotext_speedups.hd_group(
                line_x, line_y, *factors
            ) == plotext_speedups._ORIGINAL_HD_GROUP(line_x, line_y, *factors)


def test_unusual_input_goes_to_plotexts_own_code() -> None:
    # A None gap, one point, a float coordinate: the cases the numpy versions do not handle.
    assert plotext_speedups.get_lines([1, None, 3], [1, 2, 3], ["a"] * 3) == (
        plotext_speedups._ORIGINAL_GET_LINES([1, None, 3], [1, 2, 3], ["a"] * 3)
    )
    assert plotext_speedups.get_lines([4], [5], ["a"]) == [[4], [5], ["a"]]
    floats = ([0, 1.0, 5], [0, 3, 9], [2, 2, 2], [4, 4, 4])
    assert plotext_speedups.hd_group(*floats) == plotext_speedups._ORIGINAL_HD_GROUP(*floats)


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
        expected = plotext_speedups._ORIGINAL_GET_MATRIX_DATA(data, [low, high], bins)
        assert plotext_speedups.get_matrix_data(data, [low, high], bins) == expected
        x, y = _random_points(rng)
        x, y = x * 3, y * 3  # repeats
        constant = (["braille"] * len(x), [(1, 2, 3)] * len(x), ["default"] * len(x))
        got = plotext_speedups.brush(x, y, *constant)
        want = plotext_speedups._ORIGINAL_BRUSH(x, y, *constant)
        assert sorted(zip(*got, strict=True)) == sorted(zip(*want, strict=True))
        assert len(got[0]) == len(want[0])


@pytest.mark.parametrize("rows", [50, 20_000])
def test_a_chart_builds_to_the_same_text_with_and_without_them(rows: int) -> None:
    rng = np.random.default_rng(rows)
    steps = np.arange(rows, dtype=np.int64)
    series = [
        Series(steps, np.exp(-steps / rows) + noise * rng.standard_normal(rows), series_color(i))
        for i, noise in enumerate((0.0, 0.05, 0.3))
    ]
    request = PlotRequest(90, 20)
    canvas = ChartCanvas(_figure_class())
    try:
        plotext_speedups.uninstall()
        expected = canvas.build(series, request)
    finally:
        plotext_speedups.install()
    assert expected is not None and any("\u2800" < char <= "\u28ff" for char in expected)
    assert canvas.build(series, request) == expected
