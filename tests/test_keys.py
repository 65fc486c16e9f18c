"""Keys as data: one table (ocms_tui.widgets.keys) makes the bindings, the footer, the help screen
and the README's key table; the real app is driven by the keys it lists."""

from __future__ import annotations

from pathlib import Path

from app_support import screen_text, wait_for

from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.demo import write_demo_run
from ocms_tui.widgets.chart_panel import ChartPanel
from ocms_tui.widgets.help_screen import HelpScreen
from ocms_tui.widgets.keys import KEYS, LEGEND_MARKS, Scope, binding_rows, help_rows, readme_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_lists_exactly_the_keys_of_the_table() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Dashboard keys") :]
    section = section[: section.index("\n### ", 1)]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == readme_table()


def test_every_key_the_table_binds_is_bound_on_the_app_or_the_panel() -> None:
    app_keys = {(binding.key, binding.action) for binding in OcmsApp.BINDINGS}  # type: ignore[union-attr]
    panel_keys = {(binding.key, binding.action) for binding in ChartPanel.BINDINGS}  # type: ignore[union-attr]
    for entry in KEYS:
        bound = {(binding.key, binding.action) for binding in entry.bindings}
        if entry.scope is Scope.APP:
            assert bound <= app_keys, entry.shown
        elif entry.scope is Scope.PANEL:
            assert bound <= panel_keys, entry.shown
    # ... and nothing is bound that the table (so the help) does not list.
    listed = {(b.key, b.action) for entry in KEYS for b in entry.bindings}
    assert app_keys | panel_keys == listed
    # The footer shows one binding per footer word, each word once.
    shown = [row.description for row in binding_rows(Scope.APP) if row.show]
    assert shown == [entry.footer for entry in KEYS if entry.footer and entry.scope is Scope.APP]


async def test_help_lists_every_key_and_legend_mark_and_scrolls_by_keys(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=100)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(60, 20)) as pilot:
        await app.settle()
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        body = app.screen.query_one("VerticalScroll")
        assert body.max_scroll_y > 0  # 60x20 holds only part of the help
        first = screen_text(app)
        assert "ocms-tui · keys" in first and help_rows()[0][0] in first
        await pilot.press("down")
        await wait_for(pilot, lambda: body.scroll_y >= 1)
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: body.scroll_y > 1)
        await pilot.press("end")
        await wait_for(pilot, lambda: body.scroll_y == body.max_scroll_y)
        # The end of the text is on screen.
        await wait_for(pilot, lambda: "dashboard is open." in " ".join(screen_text(app).split()))
        await pilot.press("home")
        await wait_for(pilot, lambda: body.scroll_y == 0)

        # Every row of the table is somewhere in the help, read by scrolling through it.
        seen = ""
        for _ in range(120):  # a line a press, until the end (the loop stops there)
            seen += screen_text(app)
            if body.scroll_y >= body.max_scroll_y:
                break
            await pilot.press("down")
            await pilot.pause()
        flat = " ".join(seen.split())
        for shown, meaning in [*help_rows(), *LEGEND_MARKS]:
            assert shown in flat
            assert " ".join(meaning.split()[:3]) in flat, meaning


async def test_ctrl_c_quits_at_once(tmp_path: Path) -> None:
    write_demo_run(tmp_path, steps=50)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.settle()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running  # no "Do you want to quit? Press ctrl+q" first
    assert app.return_code == 0


async def test_ctrl_c_quits_from_the_run_filter(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_demo_run(tmp_path / name, steps=20)
    app = OcmsApp(tmp_path, watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.settle()
        await pilot.press("slash", "q")  # q is typed into the filter, not quitting
        assert app.is_running and app.run_list.filter.value == "q"
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
