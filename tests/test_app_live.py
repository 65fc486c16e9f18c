"""The dashboard following a real directory: files change on disk while the app runs, and
both the model and what is on the screen follow."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from pathlib import Path

from app_support import append_rows, screen_text, wait_for, wait_for_text, write_layout

from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import MARKUP_NAME, write_problem_run
from ocms_tui.ui.freeze import FREEZE_AFTER_SECONDS
from ocms_tui.widgets.chart_panel import ChartPanel

SIZE = (120, 40)


def start_run(directory: Path, rows: int = 10) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_layout(directory, {"loss": ["loss", "eval_loss"]})
    append_rows(directory / "loss.csv", [f"{step},{1.0 / (step + 1)!r}," for step in range(rows)])


def loss_chart(app: OcmsApp):  # type: ignore[no-untyped-def]
    return next(chart for chart in app.session.runs[0].model.charts if chart.name == "loss")


async def test_appended_rows_reach_model_and_screen(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 9 · 10 rows")
        append_rows(tmp_path / "loss.csv", ["10,0.123456,0.5", "11,0.0987654,"])
        await wait_for(
            pilot, lambda: bool(app.session.runs[0].model.charts) and loss_chart(app).rows == 12
        )
        await wait_for_text(pilot, "step 11 · 12 rows", "0.0987654", "0.5 @10")
        assert loss_chart(app).stats(1).latest == 0.5


async def test_partial_line_is_held_until_completed(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 9 · 10 rows")
        with open(tmp_path / "loss.csv", "a", encoding="utf-8") as csv:
            csv.write("10,0.42")  # a row still being written
        await wait_for_text(pilot, "partial-line", "loss.csv:11")
        assert loss_chart(app).rows == 10
        with open(tmp_path / "loss.csv", "a", encoding="utf-8") as csv:
            csv.write("4242,\n")
        await wait_for_text(pilot, "step 10 · 11 rows", "0.424242", "no problems")
        assert loss_chart(app).rows == 11


async def test_truncated_and_rewritten_csv_is_read_again(tmp_path: Path) -> None:
    start_run(tmp_path, rows=50)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 49 · 50 rows")
        (tmp_path / "loss.csv").write_text("0,7.5,\n1,7.25,\n2,7.125,\n", encoding="utf-8")
        await wait_for(pilot, lambda: loss_chart(app).rows == 3)
        await wait_for_text(pilot, "step 2 · 3 rows", "7.125")
        assert loss_chart(app).stats(0).maximum == 7.5


async def test_replaced_metrics_json_adds_a_chart(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 9 · 10 rows")
        append_rows(tmp_path / "grad_norm.csv", ["0,2.5", "1,2.25", "2,1.75"])
        write_layout(tmp_path, {"loss": ["loss", "eval_loss"], "grad_norm": ["grad_norm"]})
        await wait_for(pilot, lambda: len(app.query(ChartPanel)) == 2)
        await wait_for_text(pilot, "grad_norm", "step 2 · 3 rows", "1.75")
        assert [chart.name for chart in app.session.runs[0].model.charts] == ["loss", "grad_norm"]


async def test_the_shown_app_is_kept_out_of_full_collections_until_its_panels_change(
    tmp_path: Path,
) -> None:
    """Once the charts are shown, the app's objects are frozen (gc.freeze): a full
    collection, a pause of the UI, scans the few made since instead of all of them. A new
    layout hands them back before its panels are removed, the removed panels are freed and
    the new ones frozen in their turn; an app that ended leaves nothing frozen."""
    start_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 9 · 10 rows")
        await pilot.pause(FREEZE_AFTER_SECONDS + 0.2)
        assert gc.get_freeze_count() > 2 * len(gc.get_objects())
        # Not found by query_one: the screen caches its answers (up to 1,024 of them).
        replaced = weakref.ref(app.grid.panels[0])
        write_layout(tmp_path, {"loss": ["loss", "eval_loss"], "grad_norm": ["grad_norm"]})
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        await pilot.pause(FREEZE_AFTER_SECONDS + 0.2)
        assert gc.get_freeze_count() > 2 * len(gc.get_objects())
        assert replaced() is None  # freed, not frozen with the rest
    assert gc.get_freeze_count() == 0


async def test_panels_removed_within_a_second_of_a_layout_are_not_frozen(tmp_path: Path) -> None:
    """Two layouts 0.2 s apart: the first one's freeze must not come after the second has
    removed its panels, freezing them (kept in memory until the charts change again)."""
    tmp_path.mkdir(exist_ok=True)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "no metrics.json")
        start_run(tmp_path)
        await wait_for(pilot, lambda: len(app.grid.panels) == 1)
        removed = weakref.ref(app.grid.panels[0])
        await pilot.pause(0.2)
        write_layout(tmp_path, {"loss": ["loss", "eval_loss"], "grad_norm": ["grad_norm"]})
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        await pilot.pause(2 * FREEZE_AFTER_SECONDS + 0.2)
        assert gc.get_freeze_count() > 2 * len(gc.get_objects())
        assert removed() is None  # freed, not frozen with the rest
    assert gc.get_freeze_count() == 0


async def test_directory_created_late_is_picked_up(tmp_path: Path) -> None:
    directory = tmp_path / "job" / "ocms_metrics"
    app = OcmsApp(directory)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "waiting for", "does not exist yet")
        assert "␊" not in screen_text(app)  # a real line break, not a shown control code
        assert not app.session.runs[0].model.exists
        start_run(directory, rows=5)
        await wait_for(
            pilot,
            lambda: app.session.runs[0].model.exists and bool(app.session.runs[0].model.charts),
        )
        await wait_for_text(pilot, "step 4 · 5 rows", "● live")
        assert "waiting for" not in screen_text(app)


async def test_markup_looking_names_are_shown_literally(tmp_path: Path) -> None:
    write_problem_run(tmp_path)
    app = OcmsApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, MARKUP_NAME, "bad-y-axis-name")
        markup_chart = next(
            chart for chart in app.session.runs[0].model.charts if chart.name == "markup"
        )
        assert markup_chart.y_axis == (MARKUP_NAME,)
        # Shown as its characters in the legend: had it been parsed, "[bold red]" would be gone.
        await wait_for_text(pilot, f"1━ {MARKUP_NAME}")


async def test_polling_follows_too(tmp_path: Path) -> None:
    start_run(tmp_path)
    app = OcmsApp(tmp_path, poll=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 9 · 10 rows")
        assert [watcher.description for watcher in app.session.watchers.values()] == [
            "polling every 0.1s"
        ]
        append_rows(tmp_path / "loss.csv", ["10,0.25,"])
        await wait_for_text(pilot, "step 10 · 11 rows")


async def test_every_new_row_is_drawn_within_a_second_while_rows_stream(tmp_path: Path) -> None:
    """10 rows/s from a real writer thread; each row's delay until both the plot and the
    numbers under it show it. Rows are not rationed: p95 under 1 s, none over 1.5 s."""
    start_run(tmp_path, rows=1000)
    app = OcmsApp(tmp_path)
    written: dict[int, float] = {}
    seen: dict[int, float] = {}
    stop = threading.Event()

    def write() -> None:
        step = 1000
        while not stop.wait(0.1):
            append_rows(tmp_path / "loss.csv", [f"{step},{1 / (step + 1)!r},"])
            written[step] = time.monotonic()
            step += 1

    async with app.run_test(size=SIZE) as pilot:
        await wait_for_text(pilot, "step 999 · 1,000 rows")
        panel = app.query_one(ChartPanel)
        writer = threading.Thread(target=write)
        writer.start()
        try:
            deadline = time.monotonic() + 4.0
            while time.monotonic() < deadline:
                await pilot.pause(0.02)
                plotted = panel.plot.drawn_through or 0
                listed = panel.table.shown_last_step or 0
                now = time.monotonic()
                for step in written:
                    if step not in seen and plotted >= step and listed >= step:
                        seen[step] = now
        finally:
            stop.set()
            writer.join()
    delays = sorted(seen[step] - written[step] for step in seen)
    assert len(written) >= 30
    # Rows written in the last second may not be on screen yet; all others must be.
    settled = [step for step in written if written[step] < deadline - 1.5]
    assert all(step in seen for step in settled), sorted(set(settled) - set(seen))
    p95 = delays[int(0.95 * (len(delays) - 1))]
    assert p95 < 1.0 and delays[-1] < 1.5, delays
