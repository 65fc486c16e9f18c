"""SeriesTable: the legend of a chart with the exact numbers (latest, min, max) of each series."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from ocms_tui.model import SeriesStats
from ocms_tui.plotting import MARKER, RGB
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
    marker: str = MARKER  # how the plot draws it: a line of braille dots, or of this character


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
        self._total_rows = 0
        self._passes = 1
        self._shown: tuple[tuple[SeriesRow, ...], int | None, int, int, int] | None = None

    def show(
        self,
        rows: Sequence[SeriesRow],
        last_step: int | None,
        total_rows: int,
        passes: int = 1,
    ) -> None:
        """`passes` > 1: the run started again that many times over; the numbers are those
        of the latest pass, and the header says so."""
        if len(rows) != len(self._rows) or self.styles.height is None:
            # One line per series plus the header: fixed, so that new numbers repaint this
            # table only instead of laying the whole screen out again.
            self.styles.height = len(rows) + 1
        self._rows, self._last_step, self._total_rows = tuple(rows), last_step, total_rows
        self._passes = passes
        self._render_table()

    @property
    def shown_last_step(self) -> int | None:
        """The chart's latest step as this table last rendered it."""
        return self._shown[1] if self._shown else None

    def on_resize(self) -> None:
        self._render_table()

    def _render_table(self) -> None:
        width = self.content_size.width
        state = (self._rows, self._last_step, self._total_rows, width, self._passes)
        if state == self._shown:
            return
        self._shown = state
        table = _table(self._rows, self._last_step, self._total_rows, width, self._passes)
        self.update(table, layout=False)


def _table(
    rows: Sequence[SeriesRow], last_step: int | None, total_rows: int, width: int, passes: int = 1
) -> Text:
    """Legend plus numbers under a header with the chart's latest step and row count, laid
    out here rather than by rich's Table: this repaints every few seconds while a run is
    followed, and plain lines cost a fraction of a table.

    A sparse series (eval every N steps) says which step its latest value is from, when the
    panel is wide enough; names give way (with an ellipsis) before numbers do.
    """
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

    min_width, max_width = widest(minima, "min"), widest(maxima, "max")
    # After a restart the numbers are the latest pass's: the header names it first.
    pass_label = f"pass {passes:,} · " if passes > 1 else ""
    heading = f"{pass_label}step {format_step(last_step)} · {total_rows:,} rows"
    names = widest([row.name for row in rows], "series") + 3
    if (
        names
        + 3
        + min_width
        + max_width
        + widest([a + b for a, b in zip(latest, steps, strict=True)], "")
        > width
    ):
        steps = [""] * len(rows)
    latest_width = widest([a + b for a, b in zip(latest, steps, strict=True)], "latest")
    name_width = max(4, width - latest_width - min_width - max_width - 3)

    if len(heading) > name_width:
        heading = f"{pass_label}step {format_step(last_step)}"
    head = Text(heading)
    head.truncate(name_width, overflow="ellipsis", pad=True)
    lines = [
        Text.assemble(
            head,
            " ",
            "latest".rjust(latest_width),
            " ",
            "min".rjust(min_width),
            " ",
            "max".rjust(max_width),
            style="dim bold",
        )
    ]
    for index, row in enumerate(rows):
        color = Style(color=f"rgb({row.color[0]},{row.color[1]},{row.color[2]})")
        label = Text(str(index + 1) if index < 9 else " ", style=color + Style(bold=True))
        label.append("━ " if row.marker == MARKER else f"{row.marker} ", style=color)
        label.append_text(safe_text(row.name))
        label.truncate(name_width, overflow="ellipsis", pad=True)
        value = Text(" " * (latest_width - len(latest[index]) - len(steps[index])))
        value.append(latest[index])
        value.append(steps[index], style="dim")
        if row.hidden:
            label.stylize("dim strike", 2)
            value.stylize("dim")
        line = Text.assemble(label, " ", value, " ")
        line.append(minima[index].rjust(min_width), style="dim")
        line.append(" ")
        line.append(maxima[index].rjust(max_width), style="dim")
        lines.append(line)
    text = Text("\n").join(lines)
    text.no_wrap = True
    return text
