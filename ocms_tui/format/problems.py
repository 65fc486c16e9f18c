"""Problems found in a metrics directory: the rule ids users put in CI configs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

# Characters from a file that must never reach a terminal as they are: C0/C1 controls move
# the cursor or recolour it, bidirectional controls and line separators reorder or break
# the text after them, lone surrogates (undecodable file-name bytes) cannot be printed.
UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def replace_unprintable(text: str, stand_in: Callable[[int], str]) -> str:
    """`text` with every UNPRINTABLE character replaced by `stand_in(code point)`."""
    return UNPRINTABLE.sub(lambda match: stand_in(ord(match.group())), text)


def escape_code(code: int) -> str:
    """A character as a visible escape: \\x1b, \\u202e; an undecodable byte as that byte."""
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: show that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


class Rule(str, Enum):
    """Stable rule ids. Never rename one: CI configurations refer to them."""

    MISSING_DIR = "missing-dir"
    MISSING_METRICS_JSON = "missing-metrics-json"
    INVALID_JSON = "invalid-json"
    BAD_SCHEMA = "bad-schema"
    TOO_MANY_CHARTS = "too-many-charts"
    BAD_CHART_NAME = "bad-chart-name"
    BAD_Y_AXIS_NAME = "bad-y-axis-name"
    UNSAFE_PATH = "unsafe-path"
    NOT_A_FILE = "not-a-file"
    MISSING_CSV = "missing-csv"
    ORPHAN_CSV = "orphan-csv"
    ROW_WIDTH = "row-width"
    BAD_STEP = "bad-step"
    BAD_VALUE = "bad-value"
    LONE_CR = "lone-cr"
    HEADER_ROW = "header-row"
    LINE_TOO_LONG = "line-too-long"
    STEP_REGRESSION = "step-regression"
    NON_FINITE = "non-finite"
    PARTIAL_LINE = "partial-line"
    EMPTY_CHART = "empty-chart"
    # Curve health (follow/health.py): what the numbers do, not how they are written.
    SPIKE = "spike"
    DIVERGENCE = "divergence"
    STALLED = "stalled"

    @property
    def severity(self) -> Severity:
        return _SEVERITY[self]


_WARNINGS = {
    Rule.ORPHAN_CSV,
    Rule.STEP_REGRESSION,
    Rule.NON_FINITE,
    Rule.PARTIAL_LINE,
    Rule.EMPTY_CHART,
    Rule.SPIKE,
    Rule.DIVERGENCE,
    Rule.STALLED,
}
# The rules that judge a curve's health, which --no-health turns off and --fail-on may raise.
HEALTH_RULES = frozenset({Rule.NON_FINITE, Rule.SPIKE, Rule.DIVERGENCE, Rule.STALLED})
_SEVERITY = {rule: Severity.WARNING if rule in _WARNINGS else Severity.ERROR for rule in Rule}

# A file with thousands of bad rows reports this many per rule, then one summary line.
MAX_PROBLEMS_PER_RULE_AND_FILE = 20


@dataclass(frozen=True)
class Problem:
    """One finding. `path` is relative to the metrics directory; `line` is 1-based or None.
    `chart`, `series` and `step` name where in the picture it is, when it has such a place."""

    rule: Rule
    path: str
    message: str
    line: int | None = None
    overflow: bool = False  # the "N more like this" line after a rule hit its cap
    chart: str | None = None
    series: str | None = None
    step: int | None = None
    failing: bool = False  # a warning the user made an error (`--fail-on RULE`)

    @property
    def severity(self) -> Severity:
        return Severity.ERROR if self.failing else self.rule.severity

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, bool, int, str]:
        return (self.path, self.overflow, self.line or 0, self.rule.value)

    def as_dict(self) -> dict[str, object]:
        document: dict[str, object] = {
            "rule": self.rule.value,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "message": self.message,
        }
        # Where in the picture, only where the problem has such a place.
        for field in ("chart", "series", "step"):
            value = getattr(self, field)
            if value is not None:
                document[field] = value
        return document


class ProblemCollector:
    """Collects problems of one file, capping each rule at a fixed count."""

    def __init__(self, path: str, cap: int = MAX_PROBLEMS_PER_RULE_AND_FILE) -> None:
        self.path = path
        self.cap = cap
        self.problems: list[Problem] = []
        self.suppressed: dict[Rule, int] = {}
        self._counts: dict[Rule, int] = {}

    def add(
        self,
        rule: Rule,
        message: str,
        line: int | None = None,
        where: tuple[str | None, str | None, int | None] = (None, None, None),
    ) -> None:
        """`where`: the problem's (chart, series, step), when it has a place in the picture."""
        count = self._counts.get(rule, 0) + 1
        self._counts[rule] = count
        if count <= self.cap:
            chart, series, step = where
            self.problems.append(
                Problem(rule, self.path, message, line, False, chart, series, step)
            )
        else:
            self.suppressed[rule] = self.suppressed.get(rule, 0) + 1

    def remaining(self, rule: Rule) -> int:
        """How many more problems of this rule will still be listed."""
        return max(0, self.cap - self._counts.get(rule, 0))

    def add_unlisted(self, rule: Rule, count: int) -> None:
        """Count problems beyond the cap without building them (a bulk parse found them)."""
        if count <= 0:
            return
        assert self.remaining(rule) == 0, "list problems before counting unlisted ones"
        self._counts[rule] = self._counts.get(rule, 0) + count
        self.suppressed[rule] = self.suppressed.get(rule, 0) + count

    def count(self, rule: Rule) -> int:
        return self._counts.get(rule, 0)

    def summary(self) -> list[Problem]:
        """The kept problems plus one line (of the same rule) per rule that hit the cap."""
        extra = [
            Problem(
                rule,
                self.path,
                f"{count} more {rule.value} problem(s) in this file not listed",
                overflow=True,
            )
            for rule, count in self.suppressed.items()
        ]
        return self.problems + extra
