"""Shared by every test: the figures measured against the README's caps, printed at the end."""

from __future__ import annotations

import pytest
from reliability_support import cap_report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = cap_report()
    if lines:
        terminalreporter.section("measured against the caps (README, Reliability)")
        for line in lines:
            terminalreporter.write_line(line)
