"""SeriesTable: the legend of a chart with the exact numbers (latest, min, max) of each series."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.content import Content
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual
from textual.widget import Widget

from ocms_tui.draw.series_style import MARKER, RGB
from ocms_tui.follow.frames import SeriesStats
from ocms_tui.widgets.safe_text import safe_text
from ocms_tui.widgets.text_strips import TextStrips, refresh_lines


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
    run: str = ""  # runs overlaid: the run's short name (untrusted), shortened before `name`


_State = tuple[tuple[SeriesRow, ...], int | None, int, int, int, int, str]
"""What a layout of the table follows from: rows, last step, row count, width, lines, passes,
the line about runs not listed."""


class SeriesTable(Widget):
    DEFAULT_CSS = """
    SeriesTable {
        height: auto;
        padding: 0 1;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: tuple[SeriesRow, ...] = ()
        self._last_step: int | None = None
        self._total_rows = 0
        self._passes = 1
        self._more = ""
        self.max_lines: int | None = None
        """Series lines the panel can spare (None: all); the rest are summed up in one."""
        self._laid_out: _State | None = None
        self._lines: list[Text] = []
        self._fits = True  # every line fits the width: painted a line at a time
        # Painted lines, made when first painted, and the widget style they were made for;
        # the whole table's strips made Textual's way, and what they were made for.
        self._strips: list[Strip | None] = []
        self._strips_for: VisualStyle | None = None
        self._whole: tuple[tuple[object, ...], list[Strip]] | None = None
        self._text_strips = TextStrips(self._span_style, self._get_style)
        self._painted_step: int | None = None
        self.lines_repainted = 0
        """Lines painted again alone (the rest of the table was the one on screen)."""
        self.strips_made = 0
        """Lines made into strips to be painted (a line on screen is made once)."""

    def show(
        self,
        rows: Sequence[SeriesRow],
        last_step: int | None,
        total_rows: int,
        passes: int = 1,
        more: str = "",
    ) -> None:
        """`passes` > 1: the run started again that many times over; the numbers are those
        of the latest pass, and the header says so. `more`: a last line about what is drawn
        but not listed (runs drawn muted). Unchanged numbers repaint nothing, and new ones
        only the lines they are on (at 10 rows/s the header and latest values)."""
        shown = (self._rows, self._last_step, self._total_rows, self._passes, self._more)
        if shown == (tuple(rows), last_step, total_rows, passes, more):
            return
        self._rows, self._last_step, self._total_rows = tuple(rows), last_step, total_rows
        self._passes, self._more = passes, more
        if self._fit_height() or not self.region or self._laid_out is None:
            self.refresh()
            return
        changed = self._lay_out()
        if changed is None:
            self.refresh()
        elif changed:
            refresh_lines(self, changed)
            self.lines_repainted += len(changed)

    def limit(self, max_lines: int | None) -> None:
        """Show at most `max_lines` series lines (the last of them a summary of the rest)."""
        if max_lines != self.max_lines:
            self.max_lines = max_lines
            self._fit_height()
            self.refresh()

    @property
    def lines_shown(self) -> int:
        if self.max_lines is None:
            return len(self._rows)
        return min(len(self._rows), max(1, self.max_lines))

    def _fit_height(self) -> bool:
        """True when the height changed."""
        # One line per series shown plus the header: fixed, so that new numbers repaint this
        # table only instead of laying the whole screen out again.
        height = self.lines_shown + 1 + (1 if self._more else 0)
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
            return True
        return False

    @property
    def shown_last_step(self) -> int | None:
        """The chart's latest step as this table last painted it."""
        return self._painted_step

    def _lay_out(self) -> list[int] | None:
        """Lay the table out for the width it has now (laid out earlier, at start-up, before
        the grid settled its columns, it showed cut-off names and values). Returns the lines
        that differ from the last layout, or None when all of it is new (another width,
        another number of lines, a line too wide to paint alone)."""
        width = self.content_size.width
        lines = self.lines_shown
        state = (
            self._rows,
            self._last_step,
            self._total_rows,
            width,
            lines,
            self._passes,
            self._more,
        )
        if state == self._laid_out:
            return []
        before, laid_out = self._lines, self._laid_out
        self._laid_out = state
        self._lines = _table_lines(
            self._rows, self._last_step, self._total_rows, width, lines, self._passes, self._more
        )
        fitted, self._fits = self._fits, all(line.cell_len <= width for line in self._lines)
        if (
            laid_out is None
            or laid_out[3:5] != (width, lines)
            or len(before) != len(self._lines)
            or not (fitted and self._fits)
        ):
            self._strips = [None] * len(self._lines)
            return None
        changed = [
            y
            for y, (old, new) in enumerate(zip(before, self._lines, strict=True))
            if _differ(old, new)
        ]
        for y in changed:
            self._strips[y] = None
        return changed

    def render(self) -> RenderResult:
        self._lay_out()
        text = Text("\n").join(self._lines)
        text.no_wrap = True
        return text

    def render_line(self, y: int) -> Strip:
        """A line that fits is painted from its own strip, made when its text changed; a
        table with a line too wide (wrapped) or text selected goes Textual's own way."""
        self._lay_out()
        assert self._laid_out is not None
        self._painted_step = self._laid_out[1]  # lines not painted again are equal
        style = self.visual_style
        selection = self.text_selection
        if selection is not None or not self._fits:
            key = (style, selection, self._laid_out)
            if self._whole is None or self._whole[0] != key:
                self._whole = (key, self._whole_strips(style))
                self.strips_made += len(self._whole[1])
            strips: list[Strip | None] = list(self._whole[1])
        else:
            if self._strips_for != style:  # new colours: every line made again
                self._strips_for = style
                self._strips = [None] * len(self._lines)
            strips = self._strips
        if y >= len(strips):
            return Strip.blank(self.size.width, style.rich_style)
        strip = strips[y]
        if strip is None:
            strip = self._strips[y] = self._text_strips.strip(self._lines[y], y, style)
            self.strips_made += 1
        return strip

    def _whole_strips(self, style: VisualStyle) -> list[Strip]:
        width, height = self.size
        content = Content.from_rich_text(self.render(), console=self.app.console)
        return Visual.to_strips(self, content, width, height, style)

    def _span_style(self, style: str | Style) -> VisualStyle:
        """A span's style as Content.from_rich_text makes it."""
        parsed = self.app.console.get_style(style) if isinstance(style, str) else style
        return VisualStyle.from_rich_style(parsed, self.app.ansi_theme)


def _differ(old: Text, new: Text) -> bool:
    return (old.plain, old.style, old.spans) != (new.plain, new.style, new.spans)


def _table_lines(
    rows: Sequence[SeriesRow],
    last_step: int | None,
    total_rows: int,
    width: int,
    lines_shown: int | None = None,
    passes: int = 1,
    more: str = "",
) -> list[Text]:
    """Legend plus numbers under a header with the chart's latest step and row count, laid
    out here rather than by rich's Table: this repaints every few seconds while a run is
    followed, and plain lines cost a fraction of a table.

    A sparse series (eval every N steps) says which step its latest value is from, when the
    panel is wide enough; names give way (with an ellipsis) before numbers do, and a run's
    name before its series' name. With `lines_shown` below the row count, the last line
    says how many series are not listed, and their range of values.
    """
    shown = len(rows) if lines_shown is None or lines_shown >= len(rows) else lines_shown - 1
    left_out = rows[shown:]
    rows = rows[:shown]
    latest = [format_number(row.stats.latest) for row in rows]
    steps = [
        f" @{format_step(row.stats.latest_step)}"
        if row.stats.latest_step is not None and row.stats.latest_step != last_step
        else ""
        for row in rows
    ]
    # A large file still loading shows a sample of its rows: its latest value is exact, its
    # bounds are those of the sample ("~"), and the header says the rows are not all read.
    minima = [_bound(row.stats.minimum, row.stats.sampled) for row in rows]
    maxima = [_bound(row.stats.maximum, row.stats.sampled) for row in rows]
    sampled = any(row.stats.sampled for row in rows)

    def widest(cells: Sequence[str], header: str) -> int:
        return max([len(header), *map(len, cells)])

    min_width, max_width = widest(minima, "min"), widest(maxima, "max")
    # After a restart the numbers are the latest pass's: the header names it first.
    pass_label = f"pass {passes:,} · " if passes > 1 else ""
    count = "loading …" if sampled else f"{total_rows:,} rows"
    heading = f"{pass_label}step {format_step(last_step)} · {count}"
    names = widest([_full_label(row) for row in rows], "series") + 3
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
        label = _label_cell(index, row.name, row.run, row.color, row.marker, row.hidden, name_width)
        value = Text(" " * (latest_width - len(latest[index]) - len(steps[index])))
        value.append(latest[index])
        value.append(steps[index], style="dim")
        if row.hidden:
            value.stylize("dim")
        line = Text.assemble(label, " ", value, " ")
        line.append(minima[index].rjust(min_width), style="dim")
        line.append(" ")
        line.append(maxima[index].rjust(max_width), style="dim")
        lines.append(line)
    if left_out:
        lines.append(_summary(left_out, width))
    if more:
        note = Text(f"   {more}", style="dim")
        note.truncate(max(1, width), overflow="ellipsis")
        lines.append(note)
    return lines


@lru_cache(maxsize=1024)
def _label_cell(
    index: int, name: str, run: str, color: RGB, marker: str, hidden: bool, width: int
) -> Text:
    """A series' number, marker and name in `width` cells: the same on every repaint while
    a run is followed, so made once (callers only read it)."""
    style = Style(color=f"rgb({color[0]},{color[1]},{color[2]})")
    label = Text(str(index + 1) if index < 9 else " ", style=style + Style(bold=True))
    label.append("━ " if marker == MARKER else f"{marker} ", style=style)
    label.append_text(_label(name, run, width - label.cell_len))
    label.truncate(width, overflow="ellipsis", pad=True)
    if hidden:
        label.stylize("dim strike", 2)
    return label


def _bound(value: float | None, sampled: bool) -> str:
    text = format_number(value)
    return f"~{text}" if sampled and value is not None else text


RUN_SEPARATOR = " · "


def _full_label(row: SeriesRow) -> str:
    return f"{row.run}{RUN_SEPARATOR}{row.name}" if row.run else row.name


def _label(name: str, run_name: str, width: int) -> Text:
    """`run · series` in `width` cells: the run's name is shortened (with an ellipsis) so
    that the series' name stays whole while it fits at all."""
    if not run_name:
        return safe_text(name)
    series = safe_text(name)
    room = width - series.cell_len - len(RUN_SEPARATOR)
    run = safe_text(run_name)
    if run.cell_len > room:
        run.truncate(max(1, room), overflow="ellipsis")
    return Text.assemble(run, RUN_SEPARATOR, series)


def _summary(left_out: Sequence[SeriesRow], width: int) -> Text:
    """One line for the series the legend has no room for: how many, and their range."""
    lows = [row.stats.minimum for row in left_out if row.stats.minimum is not None]
    highs = [row.stats.maximum for row in left_out if row.stats.maximum is not None]
    text = Text(f"   +{len(left_out)} more series", style="dim")
    if lows and highs:
        text.append(f" ({format_number(min(lows))} … {format_number(max(highs))})", style="dim")
    text.append(" — maximise (enter) to list them", style="dim")
    text.truncate(max(1, width), overflow="ellipsis")
    return text
