"""Problems found in a metrics directory: the rule ids users put in CI configs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

# Characters from a file that must never reach a terminal or a report as they are: C0/C1
# controls move the cursor or recolour it; the format characters (Unicode category Cf:
# bidirectional controls, zero-width spaces and joiners, the soft hyphen, the BOM, tags...)
# and the line/paragraph separators reorder, hide or break the text around them; a few
# letters that draw nothing (Hangul fillers, the grapheme joiner) hide text as well; lone
# surrogates (undecodable file-name bytes) cannot be printed. tests/test_problems.py checks
# the Cf, Zl and Zp ranges against unicodedata (and covers later Unicode versions' ones).
UNPRINTABLE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0 controls, DEL, C1 controls
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"  # Cf
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"  # Cf
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"  # Cf
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"  # Cf
    "\u2028\u2029"  # Zl, Zp
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\uffa0"  # draw nothing
    "\ud800-\udfff"  # lone surrogates
    "]"
)


def replace_unprintable(text: str, stand_in: Callable[[int], str]) -> str:
    """`text` with every UNPRINTABLE character replaced by `stand_in(code point)`."""
    return UNPRINTABLE.sub(lambda match: stand_in(ord(match.group())), text)


def escape_code(code: int) -> str:
    """A character as a visible escape, as Python writes it: \\x1b, \\u202e, \\U000e0001;
    an undecodable byte as that byte."""
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: show that byte
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


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
    # What the recorder did not write (its sidecar) and what the picture gets wrong.
    DROPPED_METRIC = "dropped-metric"
    MIXED_SCALE = "mixed-scale"
    EPOCH_INDEX_STEP = "epoch-index-step"
    NOT_A_FRACTION = "not-a-fraction"
    COUNTER_METRIC = "counter-metric"
    # Another tool's log opened directly: what its reader said (a damaged event file, rows
    # left out), named by the source's own files.
    SOURCE_PROBLEM = "source-problem"
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
    Rule.DROPPED_METRIC,
    Rule.MIXED_SCALE,
    Rule.EPOCH_INDEX_STEP,
    Rule.NOT_A_FRACTION,
    Rule.COUNTER_METRIC,
    Rule.SOURCE_PROBLEM,
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
        *,
        chart: str | None = None,
        series: str | None = None,
        step: int | None = None,
    ) -> None:
        """`chart`, `series`, `step`: where in the picture the problem is, when it has a place."""
        count = self._counts.get(rule, 0) + 1
        self._counts[rule] = count
        if count <= self.cap:
            self.problems.append(
                Problem(rule, self.path, message, line, chart=chart, series=series, step=step)
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
