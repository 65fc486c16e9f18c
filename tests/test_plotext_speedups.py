"""plotext's pixel arithmetic on numpy arrays gives exactly plotext's pixels and limits."""

from __future__ import annotations

import numpy as np

from ocms_tui.draw import plotext_speedups, plotext_utility_speedups


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
    expected = plotext_speedups.ORIGINAL_GET_MATRIX_DATA(values.tolist(), limits, 90)
    assert first.tolist() == expected
    assert plotext_speedups.matrix_pixels(values, limits, 91).tolist() != expected
    assert plotext_speedups.matrix_pixels(values, [limits[0], 2 * limits[1]], 90) is not first

    xs = np.arange(400, dtype=np.int64) // 4
    lines = plotext_speedups.line_pixels(xs, first)
    assert plotext_speedups.line_pixels(xs.copy(), first.copy()) is lines
    assert all(not array.flags.writeable for array in lines)
    points = list(range(400))
    reference = plotext_utility_speedups.ORIGINAL_GET_LINES(xs.tolist(), first.tolist(), points)
    assert [array.tolist() for array in lines] == reference
    changed = first.copy()
    changed[-1] += 1
    assert plotext_speedups.line_pixels(xs, changed)[1].tolist()[-1] == int(changed[-1])
    # Fewer than two points: copies, never the caller's own arrays made read-only.
    one = np.array([3], dtype=np.int64)
    plotext_speedups.line_pixels(one, one)
    assert one.flags.writeable
