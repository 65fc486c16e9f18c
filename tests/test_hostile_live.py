"""A user's and a hostile run's attacks on the live dashboard, each ending with the same
question: does the screen now show exactly what a dashboard started fresh on the same files
(with the same keys pressed) shows? Plots, legends, titles and problems are compared line by
line; only the status line's "last write ... ago" may differ.

A followed plot's x axis keeps head-room past the last step (it grows in steps, see
`plotting.grown_extent`), which a fresh start has not: so both dashboards end by reading one
more row per chart far past the last step (the probe), after which both axes end at the same
place and the pictures must be equal cell for cell.

The real app under Pilot, real files changed on disk while it follows them (inotify).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from app_support import append_rows, screen_lines, wait_for, write_layout

from ocms_tui.app import OcmsApp

SIZE = (120, 40)
_LAST_WRITE = re.compile(r"last write [^│]*")


def _rows(steps: Sequence[int], value: Callable[[int], str]) -> list[str]:
    return [f"{step},{value(step)}" for step in steps]


def _start(directory: Path, rows: int = 2000) -> None:
    write_layout(directory, {"loss": ["loss", "eval"], "lr": ["lr"]})
    append_rows(
        directory / "loss.csv", _rows(range(rows), lambda s: f"{10 / (s + 1)!r},{5 / (s + 1)!r}")
    )
    append_rows(directory / "lr.csv", _rows(range(rows), lambda s: f"{s / 1000!r}"))


def _stale_on_screen(app: OcmsApp) -> list[str]:
    """Panels on screen whose plot is not built from the latest data and view."""
    return [
        panel.name or "" for panel in app.grid.panels if panel.plot.region and panel.plot.is_stale
    ]


async def _settled_screen(app: OcmsApp, pilot: object) -> list[str]:
    """The screen once everything on disk is read and every plot is drawn from it."""
    await app.settle()
    await wait_for(pilot, lambda: not any(_stale_on_screen(app)))  # type: ignore[arg-type]
    await pilot.pause(0.2)  # type: ignore[attr-defined]
    return [_LAST_WRITE.sub("", line) for line in screen_lines(app)]


def _probe(directory: Path) -> None:
    """One row per chart at a step far past every step of its file (see the docstring)."""
    layout = json.loads((directory / "metrics.json").read_text(encoding="utf-8"))
    for chart in layout["charts"]:
        path = directory / chart["file"]
        steps = [int(line.split(",")[0]) for line in path.read_text().splitlines() if line]
        step = 2 * max(steps, default=0) + 10
        append_rows(path, [f"{step}," + ",".join("1.5" for _ in chart["y_axis"])])


async def _screen(
    directory: Path,
    keys: str | Sequence[str],
    size: tuple[int, int] = SIZE,
    events: Sequence[Callable[[], None]] = (),
) -> list[str]:
    """Start the dashboard, press `keys`, then let each event change the files (the app
    following them in between), then the probe; the screen when all is settled."""
    app = OcmsApp(directory)
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await app.settle()
        for key in keys:
            await pilot.press(key)
        for event in events:
            await _settled_screen(app, pilot)
            event()
            await pilot.pause(0.3)
        await _settled_screen(app, pilot)
        before = _contents(directory)
        _probe(directory)
        screen = await _settled_screen(app, pilot)
    _restore(directory, before)
    return screen


def _contents(directory: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in directory.iterdir() if path.is_file()}


def _restore(directory: Path, contents: dict[Path, bytes]) -> None:
    """The files as they were before the probe (the next dashboard reads the probe itself)."""
    for path in directory.iterdir():
        if path not in contents:
            path.unlink()
    for path, data in contents.items():
        path.write_bytes(data)


def _assert_same(live: list[str], fresh: list[str]) -> None:
    differences = [
        f"{row:2} live  {a}\n{row:2} fresh {b}"
        for row, (a, b) in enumerate(zip(live, fresh, strict=True))
        if a != b
    ]
    assert not differences, "\n".join(differences) + "\n\nlive screen:\n" + "\n".join(live)


@dataclass(frozen=True)
class Attack:
    name: str
    events: Callable[[Path], Sequence[Callable[[], None]]]


def _write(path: Path, rows: list[str]) -> Callable[[], None]:
    return lambda: path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")


def _append(path: Path, rows: list[str]) -> Callable[[], None]:
    return lambda: append_rows(path, rows)


ATTACKS = [
    Attack(  # the run restarts: the file is rewritten shorter from step 0
        "restart rewrites shorter",
        lambda d: [_write(d / "loss.csv", _rows(range(300), lambda s: f"{3 + s / 100!r},"))],
    ),
    Attack(  # a resume logs steps again into the same file: the steps go back
        "resume appends earlier steps",
        lambda d: [
            _append(d / "loss.csv", _rows(range(1500, 1700), lambda s: f"{s / 7!r},{s / 9!r}")),
            _append(d / "loss.csv", _rows(range(1700, 1900), lambda s: f"{s / 5!r},")),
        ],
    ),
    Attack(
        "truncated to nothing then rows again",
        lambda d: [
            _write(d / "loss.csv", []),
            _append(d / "loss.csv", _rows(range(5), lambda s: f"{s!r},{-s!r}")),
        ],
    ),
    Attack(
        "non-finite and extreme values mid-run",
        lambda d: [
            _append(
                d / "loss.csv",
                [
                    "2000,nan,inf",
                    "2001,-inf,1e308",
                    "2002,-0.0,5e-324",
                    "2003,1e-310,-1e308",
                    "2004,1.7976931348623157e308,0",
                ],
            ),
            _append(d / "lr.csv", ["2000,nan", "2001,inf", "2002,-0.0"]),
        ],
    ),
    Attack(
        "a series goes constant",
        lambda d: [
            _write(d / "lr.csv", _rows(range(3000), lambda s: "0.5")),
            _append(d / "loss.csv", _rows(range(2000, 2400), lambda s: "1.0,1.0")),
        ],
    ),
    Attack(
        "steps jump by 1e15",
        lambda d: [
            _append(d / "loss.csv", ["1000000000000000,1.0,2.0", "2000000000000000,0.5,"]),
            _append(d / "lr.csv", ["3000000000000000,9"]),
        ],
    ),
    Attack(
        "steps repeat",
        lambda d: [
            _append(d / "loss.csv", _rows([2000] * 50 + [2001] * 50, lambda s: f"{s!r},1")),
        ],
    ),
    Attack(
        "a chart gains a column",
        lambda d: [
            _write(
                d / "loss.csv",
                _rows(range(2100), lambda s: f"{10 / (s + 1)!r},{5 / (s + 1)!r},{s!r}"),
            ),
            lambda: write_layout(d, {"loss": ["loss", "eval", "acc"], "lr": ["lr"]}),
        ],
    ),
    Attack(
        "y names and chart count change",
        lambda d: [
            _append(d / "grad.csv", _rows(range(50), lambda s: f"{s % 7!r}")),
            lambda: write_layout(d, {"loss": ["total", "val"], "grad": ["norm"], "lr": ["lr"]}),
        ],
    ),
    Attack(
        "a chart goes away",
        lambda d: [lambda: write_layout(d, {"loss": ["loss", "eval"]})],
    ),
]

VIEWS = {
    "grid": "",
    "zoomed in": "]]]",
    "maximised": ["enter"],
    "smoothed": "s",
    "log scale": "l",
    "zoomed, smoothed, log, maximised": ["]", "]", "s", "s", "l", "enter"],
}


# The grid and all views at once run in the quick suite; each view alone is marked slow.
QUICK_VIEWS = ("grid", "zoomed, smoothed, log, maximised")


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(keys, id=name, marks=() if name in QUICK_VIEWS else pytest.mark.slow)
        for name, keys in VIEWS.items()
    ],
)
@pytest.mark.parametrize("attack", ATTACKS, ids=[attack.name for attack in ATTACKS])
async def test_after_the_files_change_the_screen_is_a_fresh_starts(
    tmp_path: Path, attack: Attack, view: str | list[str]
) -> None:
    _start(tmp_path)
    live = await _screen(tmp_path, view, events=attack.events(tmp_path))
    fresh = await _screen(tmp_path, view)
    _assert_same(live, fresh)
