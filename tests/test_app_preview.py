"""The dashboard tells what Octopus will show: the help lists every chart with its series
and what is local to this tool; the problems pane lists the keys the recorder dropped, and
picks up a new sidecar while the dashboard is open."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from app_support import screen_text, wait_for, wait_for_text
from rich.text import Text

from ocms_tui.format.sidecar import SIDECAR_NAME
from ocms_tui.ui.app import OcmsApp
from ocms_tui.widgets.help_screen import HelpScreen, OctopusRun, octopus_text
from ocms_tui.widgets.problems_pane import ProblemsPane

DATA = Path(__file__).parent / "data"


def write_sidecar(directory: Path, keys: list[str]) -> None:
    document = {
        "format": "ocms-recorder",
        "version": 1,
        "recorder": "0.1.0",
        "chart_groups": [],
        "dropped": [
            {"key": key, "reason": "no-chart-group", "first_step": 1, "last_step": 3, "count": 3}
            for key in keys
        ],
    }
    temporary = directory / (SIDECAR_NAME + ".tmp")
    temporary.write_text(json.dumps(document))
    os.replace(temporary, directory / SIDECAR_NAME)


def test_octopus_text_lists_charts_in_order_and_escapes_names() -> None:
    text = octopus_text(
        [
            OctopusRun(
                "run",
                (("loss", ("loss", "eval_loss")), ("[b]x[/b]", ("\x1b[31m",))),
                ("lr", "[red]k[/]"),
            )
        ]
    )
    assert isinstance(text, Text)
    plain = text.plain
    assert "  loss: loss, eval_loss\n" in plain
    assert "  [b]x[/b]: \\x1b[31m\n" in plain  # markup stays characters, controls escaped
    assert "not written by the recorder: 'lr', '[red]k[/]'" in plain
    assert "\x1b" not in plain
    assert "smoothing (s), log scale (l), zoom" in plain
    assert plain.index("loss: loss") < plain.index("[b]x[/b]")


async def test_help_shows_what_octopus_will_show_and_the_pane_the_dropped_keys(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    shutil.copytree(DATA / "clean", run)
    app = OcmsApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.settle()
        await wait_for_text(pilot, "no problems")
        write_sidecar(run, ["lr", "tokens_per_sec"])  # while the dashboard is open
        await wait_for_text(pilot, "dropped-metric", "'lr' was not written", timeout=30)
        pane = app.query_one(ProblemsPane)
        assert "2 warnings" in str(pane.border_title)

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await wait_for_text(
            pilot,
            "What Octopus will show",
            "loss: loss, eval_loss",
            "learning_rate: learning_rate",
            "not written by the recorder: 'lr', 'tokens_per_sec'",
            "Local to this dashboard",
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
        assert "dropped-metric" in screen_text(app)
