"""The numpy helpers swapped into plotext return exactly what plotext's own return."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from plotext._figure import _figure_class

from ocms_tui.draw import plotext_speedups
from ocms_tui.draw.plotting import ChartCanvas, PlotRequest, Series, series_color


def _random_points(rng: random.Random) -> tuple[list[int], list[int]]:
    count = rng.randint(2, 80)
    # Negative and repeated coordinates, vertical and horizontal runs: all of a line's cases.
    span = rng.choice((1, 3, 20, 120))
    return (
        [rng.randint(-span, span) for _ in range(count)],
        [rng.randint(-span, span) for _ in range(count)],
    )


def _built_by_plotext_alone(
    canvas: ChartCanvas, series: list[Series], request: PlotRequest
) -> str | None:
    """What `canvas` builds of `series` with plotext's own helpers (speedups off)."""
    try:
        plotext_speedups.uninstall()
        return canvas.build(series, request)
    finally:
        plotext_speedups.install()


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


def test_outsiders_limits_and_joins_match_plotext() -> None:
    rng = random.Random(11)
    for _ in range(200):
        x, y = _random_points(rng)
        x, y = x * 2, y * 2
        width, height = rng.randint(1, 60), rng.randint(1, 60)
        markers = [rng.choice("ab") for _ in x]
        # Colours and styles may be longer than the points (plotext passes them so).
        longer = [(1, 2, 3)] * (len(x) + rng.randint(0, 5))
        got = plotext_speedups.remove_outsiders(x, y, width, height, markers, longer, longer)
        want = plotext_speedups._ORIGINAL_REMOVE_OUTSIDERS(
            x, y, width, height, markers, longer, longer
        )
        assert got == want
        # Arrays handed on from an earlier helper give the same result as plain lists.
        pixel_x = plotext_speedups.get_matrix_data(
            [float(value) for value in x], [-200.0, 200.0], 400
        )
        pixel_y = plotext_speedups.get_matrix_data(
            [float(value) for value in y], [-200.0, 200.0], 400
        )
        assert plotext_speedups.remove_outsiders(
            pixel_x, pixel_y, 250, 250, markers, longer
        ) == plotext_speedups._ORIGINAL_REMOVE_OUTSIDERS(
            list(pixel_x), list(pixel_y), 250, 250, markers, longer
        )
        values = [rng.uniform(-5, 5) for _ in range(rng.randint(0, 80))]
        values += rng.choice(([], [0.0], [-0.0, 0.0], [float("nan")], [float("inf")], [1]))
        if rng.random() < 0.2:
            values = [2.5] * len(values)  # all equal: plotext spreads the limits
        got_lim = plotext_speedups.get_lim(values)
        want_lim = plotext_speedups._ORIGINAL_GET_LIM(values)
        assert got_lim == want_lim
        assert [math.copysign(1, v) for v in got_lim] == [math.copysign(1, v) for v in want_lim]
        nested = [values, [x, [y, 3]], 7, [], "ab"]
        assert plotext_speedups.join(nested) == plotext_speedups._ORIGINAL_JOIN(nested)


@pytest.mark.parametrize(("rows", "log_y"), [(50, False), (20_000, False), (20_000, True)])
def test_a_chart_builds_to_the_same_text_with_and_without_them(rows: int, log_y: bool) -> None:
    rng = np.random.default_rng(rows)
    steps = np.arange(rows, dtype=np.int64)
    series = [
        # Positive values: a log axis is drawn from positive values only.
        Series(
            steps,
            np.abs(np.exp(-steps / rows) + noise * rng.standard_normal(rows)) + 1e-3,
            series_color(i),
        )
        for i, noise in enumerate((0.0, 0.05, 0.3))
    ]
    # A sparse series (an eval every 100 steps, gaps between) and a second marker.
    sparse = np.where(steps % 100 == 0, 1.0 + rng.random(rows), np.nan)
    series.append(Series(steps, sparse, series_color(3), marker="+"))
    request = PlotRequest(90, 20, log_y=log_y)
    canvas = ChartCanvas(_figure_class())
    expected = _built_by_plotext_alone(canvas, series, request)
    assert expected is not None and any("\u2800" < char <= "\u28ff" for char in expected)
    assert canvas.build(series, request) == expected


def test_matrix_cells_are_set_as_plotext_sets_them() -> None:
    """insert_element and set_matrices, against plotext's own, on random matrices, canvas
    areas and cells (inside, outside, on the canvas edge; with and without colours)."""
    from plotext._matrix import matrix_class

    rng = random.Random(5)
    for _ in range(100):
        cols, rows = rng.randint(0, 30), rng.randint(0, 20)
        area = sorted(rng.randint(-2, cols + 2) for _ in range(2))
        area += sorted(rng.randint(-2, rows + 2) for _ in range(2))
        cells = [
            (
                rng.randint(-3, cols + 3),
                rng.randint(-3, rows + 3),
                rng.choice("ab⠁"),
                rng.choice([None, (1, 2, 3), "red"]),
                rng.choice([None, "bold"]),
                rng.choice([None, (4, 5, 6)]),
                rng.choice([False, True]),
            )
            for _ in range(60)
        ]
        matrices = []
        for original in (True, False):
            if original:
                plotext_speedups.uninstall()
            try:
                matrix = matrix_class()
                matrix.set_size(cols, rows)
                matrix.set_axes_color((9, 9, 9))
                matrix.set_canvas_area(*area)
                matrix.set_canvas_color((7, 7, 7))
                matrix.set_matrices()
                for col, row, marker, color, style, background, check in cells:
                    matrix.insert_element(col, row, marker, color, style, background, check)
            finally:
                plotext_speedups.install()
            matrices.append((matrix.marker, matrix.fullground, matrix.style, matrix.background))
        assert matrices[0] == matrices[1]


def test_signals_are_placed_in_the_matrix_as_plotext_places_them() -> None:
    """place_signal against plotext's own lines, on random dots (repeated, off the canvas,
    off the matrix), every marker size, with and without colours and styles: the same matrix,
    the same cells and the same colours and styles handed on to the legend."""
    from plotext._matrix import matrix_class

    assert plotext_speedups._FASTER_BUILD_PLOT is not plotext_speedups._ORIGINAL_BUILD_PLOT
    rng = random.Random(13)
    for _ in range(300):
        x, y = _random_points(rng)
        x, y = x * rng.randint(1, 3), y * rng.randint(1, 3)  # repeated dots
        count = len(x)
        marker = rng.choice(("braille", "hd", "fhd", "•", "+"))
        color = rng.choice((None, (1, 2, 3), "red"))
        style = rng.choice((None, "default", "bold"))
        mixed = rng.random() < 0.1  # two markers: plotext's own code (which fails on two
        if mixed:  # sizes of dots; its own way of drawing several is one signal each)
            marker = rng.choice(("•", "+"))
        markers = [marker if not mixed or i % 2 else "x" for i in range(count)]
        canvas = (rng.randint(1, 40), rng.randint(1, 30))
        start = (rng.randint(-2, 5), rng.randint(-2, 5))
        results = []
        for place in (plotext_speedups._original_place_signal, plotext_speedups.place_signal):
            matrix = matrix_class()
            matrix.set_size(40, 30)
            matrix.set_canvas_area(2, 38, 2, 28)
            matrix.set_matrices()
            placed = place(
                matrix, list(x), list(y), list(markers), [color] * count, [style] * count,
                *canvas, *start,
            )  # fmt: skip
            cells = sorted(zip(*placed, strict=True), key=repr)
            results.append((matrix.marker, matrix.fullground, matrix.style, cells))
        assert results[0] == results[1]


def test_a_noisy_braille_chart_draws_the_same_with_and_without_them() -> None:
    """A follower's chart: noisy series of one run in braille, M4-reduced, many columns
    crossing."""
    rng = np.random.default_rng(1)
    steps = np.arange(1_000, dtype=np.int64)
    series = [
        Series(steps, np.cumsum(rng.standard_normal(1_000)) * scale, series_color(i))
        for i, scale in enumerate((1.0, 0.3, 3.0, 0.01))
    ]
    for size in ((59, 15), (160, 40), (12, 5)):
        request = PlotRequest(*size)
        expected = _built_by_plotext_alone(ChartCanvas(_figure_class()), series, request)
        assert expected is not None
        assert ChartCanvas(_figure_class()).build(series, request) == expected


def test_a_figure_cleared_between_builds_draws_what_a_new_figure_draws() -> None:
    """clear_plot leaves nothing of one build in the next: one figure building charts of
    other sizes, axes, themes and markers in turn draws each as a figure never used."""
    from textual_plotext import PlotextPlot

    rng = np.random.default_rng(4)
    steps = np.arange(300, dtype=np.int64)
    noisy = np.abs(np.cumsum(rng.standard_normal(300))) + 0.5
    requests = [
        PlotRequest(70, 18),
        PlotRequest(40, 10, log_y=True, theme="textual-dark"),
        PlotRequest(90, 25, x_range=(100.0, 250.0)),
        PlotRequest(30, 8, theme="textual-light"),
    ]
    markers = ["braille", "+", "braille", "•"]
    used = ChartCanvas(PlotextPlot().plt)
    for request, marker in zip(requests * 2, markers * 2, strict=True):
        series = [Series(steps, noisy * (1 + k), series_color(k), marker=marker) for k in range(3)]
        expected = ChartCanvas(PlotextPlot().plt).build(series, request)
        assert expected is not None
        assert used.build(series, request) == expected


def test_the_largest_marker_factor_is_plotexts() -> None:
    import plotext._utility as plotext_utility

    rng = random.Random(17)
    choices = ("braille", "hd", "fhd", "•", "+", "sd", "dot")
    for _ in range(200):
        markers: list = [rng.choice(choices) for _ in range(rng.randint(0, 30))]
        if rng.random() < 0.1:
            markers.append(["unhashable"])
        for factors in ((2, 2, 2), (2, 3, 4)):
            expected = max(
                [plotext_utility.marker_factor(el, *factors) for el in markers], default=1
            )
            assert plotext_speedups.largest_factor(markers, *factors) == expected


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
    expected = plotext_speedups._ORIGINAL_GET_MATRIX_DATA(values.tolist(), limits, 90)
    assert first.tolist() == expected
    assert plotext_speedups.matrix_pixels(values, limits, 91).tolist() != expected
    assert plotext_speedups.matrix_pixels(values, [limits[0], 2 * limits[1]], 90) is not first

    xs = np.arange(400, dtype=np.int64) // 4
    lines = plotext_speedups.line_pixels(xs, first)
    assert plotext_speedups.line_pixels(xs.copy(), first.copy()) is lines
    assert all(not array.flags.writeable for array in lines)
    points = list(range(400))
    reference = plotext_speedups._ORIGINAL_GET_LINES(xs.tolist(), first.tolist(), points)
    assert [array.tolist() for array in lines] == reference
    changed = first.copy()
    changed[-1] += 1
    assert plotext_speedups.line_pixels(xs, changed)[1].tolist()[-1] == int(changed[-1])
    # Fewer than two points: copies, never the caller's own arrays made read-only.
    one = np.array([3], dtype=np.int64)
    plotext_speedups.line_pixels(one, one)
    assert one.flags.writeable


def test_data_is_checked_for_dates_as_plotext_checks_it() -> None:
    from plotext._monitor import monitor_class

    monitor = _figure_class().monitor  # with the figure's date settings
    for data in (
        [1.5, 2, -3.0, 1e300],
        [],
        [0, 1, 2],
        [True, 2.0],  # a bool is an int to isinstance, not to type()
        [np.float64(1.5), 2.0],
        ["01/02/2024", "02/02/2024"],
    ):
        expected = plotext_speedups._ORIGINAL_TO_TIME(monitor, list(data))
        assert plotext_speedups.to_time(monitor, list(data)) == expected
    assert monitor_class.to_time is plotext_speedups.to_time  # installed
