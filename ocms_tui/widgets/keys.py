"""Every key of the dashboard, as data: the app's and the chart panel's bindings, the footer,
the help screen and the README's key table are all generated from `KEYS`.

Pure Python, no Textual: `ocms_tui.ui.app` and the widgets turn these rows into `Binding`s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum

# A lone ESC byte is the escape key only once nothing followed it for this long (the rest of
# an arrow's or a click's sequence comes in the same write). Textual waits 100 ms, and up to
# 200 ms with its input thread's polling (see widgets/terminal_driver.py); vim's classic 25 ms
# is too short for no terminal we know of. A user's ESCDELAY is kept.
ESCAPE_DELAY_MS = 25


def prefer_quick_escape() -> None:
    """Set the dashboard's escape delay, unless the user set ESCDELAY: called before
    Textual is imported (it reads ESCDELAY once, at import)."""
    os.environ.setdefault("ESCDELAY", str(ESCAPE_DELAY_MS))


class Scope(Enum):
    APP = "app"  # bound on the app: works wherever the focus is (unless a widget takes it)
    PANEL = "panel"  # bound on a chart panel (the grid around it would take arrows)
    RUN_LIST = "run list"  # the run list's own keys (Textual's SelectionList and Input)
    SYSTEM = "system"  # Textual's own (the command palette)


@dataclass(frozen=True)
class KeyBinding:
    """One Textual key (`key`, Textual's name for it) bound to one `action`."""

    key: str
    action: str


@dataclass(frozen=True)
class Key:
    """One row of the help: the keys shown as `shown`, what they do, and the bindings behind
    them. `footer` is the footer's word for it (None: help screen only)."""

    shown: str
    meaning: str
    bindings: tuple[KeyBinding, ...] = ()
    scope: Scope = Scope.APP
    footer: str | None = None
    priority: bool = False  # bound before any widget sees the key (quitting always works)


def _one(key: str, action: str) -> tuple[KeyBinding, ...]:
    return (KeyBinding(key, action),)


KEYS: tuple[Key, ...] = (
    Key(
        "q / ctrl+c",
        "quit",
        (KeyBinding("q", "quit"), KeyBinding("ctrl+c", "quit")),
        footer="Quit",
        priority=True,
    ),
    Key(
        "?",
        "this help (escape closes it; ↓ pgdn end scroll it)",
        _one("question_mark", "help"),
        footer="Help",
    ),
    Key(
        "← ↑ ↓ →",
        "focus the chart beside (or click it; tab also moves)",
        (
            KeyBinding("left", "app.focus_chart(-1, 0)"),
            KeyBinding("right", "app.focus_chart(1, 0)"),
            KeyBinding("up", "app.focus_chart(0, -1)"),
            KeyBinding("down", "app.focus_chart(0, 1)"),
        ),
        scope=Scope.PANEL,
    ),
    Key(
        "enter",
        "maximise the focused chart / restore the grid",
        _one("enter", "maximise"),
        footer="Max",
    ),
    Key("escape", "restore the grid", _one("escape", "restore")),
    Key(
        "s",
        "smoothing of the focused chart: off → EMA 0.6 → 0.9 → 0.99 (debiased, as in "
        "TensorBoard); its title says which",
        _one("s", "smoothing"),
        footer="EMA",
    ),
    Key(
        "l",
        "log scale of the focused chart's y axis (values ≤ 0 are not drawn); its title says which",
        _one("l", "log_scale"),
        footer="Log",
    ),
    Key(
        "] / [",
        "zoom every chart in / out on the latest steps",
        (
            KeyBinding("right_square_bracket", "zoom(1)"),
            KeyBinding("left_square_bracket", "zoom(-1)"),
        ),
        footer="Zoom",
    ),
    Key("0", "reset the zoom", _one("0", "zoom(0)")),
    Key(
        "1 … 9",
        "show / hide series 1 … 9 of the focused chart",
        tuple(KeyBinding(str(number), f"toggle_series({number})") for number in range(1, 10)),
        footer="Lines",
    ),
    Key("space", "pause / resume following the runs", _one("space", "pause"), footer="Pause"),
    Key("r", "reload the directories from scratch", _one("r", "reload"), footer="Reload"),
    Key("p", "show / hide the problems pane", _one("p", "problems"), footer="Problems"),
    Key(
        "b",
        "show / hide the run list (when several runs are followed)",
        _one("b", "runs"),
        footer="Runs",
    ),
    Key(
        "o",
        "rank the runs by the next series (the run list shows its latest value, best first; "
        "the leading runs are drawn in colour, the others grey)",
        _one("o", "next_sort"),
    ),
    Key(
        "g",
        "runs that differ only in their seed (--group REGEX, default seed\\d+) as one line: "
        "the mean, with the min-max band dotted; again: every run",
        _one("g", "group_runs"),
    ),
    Key(
        "/",
        "filter the run list by typing (enter: into the list, escape: back to the charts)",
        _one("slash", "filter_runs"),
    ),
    Key(
        "space / enter",
        "in the run list: show / hide the highlighted run's lines (the highlighted run is "
        "drawn in front, in colour)",
        scope=Scope.RUN_LIST,
    ),
    Key("ctrl+p", "command palette (themes: light and dark)", scope=Scope.SYSTEM),
)

# How the footer shows a key whose Textual name is not what is printed on the keyboard.
FOOTER_DISPLAY = {
    "q": "q",
    "question_mark": "?",
    "enter": "⏎",
    "right_square_bracket": "[]",
    "1": "1-9",
    "space": "␣",
}

LEGEND_MARKS: tuple[tuple[str, str], ...] = (
    (
        "@950",
        "in a legend: the series' latest value is from step 950, not the chart's latest "
        "step (evaluations every N steps)",
    ),
    ("5▲", "in the run list: the run has 5 problems (press p for the problems pane)"),
    ("━ • + x …", "with several runs: the colour is the run, the mark is the series"),
)


@dataclass(frozen=True)
class BindingRow:
    """What a Textual `Binding` needs, without Textual."""

    key: str
    action: str
    description: str
    show: bool
    key_display: str | None
    priority: bool


def binding_rows(scope: Scope) -> list[BindingRow]:
    """The bindings of one scope; the footer shows the first binding of each footer key."""
    rows = []
    for entry in KEYS:
        if entry.scope is not scope:
            continue
        for index, binding in enumerate(entry.bindings):
            in_footer = entry.footer is not None and index == 0
            rows.append(
                BindingRow(
                    binding.key,
                    binding.action,
                    (entry.footer or "") if in_footer else "",
                    in_footer,
                    FOOTER_DISPLAY.get(binding.key) if in_footer else None,
                    entry.priority,
                )
            )
    return rows


def help_rows() -> list[tuple[str, str]]:
    """(keys as printed, meaning) for the help screen and the README, in order."""
    return [(entry.shown, entry.meaning) for entry in KEYS]


def readme_table() -> str:
    """The README's "Dashboard keys" table, exactly."""
    lines = ["| key | what it does |", "|---|---|"]
    lines += [f"| `{shown}` | {meaning} |" for shown, meaning in help_rows()]
    lines += [f"| `{mark}` | {meaning} |" for mark, meaning in LEGEND_MARKS]
    return "\n".join(lines)
