"""Numbers with thousands of digits, in every file a user hands over: a clear answer each.

Python's int() refuses text of 4,301 digits or more (ValueError). A CSV step that long
made `--check` die with a traceback and the dashboard show the chart as "0 rows" with "no
problems"; a 5,000-digit number in metrics.json (valid JSON) made the file "invalid JSON".
These tests run the real command line, the real dashboard (Pilot) and the real session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from app_support import screen_text, wait_for_text, write_layout

from ocms_tui.follow.session import FollowSession, SessionState
from ocms_tui.format.problems import Rule
from ocms_tui.ui.app import OcmsApp
from tests.sources_support import run_cli

LONG_STEP = "1" * 4301  # one digit past what int() converts
ROWS = ["1,0.5", f"{LONG_STEP},0.4", "3,0.3", f"{'0' * 5000}4,0.2"]


def _run_with_a_long_step(directory: Path) -> None:
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_text("".join(row + "\n" for row in ROWS))


# A `--check` process per format: text in the quick suite, every format in the slow one.
@pytest.mark.parametrize(
    "output_format",
    ["text", *(pytest.param(f, marks=pytest.mark.slow) for f in ("github", "json"))],
)
def test_check_reports_the_step_at_its_line_and_keeps_the_other_rows(
    tmp_path: Path, output_format: str
) -> None:
    _run_with_a_long_step(tmp_path)
    result = run_cli("--check", "--format", output_format, str(tmp_path))
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    if output_format == "text":
        assert f"{tmp_path}/loss.csv:2: error bad-step step '1111" in result.stdout
        assert "(4,301 digits) is larger than 9007199254740991" in result.stdout
        assert "1 error(s), 0 warning(s), 1 chart(s), 3 row(s)" in result.stdout
    elif output_format == "github":
        assert result.stdout.startswith(
            f"::error file={tmp_path}/loss.csv,line=2,title=bad-step::step '1111"
        )
    else:
        document = json.loads(result.stdout)
        assert [(p["rule"], p["line"]) for p in document["problems"]] == [("bad-step", 2)]
        assert [chart["rows"] for chart in document["charts"]] == [3]


async def test_the_dashboard_shows_the_other_rows_and_the_problem(tmp_path: Path) -> None:
    _run_with_a_long_step(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.settle()
        await wait_for_text(pilot, "step 4 · 3 rows", "bad-step")
        assert "no problems" not in screen_text(app)


def test_the_follow_session_reads_past_the_step_and_goes_on_following(tmp_path: Path) -> None:
    _run_with_a_long_step(tmp_path)
    states: list[SessionState] = []
    session = FollowSession([tmp_path], states.append, poll=0.05)
    session.start()
    try:

        def rows_and_rules() -> tuple[int, list[Rule]]:
            state = states[-1] if states else None
            if state is None or not state.charts:
                return 0, []
            return state.charts[0].sources[0].chart.rows, [p.rule for p in state.problems]

        deadline = time.monotonic() + 30
        while rows_and_rules() != (3, [Rule.BAD_STEP]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows_and_rules() == (3, [Rule.BAD_STEP])
        with open(tmp_path / "loss.csv", "a") as handle:  # the reader was not stopped by it
            handle.write("5,0.1\n")
        while rows_and_rules()[0] != 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows_and_rules() == (4, [Rule.BAD_STEP])
    finally:
        session.stop()


def test_metrics_json_with_a_5000_digit_number_is_valid_json(tmp_path: Path) -> None:
    """As JSON.parse reads it: a number (Infinity), not a syntax error. The lines of the
    values after it are still found (the y-axis name problem points at line 5)."""
    big = "9" * 5000
    (tmp_path / "metrics.json").write_text(
        '{"version": 1.0, "written_by": ' + big + ',\n "charts": [\n'
        '  {"name": "loss", "file": "loss.csv", "x_axis": "step",\n'
        '   "note": -' + big + ".5e3,\n"
        '   "y_axis": ["loss", "bad name"]}]}\n'
    )
    (tmp_path / "loss.csv").write_text("1,0.5,0.25\n")
    result = run_cli("--check", "--format", "json", str(tmp_path))
    assert "Traceback" not in result.stderr, result.stderr
    problems = [(p["rule"], p["line"]) for p in json.loads(result.stdout)["problems"]]
    assert problems == [("bad-y-axis-name", 5)]


@pytest.mark.parametrize(
    ("version", "problem"),
    [("1", False), ("1.0", False), ("1e0", False), ("10E-1", False), ("true", True),
     ("2", True), ("1" + "0" * 5000, True), ('"1"', True)],
    ids=["1", "1.0", "1e0", "10E-1", "true", "2", "5001-digits", "string"],
)  # fmt: skip
def test_version_is_the_number_1_as_json_parse_reads_it(
    tmp_path: Path, version: str, problem: bool
) -> None:
    (tmp_path / "metrics.json").write_text(
        '{"version": ' + version + ', "charts": [{"name": "loss", "file": "loss.csv", '
        '"y_axis": ["loss"]}]}'
    )
    (tmp_path / "loss.csv").write_text("1,0.5\n")
    result = run_cli("--check", "--format", "json", str(tmp_path))
    rules = [p["rule"] for p in json.loads(result.stdout)["problems"]]
    assert rules == (["bad-schema"] if problem else []), result.stdout


def test_a_trainer_state_with_a_5000_digit_number_imports(tmp_path: Path) -> None:
    """It was "not valid JSON" as a whole; JSON.parse reads the number as Infinity (and a
    step that is no integer is left out, as the HF callback leaves it out)."""
    source = tmp_path / "run"
    source.mkdir()
    (source / "trainer_state.json").write_text(
        '{"log_history": [{"loss": 1.5, "step": 1}, {"loss": 2' + "0" * 5000 + ', "step": 2},'
        ' {"loss": 0.5, "step": 3}, {"loss": 0.25, "step": 1' + "0" * 5000 + "}]}"
    )
    result = run_cli("import", str(source), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "loss.csv").read_text() == "1,1.5\n2,inf\n3,0.5\n"
