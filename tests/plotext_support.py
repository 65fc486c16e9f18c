"""Shared by the drawing tests: random pixel points, a build with plotext's own helpers for
comparison, and a followed run's series."""

from __future__ import annotations

import random

import numpy as np

from ocms_tui.draw import plotext_install
from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.draw.series_style import series_color


def random_points(rng: random.Random) -> tuple[list[int], list[int]]:
    count = rng.randint(2, 80)
    # Negative and repeated coordinates, vertical and horizontal runs: all of a line's cases.
    span = rng.choice((1, 3, 20, 120))
    return (
        [rng.randint(-span, span) for _ in range(count)],
        [rng.randint(-span, span) for _ in range(count)],
    )


def built_by_plotext_alone(
    canvas: ChartCanvas, series: list[Series], request: PlotRequest
) -> str | None:
    """What `canvas` builds of `series` with plotext's own helpers (speedups off)."""
    try:
        plotext_install.uninstall()
        return canvas.build(series, request)
    finally:
        plotext_install.install()


def followed_series(
    steps: np.ndarray, columns: list[np.ndarray], markers: tuple[str, ...]
) -> list[Series]:
    """Columns of one run as the dashboard hands them over: sorted steps, a pyramid each."""
    return [
        Series(
            steps,
            values,
            series_color(index),
            steps_sorted=True,
            marker=marker,
            pyramid=MinMaxPyramid(),
        )
        for index, (values, marker) in enumerate(zip(columns, markers, strict=True))
    ]
