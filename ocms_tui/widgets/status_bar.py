"""StatusBar: which directory, how much data, when it was last written, live or stale."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ocms_tui.follow.runs import RunStatus
from ocms_tui.follow.session import Status
from ocms_tui.widgets.badges import badge, format_duration
from ocms_tui.widgets.safe_text import visible

__all__ = ["RunStatus", "Status", "StatusBar", "format_age", "status_line"]


def format_age(seconds: float | None) -> str:
    """'just now', '40s ago', '7m ago', '3h ago', '2d ago' (never negative)."""
    if seconds is None:
        return "never"
    if seconds < 5:
        return "just now"
    return f"{format_duration(seconds)} ago"


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self._status: Status | None = None
        self._shown: tuple[RunStatus, str] | None = None

    def show(self, status: Status) -> None:
        self._status = status
        line = status_line(status, self.content_size.width or None)
        if (status.state, line.plain) == self._shown:
            return  # the age changes every tick, its text once a second at most
        self._shown = (status.state, line.plain)
        self.update(line, layout=False)

    def on_resize(self) -> None:
        if self._status is not None:
            self._shown = None
            self.show(self._status)


MIN_DIRECTORY_WIDTH = 16
SEPARATOR = "  │  "


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, its middle replaced by '…': a path's end (the run)
    says the most, its start where it lives."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 4
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def status_line(status: Status, width: int | None = None) -> Content:
    """One line of at most `width` cells: the badge and the counts come first; when they do
    not fit, the watcher's description goes, then a live run's last write (live says it is
    recent), then the directory shrinks (its middle elided), then the end is cut with an
    ellipsis (by the widget's CSS). Parts from files or paths are plain text (Content never
    parses them)."""
    label, style = badge(status.state, status.last_write_age, status.loaded)
    facts: list[str] = []
    last_write = ""
    if status.state is not RunStatus.WAITING:
        plural = "s" if status.charts != 1 else ""
        facts.append(f"{status.charts} chart{plural} · {status.rows:,} rows")
        if status.state is not RunStatus.IDLE:  # an idle badge already says how long
            last_write = f"last write {format_age(status.last_write_age)}"
            facts.append(last_write)
    watching = visible(status.watching)
    directory = visible(status.directory)

    def fixed() -> int:
        return len(label) + 2 + sum(len(SEPARATOR) + len(fact) for fact in facts)

    if width is not None and fixed() + len(directory) + len(SEPARATOR) + len(watching) > width:
        watching = ""  # how the run is watched matters least
        if status.state is RunStatus.LIVE and fixed() + len(directory) > width:
            facts.remove(last_write)  # "live" says it was written in the last 30 s
        directory = shorten_middle(directory, max(MIN_DIRECTORY_WIDTH, width - fixed()))
    tail = "".join(SEPARATOR + fact for fact in facts)
    parts: list[str | tuple[str, str]] = [(label, f"bold {style}"), "  ", (directory, "bold")]
    parts.append(tail)
    if watching:
        parts.append((SEPARATOR + watching, "$text-muted"))
    return Content.assemble(*parts)
