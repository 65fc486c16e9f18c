"""The README and the docs quote the code's limits, and the code is their one home: each
figure they state is held against the constant that enforces it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_reliability_hostile as hostile
from ocms_recorder import MAX_CHARTS, MAX_SERIES_PER_CHART

from ocms_tui.follow.line_blocks import MAX_LINE_BYTES
from ocms_tui.follow.model import MAX_DIRECTORY_ENTRIES
from ocms_tui.follow.runs import MAX_DIRECTORIES_SEARCHED, MAX_SEARCH_DEPTH
from ocms_tui.format.problems import MAX_PROBLEMS_PER_RULE_AND_FILE
from ocms_tui.format.schema import MAX_METRICS_JSON_BYTES

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def page_text(name: str = "README.md") -> str:
    """A page with line breaks and runs of spaces folded, as a reader sees it."""
    return re.sub(r"\s+", " ", (ROOT / name).read_text(encoding="utf-8"))


RELIABILITY = "docs/reliability.md"


def test_the_caps_sentence_states_the_enforced_caps() -> None:
    caps = (
        f"Caps: metrics.json {MAX_METRICS_JSON_BYTES // MIB} MiB, "
        f"a line {MAX_LINE_BYTES // MIB} MiB, {MAX_SERIES_PER_CHART:,} series per chart, "
        f"{MAX_PROBLEMS_PER_RULE_AND_FILE} listed problems per rule and file, "
        f"{MAX_DIRECTORIES_SEARCHED:,} directories and depth {MAX_SEARCH_DEPTH} when searching "
        f"for runs, {MAX_DIRECTORY_ENTRIES:,} directory entries when looking for orphan CSVs."
    )
    assert caps in page_text(RELIABILITY)
    assert f"(up to {MAX_CHARTS} charts" in page_text()


def test_the_hostile_caps_table_states_the_tests_caps() -> None:
    rows = {
        "`--check` time": f"{hostile.CHECK_SECONDS:g} s",
        "`--check` peak RSS growth": f"+{hostile.CHECK_MEMORY_MB} MB",
        "dashboard: everything read and shown": f"{hostile.DASHBOARD_SECONDS:g} s",
        "dashboard: a key press": f"{hostile.KEY_SECONDS:g} s",
        "dashboard peak RSS growth": f"+{hostile.DASHBOARD_MEMORY_MB} MB",
    }
    text = page_text(RELIABILITY)
    for figure, cap in rows.items():
        assert f"| {figure} | {cap} | " in text, figure


def test_ci_runs_the_slow_tests_and_the_quick_command_leaves_them_out(
    pytestconfig: pytest.Config,
) -> None:
    """CI runs the README's test command: plain `python -m pytest`, with no marker deselected
    by default; the development section's quick command deselects `slow` and `integration`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_command = text.split("<!-- test-command -->", 1)[1].split("```")[1]
    assert ci_command.rstrip().endswith("&& python -m pytest")
    assert "-m " not in " ".join(pytestconfig.getini("addopts"))
    assert 'python -m pytest -m "not slow and not integration"' in text
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert {"slow", "integration"} <= registered


def test_the_readme_stays_short_and_links_pages_that_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for link in re.findall(r"\]\(((?:docs/)?[A-Za-z0-9_./-]+\.md)", text):
        assert (ROOT / link).is_file(), link
