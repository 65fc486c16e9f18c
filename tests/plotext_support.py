"""Shared by the plotext speedup tests: random pixel points, and a build with plotext's own
helpers for comparison."""

from __future__ import annotations

import random

from ocms_tui.draw import plotext_install
from ocms_tui.draw.plotting import ChartCanvas, PlotRequest, Series


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
