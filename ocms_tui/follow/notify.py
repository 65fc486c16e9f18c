"""`--notify`: a terminal bell and a desktop notification, once per health finding.

The notification goes through the terminal itself, so it works over ssh and inside tmux
(with `allow-passthrough`) with nothing installed: OSC 9 (iTerm2, WezTerm, Windows
Terminal, kitty, foot...) and OSC 777 (rxvt-unicode, Ghostty, foot, VTE terminals such as
GNOME Terminal); a terminal that knows neither ignores both. Pure: the app writes the text.
"""

from __future__ import annotations

from collections.abc import Iterable

from ocms_tui.format.problems import HEALTH_RULES, Problem, replace_unprintable

BELL = "\a"
# Notification text stays short: a desktop notification shows a line or two.
MAX_BODY = 200


def _plain(text: str) -> str:
    """Text safe inside an OSC string: no control character (one would end the sequence or
    start another), and no ';' (OSC 777's field separator)."""
    return replace_unprintable(text, lambda _code: " ").replace(";", ",")[:MAX_BODY]


def terminal_notification(title: str, body: str) -> str:
    """The bell, then the notification as OSC 9 and as OSC 777."""
    title, body = _plain(title), _plain(body)
    return f"{BELL}\x1b]9;{title}: {body}\x07\x1b]777;notify;{title};{body}\x07"


class Notifier:
    """Remembers the findings already announced, so that each rings once."""

    def __init__(self) -> None:
        self._seen: set[tuple[object, ...]] = set()

    def new_findings(self, problems: Iterable[Problem]) -> list[Problem]:
        fresh = []
        for problem in problems:
            if problem.rule not in HEALTH_RULES or problem.overflow:
                continue
            key = (problem.rule, problem.path, problem.chart, problem.series, problem.step)
            if problem.step is None:  # `stalled` moves with the run: once per silence
                key = (problem.rule, problem.path)
            if key not in self._seen:
                self._seen.add(key)
                fresh.append(problem)
        return fresh

    def forget_missing(self, problems: Iterable[Problem]) -> None:
        """Forget `stalled` findings that are gone, so that the next silence rings again."""
        present = {(p.rule, p.path) for p in problems if p.step is None}
        self._seen = {key for key in self._seen if len(key) != 2 or key in present}


def notification_for(problems: list[Problem]) -> str:
    """One notification for the findings of one update: the first in full, then a count."""
    first = problems[0]
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return terminal_notification(f"ocms-tui {first.rule.value}", first.message + more)
