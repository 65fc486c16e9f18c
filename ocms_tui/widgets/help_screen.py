"""HelpScreen: every key of the dashboard, and what the screen shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ocms_tui.follow.frames import RunFrame
from ocms_tui.follow.report import dropped_keys, not_written_line, octopus_chart_line
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


LOCAL_VIEWS = (
    "Local to this dashboard, not what Octopus draws: smoothing (s), log scale (l), zoom "
    "([ ] 0), hidden series (1 … 9), maximising (enter), several runs overlaid. Octopus "
    "draws every series of metrics.json as written, over the whole step range."
)
# With many runs followed, the help lists this many runs' charts (the rest are counted).
RUNS_LISTED = 4


@dataclass(frozen=True)
class OctopusRun:
    """What Octopus will show of one run: (chart, its y-axis names) in metrics.json's order,
    and the keys the recorder did not write."""

    name: str
    charts: tuple[tuple[str, tuple[str, ...]], ...]
    dropped: tuple[str, ...] = ()


def octopus_runs(runs: Sequence[RunFrame]) -> list[OctopusRun]:
    """What Octopus will show of each followed run, as plain values for the help screen."""
    return [
        OctopusRun(
            run.name,
            tuple((chart.name, chart.y_axis) for chart in run.charts),
            tuple(dropped_keys(run.problems)),
        )
        for run in runs
    ]


def octopus_text(runs: Sequence[OctopusRun]) -> Text:
    """The help's "what Octopus will show" section: every file-controlled name as plain
    text (escaped), never markup."""
    text = Text("What Octopus will show", style="bold")
    text.append(" (metrics.json, in its order)\n")
    if not runs:
        text.append("  nothing read yet\n", style="dim")
    for run in runs[:RUNS_LISTED]:
        indent = "  "
        if len(runs) > 1:
            text.append(f"  {run.name}\n", style="underline")
            indent = "    "
        if not run.charts:
            text.append(f"{indent}no chart (see the problems pane)\n", style="dim")
        for name, y_axis in run.charts:
            text.append(f"{indent}{octopus_chart_line(name, y_axis)}\n")
        if run.dropped:
            text.append(f"{indent}{not_written_line(run.dropped)}\n", style="yellow")
    if len(runs) > RUNS_LISTED:
        text.append(f"  … and {len(runs) - RUNS_LISTED} more run(s)\n", style="dim")
    text.append(LOCAL_VIEWS + "\n", style="dim")  # a blank line before the keys
    return text


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

    def __init__(self, octopus: Sequence[OctopusRun] = ()) -> None:
        super().__init__()
        self.octopus = tuple(octopus)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as body:
            body.border_title = "ocms-tui · keys"
            yield Static(octopus_text(self.octopus), markup=False, id="octopus")
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
