"""A user's and a hostile run's attacks on the live dashboard, each ending with the same
question: does the screen now show exactly what a dashboard started fresh on the same files
(with the same keys pressed) shows? Plots, legends, titles and problems are compared line by
line; only the status line's "last write ... ago" may differ.

A followed plot's x axis keeps head-room past the last step (it grows in steps, see
`plot_plan.grown_extent`), which a fresh start has not: so both dashboards end by reading one
more row per chart far past the last step (the probe), after which both axes end at the same
place and the pictures must be equal cell for cell.

The real app under Pilot, real files changed on disk while it follows them (inotify).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from app_support import append_rows, screen_lines, write_layout
from textual.pilot import Pilot

from ocms_tui.ui.app import OcmsApp

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


async def _settled_screen(app: OcmsApp, pilot: Pilot[int]) -> list[str]:
    """The screen once everything on disk is read and it stopped changing (as a user sees
    it settle: a plot scrolled out of view or too small to show is never drawn)."""
    await app.settle()
    deadline = time.monotonic() + 15
    screens = [screen_lines(app)]
    while len(screens) < 4 or len({"\n".join(screen) for screen in screens[-4:]}) > 1:
        assert time.monotonic() < deadline, "the screen never settled"
        await pilot.pause(0.1)
        screens.append(screen_lines(app))
    return [_LAST_WRITE.sub("", line) for line in screens[-1]]


def _probe(directory: Path) -> None:
    """One row per chart at a step far past every step of its file (see the docstring)."""
    layout = json.loads((directory / "metrics.json").read_text(encoding="utf-8"))
    for chart in layout["charts"]:
        path = directory / chart["file"]
        fields = [line.split(",")[0] for line in path.read_text().splitlines()]
        steps = [int(field) for field in fields if field.isdigit()]
        step = 2 * max(steps, default=0) + 10
        append_rows(path, [f"{step}," + ",".join("1.5" for _ in chart["y_axis"])])


async def _screen(
    directory: Path,
    keys: str | Sequence[str],
    size: tuple[int, int] = SIZE,
    events: Sequence[Callable[[], None]] = (),
    settle_between: bool = True,
    keys_after: Sequence[str] = (),
) -> list[str]:
    """Start the dashboard, press `keys`, then let each event change the files (the app
    following them in between: settled, or `settle_between=False` only 0.3 s), press
    `keys_after`, then the probe; the screen when all is settled."""
    app = OcmsApp(directory)
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await app.settle()
        for key in keys:
            await pilot.press(key)
        for event in events:
            if settle_between:
                await _settled_screen(app, pilot)
            event()
            await pilot.pause(0.3)
        for key in keys_after:
            await pilot.press(key)
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
    Attack(  # a hostile writer: junk, wrong widths, negative and non-integer steps, blanks
        "bad rows mid-run",
        lambda d: [
            _append(
                d / "loss.csv",
                ["abc,1,2", "-5,1,2", "1e3,1,2", "2001,1", "2002,1,2,3", "", "2003,0.5,x"],
            ),
            _append(d / "loss.csv", ["2004,0.25,0.125", "2005,0.2"]),
        ],
    ),
    Attack(  # steps go back on every other row
        "restarts on every other row",
        lambda d: [_append(d / "loss.csv", _rows([s % 2 for s in range(2000)], lambda s: "2,1"))],
    ),
    Attack(  # the file replaced at once by one far larger (the first read is sampled)
        "replaced by 400,000 rows",
        lambda d: [
            lambda: (d / "lr.tmp").write_bytes(
                b"".join(b"%d,%r\n" % (s, (s % 977) / 977) for s in range(400_000))
            ),
            lambda: (d / "lr.tmp").replace(d / "lr.csv"),
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


# All views at once run in the quick suite (each attack ~1.4 s of CPU); the grid and each
# view alone are marked slow.
QUICK_VIEWS = ("zoomed, smoothed, log, maximised",)
# The attacks of the quick suite (0.6-1.7 s of CPU each): a restart, new columns in the
# layout, a hostile writer; every attack runs in the slow suite.
QUICK_ATTACKS = ("restart rewrites shorter", "a chart gains a column", "bad rows mid-run")


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(keys, id=name, marks=() if name in QUICK_VIEWS else pytest.mark.slow)
        for name, keys in VIEWS.items()
    ],
)
@pytest.mark.parametrize(
    "attack",
    [
        pytest.param(
            attack, id=attack.name, marks=() if attack.name in QUICK_ATTACKS else pytest.mark.slow
        )
        for attack in ATTACKS
    ],
)
async def test_after_the_files_change_the_screen_is_a_fresh_starts(
    tmp_path: Path, attack: Attack, view: str | list[str]
) -> None:
    _start(tmp_path)
    live = await _screen(tmp_path, view, events=attack.events(tmp_path))
    fresh = await _screen(tmp_path, view)
    _assert_same(live, fresh)


# -- keys held down and the terminal resized while rows arrive ------------------------------


class _Writer:
    """A training run writing `rows_per_write` rows to every chart every `pause` seconds on a
    thread of its own, as a real run would while the user presses keys."""

    def __init__(self, directory: Path, first: int, rows_per_write: int = 5) -> None:
        self.directory, self.step, self.rows_per_write = directory, first, rows_per_write
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._write)

    def _write(self) -> None:
        while not self.stop.wait(0.02):
            steps = range(self.step, self.step + self.rows_per_write)
            append_rows(self.directory / "loss.csv", _rows(steps, lambda s: f"{1 / s!r},{s % 3}"))
            append_rows(self.directory / "lr.csv", _rows(steps, lambda s: f"{s / 1000!r}"))
            self.step += self.rows_per_write

    def __enter__(self) -> _Writer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


HELD_KEYS = ["]"] * 50 + ["s"] * 50 + ["l"] * 51 + ["enter"] * 3 + ["2"] * 3 + ["["] * 20
# The same view reached with one press each: zoom 12 then 20 out (0), EMA 0.9 (50 = 2 mod 4),
# log on, maximised, series 2 hidden.
HELD_KEYS_ONCE = ["s", "s", "l", "enter", "2"]


@pytest.mark.slow  # 177 presses while a writer streams rows, then a second app: 5 s of CPU
async def test_keys_held_down_while_rows_arrive_end_on_a_fresh_starts_screen(
    tmp_path: Path,
) -> None:
    _start(tmp_path)
    app = OcmsApp(tmp_path)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        with _Writer(tmp_path, 2000):
            started = time.monotonic()
            for key in HELD_KEYS:
                await pilot.press(key)
            took = time.monotonic() - started
        await _settled_screen(app, pilot)
        before = _contents(tmp_path)
        _probe(tmp_path)
        live = await _settled_screen(app, pilot)
    _restore(tmp_path, before)
    fresh = await _screen(tmp_path, HELD_KEYS_ONCE)
    _assert_same(live, fresh)
    assert "Traceback" not in "\n".join(live)
    print(f"\n{len(HELD_KEYS)} key presses while rows arrived took {took:.2f} s")


SIZES = [(80, 24), (200, 60), (20, 5), (160, 48), (12, 3), (80, 24)]


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param([], id="[]"),
        # 3-4 s of CPU each: the views resized are in the slow suite.
        pytest.param(["]", "]", "s", "l"], id="[']', ']', 's', 'l']", marks=pytest.mark.slow),
        pytest.param(["enter", "s"], id="['enter', 's']", marks=pytest.mark.slow),
    ],
)
async def test_resized_while_rows_arrive_the_screen_is_a_fresh_starts(
    tmp_path: Path, keys: list[str]
) -> None:
    _start(tmp_path)
    app = OcmsApp(tmp_path)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await app.settle()
        for key in keys:
            await pilot.press(key)
        with _Writer(tmp_path, 2000):
            for size in SIZES * 3:
                await pilot.resize_terminal(*size)
                await pilot.pause(0.1)
        for size in SIZES:  # each size settled once: a picture of every size is right
            await pilot.resize_terminal(*size)
            assert "Traceback" not in "\n".join(await _settled_screen(app, pilot))
        await pilot.resize_terminal(*SIZE)
        await _settled_screen(app, pilot)
        before = _contents(tmp_path)
        _probe(tmp_path)
        live = await _settled_screen(app, pilot)
    _restore(tmp_path, before)
    _assert_same(live, await _screen(tmp_path, keys))


@pytest.mark.parametrize(
    "rows", [1, *(pytest.param(rows, marks=pytest.mark.slow) for rows in (2, 3, 17))]
)
async def test_zoomed_past_a_single_row_at_the_first_and_the_last_rows(
    tmp_path: Path, rows: int
) -> None:
    """Zoom 12 (the latest 1/4096 of the steps) on a run of a few rows, then rows arrive
    one by one: the latest row is always drawn, the numbers are the file's."""
    write_layout(tmp_path, {"loss": ["loss", "eval"], "lr": ["lr"]})
    append_rows(tmp_path / "loss.csv", _rows(range(rows), lambda s: f"{s * 2.5!r},"))
    append_rows(tmp_path / "lr.csv", _rows(range(rows), lambda s: "0.125"))
    events = [
        _append(tmp_path / "loss.csv", _rows([step], lambda s: f"{s * 2.5!r},{-s!r}"))
        for step in range(rows, rows + 4)
    ]
    live = await _screen(tmp_path, ["]"] * 14 + ["s", "l"], events=events)
    _assert_same(live, await _screen(tmp_path, ["]"] * 12 + ["s", "l"]))


@pytest.mark.parametrize(
    ("keys", "fresh_keys"),
    [
        pytest.param(["2", "enter"], ["2", "enter"], id="series 2 hidden"),
        pytest.param(["space"], ["space", "space"], id="paused"),
    ],
)
async def test_files_changed_while_a_series_is_hidden_or_the_run_paused(
    tmp_path: Path, keys: list[str], fresh_keys: list[str]
) -> None:
    """The column of a hidden series goes away and comes back; or the run restarts, widens
    and renames while following is paused (then resumed)."""
    _start(tmp_path)
    loss = tmp_path / "loss.csv"
    events = [
        _write(loss, _rows(range(500), lambda s: f"{s / 3!r}")),
        lambda: write_layout(tmp_path, {"loss": ["loss"], "lr": ["lr"]}),
        _write(loss, _rows(range(700), lambda s: f"{s / 3!r},{-s!r},{s % 5!r}")),
        lambda: write_layout(tmp_path, {"loss": ["loss", "val", "acc"], "lr": ["lr"]}),
    ]
    if keys == ["space"]:
        events.append(lambda: None)  # the last event's files shown before space is pressed
    resume = ["space"] if keys == ["space"] else []
    live = await _screen(tmp_path, keys, events=events, settle_between=False, keys_after=resume)
    _assert_same(live, await _screen(tmp_path, fresh_keys))


# -- a key held down on a 1,000,000-row chart ------------------------------------------------

PLANS_PER_BURST = 2  # a burst of presses is planned for its last view (and at most once more)


@pytest.mark.parametrize(
    ("key", "presses", "title"), [("s", 50, "ema 0.9 · linear"), ("l", 51, "ema off · log")]
)
async def test_fifty_presses_at_once_on_a_million_rows_are_drawn_once_for_the_last_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, presses: int, title: str
) -> None:
    """A held key (or a terminal handing 50 presses over in one read, as tmux does after a
    stall): the app used to smooth every series again for each press, one after the other,
    before showing anything: 8 s at 6 x 1M in tmux. Only the last view needs planning. The
    plans are counted, not timed: a busy CI machine took 1.02 s where this one takes 0.12."""
    from test_keys_large import noisy_run
    from textual import events

    noisy_run(tmp_path)
    app = OcmsApp(tmp_path)
    app.animation_level = "none"
    async with app.run_test(size=(160, 48)) as pilot:
        await app.settle()
        await pilot.pause(1.0)  # smoothing made ahead of the first press has landed
        (panel, *_) = app.grid.panels
        panel.focus()
        await pilot.pause()
        plans = 0
        plan = panel.plot._plan

        def counted_plan(*args: Any, **kwargs: Any) -> Any:
            nonlocal plans
            plans += 1
            return plan(*args, **kwargs)

        monkeypatch.setattr(panel.plot, "_plan", counted_plan)
        started = time.monotonic()
        for _ in range(presses):
            app.post_message(events.Key(key, key))
        while not (title in str(panel.border_title) and not panel.plot.is_stale):
            assert time.monotonic() - started < 30, "the presses were never answered"
            await pilot.pause(0.01)
        took = time.monotonic() - started
    print(f"\n{presses} x {key} at 1,000,000 rows: {plans} plans, answered after {took:.2f} s")
    assert 1 <= plans <= PLANS_PER_BURST
