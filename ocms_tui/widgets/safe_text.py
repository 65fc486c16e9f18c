"""Text from files (names, paths, messages) made safe to put on a terminal.

rich.text.Text already keeps such text away from markup parsing; it does not remove ESC and
most other control characters, which a terminal would obey. They are shown as the Unicode
control pictures (␛, ␊, ...) instead, so a hostile name is visible rather than effective.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from ocms_tui.format.problems import escape_code, replace_unprintable


def _stand_in(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␛, ␊, ...
    return "␡" if code == 0x7F else escape_code(code)


def visible(text: str) -> str:
    """`text` with every unprintable character replaced by a visible stand-in."""
    return replace_unprintable(text, _stand_in)


def safe_text(text: str, style: str | Style = "") -> Text:
    """A Text holding `text` literally: no markup, no control characters."""
    return Text(visible(text), style=style)
