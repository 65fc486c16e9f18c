"""HelpScreen: every key of the dashboard, and what the screen shows."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ocms_tui.follow.runs import FINISHED_SECONDS, LIVE_SECONDS
from ocms_tui.widgets.keys import LEGEND_MARKS, help_rows

ABOUT = (
    "Each chart shows its series as lines over the step, with the latest value, min and max "
    "of every series underneath. Large runs are drawn from at most four points per pixel "
    "column (M4), which draws exactly the picture of all points. The status bar says whether "
    f"the runs are live (written in the last {LIVE_SECONDS:g} s), idle (and for how long) or "
    f"finished (quiet for {FINISHED_SECONDS / 60:g} min); the problems pane lists what "
    "`ocms-tui --check` would report. With several runs, each chart overlays them: one "
    "colour per run, a line style per series (its marker in the legend), runs appearing "
    "under a parent directory join while the dashboard is open."
)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 84;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: round $accent;
        border-title-style: bold;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close", key_display="esc"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll() as body:
            body.border_title = "ocms-tui · keys"
            yield Static(self._keys(), markup=False)
            yield Static(Text("\n" + ABOUT, style="dim"), markup=False)

    @staticmethod
    def _keys() -> Table:
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(ratio=1)
        for key, meaning in help_rows():
            table.add_row(Text(key), Text(meaning))
        table.add_row("", "")
        for mark, meaning in LEGEND_MARKS:
            table.add_row(Text(mark), Text(meaning))
        return table

    def on_mount(self) -> None:
        # The scroll area takes the keys: ↓ ↑, pgdn pgup, home end scroll a help taller than
        # the terminal.
        self.query_one(VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
