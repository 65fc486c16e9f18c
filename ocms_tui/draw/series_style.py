"""How a chart's series look: their colours and markers, the same in the plot and the legend."""

from __future__ import annotations

RGB = tuple[int, int, int]

# Series colours that read on light and dark backgrounds; legend and plot use the same ones.
PALETTE: tuple[RGB, ...] = (
    (0, 130, 200),
    (230, 25, 75),
    (60, 180, 75),
    (245, 130, 48),
    (145, 30, 180),
    (0, 160, 160),
    (200, 160, 0),
    (240, 50, 230),
)

MARKER = "braille"
MARKER_PIXELS_PER_COLUMN = 2  # braille: 2 dots across, 4 down (plotext's marker_factor)
# When runs are overlaid, colour names the run and the marker the series: a run's first
# series is a fine braille line, its others lines of coarser characters (one per column).
SERIES_MARKERS = (MARKER, "•", "+", "x", "*", "o", "#", "%")
# A run that started again: earlier passes over the steps are drawn in this lighter
# character, in the series' colour, so the latest pass stands out and no line goes back.
EARLIER_PASS_MARKER = "·"


def series_color(index: int) -> RGB:
    return PALETTE[index % len(PALETTE)]


def series_marker(index: int) -> str:
    return SERIES_MARKERS[index % len(SERIES_MARKERS)]
