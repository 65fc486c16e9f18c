"""plotext's build step in numpy (matrix cells, placed signals, marker factors, date checks,
cleared figures) gives exactly what plotext's own gives."""

from __future__ import annotations

import random

import numpy as np
from plotext._figure import _figure_class
from plotext_support import random_points

from ocms_tui.draw import plotext_build_speedups, plotext_install
from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color


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
                plotext_install.uninstall()
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
                plotext_install.install()
            matrices.append((matrix.marker, matrix.fullground, matrix.style, matrix.background))
        assert matrices[0] == matrices[1]


def test_signals_are_placed_in_the_matrix_as_plotext_places_them() -> None:
    """place_signal against plotext's own lines, on random dots (repeated, off the canvas,
    off the matrix), every marker size, with and without colours and styles: the same matrix,
    the same cells and the same colours and styles handed on to the legend."""
    from plotext._matrix import matrix_class

    assert (
        plotext_build_speedups.FASTER_BUILD_PLOT is not plotext_build_speedups.ORIGINAL_BUILD_PLOT
    )
    rng = random.Random(13)
    for _ in range(300):
        x, y = random_points(rng)
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
        for place in (
            plotext_build_speedups._original_place_signal,
            plotext_build_speedups.place_signal,
        ):
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
            assert plotext_build_speedups.largest_factor(markers, *factors) == expected


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
        expected = plotext_build_speedups.ORIGINAL_TO_TIME(monitor, list(data))
        assert plotext_build_speedups.to_time(monitor, list(data)) == expected
    assert monitor_class.to_time is plotext_build_speedups.to_time  # installed
