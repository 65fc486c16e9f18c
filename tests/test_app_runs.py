"""The dashboard over several runs: runs appearing under a parent, toggled, filtered."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from app_support import append_rows, screen_text, wait_for, wait_for_text, write_layout
from textual.widgets import SelectionList

from ocms_tui.format.ranking import SortKey
from ocms_tui.ui.app import OcmsApp, StateChanged
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.run_list import RunList

SIZE = (140, 40)


def start_run(directory: Path, rows: int = 5, scale: float = 1.0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    append_rows(directory / "loss.csv", [f"{step},{scale / (step + 1)!r}" for step in range(rows)])
    write_layout(directory, {"loss": ["loss"]})


def loss_panel(app: OcmsApp) -> ChartPanel:
    return next(panel for panel in app.query(ChartPanel) if panel.name == "loss")


def shown_runs(app: OcmsApp) -> list[str]:
    return [source.run.name for source in loss_panel(app).overlay.sources]


async def test_a_run_appearing_under_the_parent_shows_up(tmp_path: Path) -> None:
    start_run(tmp_path / "run_1" / "ocms_metrics")
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 4 · 5 rows", "1━ loss")
        assert not app.query_one(RunList).display  # one run: the look it always had
        assert "Runs" not in screen_text(app)  # nor a footer key for a list that is not there
        start_run(tmp_path / "run_2" / "ocms_metrics", rows=8, scale=2.0)
        await wait_for(pilot, lambda: len(app.session.runs) == 2, timeout=20)
        await wait_for_text(pilot, "run_1 · loss", "run_2 · loss", "step 7 · 13 rows", "b Runs")
        assert app.query_one(RunList).display
        assert shown_runs(app) == ["run_1", "run_2"]
        assert loss_panel(app).frames.by_key[loss_panel(app).lines[1].key].stats[0].maximum == 2.0


async def test_runs_toggle_off_and_on_from_the_list(tmp_path: Path) -> None:
    for index in (1, 2, 3):
        start_run(tmp_path / f"run_{index}" / "ocms_metrics", rows=index * 10)
    # Ranked highest loss first: the list in the order the runs were found (longer, lower).
    app = OcmsApp(tmp_path, sort=SortKey.parse("-loss"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "run_3 · loss", "Runs (3/3 shown)")
        assert [Path(key).parent.name for key in app.run_list.visible_keys] == [
            "run_1",
            "run_2",
            "run_3",
        ]
        options = app.query_one(SelectionList)
        options.focus()
        await pilot.press("down", "space")  # hide run_2
        await wait_for(pilot, lambda: shown_runs(app) == ["run_1", "run_3"])
        await wait_for_text(pilot, "Runs (2/3 shown)", "step 29 · 40 rows")
        assert "run_2 · loss" not in screen_text(app)
        await pilot.press("up", "enter", "down", "space")  # hide run_1, show run_2
        await wait_for(pilot, lambda: shown_runs(app) == ["run_2", "run_3"])
        await pilot.press("down", "space", "up", "space")  # hide run_3 and run_2: nothing
        await wait_for_text(pilot, "no run selected")
        await pilot.press("up", "space")  # run_1 again
        await wait_for(pilot, lambda: shown_runs(app) == ["run_1"])
        await wait_for_text(pilot, "run_1 · loss", "step 9 · 10 rows")


async def test_typing_filters_the_run_list(tmp_path: Path) -> None:
    for name in ("lr_high", "lr_low", "baseline"):
        start_run(tmp_path / name / "ocms_metrics")
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "baseline · loss")
        run_list = app.query_one(RunList)
        await pilot.press("b")
        assert not run_list.display
        await pilot.press("slash")  # shows the list again and puts the cursor in the filter
        assert run_list.display and app.focused is run_list.filter
        await pilot.press(*"lr_")
        await wait_for(pilot, lambda: run_list.options.option_count == 2)
        assert [Path(key).parent.name for key in run_list.visible_keys] == ["lr_high", "lr_low"]
        await pilot.press("h")
        await wait_for(pilot, lambda: run_list.options.option_count == 1)
        await pilot.press("enter", "space")  # into the list: hide the one run it shows
        await wait_for(pilot, lambda: shown_runs(app) == ["baseline", "lr_low"])
        await pilot.press("escape")  # back to the charts: keys act on them again
        assert isinstance(app.focused, ChartPanel)
        await pilot.press("s")
        assert app.focused.view.smoothing == 0.6


async def test_a_tick_after_the_app_closed_does_nothing(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 4 · 5 rows")
    app.on_state_changed(StateChanged(app.session.state))  # posted just before the exit


async def test_queued_states_coalesce_keeping_every_changed_chart(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 4 · 5 rows")
        state = app.session.state
        assert state is not None
        older = StateChanged(replace(state, changed=frozenset({"loss"})))
        newer = StateChanged(replace(state, changed=frozenset({"acc"})))
        assert older.can_replace(newer)
        assert newer.changed == {"loss", "acc"}  # the newest carries the older one's charts
