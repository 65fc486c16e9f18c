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

from ocms_tui.draw.plotting import RGB
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
    health: str | None = None  # the first health finding's rule ("spike", "divergence"...)


def run_prompt(row: RunRow) -> Content:
    """One line (a SelectionList option is one line): the run's colour and name, its status,
    last step and problem count."""
    red, green, blue = row.color
    badge_text, badge_style = badge(row.status, row.quiet_seconds)
    parts: list[str | tuple[str, str]] = [
        ("━ ", f"rgb({red},{green},{blue})"),
        # The checkbox's colour alone is easy to miss: a hidden run is struck through too.
        (visible(row.name), "bold" if row.shown else "dim strike"),
        " ",
        (badge_text, badge_style),
        (f" {format_step(row.last_step)}", "$text-muted"),
    ]
    if row.problems:
        parts.append((f" {row.problems}▲", "$warning"))
    if row.health:
        parts.append((f" ⚠ {row.health}", "bold $error"))
    return Content.assemble(*parts)


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
        self.border_title = "Runs"

    def compose(self) -> ComposeResult:
        yield self.filter
        yield self.options

    @property
    def visible_keys(self) -> list[str]:
        """The runs the filter lets through, in order."""
        return [row.key for row in self._rows if matches(row.name, self.filter.value)]

    def show(self, rows: Sequence[RunRow]) -> None:
        self._rows = tuple(rows)
        self._rebuild()

    def _rebuild(self) -> None:
        query = self.filter.value
        state = (self._rows, query)
        if state == self._shown:
            return
        self._shown = state
        options = self.options
        highlighted = options.highlighted
        key = None
        if highlighted is not None and highlighted < options.option_count:
            key = options.get_option_at_index(highlighted).value
        shown = [row for row in self._rows if matches(row.name, query)]
        options.clear_options()
        options.add_options(Selection(run_prompt(row), row.key, row.shown) for row in shown)
        keys = [row.key for row in shown]
        if keys:
            options.highlighted = keys.index(key) if key in keys else 0
        selected = sum(row.shown for row in self._rows)
        self.border_title = f"Runs ({selected}/{len(self._rows)} shown)"

    @on(Input.Changed, "#run-filter")
    def _filter_changed(self) -> None:
        self._rebuild()

    @on(Input.Submitted, "#run-filter")
    def _filter_done(self) -> None:
        self.options.focus()

    @on(SelectionList.SelectionToggled, "#run-options")
    def _toggled(self, event: SelectionList.SelectionToggled[str]) -> None:
        event.stop()
        key = event.selection.value
        self.post_message(self.Toggled(key, key in self.options.selected))
