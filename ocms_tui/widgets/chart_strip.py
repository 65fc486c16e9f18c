"""ChartStrip: one line naming every chart, the focused one marked, for terminals too small to
show all panels at once (80x24 shows one or two): what is off screen stays listed, and the
arrows, tab or a click on a name reach it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import Static

from ocms_tui.widgets.safe_text import safe_text

SEPARATOR = " "


def strip_items(names: Sequence[str], focused: int | None) -> list[Text]:
    """One item per chart: its name, the focused one highlighted. Not numbered: the number
    keys toggle series."""
    items = []
    for index, name in enumerate(names):
        item = Text(" ")
        item.append_text(safe_text(name))
        item.append(" ")
        item.stylize("reverse bold" if index == focused else "dim", 0)
        items.append(item)
    return items


def strip_window(widths: Sequence[int], focused: int, width: int) -> tuple[int, int]:
    """The items [start, end) shown in `width` cells, keeping the focused one in view; the
    markers for items left out ("◂3 " before, " +2▸" after) are counted in."""

    def cells(start: int, end: int) -> int:
        left = len(f"◂{start} ") if start else 0
        right = len(f" +{len(widths) - end}▸") if end < len(widths) else 0
        return left + sum(widths[start:end]) + len(SEPARATOR) * (end - start - 1) + right

    start, end = focused, focused + 1
    grown = True
    while grown:
        grown = False
        # The charts after the focused one first: the next ones to visit.
        for candidate in ((start, end + 1), (start - 1, end)):
            if candidate[0] >= 0 and candidate[1] <= len(widths) and cells(*candidate) <= width:
                start, end = candidate
                grown = True
    return start, end


class ChartStrip(Static):
    DEFAULT_CSS = """
    ChartStrip {
        height: 1;
        background: $panel;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    class Picked(Message):
        """A chart's name was clicked."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self._names: tuple[str, ...] = ()
        self._focused: int | None = None
        self._spans: list[tuple[int, int, int]] = []  # (first cell, end cell, chart index)

    def show(self, names: Sequence[str], focused: int | None) -> None:
        names = tuple(names)
        if (names, focused) == (self._names, self._focused):
            return
        self._names, self._focused = names, focused
        self._render_strip()

    def on_resize(self) -> None:
        self._render_strip()

    def _render_strip(self) -> None:
        items = strip_items(self._names, self._focused)
        if not items:
            self.update("")
            return
        width = self.content_size.width or 80
        start, end = strip_window([item.cell_len for item in items], self._focused or 0, width)
        line = Text(f"◂{start} " if start else "", style="dim")
        self._spans = []
        for index in range(start, end):
            if index > start:
                line.append(SEPARATOR)
            first = line.cell_len
            line.append_text(items[index])
            self._spans.append((first, line.cell_len, index))
        if end < len(items):
            line.append(f" +{len(items) - end}▸", style="dim")
        line.no_wrap = True
        self.update(line)

    def on_click(self, event: events.Click) -> None:
        for first, last, index in self._spans:
            if first <= event.x < last:
                self.post_message(self.Picked(index))
                return
