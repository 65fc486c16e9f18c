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

    __slots__ = ("expect_key", "index", "is_object", "key", "path", "start")

    def __init__(self, is_object: bool, path: JsonPath, start: int) -> None:
        self.is_object = is_object
        self.path = path
        self.start = start  # index of its opening bracket in the text
        self.key: str | None = None
        self.index = 0
        self.expect_key = is_object

    def child_path(self) -> JsonPath:
        return (*self.path, self.key if self.is_object else self.index)  # type: ignore[misc]


def json_int(text: str) -> int | float:
    """A JSON integer literal as a number: Python's int, or, past the digits int() converts
    (4,300 unless sys.set_int_max_str_digits says otherwise), the double JSON.parse makes
    of it. So that a valid JSON file is always read, as json.loads(..., parse_int=json_int)."""
    try:
        return int(text)
    except ValueError:  # more digits than int() takes: a double, as in JavaScript
        return float(text)


# Skips a value the caller does not want in C: a 4 MB file then costs what json.loads does.
_SKIPPER = json.JSONDecoder(parse_int=json_int)


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

    `keep` must refuse every path below one it refuses, and within an array every index
    after the first it refuses: such values are skipped unscanned. A duplicated key keeps
    its last line, as `json.loads` keeps its last value.
    """
    lines: dict[JsonPath, int] = {}
    stack: list[_Container] = []
    line = 1
    position = 0

    def skip_value(start: int) -> int:
        """The index after the JSON value at `start` (the line count follows it)."""
        nonlocal line
        try:
            end = _SKIPPER.raw_decode(text, start)[1]
        except (ValueError, RecursionError):
            end = len(text)
        line += text.count("\n", position, end)
        return end

    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return lines  # not JSON from here on
        kind, token = match.lastgroup, match.group()
        top = stack[-1] if stack else None
        if kind == "space":
            line += token.count("\n")
        elif kind == "string" and top is not None and top.is_object and top.expect_key:
            try:
                top.key = json.loads(token)
            except ValueError:
                return lines
            top.expect_key = False
        elif kind in ("string", "scalar") or token in "{[":
            path: JsonPath = top.child_path() if top is not None else ()
            if keep(path):
                lines[path] = line
                if token in "{[":
                    stack.append(_Container(token == "{", path, position))
            elif top is not None and not top.is_object:
                # No later element is wanted either: skip to the end of the array.
                position = skip_value(top.start)
                stack.pop()
                continue
            elif token in "{[":
                position = skip_value(position)
                continue
        elif token in "}]":
            if not stack:
                return lines
            stack.pop()
        elif token == "," and top is not None:
            if top.is_object:
                top.expect_key = True
            else:
                top.index += 1
        position = match.end()
    return lines
