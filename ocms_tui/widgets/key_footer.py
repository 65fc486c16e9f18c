"""KeyFooter: the footer's keys from the key table, cut with an ellipsis (never silently) when
the terminal is narrow; `?` (the help, which lists every key) comes second and always fits."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Static

from ocms_tui.widgets.keys import BindingRow, Scope, binding_rows

MORE = " …"


def footer_line(rows: Sequence[BindingRow], width: int) -> Content:
    """`q Quit ? Help ⏎ Max …`: as many keys as fit in `width` cells, then an ellipsis."""
    parts: list[str | tuple[str, str]] = []
    used = 0
    for index, row in enumerate(rows):
        key = row.key_display or row.key
        separator = " " if index else ""
        item = len(separator) + cell_len(key) + 1 + cell_len(row.description)
        room = width - (len(MORE) if index < len(rows) - 1 else 0)
        if used + item > room:
            parts.append((MORE, "$text-muted"))
            break
        parts += [separator, (key, "bold $accent"), " " + row.description]
        used += item
    return Content.assemble(*parts)


class KeyFooter(Static):
    DEFAULT_CSS = """
    KeyFooter {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, available: Callable[[str], bool]) -> None:
        """`available(action)`: whether the app offers that action now (`b` with one run:
        no)."""
        super().__init__("", markup=False)
        self.available = available
        self._shown: tuple[tuple[BindingRow, ...], int] | None = None

    def refresh_keys(self) -> None:
        rows = tuple(
            row for row in binding_rows(Scope.APP) if row.show and self.available(row.action)
        )
        width = self.content_size.width or 80
        if (rows, width) == self._shown:
            return
        self._shown = (rows, width)
        self.update(footer_line(rows, width))

    def on_resize(self) -> None:
        self.refresh_keys()
