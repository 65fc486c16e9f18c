"""StatusBar: which directory, how much data, when it was last written, live or stale."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ocms_tui.session import RunState, Status
from ocms_tui.widgets.safe_text import visible

__all__ = ["RunState", "Status", "StatusBar", "format_age", "status_line"]


_BADGES = {
    RunState.WAITING: ("◌ waiting", "bold $warning"),
    RunState.LOADING: ("◌ loading", "bold $secondary"),
    RunState.LIVE: ("● live", "bold $success"),
    RunState.STALE: ("○ stale", "bold $text-muted"),
    RunState.PAUSED: ("⏸ paused", "bold $warning"),
}


def format_age(seconds: float | None) -> str:
    """'just now', '40s ago', '7m ago', '3h ago', '2d ago' (never negative)."""
    if seconds is None:
        return "never"
    seconds = max(0.0, seconds)
    if seconds < 5:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds) // 5 * 5}s ago"  # in 5 s steps: the bar repaints less often


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self._shown: tuple[RunState, str] | None = None

    def show(self, status: Status) -> None:
        line = status_line(status)
        if (status.state, line.plain) == self._shown:
            return  # the age changes every tick, its text once a second at most
        self._shown = (status.state, line.plain)
        self.update(line, layout=False)


def status_line(status: Status) -> Content:
    """One line; its parts from files or paths are plain text (Content never parses them)."""
    label, style = _BADGES[status.state]
    parts: list[str | tuple[str, str]] = [(label, style), "  ", (visible(status.directory), "bold")]
    if status.state is not RunState.WAITING:
        plural = "s" if status.charts != 1 else ""
        parts.append(f"  │  {status.charts} chart{plural} · {status.rows:,} rows")
        parts.append(f"  │  last write {format_age(status.last_write_age)}")
    parts.append((f"  │  {visible(status.watching)}", "$text-muted"))
    return Content.assemble(*parts)
