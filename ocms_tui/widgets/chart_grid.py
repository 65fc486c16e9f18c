"""ChartGrid: lays the chart panels out in as many columns as the terminal fits."""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text
from textual.containers import VerticalScroll
from textual.events import Resize
from textual.geometry import Size
from textual.widgets import Static

from ocms_tui.widgets.chart_panel import ChartPanel

MIN_PANEL_WIDTH = 48
MIN_PANEL_HEIGHT = 14
MAX_COLUMNS = 3
CELL_ASPECT = 2.5  # a terminal cell is about 2.5 times as tall as it is wide
STRIP_ROWS = 1  # the chart strip, shown above the grid while some panels are off screen


def grid_columns(width: int, height: int, panels: int) -> int:
    """Columns that give the panels the most usable plot area: 1 at 80 columns, up to 3 wide.

    A panel's score is its shorter side in "square" units, so a layout of wide, flat
    strips or of tall, thin columns loses to one of well-proportioned panels.
    """
    if panels <= 1:
        return 1
    best, best_score = 1, -1.0
    for columns in range(1, min(MAX_COLUMNS, panels) + 1):
        panel_width = width / columns
        if columns > 1 and panel_width < MIN_PANEL_WIDTH:
            break
        panel_height = height / math.ceil(panels / columns)
        score = min(panel_width, panel_height * CELL_ASPECT)
        if score > best_score:
            best, best_score = columns, score
    return best


def row_height(height: int, rows: int) -> int:
    """Rows share the height when they fit; otherwise each screenful holds whole panels."""
    if rows * MIN_PANEL_HEIGHT <= height:
        return max(1, height // rows)
    return max(MIN_PANEL_HEIGHT, height // max(1, height // MIN_PANEL_HEIGHT))


def row_heights(height: int, minimums: list[int]) -> list[int]:
    """Rows of different needs (long legends of overlaid runs): each row gets its minimum,
    and the height left over is shared; when they do not fit, the grid scrolls."""
    spare = height - sum(minimums)
    if spare <= 0:
        return minimums
    share, extra = divmod(spare, len(minimums))
    return [low + share + (index < extra) for index, low in enumerate(minimums)]


LaidOut = Callable[[bool], None]
"""Called after each layout with `overflowing`: some panels are off screen (scrolled away or
hidden behind a maximised one)."""


class ChartGrid(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    ChartGrid {
        layout: grid;
        grid-size: 1;
        grid-gutter: 0 0;
        height: 1fr;
    }
    ChartGrid > #grid-message {
        width: 100%;
        height: 100%;
        content-align: center middle;
        color: $text-muted;
    }
    """

    def __init__(self, laid_out: LaidOut | None = None) -> None:
        """`laid_out` is called at once, not by a message: what it changes around the grid
        (the chart strip above it) then lands in the same frame as the new layout. Through
        a message, a key that maximised or restored a chart showed a frame without the strip
        and one with it, and every panel whose size the strip changed was built twice."""
        super().__init__()
        self._laid_out = laid_out
        self.message = Static("", id="grid-message", markup=False)
        self.maximised: ChartPanel | None = None
        self.overflowing = False  # some panels off screen (the chart strip is shown)
        self._grid: tuple[int, str | None] = (1, None)  # the columns and rows set last
        self._message_text: Text | None = Text("")

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.message

    @property
    def panels(self) -> list[ChartPanel]:
        return list(self.query_children(ChartPanel))

    @property
    def columns(self) -> int:
        return int(self.styles.grid_size_columns or 1)

    def show_message(self, text: Text | None) -> None:
        """A centred line instead of charts ("waiting for ...", "loading ..."), or none."""
        if text == self._message_text:
            return  # called every tick: touch the screen only on a change
        self._message_text = text
        self.message.display = text is not None
        if text is not None:
            self.message.update(text)

    def set_maximised(self, panel: ChartPanel | None) -> None:
        """One panel over the whole grid (None: the grid again). The maximised panel spans
        the grid's columns, which stay as they are: Textual repaints every panel from
        scratch when the grid's columns or rows change (they refresh all children), and
        restoring the grid drew the five panels that had kept their pictures anew."""
        previous, self.maximised = self.maximised, panel
        if previous is not None and previous is not panel:
            previous.styles.column_span = 1
        for other in self.panels:
            other.display = panel is None or other is panel
        self.relayout()
        if panel is not None:
            self.scroll_home(animate=False)

    def maximised_area(self) -> Size | None:
        """The size a panel gets when maximised (None: one is): the grid's, less the chart
        strip's row unless the strip is shown already."""
        if self.maximised is not None or len(self.panels) < 2:
            return None
        width, height = self.size
        return Size(width, height - (0 if self.overflowing else STRIP_ROWS))

    def on_resize(self, event: Resize) -> None:
        self.relayout()

    def relayout(self) -> None:
        width, height = self.scrollable_content_region.size
        if width <= 0 or height <= 0:
            return
        panels = [panel for panel in self.panels if panel.display]
        count = max(1, len(panels))
        columns = grid_columns(width, height, max(1, len(self.panels)))
        if self.maximised:
            self.maximised.styles.column_span = columns
        rows = math.ceil(count / columns)
        self._set_grid(columns, None)
        # Runs overlaid make long legends: a row keeps room for its plots above them.
        minimums = [
            max(
                [
                    MIN_PANEL_HEIGHT,
                    *(panel.min_height for panel in panels[row * columns :][:columns]),
                ]
            )
            for row in range(rows)
        ]
        if self.maximised:
            # A fraction, not a height: the panel follows the grid when the problems pane
            # or the chart strip come and go, leaving no blank rows.
            self._set_grid(columns, "1fr")
            overflowing = len(self.panels) > 1
        elif max(minimums) <= MIN_PANEL_HEIGHT:
            each = row_height(height, rows)
            overflowing = each * rows > height
            # Rows that fit share the height exactly (no blank row left by the division).
            self._set_grid(columns, str(each) if overflowing else "1fr")
        else:
            heights = row_heights(height, minimums)
            self._set_grid(columns, " ".join(map(str, heights)))
            overflowing = sum(heights) > height
        self.overflowing = overflowing
        if self._laid_out is not None:
            self._laid_out(overflowing)

    def _set_grid(self, columns: int, rows: str | None) -> None:
        """Set the grid's columns and rows (None: as they are) only when they change: each
        assignment makes Textual repaint every panel from scratch, same value or not."""
        if columns != self._grid[0]:
            self.styles.grid_size_columns = columns
        if rows is not None and rows != self._grid[1]:
            self.styles.grid_rows = rows
        self._grid = (columns, self._grid[1] if rows is None else rows)
