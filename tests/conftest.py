"""Fixtures the recorder test modules share (none is autouse: a module asks for them)."""

from __future__ import annotations

import logging

import pytest
from ocms_recorder import METRICS_ENV, RANK_ENV_VARS


@pytest.fixture
def no_launcher_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `$METRICS` and no launcher rank: the recorder writes, where each test says. The
    recorder test modules use it for every test (`pytestmark`)."""
    for name in (METRICS_ENV, *RANK_ENV_VARS):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def recorder_warnings(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    return caplog
