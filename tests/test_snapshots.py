"""What the dashboard looks like, compared with stored SVG snapshots (pytest-textual-snapshot).

The data is the deterministic demo run; file times and the clock are pinned and the
directory is shown under a fixed label, so nothing on screen depends on when or where the
test runs. Update after an intended change with `pytest tests/test_snapshots.py
--snapshot-update` and look at the SVGs before committing them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from ocms_tui.cli import main
from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run, write_problem_run

PINNED_TIME = 1_700_000_000.0  # every file's mtime; the clock reads 3 s later: "live"


def pin_times(directory: Path) -> None:
    for path in directory.iterdir():
        os.utime(path, (PINNED_TIME, PINNED_TIME))


def make_app(directory: Path) -> OcmsApp:
    pin_times(directory)
    app = OcmsApp(
        directory,
        watch=False,
        directory_label="ocms_metrics",
        clock=lambda: PINNED_TIME + 3,
    )
    app.animation_level = "none"
    return app


async def settled(pilot: Pilot) -> None:
    await pilot.app.settle()  # type: ignore[attr-defined]
    await pilot.pause()


@pytest.fixture
def demo_app(tmp_path: Path) -> OcmsApp:
    write_demo_run(tmp_path / "ocms_metrics", steps=1000, seed=0)
    return make_app(tmp_path / "ocms_metrics")


def test_clean_run_80x24(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(demo_app, terminal_size=(80, 24), run_before=settled)


def test_clean_run_60x20(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(demo_app, terminal_size=(60, 20), run_before=settled)


def test_small_terminal_third_chart_focused_60x20(
    demo_app: OcmsApp, snap_compare: Callable[..., bool]
) -> None:
    async def focus_epoch(pilot: Pilot) -> None:
        await settled(pilot)
        await pilot.press("right", "right")
        await pilot.pause()

    assert snap_compare(demo_app, terminal_size=(60, 20), run_before=focus_epoch)


def test_maximised_without_problems_pane_80x24(
    demo_app: OcmsApp, snap_compare: Callable[..., bool]
) -> None:
    async def maximise_and_hide_problems(pilot: Pilot) -> None:
        await settled(pilot)
        await pilot.press("enter", "p")
        await pilot.pause()

    assert snap_compare(demo_app, terminal_size=(80, 24), run_before=maximise_and_hide_problems)


def test_help_screen_60x20(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    async def open_help_and_scroll(pilot: Pilot) -> None:
        await settled(pilot)
        await pilot.press("question_mark", "pagedown")
        await pilot.pause()

    assert snap_compare(demo_app, terminal_size=(60, 20), run_before=open_help_and_scroll)


def test_clean_run_160x48(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(demo_app, terminal_size=(160, 48), run_before=settled)


def test_run_with_problems(tmp_path: Path, snap_compare: Callable[..., bool]) -> None:
    write_problem_run(tmp_path / "ocms_metrics")
    app = make_app(tmp_path / "ocms_metrics")
    assert snap_compare(app, terminal_size=(160, 48), run_before=settled)


def test_maximised_chart(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    async def maximise_learning_rate(pilot: Pilot) -> None:
        await settled(pilot)
        await pilot.press("right", "enter")
        await pilot.pause()

    assert snap_compare(demo_app, terminal_size=(120, 36), run_before=maximise_learning_rate)


def test_help_screen(demo_app: OcmsApp, snap_compare: Callable[..., bool]) -> None:
    async def open_help(pilot: Pilot) -> None:
        await settled(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(demo_app, terminal_size=(100, 32), run_before=open_help)


def test_three_run_comparison(tmp_path: Path, snap_compare: Callable[..., bool]) -> None:
    for index, steps in enumerate((800, 1000, 1200)):
        directory = tmp_path / "out" / f"run_{index + 1}" / "ocms_metrics"
        write_demo_run(directory, steps=steps, seed=index)
        pin_times(directory)
    app = OcmsApp(
        tmp_path / "out", watch=False, directory_label="out", clock=lambda: PINNED_TIME + 3
    )
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=(160, 48), run_before=settled)


def test_restarted_run(tmp_path: Path, snap_compare: Callable[..., bool]) -> None:
    """A script run twice into one directory (issue 18.4): the first pass dotted, the second
    a braille line from step 0 again, the legend's numbers and header naming pass 2."""
    directory = tmp_path / "ocms_metrics"
    directory.mkdir()
    (directory / "metrics.json").write_text(
        '{"charts": [{"name": "loss", "file": "loss.csv", "y_axis": ["loss"]}]}',
        encoding="utf-8",
    )
    first = [f"{step},{2.0 * 0.99**step:.6f}\n" for step in range(300)]
    again = [f"{step},{1.5 * 0.995**step:.6f}\n" for step in range(180)]
    (directory / "loss.csv").write_text("".join(first + again), encoding="utf-8")
    assert snap_compare(make_app(directory), terminal_size=(100, 30), run_before=settled)


@pytest.mark.parametrize(("arguments", "lines"), [([], 48), (["--size", "80x24"], 24)])
def test_snapshot_command_renders_at_the_command_lines_size(
    tmp_path: Path, arguments: list[str], lines: int
) -> None:
    """`--snapshot` takes its default size from the command line alone (save_snapshot has
    none of its own)."""
    write_demo_run(tmp_path / "run", steps=50, seed=0)
    out = tmp_path / "out.svg"
    assert main(["--snapshot", str(out), *arguments, str(tmp_path / "run")]) == 0
    svg = out.read_text(encoding="utf-8")
    assert "loss" in svg  # the first chart, shown at any size
    # Textual's SVG export clips each terminal line by an id ending in its number.
    drawn = {int(number) for number in re.findall(r"-line-(\d+)", svg)}
    assert drawn == set(range(lines))
