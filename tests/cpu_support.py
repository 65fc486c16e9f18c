"""A pytest plugin that adds up the CPU time (user + system, of the process and of the
children it waited for) of each test and prints the costliest files and tests at the end.

    PYTHONPATH=tests python -m pytest -p cpu_support -m "not slow and not integration"

On a machine shared with other work, wall times (`--durations`) swing with the load; CPU
seconds do not, or far less. `CPU_SUPPORT_REPORT=FILE` also writes one JSON line per test.
"""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict
from collections.abc import Generator

import pytest

SHOWN = 15


def _cpu_seconds() -> float:
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_per_test: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    started = _cpu_seconds()
    yield
    _per_test[item.nodeid] = seconds = _cpu_seconds() - started
    report = os.environ.get("CPU_SUPPORT_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as lines:
            lines.write(json.dumps([item.nodeid, round(seconds, 3)]) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    per_file: defaultdict[str, float] = defaultdict(float)
    for nodeid, seconds in _per_test.items():
        per_file[nodeid.split("::")[0]] += seconds
    write = terminalreporter.write_line
    terminalreporter.section("CPU seconds (user + system, with children)")
    write(f"{sum(_per_test.values()):.1f} s in {len(_per_test)} tests")
    for name, seconds in sorted(per_file.items(), key=lambda item: -item[1])[:SHOWN]:
        write(f"{seconds:7.2f} s  {name}")
    for name, seconds in sorted(_per_test.items(), key=lambda item: -item[1])[:SHOWN]:
        write(f"{seconds:7.2f} s  {name}")
