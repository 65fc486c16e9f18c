"""Starting the dashboard: until the user quits, or once to an SVG."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ocms_tui.follow.session import FollowSession, PathArgument
from ocms_tui.ui.app import OcmsApp
from ocms_tui.ui.exit_signals import signals_noted
from ocms_tui.widgets.chart_panel import DEFAULT_TOP_RUNS


def run_dashboard(
    paths: PathArgument | Sequence[PathArgument],
    poll: float | None = None,
    session: FollowSession | None = None,
    top: int = DEFAULT_TOP_RUNS,
    group: re.Pattern[str] | None = None,
    notify: bool = False,
    baseline: PathArgument | None = None,
) -> int:
    """Open the dashboard on `paths` (runs or parents of runs) until the user quits; returns
    the exit code. `session`, `top`, `group`, `notify`, `baseline`: see OcmsApp (the
    session knows the sort)."""
    app = OcmsApp(
        paths,
        poll=poll,
        handle_signals=True,
        session=session,
        top=top,
        group=group,
        notify=notify,
        baseline=baseline,
    )
    with signals_noted() as app.signals_before_mount:
        app.run()
    return app.return_code or 0


def save_snapshot(
    paths: PathArgument | Sequence[PathArgument],
    out_path: str | os.PathLike[str],
    size: tuple[int, int],  # the default is the command line's (--size)
    **options: object,
) -> None:
    """Render the dashboard on `paths` once, fully loaded, to an SVG file.

    `options` go to OcmsApp (e.g. `directory_label`, `clock` for reproducible screenshots).
    """

    async def render() -> str:
        app = OcmsApp(paths, watch=False, **options)  # type: ignore[arg-type]
        app.animation_level = "none"
        async with app.run_test(size=size) as pilot:
            await app.settle()
            await pilot.pause()
            return app.export_screenshot(title=f"ocms-tui {app.directory_label}")

    Path(out_path).write_text(asyncio.run(render()), encoding="utf-8")
