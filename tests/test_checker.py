"""`ocms-tui --check`: one fixture directory per rule, the three formats, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ocms_recorder import MAX_CHARTS
from terminal_support import installed_command

from ocms_tui.cli import main
from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.report import ExitCode, exit_code, format_github, format_text, printable
from ocms_tui.format.problems import Rule, Severity

DATA = Path(__file__).parent / "data"

# fixture directory -> (rule it must raise, file, line or None, the whole message)
EXPECTED = {
    "missing-metrics-json": (
        Rule.MISSING_METRICS_JSON,
        "metrics.json",
        None,
        "no metrics.json: the Octopus UI shows no charts without it "
        "(OcmsRecorder writes it on the first log())",
    ),
    "invalid-json": (
        Rule.INVALID_JSON,
        "metrics.json",
        3,
        "not valid JSON: Expecting property name enclosed in double quotes (column 19)",
    ),
    "bad-schema": (
        Rule.BAD_SCHEMA,
        "metrics.json",
        3,
        '"charts" is a dict; it must be a list of chart objects',
    ),
    "too-many-charts": (
        Rule.TOO_MANY_CHARTS,
        "metrics.json",
        52,  # the first chart past the limit
        f"7 charts declared; ocms shows at most {MAX_CHARTS}: merge charts or drop some "
        f"(only the first {MAX_CHARTS} are read)",
    ),
    "bad-chart-name": (
        Rule.BAD_CHART_NAME,
        "metrics.json",
        13,
        "chart 'eval loss': chart names may only use A-Z a-z 0-9 _ - and must not be empty",
    ),
    "bad-y-axis-name": (
        Rule.BAD_Y_AXIS_NAME,
        "metrics.json",
        10,  # the entry itself, not its chart
        "chart 'learning_rate': y-axis name 'learning_rate/vision' may only use A-Z a-z 0-9 _ - "
        "(the recorder's sanitize_key maps keys onto legal names)",
    ),
    "unsafe-path": (
        Rule.UNSAFE_PATH,
        "metrics.json",
        6,  # the "file" value
        "chart 'loss': file '../loss.csv' is not a plain file name inside the directory; "
        "use 'loss.csv'",
    ),
    "missing-csv": (
        Rule.MISSING_CSV,
        "learning_rate.csv",
        None,
        "chart 'learning_rate' is declared in metrics.json but learning_rate.csv does not exist",
    ),
    "orphan-csv": (
        Rule.ORPHAN_CSV,
        "old_loss.csv",
        None,
        "old_loss.csv is not declared in metrics.json; the Octopus UI ignores it",
    ),
    "row-width": (
        Rule.ROW_WIDTH,
        "loss.csv",
        2,
        "2 fields, expected 3 (step + 2 series of metrics.json)",
    ),
    "bad-step": (
        Rule.BAD_STEP,
        "loss.csv",
        2,
        "step '2.5' is not a non-negative integer; row skipped",
    ),
    "bad-value": (
        Rule.BAD_VALUE,
        "loss.csv",
        2,
        "eval_loss: 'abc' is not a number (leave the field empty for a missing value); "
        "shown as a gap",
    ),
    "lone-cr": (
        Rule.LONE_CR,
        "loss.csv",
        1,
        "rows are separated by a lone \\r (so this reads as one unfinished line); "
        "end every row with \\n or \\r\\n",
    ),
    "header-row": (
        Rule.HEADER_ROW,
        "loss.csv",
        1,
        "the first row 'step,loss,eval_loss' looks like a header; ocms CSVs have none: delete it",
    ),
    "step-regression": (
        Rule.STEP_REGRESSION,
        "loss.csv",
        4,
        "step 2 after step 3 (a resumed run re-logging steps?); rows are kept",
    ),
    "non-finite": (
        Rule.NON_FINITE,
        "loss.csv",
        2,
        "loss is nan; the Octopus UI may not draw it",
    ),
    "partial-line": (
        Rule.PARTIAL_LINE,
        "loss.csv",
        3,
        "the last line has no newline yet (a row still being written, or a crash)",
    ),
    "empty-chart": (
        Rule.EMPTY_CHART,
        "learning_rate.csv",
        None,
        "chart 'learning_rate' has no rows yet",
    ),
    "dropped-metric": (
        Rule.DROPPED_METRIC,
        ".ocms-recorder.json",
        None,
        "'lr' was not written (no chart group accepts it; logged 3 time(s) at steps 1-3); "
        "to chart it, add to chart_groups: ('learning_rate', lambda k: k == 'learning_rate' "
        "or k.startswith('learning_rate/') or k in ('lr',))",
    ),
    "mixed-scale": (
        Rule.MIXED_SCALE,
        "loss.csv",
        None,
        "chart 'loss': 'lr' (typically 0.0001) is 13,850x smaller than 'loss' (typically "
        "1.39): Octopus draws 'lr' as a flat line at zero; give it a chart of its own",
    ),
    "epoch-index-step": (
        Rule.EPOCH_INDEX_STEP,
        "loss.csv",
        None,
        "chart 'loss': the step goes back to 0 4 time(s), every ~10 rows: it looks like an "
        "index within each epoch (or several runs were written into one directory), and "
        "Octopus draws every pass over the last; log a global step (e.g. epoch * "
        "steps_per_epoch + index)",
    ),
    "not-a-fraction": (
        Rule.NOT_A_FRACTION,
        "eval_score.csv",
        None,
        "chart 'eval_score': 'accuracy' reaches 1.4, but an accuracy is a fraction (at most "
        "1); if it is a percentage, log it / 100 (Octopus draws it as written)",
    ),
    "counter-metric": (
        Rule.COUNTER_METRIC,
        "loss.csv",
        None,
        "chart 'loss': 'global_step' is named like the step counter and counts like it: the x "
        "axis already is the step, so this is a straight line that tells nothing; leave it out "
        "of the metrics",
    ),
    "spike": (
        Rule.SPIKE,
        "loss.csv",
        None,
        "loss spikes to 10.95 at step 120; its recent median is 0.6106",
    ),
    "divergence": (
        Rule.DIVERGENCE,
        "loss.csv",
        None,
        "loss rises from its best level 0.5639 to 4.063 since step 113: a loss diverging?",
    ),
}

# Where in the picture each fixture's problem is: (chart, series, step) in its JSON.
PLACES = {
    "dropped-metric": (None, "lr", 1),
    "mixed-scale": ("loss", "lr", None),
    "epoch-index-step": ("loss", None, 0),
    "not-a-fraction": ("eval_score", "accuracy", 30),
    "counter-metric": ("loss", "global_step", None),
    "bad-value": ("loss", "eval_loss", 2),
    "step-regression": ("loss", None, 2),
    "spike": ("loss", "loss", 120),
    "divergence": ("loss", "loss", 113),
}


def test_every_rule_of_the_issue_has_a_fixture() -> None:
    # SOURCE_PROBLEM is said of another tool's log, not of a directory: its tests are in
    # tests/test_sources_hostile.py. `stalled` needs a live run and a clock:
    # tests/test_health.py follows one.
    untested_here = (
        Rule.MISSING_DIR,
        Rule.NOT_A_FILE,
        Rule.LINE_TOO_LONG,
        Rule.SOURCE_PROBLEM,
        Rule.STALLED,
    )
    assert {rule for rule, _, _, _ in EXPECTED.values()} >= {
        rule for rule in Rule if rule not in untested_here
    }


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_fixture_reports_exactly_its_rule_line_and_message(case: str) -> None:
    rule, path, line, message = EXPECTED[case]
    result = check_directory(DATA / case)
    assert [(p.rule, p.path, p.line, p.message) for p in result.problems] == [
        (rule, path, line, message)
    ]
    expected_exit = ExitCode.PROBLEMS if rule.severity is Severity.ERROR else ExitCode.OK
    assert exit_code(result, strict=False) == expected_exit
    assert exit_code(result, strict=True) == ExitCode.PROBLEMS


@pytest.mark.parametrize("case", sorted(PLACES))
def test_json_problems_say_where_in_the_picture_they_are(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--check", str(DATA / case), "--format", "json"])
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    rule, path, line, message = EXPECTED[case]
    assert (problem["rule"], problem["path"], problem["line"], problem["message"]) == (
        rule.value,
        path,
        line,
        message,
    )
    assert problem["severity"] == rule.severity.value
    place = tuple(problem.get(field) for field in ("chart", "series", "step"))
    assert place == PLACES[case]
    # A field the problem has no value for is left out, never written as null.
    assert None not in [problem[field] for field in ("chart", "series", "step") if field in problem]


def test_clean_fixture_passes_with_charts_summarised() -> None:
    result = check_directory(DATA / "clean")
    assert result.problems == ()
    assert [(c.name, c.rows, c.last_step) for c in result.charts] == [
        ("loss", 3, 3),
        ("learning_rate", 3, 3),
    ]
    assert exit_code(result, strict=True) == ExitCode.OK


def test_crlf_rows_are_no_problem_and_read_the_same_numbers() -> None:
    clean, crlf = RunModel(DATA / "clean"), RunModel(DATA / "crlf")
    clean.refresh()
    crlf.refresh()
    assert b"\r\n" in (DATA / "crlf" / "loss.csv").read_bytes()
    assert check_directory(DATA / "crlf").problems == ()
    for ours, reference in zip(crlf.charts, clean.charts, strict=True):
        assert ours.steps().tolist() == reference.steps().tolist()
        for series in range(len(reference.y_axis)):
            np.testing.assert_array_equal(ours.values(series), reference.values(series))


def test_a_lone_cr_inside_finished_lines_is_reported_on_its_line(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path, dirs_exist_ok=True)
    (tmp_path / "loss.csv").write_bytes(b"1,0.9,\r\n2,0.8,0.85\r3,0.7,\n4,0.6,\n")
    result = check_directory(tmp_path)
    assert [(p.rule, p.line) for p in result.problems] == [(Rule.LONE_CR, 2)]
    assert result.charts[0].rows == 2


def test_a_half_written_crlf_row_end_is_only_a_partial_line(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path, dirs_exist_ok=True)
    (tmp_path / "loss.csv").write_bytes(b"1,0.9,\r\n2,0.8,0.85\r")
    result = check_directory(tmp_path)
    assert [(p.rule, p.line) for p in result.problems] == [(Rule.PARTIAL_LINE, 2)]


def test_a_broken_line_does_not_stop_the_scan(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path, dirs_exist_ok=True)
    (tmp_path / "loss.csv").write_bytes(b"1,0.9,\n2,oops,\n3,0.7,\n4,0.6\n5,0.5,\n")
    result = check_directory(tmp_path)
    assert [(p.rule, p.line) for p in result.problems] == [(Rule.BAD_VALUE, 2), (Rule.ROW_WIDTH, 4)]
    loss = result.charts[0]
    assert loss.rows == 4 and loss.last_step == 5


def test_thousands_of_bad_rows_are_capped_with_a_count(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path, dirs_exist_ok=True)
    (tmp_path / "loss.csv").write_bytes(b"".join(b"%d,x,\n" % step for step in range(5000)))
    problems = check_directory(tmp_path).problems
    bad_values = [p for p in problems if p.rule is Rule.BAD_VALUE]
    assert len(bad_values) == 21
    assert [p.line for p in bad_values if p.line is not None] == list(range(1, 21))
    assert "4980 more bad-value" in bad_values[-1].message


def test_text_format_is_one_line_per_problem_then_the_charts_then_the_verdict() -> None:
    result = check_directory(DATA / "row-width")
    lines = format_text(result, color=False).splitlines()
    assert lines == [
        f"{DATA / 'row-width' / 'loss.csv'}:2: error row-width "
        "2 fields, expected 3 (step + 2 series of metrics.json)",
        f"{DATA / 'row-width'}: Octopus will show 2 chart(s):",
        "  loss: loss, eval_loss  (2 row(s), last step 3)",
        "  learning_rate: learning_rate  (3 row(s), last step 3)",
        f"{DATA / 'row-width'}: failed: 1 error(s), 0 warning(s), 2 chart(s), 5 row(s)",
    ]
    assert "\x1b" not in "".join(lines)
    assert "\x1b[31m" in format_text(result, color=True)


def test_github_format_annotates_file_and_line() -> None:
    output = format_github(check_directory(DATA / "step-regression"))
    assert output == (
        f"::warning file={DATA / 'step-regression' / 'loss.csv'},line=4,title=step-regression"
        "::step 2 after step 3 (a resumed run re-logging steps?); rows are kept\n"
    )


def test_json_format_via_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--check", str(DATA / "bad-value"), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    assert document["ok"] is False
    assert document["problems"] == [
        {
            "rule": "bad-value",
            "severity": "error",
            "path": "loss.csv",
            "line": 2,
            "message": "eval_loss: 'abc' is not a number (leave the field empty for a missing "
            "value); shown as a gap",
            "chart": "loss",
            "series": "eval_loss",
            "step": 2,
        }
    ]
    assert document["charts"][0] == {
        "name": "loss",
        "rows": 3,
        "last_step": 3,
        "y_axis": ["loss", "eval_loss"],
    }


def test_strict_turns_warnings_into_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", str(DATA / "orphan-csv")]) == 0
    assert main(["--check", str(DATA / "orphan-csv"), "--strict"]) == 1
    capsys.readouterr()


def test_missing_directory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().out


def test_directory_defaults_to_metrics_env(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("METRICS", str(DATA / "clean"))
    assert main(["--check"]) == 0
    assert "ok: 0 error(s)" in capsys.readouterr().out


def test_directory_defaults_to_ocms_metrics_in_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("METRICS", raising=False)
    shutil.copytree(DATA / "clean", tmp_path / "ocms_metrics")
    monkeypatch.chdir(tmp_path)
    assert main(["--check"]) == 0
    assert "ocms_metrics: ok" in capsys.readouterr().out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--check", "x", "--format", "xml"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_names_cannot_drive_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(
        json.dumps(
            {
                "version": 1,
                "charts": [
                    {
                        "name": "loss",
                        "file": "loss.csv",
                        "x_axis": "step",
                        "y_axis": ["\x1b[2J\x1b]0;pwned\x07", "[bold red]x[/]"],
                    }
                ],
            }
        )
    )
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,0.5\n")
    (tmp_path / "\x1b[31mevil.csv").write_bytes(b"")
    result = check_directory(tmp_path)
    for output in (format_text(result, color=False), format_github(result)):
        assert "\x1b" not in output and "\x07" not in output
    assert "[bold red]x[/]" in format_text(result, color=False)
    assert printable("a\x1bb\x9bc") == "a\\x1bb\\x9bc"


def test_installed_console_script_and_module_entry() -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    # The script this environment installed (beside its python): an unactivated venv's
    # tests find it too, and never another environment's first on PATH.
    for command in ([installed_command()], [sys.executable, "-m", "ocms_tui"]):
        done = subprocess.run(
            [*command, "--check", str(DATA / "row-width")],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 1
        assert "row-width" in done.stdout
        assert "Traceback" not in done.stderr
    version = subprocess.run(
        [sys.executable, "-m", "ocms_tui", "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip().startswith("ocms-tui ")


# A pretty-printed metrics.json where names repeat: chart "loss" is also a y-axis entry of
# the chart before it, and "version" comes last.
REPEATED_NAMES = """{
  "charts": [
    {
      "name": "train",
      "file": "train.csv",
      "x_axis": "step",
      "y_axis": [
        "loss",
        "loss"
      ]
    },
    {
      "name": "loss",
      "file": "loss.csv",
      "x_axis": "epoch",
      "y_axis": [
        "ok",
        "bad name"
      ]
    },
    {
      "name": "train",
      "file": "train.csv",
      "y_axis": ["x"]
    }
  ],
  "version": 3
}
"""


def test_schema_problems_point_at_the_line_of_their_own_token(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(REPEATED_NAMES, encoding="utf-8")
    for name in ("train", "loss"):
        (tmp_path / f"{name}.csv").write_text("1,0.5,0.5\n", encoding="utf-8")
    schema = [
        (p.rule, p.line, p.message)
        for p in check_directory(tmp_path).problems
        if p.path == "metrics.json"
    ]
    assert schema == [
        (Rule.BAD_Y_AXIS_NAME, 9, "chart 'train': y-axis name 'loss' appears twice"),
        (Rule.BAD_SCHEMA, 15, "chart 'loss': \"x_axis\" is 'epoch'; it must be \"step\""),
        (
            Rule.BAD_Y_AXIS_NAME,
            18,
            "chart 'loss': y-axis name 'bad name' may only use A-Z a-z 0-9 _ - "
            "(the recorder's sanitize_key maps keys onto legal names)",
        ),
        (Rule.BAD_CHART_NAME, 22, "chart 'train' is declared twice; chart names must be unique"),
        (Rule.BAD_SCHEMA, 27, '"version" is 3; this format is version 1'),
    ]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_literals_are_invalid_json_in_checker_and_dashboard(
    tmp_path: Path, literal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python's json reads these; JSON.parse in the Octopus UI does not.
    (tmp_path / "metrics.json").write_text(
        '{\n  "version": 1,\n  "charts": [\n    {"name": "loss", "file": "loss.csv",'
        f' "y_axis": ["loss"], "scale": {literal}}}\n  ]\n}}\n',
        encoding="utf-8",
    )
    (tmp_path / "loss.csv").write_text("1,0.5\n", encoding="utf-8")
    problems = check_directory(tmp_path).problems
    assert [(p.rule, p.line) for p in problems if p.path == "metrics.json"] == [
        (Rule.INVALID_JSON, 4)
    ]
    assert f"{literal} is not a JSON value" in problems[0].message
    model = RunModel(tmp_path)
    model.refresh()
    assert model.charts == ()
    assert [p.rule for p in model.problems if p.path == "metrics.json"] == [Rule.INVALID_JSON]
    assert main(["--check", str(tmp_path)]) == ExitCode.PROBLEMS
    assert "invalid-json" in capsys.readouterr().out


def test_quoted_nan_is_only_a_string(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text(
        '{"version": 1, "charts": [{"name": "loss", "file": "loss.csv", "y_axis": ["loss"],'
        ' "note": "NaN"}]}',
        encoding="utf-8",
    )
    (tmp_path / "loss.csv").write_text("1,0.5\n", encoding="utf-8")
    assert check_directory(tmp_path).problems == ()
