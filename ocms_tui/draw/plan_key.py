"""What decides a plan's picture, without drawing it: plotext's inputs, except that its
points are replaced by the pixels their lines light, mapped and rasterised by plotext's own
arithmetic (draw.plotext_speedups). Equal keys draw equal pictures, so a follower whose new
plan has the key of the picture on screen needs no plotext build.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotext._utility as plotext_utility

from ocms_tui.draw import plotext_speedups
from ocms_tui.draw.plot_plan import Plan


def plan_key(plan: Plan, canvas_columns: int, canvas_rows: int) -> tuple[Any, ...]:
    """What decides the picture of `plan` on a canvas `canvas_columns` wide and
    `canvas_rows` high: plotext's inputs except the points, and instead of the points, the
    pixels their lines light."""
    # plotext's own arithmetic: its helpers, or the numpy ones proven equal to them.
    faster = plotext_speedups
    if plan.plotext_log:  # plotext's log10, value by value (numpy's may differ by an ulp)
        values = [np.array(plotext_utility.log(line.values)) for line in plan.lines]
    else:
        values = [line.value_array for line in plan.lines]
    y_limits = faster.limits(values)
    if plan.x_ticks is not None:  # the x axis was set (see plot_render)
        x_limits = [float(plan.extent[0]), float(plan.extent[1])]
    else:
        x_limits = faster.limits([line.step_array for line in plan.lines])
    lit = []
    for line, shown in zip(plan.lines, values, strict=True):
        across = plotext_utility.marker_factor(line.marker, 2, 2, 2)
        down = plotext_utility.marker_factor(line.marker, 2, 3, 4)
        width, height = canvas_columns * across, canvas_rows * down
        x = faster.matrix_pixels(line.step_array, x_limits, width)
        y = faster.matrix_pixels(shown, y_limits, height)
        if not line.scatter:
            x, y, _ = faster.line_pixels(x, y)
        lit.append((line.marker, line.color, line.scatter, lit_pixels(x, y, width, height)))
    return (
        *frame(plan),
        tuple(y_limits),
        canvas_columns,
        canvas_rows,
        tuple(lit),
    )


def frame(plan: Plan) -> tuple[Any, ...]:
    """The part of a plan's key (`plan_key`) that needs no pixel mapped."""
    request = plan.request
    return (
        request.width,
        request.height,
        request.theme,
        request.log_y,
        plan.plotext_log,
        tuple(plan.extent),
        plan.x_ticks,
        plan.y_ticks,
    )


def lit_pixels(x: np.ndarray, y: np.ndarray, width: int, height: int) -> bytes:
    """The set of pixels (x, y) as bytes: a bitmap of the canvas, then any pixel outside it
    (sorted), so that equal sets give equal bytes."""
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    bitmap = np.zeros(width * height, dtype=bool)
    bitmap[x[inside] * height + y[inside]] = True
    outside = np.unique(x[~inside] * (height + 1) + y[~inside]) if not inside.all() else x[:0]
    return np.packbits(bitmap).tobytes() + outside.tobytes()
