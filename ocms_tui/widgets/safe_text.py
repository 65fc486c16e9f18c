"""Text from files (names, paths, messages) made safe to put on a terminal.

rich.text.Text already keeps such text away from markup parsing; it does not remove ESC and
most other control characters, which a terminal would obey. They are shown as the Unicode
control pictures (␛, ␊, ...) instead, so a hostile name is visible rather than effective.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

_VISIBLE = {code: chr(0x2400 + code) for code in range(32)}
_VISIBLE[0x7F] = "␡"
_VISIBLE.update({code: "\ufffd" for code in range(0x80, 0xA0)})
_VISIBLE.update({code: "\ufffd" for code in (0x2028, 0x2029)})  # line/paragraph separators


def visible(text: str) -> str:
    """`text` with every control character replaced by a visible stand-in."""
    return text.translate(_VISIBLE)


def safe_text(text: str, style: str | Style = "") -> Text:
    """A Text holding `text` literally: no markup, no control characters."""
    return Text(visible(text), style=style)
