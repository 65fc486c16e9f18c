"""Series colours and markers: every index, however large or negative, gets one of a fixed
few, and the plot and the legend get the same one."""

from __future__ import annotations

import pytest

from ocms_tui.draw.series_style import (
    MARKER,
    PALETTE,
    SERIES_MARKERS,
    series_color,
    series_marker,
)


def test_colours_are_distinct_rgb_triples_that_repeat_in_order() -> None:
    assert len(set(PALETTE)) == len(PALETTE)
    assert all(len(rgb) == 3 and all(0 <= part <= 255 for part in rgb) for rgb in PALETTE)
    assert [series_color(i) for i in range(2 * len(PALETTE))] == list(PALETTE) * 2


def test_a_runs_first_series_is_the_fine_braille_line() -> None:
    assert series_marker(0) == MARKER == "braille"
    assert [series_marker(i) for i in range(len(SERIES_MARKERS))] == list(SERIES_MARKERS)
    # The coarser markers are one character each: one per cell, as plotext draws them.
    assert all(len(marker) == 1 for marker in SERIES_MARKERS[1:])


@pytest.mark.parametrize("index", [10**30, -1, -(10**30), 2**63, 2**64 + 3])
def test_any_index_gets_a_colour_and_a_marker_of_the_set(index: int) -> None:
    assert series_color(index) in PALETTE
    assert series_marker(index) in SERIES_MARKERS
    assert series_color(index) == series_color(index + len(PALETTE))
