"""One run status and one badge table: a quiet run is "idle 5m", then "finished", never
"stale"; the status bar and the run list say the same, through the real app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from app_support import screen_lines, wait_for

from ocms_tui.follow.runs import FINISHED_SECONDS, LIVE_SECONDS, RunStatus, quiet_status
from ocms_tui.follow.session import Status
from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run
from ocms_tui.widgets.badges import BADGES, badge
from ocms_tui.widgets.status_bar import status_line

WRITTEN = 1_700_000_000.0


@pytest.mark.parametrize(
    ("quiet", "status", "text"),
    [
        (3.0, RunStatus.LIVE, "● live"),
        (LIVE_SECONDS + 1, RunStatus.IDLE, "○ idle 30s"),
        (5 * 60 + 7, RunStatus.IDLE, "○ idle 5m"),
        (FINISHED_SECONDS, RunStatus.FINISHED, "✓ finished"),
        (3 * 86400, RunStatus.FINISHED, "✓ finished"),
        (None, RunStatus.WAITING, "◌ waiting"),
    ],
)
def test_quiet_runs_are_described_not_judged(
    quiet: float | None, status: RunStatus, text: str
) -> None:
    assert quiet_status(quiet) is status
    assert badge(status, quiet)[0] == text


def test_every_status_has_a_badge_and_none_says_stale() -> None:
    assert set(BADGES) == set(RunStatus)
    assert not any("stale" in label for label, _ in BADGES.values())


def test_an_idle_status_bar_says_how_long_once() -> None:
    line = status_line(Status(RunStatus.IDLE, "run", 6, 100, 420.0, "inotify")).plain
    assert line.startswith("○ idle 7m  run")
    assert "ago" not in line  # the badge already says how long


def pinned_run(directory: Path, written: float) -> None:
    write_demo_run(directory, steps=20)
    for path in directory.iterdir():
        os.utime(path, (written, written))


async def test_the_dashboard_shows_idle_and_finished_runs(tmp_path: Path) -> None:
    pinned_run(tmp_path / "recent", WRITTEN - 5 * 60)
    pinned_run(tmp_path / "old", WRITTEN - 2 * 3600)
    app = OcmsApp(tmp_path, watch=False, clock=lambda: WRITTEN)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.settle()
        # The run list: one badge per run; the status bar: the newest write of them.
        await wait_for(pilot, lambda: "recent ○ idle 5m" in "\n".join(screen_lines(app)))
        lines = screen_lines(app)
        assert any("old ✓ finished" in line for line in lines)
        assert lines[0].lstrip().startswith("○ idle 5m  ")
        assert "stale" not in "\n".join(lines)


def test_a_narrow_status_bar_gives_up_the_least_telling_parts_first() -> None:
    live = Status(RunStatus.LIVE, "/tmp/ocms-demo-x1/ocms_metrics", 6, 1671, 2.0, "inotify")
    wide = status_line(live, 200).plain
    assert wide.endswith("last write just now  │  inotify")
    narrow = status_line(live, 66).plain
    assert "inotify" not in narrow and "last write" not in narrow  # live says "recent"
    assert narrow == "● live  /tmp/ocms-demo-x1/ocms_metrics  │  6 charts · 1,671 rows"
    tiny = status_line(live, 58).plain
    assert tiny == "● live  /tmp/…mo-x1/ocms_metrics  │  6 charts · 1,671 rows"  # the middle goes
    assert len(tiny) <= 58
