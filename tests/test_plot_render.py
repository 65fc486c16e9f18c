"""A plan drawn by plotext comes back as a picture whose text is plotext's own `build()`
text, for ordinary and hostile values."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from plotext._figure import _figure_class as PlotextFigure

from ocms_tui.draw.plot_plan import Plan, PlotRequest, Series
from ocms_tui.draw.plot_render import ANSI_END, Picture, picture_of, render
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.draw.series_style import series_color

LARGEST = 1.7976931348623157e308


def _plan(steps: list, values: list, request: PlotRequest) -> Plan | None:
    """The canvas's plan, the values given as the dashboard gives them (on a log axis, those
    not above zero as gaps)."""
    array = np.array(values, dtype=np.float64)
    if request.log_y:
        array = np.where(array > 0, array, np.nan)
    series = [Series(np.array(steps), array, series_color(0))]
    return ChartCanvas(PlotextFigure()).plan(series, request)


def _plotext_text(figure: object) -> str:
    """What plotext's `build()` returns for the matrix the figure holds."""
    matrix = figure.monitor.matrix  # type: ignore[attr-defined]
    matrix.set_canvas()
    text: str = matrix.get_canvas()
    return text


@pytest.mark.parametrize(
    ("steps", "values"),
    [
        (list(range(500)), list(np.sin(np.arange(500) / 20.0))),
        ([3], [1.0]),  # one point
        ([0, 1], [-0.0, 0.0]),
        ([0, 1, 2], [-LARGEST, 0.0, LARGEST]),
        ([0, 10**15], [1e-310, 5e-324]),
        ([-(2**62), 2**62], [1.0, 2.0]),
        ([0, 1, 2, 3], [np.nan, 2.0, np.inf, 3.0]),
    ],
)
@pytest.mark.parametrize("request_", [PlotRequest(60, 16), PlotRequest(5, 3, log_y=True)])
def test_the_picture_is_plotexts_own_text(steps: list, values: list, request_: PlotRequest) -> None:
    plan = _plan(steps, values, request_)
    if plan is None or not plan.lines:
        return  # nothing drawable (e.g. nothing positive on a log axis): nothing rendered
    figure = PlotextFigure()
    picture = render(figure, plan)
    assert picture.ansi() == _plotext_text(figure)
    # One row of runs per plotext row, every run closed by plotext's reset.
    assert len(picture.rows) == figure.monitor.matrix.rows
    assert all(chars for row in picture.rows for chars, _ in row)


def test_a_figure_drawn_again_gives_a_fresh_picture() -> None:
    figure = PlotextFigure()
    first = _plan(list(range(100)), [float(i % 7) for i in range(100)], PlotRequest(40, 10))
    second = _plan([0, 1], [5.0, 6.0], PlotRequest(30, 8, theme="textual-dark"))
    assert first is not None and second is not None
    render(figure, first)
    again = render(figure, second)
    assert again.ansi() == render(PlotextFigure(), second).ansi()


def test_runs_of_one_colour_are_joined_and_closed() -> None:
    picture = Picture(((("ab", "\x1b[31m"), ("c", "\x1b[32m")), ()))
    assert picture.ansi() == f"\x1b[31mab{ANSI_END}\x1b[32mc{ANSI_END}\n\n"
    assert Picture(()).ansi() == ""


def test_an_empty_matrix_is_an_empty_picture() -> None:
    empty = SimpleNamespace(rows=0, marker=[], fullground=[], style=[], background=[])
    assert picture_of(empty) == Picture(())
