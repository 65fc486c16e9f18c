"""RunList: the sidebar of runs: each run's colour, name, status, last step and problems;
runs are shown or hidden with space/enter, and the list is filtered by typing above it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, SelectionList
from textual.widgets.selection_list import Selection

from ocms_tui.draw.series_style import RGB
from ocms_tui.follow.runs import RunStatus
from ocms_tui.widgets.badges import badge
from ocms_tui.widgets.safe_text import visible
from ocms_tui.widgets.series_table import format_step


@dataclass(frozen=True)
class RunRow:
    key: str  # identifies the run (its absolute directory)
    name: str  # untrusted (a path): plain text only
    color: RGB
    status: RunStatus
    quiet_seconds: float | None  # since the last write (None: never written)
    last_step: int | None
    problems: int
    shown: bool
    value: str = ""  # the latest value of the series the runs are ranked by ("": none)
    health: str | None = None  # the first health finding's rule ("spike", "divergence"...)


def run_prompt(row: RunRow) -> Content:
    """One line (a SelectionList option is one line): the run's colour, its value of the
    series runs are ranked by, its problem count, name, status and last step."""
    red, green, blue = row.color
    badge_text, badge_style = badge(row.status, row.quiet_seconds)
    parts: list[str | tuple[str, str]] = [("━ ", f"rgb({red},{green},{blue})")]
    if row.value:
        parts.append((f"{row.value} ", "bold" if row.shown else "dim"))
    # Before the name: a long name is cut at the list's edge, and a broken or unhealthy run
    # must say so.
    if row.problems:
        parts.append((f"{row.problems}▲ ", "$warning"))
    if row.health:
        parts.append((f"⚠ {row.health} ", "bold $error"))
    parts += [
        # The checkbox's colour alone is easy to miss: a hidden run is struck through too.
        (visible(row.name), "bold" if row.shown else "dim strike"),
        " ",
        (badge_text, badge_style),
        (f" {format_step(row.last_step)}", "$text-muted"),
    ]
    return Content.assemble(*parts)


def _prompt_fields(row: RunRow) -> tuple[object, ...]:
    """What `run_prompt` shows of a row: equal fields, equal prompts (the seconds since the
    last write change on every state, the badge made of them far less often)."""
    badge_shown = badge(row.status, row.quiet_seconds)
    return (row.color, row.value, row.problems, row.name, row.shown, badge_shown, row.last_step)


def matches(name: str, query: str) -> bool:
    """Every word of the query appears in the name (case-insensitive)."""
    lowered = name.lower()
    return all(word in lowered for word in query.lower().split())


class RunList(Vertical):
    DEFAULT_CSS = """
    RunList {
        width: 36;
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text;
        border-title-style: bold;
        background: $surface;
    }
    RunList > Input, RunList > Input:focus {
        border: none;
        height: 1;
        padding: 0 1;
        margin-bottom: 1;
    }
    RunList > SelectionList, RunList > SelectionList:focus {
        border: none;
        height: 1fr;
        padding: 0;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    class Highlighted(Message):
        """Another run is highlighted in the list (None: none)."""

        def __init__(self, key: str | None) -> None:
            super().__init__()
            self.key = key

    class Toggled(Message):
        """The user showed or hid a run."""

        def __init__(self, key: str, shown: bool) -> None:
            super().__init__()
            self.key = key
            self.shown = shown

    def __init__(self) -> None:
        super().__init__()
        self.filter = Input(placeholder="type to filter runs", id="run-filter")
        self.options: SelectionList[str] = SelectionList(id="run-options")
        self._rows: tuple[RunRow, ...] = ()
        self._shown: tuple[tuple[RunRow, ...], str] | None = None
        self._listed: list[RunRow] | None = None  # the rows the options show, in order
        self.ranked_by = ""
        self.border_title = "Runs"

    def compose(self) -> ComposeResult:
        yield self.filter
        yield self.options

    @property
    def visible_keys(self) -> list[str]:
        """The runs the filter lets through, in order."""
        return [row.key for row in self._rows if matches(row.name, self.filter.value)]

    @property
    def highlighted_key(self) -> str | None:
        options = self.options
        highlighted = options.highlighted
        if highlighted is None or highlighted >= options.option_count:
            return None
        return options.get_option_at_index(highlighted).value

    def show(self, rows: Sequence[RunRow], ranked_by: str = "") -> None:
        """`rows` in the order shown (best first); `ranked_by` says by what."""
        self._rows = tuple(rows)
        if ranked_by != self.ranked_by:
            self.ranked_by = ranked_by
            self.border_subtitle = f"by {ranked_by} · o: next" if ranked_by else None
        self._rebuild()

    def _rebuild(self) -> None:
        query = self.filter.value
        state = (self._rows, query)
        if state == self._shown:
            return
        self._shown = state
        options = self.options
        key = self.highlighted_key
        shown = [row for row in self._rows if matches(row.name, query)]
        listed, self._listed = self._listed, shown
        selected = sum(row.shown for row in self._rows)
        self.border_title = f"Runs ({selected}/{len(self._rows)} shown)"
        if listed is not None and [row.key for row in listed] == [row.key for row in shown]:
            # The same runs in the same order (a followed sweep, most states): only the
            # lines that changed are made again, instead of every option (0.2 s at 500 runs).
            for index, (old, new) in enumerate(zip(listed, shown, strict=True)):
                if _prompt_fields(old) != _prompt_fields(new):
                    options.replace_option_prompt_at_index(index, run_prompt(new))
                if old.shown != new.shown:
                    (options.select if new.shown else options.deselect)(new.key)
            return
        options.clear_options()
        options.add_options(Selection(run_prompt(row), row.key, row.shown) for row in shown)
        keys = [row.key for row in shown]
        if keys:
            options.highlighted = keys.index(key) if key in keys else 0

    @on(Input.Changed, "#run-filter")
    def _filter_changed(self) -> None:
        self._rebuild()

    @on(Input.Submitted, "#run-filter")
    def _filter_done(self) -> None:
        self.options.focus()

    @on(SelectionList.SelectionHighlighted, "#run-options")
    def _highlighted(self, event: SelectionList.SelectionHighlighted[str]) -> None:
        event.stop()
        self.post_message(self.Highlighted(event.selection.value))

    @on(SelectionList.SelectionToggled, "#run-options")
    def _toggled(self, event: SelectionList.SelectionToggled[str]) -> None:
        event.stop()
        key = event.selection.value
        self.post_message(self.Toggled(key, key in self.options.selected))
