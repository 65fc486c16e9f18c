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

KEYS: tuple[tuple[str, str], ...] = (
    ("q", "quit"),
    ("?", "this help (escape closes it)"),
    ("← ↑ ↓ → / tab", "focus another chart (or click it)"),
    ("enter", "maximise the focused chart / restore the grid"),
    ("s", "smoothing: off → EMA 0.6 → 0.9 → 0.99 (debiased, as in TensorBoard)"),
    ("l", "log scale on the focused chart's y axis (values ≤ 0 are not drawn)"),
    ("] / [", "zoom in / out on the latest steps"),
    ("0", "reset the zoom"),
    ("1 … 9", "show / hide series 1 … 9 of the focused chart"),
    ("space", "pause / resume following the run"),
    ("r", "reload the directory from scratch"),
    ("p", "show / hide the problems pane"),
    ("b", "show / hide the run list (when several runs are followed)"),
    ("/", "filter the run list by typing (enter: into the list, escape: back to the charts)"),
    ("space / enter", "in the run list: show / hide the highlighted run's lines"),
    ("ctrl+p", "command palette (themes: light and dark)"),
)

ABOUT = (
    "Each chart shows its series as lines over the step, with the latest value, min and max "
    "of every series underneath. Large runs are drawn from at most four points per pixel "
    "column (M4), which draws exactly the picture of all points. The status bar says whether "
    "the run is live (written in the last 30 s) or stale; the problems pane lists what "
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
        for key, meaning in KEYS:
            table.add_row(Text(key), Text(meaning))
        return table

    def action_close(self) -> None:
        self.dismiss(None)
