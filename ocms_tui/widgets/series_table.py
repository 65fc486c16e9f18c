"""SeriesTable: the legend of a chart with the exact numbers (latest, min, max) of each series."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ocms_tui.model import SeriesStats
from ocms_tui.widgets.plotting import RGB
from ocms_tui.widgets.safe_text import safe_text


def format_number(value: float | None) -> str:
    """Six significant digits: exact enough to compare runs, short enough for a column."""
    if value is None:
        return "—"
    return f"{value:.6g}"


def format_step(step: int | None) -> str:
    return "—" if step is None else f"{step:,}"


@dataclass(frozen=True)
class SeriesRow:
    name: str  # from the file: untrusted, always rendered as plain text
    color: RGB
    stats: SeriesStats
    hidden: bool


class SeriesTable(Static):
    DEFAULT_CSS = """
    SeriesTable {
        height: auto;
        padding: 0 1;
    }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self._rows: tuple[SeriesRow, ...] = ()
        self._last_step: int | None = None
        self._shown: tuple[tuple[SeriesRow, ...], int | None, int] | None = None

    def show(self, rows: Sequence[SeriesRow], last_step: int | None) -> None:
        if len(rows) != len(self._rows) or self.styles.height is None:
            # One line per series plus the header: fixed, so that new numbers repaint this
            # table only instead of laying the whole screen out again.
            self.styles.height = len(rows) + 1
        self._rows, self._last_step = tuple(rows), last_step
        self._render_table()

    def on_resize(self) -> None:
        self._render_table()

    def _render_table(self) -> None:
        width = self.content_size.width
        state = (self._rows, self._last_step, width)
        if state == self._shown:
            return
        self._shown = state
        self.update(_table(self._rows, self._last_step, width), layout=False)


def _table(rows: Sequence[SeriesRow], last_step: int | None, width: int) -> Table:
    """Legend plus numbers. A sparse series (eval every N steps) says which step its latest
    value is from, when the panel is wide enough; names give way before numbers do."""
    latest = [format_number(row.stats.latest) for row in rows]
    steps = [
        f" @{format_step(row.stats.latest_step)}"
        if row.stats.latest_step is not None and row.stats.latest_step != last_step
        else ""
        for row in rows
    ]
    minima = [format_number(row.stats.minimum) for row in rows]
    maxima = [format_number(row.stats.maximum) for row in rows]

    def widest(cells: Sequence[str], header: str) -> int:
        return max([len(header), *map(len, cells)])

    names = widest([row.name for row in rows], "series") + 3
    numbers = widest(minima, "min") + widest(maxima, "max") + 3
    if names + numbers + widest([a + b for a, b in zip(latest, steps, strict=True)], "") > width:
        steps = [""] * len(rows)

    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=True, header_style="dim bold")
    table.add_column("series", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("latest", justify="right", no_wrap=True)
    table.add_column("min", justify="right", no_wrap=True, style="dim")
    table.add_column("max", justify="right", no_wrap=True, style="dim")
    for number, row in enumerate(rows, start=1):
        color = Style(color=f"rgb({row.color[0]},{row.color[1]},{row.color[2]})")
        label = Text(str(number) if number <= 9 else " ", style=color + Style(bold=True))
        label.append("━ ", style=color)
        label.append_text(safe_text(row.name))
        value = Text(latest[number - 1])
        value.append(steps[number - 1], style="dim")
        if row.hidden:
            label.stylize("dim strike", 2)
            value.stylize("dim")
        table.add_row(label, value, minima[number - 1], maxima[number - 1])
    return table
