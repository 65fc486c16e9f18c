"""The token scan behind metrics.json line numbers: each value's own line, never a look-alike."""

from __future__ import annotations

import json

from ocms_tui.format.json_lines import first_line_of, json_int, value_lines

# "loss" is first a y-axis entry of chart "a", then the name of the second chart; "version"
# is not on line 1; a string holds escaped quotes, brackets and a colon.
TEXT = """{
  "charts": [
    {
      "name": "a",
      "y_axis": ["x", "loss"],
      "note": "a \\"tricky\\" [string]: {with} , marks"
    },
    {
      "y_axis": [
        "loss",
        "loss"
      ],
      "name": "loss"
    }
  ],
  "version": 2
}
"""


def test_every_value_gets_the_line_of_its_own_token() -> None:
    assert json.loads(TEXT)  # the fixture is valid JSON
    lines = value_lines(TEXT)
    assert lines[()] == 1
    assert lines[("charts",)] == 2
    assert lines[("charts", 0)] == 3
    assert lines[("charts", 0, "name")] == 4
    assert lines[("charts", 0, "y_axis", 1)] == 5
    assert lines[("charts", 0, "note")] == 6
    assert lines[("charts", 1)] == 8
    assert lines[("charts", 1, "y_axis")] == 9
    assert lines[("charts", 1, "y_axis", 0)] == 10
    assert lines[("charts", 1, "y_axis", 1)] == 11
    assert lines[("charts", 1, "name")] == 13
    assert lines[("version",)] == 16


def test_keep_limits_what_is_recorded() -> None:
    lines = value_lines(TEXT, keep=lambda path: len(path) <= 1)
    assert lines == {(): 1, ("charts",): 2, ("version",): 16}


def test_a_duplicated_key_keeps_the_last_line_as_json_loads_keeps_the_last_value() -> None:
    assert value_lines('{"version": 1,\n"version": 2}') == {(): 1, ("version",): 2}


def test_escaped_keys_are_decoded_like_json_loads_does() -> None:
    assert value_lines('{"na\\u006de":\n 1}') == {(): 1, ("name",): 2}


def test_bare_non_json_literals_are_found_but_quoted_ones_are_not() -> None:
    text = '{"a": "NaN",\n "b": [1,\n -Infinity, NaN]}'
    assert first_line_of(text, frozenset({"NaN", "Infinity", "-Infinity"})) == 3
    assert first_line_of('{"a": "NaN"}', frozenset({"NaN"})) is None


def test_text_that_is_not_json_ends_the_scan_without_an_exception() -> None:
    assert value_lines("]]]}{") == {}
    assert value_lines('{"a": [1, 2') == {(): 1, ("a",): 1, ("a", 0): 1, ("a", 1): 1}
    assert value_lines("") == {}


def test_values_keep_refuses_are_skipped_whole_and_the_lines_after_them_stay_right() -> None:
    text = '{\n "pad": [1,\n 2,\n {"x": [3,\n 4]}],\n "list": [10,\n 11,\n 12,\n 13],\n "v": 5\n}'
    wanted = value_lines(
        text,
        keep=lambda path: path[:1] != ("pad",) and (len(path) < 2 or path[1] < 2),
    )
    # "pad" is skipped unscanned, "list" stops after index 1; "v" keeps its own line.
    assert wanted == {(): 1, ("list",): 6, ("list", 0): 6, ("list", 1): 7, ("v",): 10}


def test_integers_past_what_int_converts_are_doubles_as_json_parse_reads_them() -> None:
    assert json_int("-" + "0" * 5000 + "7") == -7
    assert json_int("1" * 4301) == float("inf")
    assert json_int("-" + "1" * 5000) == float("-inf")
    assert json.loads("[" + "1" * 5000 + "]", parse_int=json_int) == [float("inf")]


def test_a_skipped_value_holding_a_5000_digit_number_keeps_the_lines_after_it() -> None:
    text = '{"extra": [1, ' + "9" * 5000 + '],\n"charts": [\n{"name": "a"}]}'

    def keep(path: tuple[str | int, ...]) -> bool:
        return not path or path[0] == "charts"

    assert value_lines(text, keep) == {
        (): 1,
        ("charts",): 2,
        ("charts", 0): 3,
        ("charts", 0, "name"): 3,
    }
