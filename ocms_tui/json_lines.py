"""Where each value of a JSON text starts: (key/index path) -> 1-based line.

A real token scan of the text, so that a problem points at its own token even when the
same string appears elsewhere (a chart named like another chart's y-axis entry). Meant for
text that `json.loads` has already accepted; on anything else it returns what it found up
to the first token it does not understand, and never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

JsonPath = tuple["str | int", ...]

# One JSON token, or a run of whitespace. Strings hold no raw newline in valid JSON, so
# counting newlines in whitespace alone keeps the line number.
_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\n]+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<scalar>-?[0-9][0-9eE.+-]*|true|false|null|NaN|-?Infinity)
  | (?P<punct>[{}\[\]:,])
    """,
    re.VERBOSE | re.DOTALL,
)


class _Container:
    """An open object or array on the scan's stack."""

    __slots__ = ("expect_key", "index", "is_object", "key", "path")

    def __init__(self, is_object: bool, path: JsonPath) -> None:
        self.is_object = is_object
        self.path = path
        self.key: str | None = None
        self.index = 0
        self.expect_key = is_object

    def child_path(self) -> JsonPath:
        return (*self.path, self.key if self.is_object else self.index)  # type: ignore[misc]


def tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """(kind, token, 1-based line) of each token: kind is string, scalar or punct."""
    line = 1
    for match in _TOKEN.finditer(text):
        token = match.group()
        if match.lastgroup == "space":
            line += token.count("\n")
        else:
            yield match.lastgroup or "", token, line


def first_line_of(text: str, scalars: frozenset[str]) -> int | None:
    """The line of the first bare (not quoted) token in `scalars`, e.g. NaN."""
    found = (line for kind, token, line in tokens(text) if kind == "scalar" and token in scalars)
    return next(found, None)


def value_lines(
    text: str, keep: Callable[[JsonPath], bool] = lambda path: True
) -> dict[JsonPath, int]:
    """The line where each value whose path `keep` accepts begins (`()` is the document).

    A duplicated key keeps its last line, as `json.loads` keeps its last value.
    """
    lines: dict[JsonPath, int] = {}
    stack: list[_Container] = []

    def record_value_start(line: int) -> JsonPath:
        path: JsonPath = stack[-1].child_path() if stack else ()
        if keep(path):
            lines[path] = line
        return path

    for kind, token, line in tokens(text):
        top = stack[-1] if stack else None
        if kind == "string" and top is not None and top.is_object and top.expect_key:
            try:
                top.key = json.loads(token)
            except ValueError:
                return lines
            top.expect_key = False
        elif kind in ("string", "scalar"):
            record_value_start(line)
        elif token in "{[":
            stack.append(_Container(token == "{", record_value_start(line)))
        elif token in "}]":
            if not stack:
                return lines
            stack.pop()
        elif token == "," and top is not None:
            if top.is_object:
                top.expect_key = True
            else:
                top.index += 1
    return lines
