"""Properties of the whole reader and checker (RunModel, check_directory) on generated
directories, judged against oracles written from the format's text, not from the reader.

- any metrics.json (bytes, JSON values, near-valid chart lists): never an exception, and
  it has errors exactly when the spec says it is invalid;
- any chart CSV made of valid and broken lines: the rows kept and the (rule, line) of every
  problem are what the rule table says;
- the same files written in any chunking, interleaved across files, with metrics.json
  arriving at any moment and any read budget: the followed model equals one full read;
- a real recorder writing any sequence of snapshots while a model follows at random
  moments: the model ends equal to a full read and to what was logged.

test_parse.py and test_reader.py cover the parsers and one follower; these go through the
model and the checker on real directories.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ocms_recorder import (
    MAX_CHARTS,
    MAX_STEP,
    OcmsRecorder,
    chart_file_name,
    is_valid_name,
    write_layout,
)
from reliability_support import charts_from_snapshots

from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.picture import PICTURE_RULES
from ocms_tui.format.problems import MAX_PROBLEMS_PER_RULE_AND_FILE, Problem, Rule

# Generous: a tiny directory takes milliseconds; this only catches a hang or a blow-up.
SECONDS_PER_CASE = 10.0
SCHEMA_RULES = {
    Rule.INVALID_JSON,
    Rule.BAD_SCHEMA,
    Rule.TOO_MANY_CHARTS,
    Rule.BAD_CHART_NAME,
    Rule.BAD_Y_AXIS_NAME,
    Rule.UNSAFE_PATH,
}
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("OCMS_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# The values of these runs (reliability_support.value_of) jump across 13 orders of
# magnitude from step to step by design: spikes by any measure. These tests are about the
# files, so they read them without the curve health checks (health=False, --no-health).
@contextmanager
def fresh_directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ocms-prop-") as name:
        yield Path(name)


def timed_check(directory: Path) -> tuple[Problem, ...]:
    started = time.monotonic()
    result = check_directory(directory, settle_seconds=0.0, health=False)
    assert time.monotonic() - started < SECONDS_PER_CASE
    return result.problems


# -- metrics.json -------------------------------------------------------------------------


def _refuse_constant(literal: str) -> None:
    raise ValueError(f"{literal} is not JSON")


def loads_strict(text: str) -> object:
    """json.loads as RFC 8259 (and JSON.parse) reads JSON: NaN and Infinity are errors, and
    every number is a double (1 and 1.0 are one value; 5,000 digits are a number too)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_int=float)


def schema_is_valid(document: object) -> bool:
    """The spec's metrics.json, read literally: version 1 when given, at most 6 charts,
    each with a unique legal name, file `<name>.csv`, x_axis "step" when given, and a
    non-empty list of unique legal y-axis names. Keys the spec does not name are ignored."""
    if not isinstance(document, dict):
        return False
    if "version" in document and not (
        type(document["version"]) in (int, float) and document["version"] == 1
    ):
        return False
    charts = document.get("charts")
    if not isinstance(charts, list) or len(charts) > MAX_CHARTS:
        return False
    names: set[str] = set()
    for chart in charts:
        if not isinstance(chart, dict):
            return False
        name, y_axis = chart.get("name"), chart.get("y_axis")
        if not is_valid_name(name) or name in names:
            return False
        names.add(name)
        if chart.get("file") != chart_file_name(name) or chart.get("x_axis", "step") != "step":
            return False
        if not isinstance(y_axis, list) or not y_axis or len(set(map(str, y_axis))) != len(y_axis):
            return False
        if not all(is_valid_name(series) for series in y_axis):
            return False
    return True


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
names = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
    st.sampled_from(["loss", "", "a b", "[bold red]x[/]", "\x1b[31mred", "é", "../x", "a/b"]),
)


@st.composite
def chart_objects(draw: st.DrawFn) -> object:
    name = draw(names)
    chart: dict[str, object] = {
        "name": name,
        "file": draw(
            st.one_of(
                st.just(f"{name}.csv"),
                st.sampled_from(["../x.csv", "/etc/passwd", "a/b.csv", "", "..", "x.csv"]),
                json_values,
            )
        ),
        "x_axis": draw(st.one_of(st.just("step"), json_values)),
        "y_axis": draw(st.one_of(st.lists(names, min_size=1, max_size=4), json_values)),
    }
    for key in draw(st.sets(st.sampled_from(sorted(chart)), max_size=1)):
        del chart[key]
    if draw(st.booleans()):
        chart[draw(st.text(max_size=5))] = draw(json_values)
    return chart if draw(st.integers(0, 15)) else draw(json_values)


@st.composite
def documents(draw: st.DrawFn) -> object:
    document: dict[str, object] = {
        "version": draw(st.one_of(st.just(1), json_values)),
        "charts": draw(st.one_of(st.lists(chart_objects(), max_size=8), json_values)),
    }
    for key in draw(st.sets(st.sampled_from(["version", "charts"]), max_size=1)):
        del document[key]
    return document if draw(st.integers(0, 15)) else draw(json_values)


def schema_errors(problems: tuple[Problem, ...]) -> list[Problem]:
    return [p for p in problems if p.is_error and p.rule in SCHEMA_RULES]


@pytest.mark.slow  # hypothesis, 1.5 s of CPU
@PROPERTY_SETTINGS
@given(documents())
@example({"version": None, "charts": []})  # null and true pass for 1 in Python; 1.0 is 1
@example({"version": True, "charts": []})
@example({"version": 1.0, "charts": []})
def test_metrics_json_has_errors_exactly_when_the_spec_says_it_is_invalid(document: object) -> None:
    text = json.dumps(document)  # NaN and Infinity floats become the non-JSON literals
    try:
        loads_strict(text)
        strict = True
    except ValueError:
        strict = False
    with fresh_directory() as directory:
        (directory / "metrics.json").write_text(text, encoding="utf-8")
        problems = timed_check(directory)
    assert bool(schema_errors(problems)) is not (strict and schema_is_valid(document)), problems
    assert all(p.path == "metrics.json" for p in schema_errors(problems))
    if not strict:
        assert [p.rule for p in schema_errors(problems)] == [Rule.INVALID_JSON]


@PROPERTY_SETTINGS
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_metrics_json_bytes_are_answered_without_an_exception(data: bytes) -> None:
    try:
        document = loads_strict(data.decode("utf-8"))
        parsed = True
    except (UnicodeDecodeError, ValueError, RecursionError):
        document, parsed = None, False
    with fresh_directory() as directory:
        (directory / "metrics.json").write_bytes(data)
        problems = timed_check(directory)
    if not parsed:
        assert [p.rule for p in schema_errors(problems)] == [Rule.INVALID_JSON]
    else:
        assert bool(schema_errors(problems)) is not schema_is_valid(document)


# -- chart CSV lines ------------------------------------------------------------------------

Y_AXIS = ("loss", "eval_loss")
WIDTH = 1 + len(Y_AXIS)


@dataclass(frozen=True)
class Line:
    """One generated line and what the rule table says about it."""

    text: str
    kind: str  # row | bad-step | width | blank | header
    step: int | None = None
    values: tuple[str, ...] = ()


GOOD_VALUES = st.one_of(
    st.just(""),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "0.5", "-0.0", "1e-300", "12345678901234567890"]),
)
BAD_VALUES = st.sampled_from(
    ["abc", "1 ", " 1", '"1"', "1e", "--1", "é", "\x1b[31m", "1_0", "0x10", "1.5.3", "1\r"]
)
# Tokens a step may not be; on line 1 the ones that read as words make it a header.
BAD_STEPS = st.sampled_from(
    [
        "-1",
        "1.5",
        "",
        "abc",
        "0x1F",
        " 7",
        "7 ",
        "1e3",
        "nan",
        str(MAX_STEP + 1),
        "18446744073709551616",
    ]
)
HEADER_LIKE = {"abc", "0x1F"}


@st.composite
def lines(draw: st.DrawFn) -> Line:
    kind = draw(st.sampled_from(["row", "row", "row", "bad-value", "bad-step", "width", "blank"]))
    step = draw(st.integers(0, MAX_STEP) | st.integers(0, 50))
    if kind == "blank":
        return Line("", "blank")
    if kind == "width":
        count = draw(st.sampled_from([0, 1, 3, 4]))
        values = tuple(draw(st.lists(GOOD_VALUES, min_size=count, max_size=count)))
        return Line(",".join([str(step), *values]), "width")
    values = tuple(draw(st.lists(GOOD_VALUES, min_size=len(Y_AXIS), max_size=len(Y_AXIS))))
    if kind == "bad-value":
        index = draw(st.integers(0, len(values) - 1))
        values = (*values[:index], draw(BAD_VALUES), *values[index + 1 :])
    if kind == "bad-step":
        return Line(",".join([draw(BAD_STEPS), *values]), "bad-step")
    return Line(",".join([str(step), *values]), "row", step, values)


def _is_number(text: str) -> bool:
    """A value the format accepts: Python float syntax without spaces or underscores."""
    if text.strip() != text or "_" in text:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def expected_from_lines(body: list[Line], tail: str) -> tuple[list[tuple], Counter]:
    """(kept rows as (step, values...), Counter of (rule, line)) by the rule table."""
    rows: list[tuple] = []
    found: Counter[tuple[Rule, int]] = Counter()
    previous: int | None = None
    for number, line in enumerate(body, start=1):
        first_field = line.text.split(",")[0]
        values = line.values
        if line.text.endswith("\r"):  # "\r\n" ends a row exactly like "\n"
            values = (*values[:-1], values[-1][:-1])
        if "\r" in line.text[:-1]:
            found[Rule.LONE_CR, number] += 1
        elif line.kind in ("bad-step", "width") and number == 1 and first_field in HEADER_LIKE:
            found[Rule.HEADER_ROW, number] += 1
        elif line.kind == "bad-step":
            found[Rule.BAD_STEP, number] += 1
        elif line.kind in ("width", "blank"):
            found[Rule.ROW_WIDTH, number] += 1
        else:
            if previous is not None and line.step < previous:  # type: ignore[operator]
                found[Rule.STEP_REGRESSION, number] += 1
            previous = line.step
            numbers = []
            for value in values:
                if value == "":
                    numbers.append(math.nan)
                elif not _is_number(value):
                    found[Rule.BAD_VALUE, number] += 1
                    numbers.append(math.nan)
                else:
                    numbers.append(float(value))
                    if not math.isfinite(float(value)):
                        found[Rule.NON_FINITE, number] += 1
            rows.append((line.step, *numbers))
    if tail:
        found[Rule.PARTIAL_LINE, len(body) + 1] += 1
    elif not body:
        found[Rule.EMPTY_CHART, None] += 1  # type: ignore[index]
    return rows, found


def capped(found: Counter) -> Counter:
    """What a checker listing at most N problems per rule and file shows of `found`."""
    shown: Counter = Counter()
    per_rule: Counter = Counter()
    for (rule, line), count in sorted(found.items(), key=lambda item: item[0][1] or 0):
        room = MAX_PROBLEMS_PER_RULE_AND_FILE - per_rule[rule]
        take = min(room, count)
        if take > 0:
            shown[rule, line] += take
            per_rule[rule] += take
    return shown


def model_rows(model: RunModel, name: str) -> list[tuple]:
    chart = next(chart for chart in model.charts if chart.name == name)
    columns = [chart.values(i).tolist() for i in range(len(chart.y_axis))]
    return [
        (int(step), *values) for step, *values in zip(chart.steps().tolist(), *columns, strict=True)
    ]


def same_rows(left: list[tuple], right: list[tuple]) -> bool:
    return np.array_equal(
        np.array(left, dtype=np.float64).reshape(-1, WIDTH),
        np.array(right, dtype=np.float64).reshape(-1, WIDTH),
        equal_nan=True,
    ) and [row[0] for row in left] == [row[0] for row in right]


@PROPERTY_SETTINGS
@given(st.lists(lines(), max_size=50), st.sampled_from(["", "12,0.5", "7"]))
def test_every_csv_line_is_judged_as_the_rule_table_says(body: list[Line], tail: str) -> None:
    data = "".join(line.text + "\n" for line in body) + tail
    with fresh_directory() as directory:
        write_layout(directory, {"loss": Y_AXIS})
        (directory / "loss.csv").write_bytes(data.encode("utf-8"))
        model = RunModel(directory, settle_seconds=0.0, health=False)
        model.load_settled()
        problems = timed_check(directory)
    rows, found = expected_from_lines(body, tail)
    assert same_rows(model_rows(model, "loss"), rows)
    # The rule table is about the format; what the random numbers look like as a picture
    # (follow.picture) is tested on its own. An epoch index stands in for its restarts.
    epoch_index = any(p.rule is Rule.EPOCH_INDEX_STEP for p in problems)
    problems = tuple(p for p in problems if p.rule not in PICTURE_RULES)
    if epoch_index:
        found = Counter({key: n for key, n in found.items() if key[0] is not Rule.STEP_REGRESSION})
    listed = Counter((p.rule, p.line) for p in problems if not p.overflow)
    assert listed == capped(found), problems
    totals: Counter[Rule] = Counter()
    for (rule, _), count in found.items():
        totals[rule] += count
    overflowing = {rule for rule, total in totals.items() if total > MAX_PROBLEMS_PER_RULE_AND_FILE}
    assert {p.rule for p in problems if p.overflow} == overflowing
    assert all(p.path == "loss.csv" for p in problems)


# -- any chunking equals one full read ------------------------------------------------------

CHARTS = {"loss": Y_AXIS, "grad_norm": ("grad_norm",)}


@st.composite
def chunked_writes(draw: st.DrawFn) -> tuple[dict[str, bytes], list[tuple[str, int]]]:
    """Final contents per file, and the writes (file, byte count) that produce them, in an
    order that interleaves the files; "metrics.json" (count 0) marks when it appears."""
    contents = {
        "loss.csv": "".join(line.text + "\n" for line in draw(st.lists(lines(), max_size=25))),
        "grad_norm.csv": "".join(
            f"{s},{v!r}\n"
            for s, v in draw(
                st.lists(st.tuples(st.integers(0, 99), st.floats(allow_nan=False)), max_size=25)
            )
        ),
    }
    contents["loss.csv"] += draw(st.sampled_from(["", "3,0.25"]))
    pending: list[tuple[str, int]] = []
    for name, text in contents.items():
        remaining = len(text.encode())
        while remaining:
            size = min(remaining, draw(st.integers(1, 80)))
            pending.append((name, size))
            remaining -= size
    order = draw(st.permutations(range(len(pending))))
    # Keep each file's chunks in order: sort the shuffled slots per file.
    per_file: dict[str, list[int]] = {}
    for slot, index in enumerate(order):
        per_file.setdefault(pending[index][0], []).append(slot)
    writes: list[tuple[str, int]] = [("", 0)] * len(pending)
    sizes = {name: [size for file, size in pending if file == name] for name in contents}
    for name, slots in per_file.items():
        for slot, size in zip(sorted(slots), sizes[name], strict=True):
            writes[slot] = (name, size)
    writes.insert(draw(st.integers(0, len(writes))), ("metrics.json", 0))
    return {name: text.encode() for name, text in contents.items()}, writes


def snapshot_of(model: RunModel) -> dict[str, Any]:
    return {
        "charts": {
            chart.name: (chart.y_axis, model_rows(model, chart.name)) for chart in model.charts
        },
        "problems": model.problems,
    }


def assert_same_model(left: dict[str, Any], right: dict[str, Any]) -> None:
    assert left["charts"].keys() == right["charts"].keys()
    for name, (y_axis, rows) in left["charts"].items():
        other_y_axis, other_rows = right["charts"][name]
        assert y_axis == other_y_axis
        assert [row[0] for row in rows] == [row[0] for row in other_rows]
        assert np.array_equal(
            np.array([row[1:] for row in rows], dtype=np.float64),
            np.array([row[1:] for row in other_rows], dtype=np.float64),
            equal_nan=True,
        )
    assert left["problems"] == right["problems"]


@pytest.mark.slow  # hypothesis, 1.5 s of CPU
@PROPERTY_SETTINGS
@given(chunked_writes(), st.lists(st.one_of(st.none(), st.integers(1, 200)), min_size=1))
def test_any_chunking_and_budget_gives_the_model_of_one_full_read(
    case: tuple[dict[str, bytes], list[tuple[str, int]]], budgets: list[int | None]
) -> None:
    contents, writes = case
    with fresh_directory() as directory:
        follower = RunModel(directory, settle_seconds=0.0, health=False)
        written = dict.fromkeys(contents, 0)
        for index, (name, size) in enumerate(writes):
            if name == "metrics.json":
                write_layout(directory, CHARTS)
            else:
                with (directory / name).open("ab") as handle:
                    handle.write(contents[name][written[name] : written[name] + size])
                written[name] += size
            follower.refresh(budget_bytes=budgets[index % len(budgets)])
        for _ in range(10_000):  # drain with the budget too: it must come to an end
            if not follower.refresh(budget_bytes=budgets[-1]).more:
                break
        else:
            raise AssertionError("refresh() reports more to read forever")
        whole = RunModel(directory, settle_seconds=0.0, health=False)
        whole.refresh()
        assert_same_model(snapshot_of(follower), snapshot_of(whole))


def test_a_budget_shorter_than_an_unfinished_last_line_does_not_report_more_forever(
    tmp_path: Path,
) -> None:
    write_layout(tmp_path, {"loss": Y_AXIS})
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,\n2,0.25")  # row 2 is still being written
    model = RunModel(tmp_path, settle_seconds=0.0, health=False)
    refreshes = 1
    while model.refresh(budget_bytes=4).more and refreshes < 100:
        refreshes += 1
    assert refreshes < 100 and not model.loading
    assert model.total_rows == 1


# -- a real recorder, followed at random moments --------------------------------------------

SNAPSHOT_KEYS = (
    "loss",
    "eval_loss",
    "vlm_loss",
    "grad_norm",
    "learning_rate",
    "learning_rate/head",
    "timing/data",
    "epoch",
    "accuracy",
)


@pytest.mark.slow  # hypothesis, 1.7 s of CPU
@PROPERTY_SETTINGS
@given(
    st.lists(
        st.tuples(
            st.dictionaries(
                st.sampled_from(SNAPSHOT_KEYS),
                st.floats(allow_nan=False, allow_infinity=False),
                min_size=1,
                max_size=5,
            ),
            st.booleans(),  # refresh the follower after this log() call
        ),
        min_size=1,
        max_size=40,
    )
)
def test_a_model_following_a_recorder_ends_with_exactly_what_was_logged(
    calls: list[tuple[dict[str, float], bool]],
) -> None:
    with fresh_directory() as directory:
        follower = RunModel(directory, settle_seconds=0.0, health=False)
        with OcmsRecorder(log_dir=str(directory)) as recorder:
            for step, (metrics, refresh) in enumerate(calls):
                recorder.log(step=step, metrics=metrics)
                if refresh:
                    follower.refresh()
                    assert not [p for p in follower.problems if p.is_error], follower.problems
        follower.refresh()
        whole = RunModel(directory, settle_seconds=0.0, health=False)
        whole.refresh()
        assert_same_model(snapshot_of(follower), snapshot_of(whole))
        # Random numbers may well look wrong as a picture (an accuracy of 2): not a format
        # problem.
        assert [p for p in follower.problems if p.rule not in PICTURE_RULES] == []
    expected = charts_from_snapshots(enumerate(metrics for metrics, _ in calls))
    charts = snapshot_of(follower)["charts"]
    assert list(charts) == [name for name in CHART_ORDER if name in expected]
    for name, chart in expected.items():
        y_axis, rows = charts[name]
        assert list(y_axis) == chart.y_axis
        wanted = [
            (step, *(math.nan if v is None else v for v in chart.row_values(step)))
            for step in chart.rows
        ]
        assert [row[0] for row in rows] == [row[0] for row in wanted]
        assert np.array_equal(
            np.array([row[1:] for row in rows]),
            np.array([row[1:] for row in wanted]),
            equal_nan=True,
        )


CHART_ORDER = ("loss", "learning_rate", "epoch", "timing", "eval_score", "grad_norm")
