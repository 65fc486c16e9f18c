"""With the speedups installed, plotext draws every chart to the very text it draws alone."""

from __future__ import annotations

import numpy as np
import pytest
from plotext._figure import _figure_class
from plotext_support import built_by_plotext_alone

from ocms_tui.draw.plot_plan import PlotRequest, Series
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color


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
    expected = built_by_plotext_alone(canvas, series, request)
    assert expected is not None and any("\u2800" < char <= "\u28ff" for char in expected)
    assert canvas.build(series, request) == expected


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
        expected = built_by_plotext_alone(ChartCanvas(_figure_class()), series, request)
        assert expected is not None
        assert ChartCanvas(_figure_class()).build(series, request) == expected
