"""A plan drawn by plotext: the figure set up and built, its character matrix read back as a
picture (runs of one colour per row), the very text plotext's own `build()` returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotext._utility as plotext_utility

from ocms_tui.draw import plotext_build_speedups, plotext_install
from ocms_tui.draw.plot_plan import Plan

# plotext's line and braille helpers in numpy: the same characters, a third of the time.
plotext_install.install()

ANSI_END = "\x1b[0m"  # plotext closes every run of one colour with it

Run = tuple[str, str]
"""Cells of one colour: their characters and the ANSI code plotext opens them with."""


@dataclass(frozen=True)
class Picture:
    """A built chart: plotext's finished character matrix as runs of one colour per row,
    top row first. `ansi()` is the very text plotext's `build()` returns."""

    rows: tuple[tuple[Run, ...], ...]

    def ansi(self) -> str:
        return "".join(
            "".join(f"{code}{chars}{ANSI_END}" for chars, code in row) + "\n" for row in self.rows
        )


def picture_of(matrix: Any) -> Picture:
    """plotext's matrix as runs, split where plotext's `set_canvas` changes colour."""
    rows = []
    for row in reversed(range(matrix.rows)):
        markers = matrix.marker[row]
        colors = list(
            zip(matrix.fullground[row], matrix.style[row], matrix.background[row], strict=True)
        )
        runs: list[Run] = []
        start = 0
        for column in range(1, len(markers) + 1):
            if column == len(markers) or colors[column] != colors[start]:
                code = plotext_utility.colors_to_ansi(*colors[start])
                runs.append(("".join(markers[start:column]), code))
                start = column
        rows.append(tuple(runs))
    return Picture(tuple(rows))


def render(figure: Any, plan: Plan) -> Picture:
    """`plan` built by the plotext `figure` (cleared first), as a picture."""
    request = plan.request
    # figure.clear_figure(), for a tenth of a build less
    plotext_build_speedups.clear_plot(figure)
    # plotext clamps a figure to the terminal it runs in; a widget (or a headless
    # snapshot) has its own size. plotext offers no public per-figure switch.
    figure._limit_size(False, False)
    figure.plotsize(request.width, request.height)
    if request.theme is not None:
        figure.theme(request.theme)
    if plan.x_ticks is not None:
        figure.xlim(*plan.extent)
        figure.xticks(list(plan.x_ticks[0]), list(plan.x_ticks[1]))
    if plan.plotext_log:
        figure.yscale("log")
    if plan.y_ticks is not None:
        figure.yticks(list(plan.y_ticks[0]), list(plan.y_ticks[1]))
    for line in plan.lines:
        draw = figure.scatter if line.scatter else figure.plot
        draw(line.steps, line.values, marker=line.marker, color=line.color)
    # plotext's build without its last step (the matrix as one ANSI string): the runs
    # of one colour are read off the matrix instead.
    figure._set_sizes()
    figure._build_matrix()
    return picture_of(figure.monitor.matrix)
