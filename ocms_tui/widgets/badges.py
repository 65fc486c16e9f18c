"""The badge of each run status, for the status bar and the run list: one table."""

from __future__ import annotations

from ocms_tui.follow.runs import RunStatus

# (symbol and word, Textual style); an idle run's badge adds how long it has been quiet.
BADGES: dict[RunStatus, tuple[str, str]] = {
    RunStatus.WAITING: ("◌ waiting", "$warning"),
    RunStatus.LOADING: ("◌ loading", "$secondary"),
    RunStatus.LIVE: ("● live", "$success"),
    RunStatus.IDLE: ("○ idle", "$text-muted"),
    RunStatus.FINISHED: ("✓ finished", "$text-muted"),
    RunStatus.PAUSED: ("⏸ paused", "$warning"),
}


def format_duration(seconds: float) -> str:
    """'40s', '7m', '3h', '2d' (never negative; seconds in 5 s steps, to repaint less)."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds) // 5 * 5}s"


def badge(
    status: RunStatus, quiet_seconds: float | None = None, loaded: float | None = None
) -> tuple[str, str]:
    """The badge text and style: '● live', '○ idle 5m', '◌ loading 40%', '✓ finished', ..."""
    label, style = BADGES[status]
    if status is RunStatus.IDLE and quiet_seconds is not None:
        label = f"{label} {format_duration(quiet_seconds)}"
    if status is RunStatus.LOADING and loaded is not None:
        label = f"{label} {min(99, int(loaded * 100))}%"  # 100% only once it is loaded
    return label, style
