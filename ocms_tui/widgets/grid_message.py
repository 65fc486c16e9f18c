"""What the chart grid says while it has no chart to show (loading, waiting, why not)."""

from __future__ import annotations

from rich.text import Text

from ocms_tui.follow.session import SessionState
from ocms_tui.widgets.safe_text import safe_text


def grid_message(state: SessionState, label: str) -> Text | None:
    """The grid's message for `state` of the runs called `label`; None when it has charts."""
    if state.charts:
        return None
    if state.overlaid:
        if all(run.key in state.hidden_runs for run in state.runs):
            return safe_text("no run selected (press b, then space on a run)")
        if state.loading:
            return safe_text(f"loading {label} …")
        return safe_text(f"the selected runs under {label} have no charts yet …")
    run = state.runs[0]
    if run.missing is not None and state.reads > 0:
        if not run.missing.may_appear:  # waiting would not help: say what is wrong
            return safe_text(run.missing.message)
        return _lines(f"waiting for {label} …", "(it does not exist yet)")
    if state.loading:
        return safe_text(f"loading {label} …")
    if not run.has_metrics_json:
        return _lines(f"no metrics.json in {label} yet …", "(waiting for the first log())")
    return safe_text(f"{label}/metrics.json declares no charts (see the problems below)")


def _lines(*lines: str) -> Text:
    """Lines of text with paths in them: each line safe, the line breaks kept."""
    return Text("\n").join(safe_text(line) for line in lines)
