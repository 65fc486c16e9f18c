"""Hostile files and users against this round's fast paths: the sampled first read of a
large CSV, the charts read side by side on threads, the smoothing made ahead in a worker,
the x axis with head-room, and the session that starts before the screen.

Each test is one attack with real files (and, where it says so, the real app or the real
command on a pseudo-terminal). The promise checked is always the product's: no crash, no
hang, no traceback; no row lost (the end state equals a fresh read of the same bytes); a
sample never shows a value that is not in the file; q and SIGTERM quit promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from app_support import screen_lines, wait_for, write_layout
from ocms_recorder import MAX_STEP
from terminal_support import Terminal, installed_command

from ocms_tui.follow import session as session_module
from ocms_tui.follow.model import ChartData, RunModel
from ocms_tui.follow.session import FollowSession
from ocms_tui.follow.views import SeriesViews
from ocms_tui.format.problems import Rule
from ocms_tui.ui.app import OcmsApp

# Not loss-like names: each value is a function of its step, a sawtooth from 1 to 2 that the
# curve health checks would rightly call a diverging loss; these tests are about reading.
Y_AXIS = ("sawtooth", "eval_sawtooth")
FIRST_STEP = 1_000_000  # seven digits: every line is LINE_BYTES long
LINE_BYTES = len(b"1000000,1.000,\n")
LARGER_THAN = 64 * 1024  # the first read's budget in these tests: anything larger is sampled


def _value(step: int) -> float:
    return 1 + step % 1000 / 1000


def _lines(count: int, first: int = FIRST_STEP) -> list[bytes]:
    """Fixed-width rows whose value is a function of the step: a row can be checked alone."""
    return [b"%d,%.3f,\n" % (step, _value(step)) for step in range(first, first + count)]


def _assert_rows_of_the_file(steps: np.ndarray, values: np.ndarray) -> None:
    """Every row shown is a row of the file (its value belongs to its step)."""
    assert len(steps) == len(values)
    assert np.allclose(values, 1 + (steps % 1000) / 1000)


def _load(model: RunModel, limit: int = 10_000) -> None:
    """The session's reads: the first samples, the next read in slices, until done."""
    for _ in range(limit):
        if not model.refresh(budget_bytes=LARGER_THAN).more and not model.settling:
            return
    raise AssertionError("the load never ended")


def _fresh(directory: Path) -> RunModel:
    model = RunModel(directory, settle_seconds=0.0)
    model.refresh()
    return model


def _assert_same_as_fresh(model: RunModel, directory: Path) -> None:
    """No row lost, none kept from before: what a dashboard started now would show."""
    reference = _fresh(directory)
    assert [chart.name for chart in model.charts] == [c.name for c in reference.charts]
    for chart, other in zip(model.charts, reference.charts, strict=True):
        assert not chart.sampled
        assert np.array_equal(chart.steps(), other.steps())
        for series in range(len(chart.y_axis)):
            assert np.array_equal(chart.values(series), other.values(series), equal_nan=True)
            assert chart.stats(series) == other.stats(series)
    assert model.problems == reference.problems


def _large_run(directory: Path, rows: int = 200_000, name: str = "loss") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_layout(directory, {name: list(Y_AXIS)})
    path = directory / f"{name}.csv"
    path.write_bytes(b"".join(_lines(rows)))
    return path


def _sampled_model(directory: Path) -> tuple[RunModel, ChartData]:
    model = RunModel(directory, settle_seconds=0.0)
    model.refresh(budget_bytes=LARGER_THAN)
    (chart,) = model.charts
    assert chart.sampled
    return model, chart


# -- the file changes between the sample and the full read --------------------------------


def test_rewritten_shorter_then_longer_between_the_sample_and_the_full_read(
    tmp_path: Path,
) -> None:
    path = _large_run(tmp_path)
    model, chart = _sampled_model(tmp_path)
    path.write_bytes(b"".join(_lines(1000, first=5)))  # same inode, shorter
    model.refresh(budget_bytes=LARGER_THAN)
    path.write_bytes(b"".join(_lines(300_000, first=7)))  # same inode, longer than before
    _load(model)
    assert chart is model.charts[0] and chart.rows == 300_000 and chart.steps()[0] == 7
    _assert_same_as_fresh(model, tmp_path)


def test_rewritten_in_place_during_the_sliced_read(tmp_path: Path) -> None:
    """Shorter than what was read, then longer again, between two slices: a new file."""
    path = _large_run(tmp_path)
    model, chart = _sampled_model(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    model.refresh(budget_bytes=LARGER_THAN)
    assert chart.rows > 0 and chart.sampled
    with open(path, "r+b") as csv:
        csv.truncate(100 * LINE_BYTES)
        csv.seek(0)
        csv.write(b"".join(_lines(250_000, first=3)))
    _load(model)
    assert chart.rows == 250_000 and chart.steps()[0] == 3
    _assert_same_as_fresh(model, tmp_path)


def test_truncated_between_the_sample_and_the_first_slice(tmp_path: Path) -> None:
    """The file shrinks to a few rows (its last one cut) after it was sampled: the load
    ends with exactly the rows left, the sample gone."""
    path = _large_run(tmp_path)
    model, chart = _sampled_model(tmp_path)
    _assert_rows_of_the_file(chart.steps(), chart.values(0))
    with open(path, "r+b") as csv:
        csv.truncate(10 * LINE_BYTES + 3)
    _load(model)
    assert chart.rows == 10
    assert [problem.rule for problem in model.problems] == [Rule.PARTIAL_LINE]
    _assert_same_as_fresh(model, tmp_path)


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink loop", "gone"])
def test_replaced_by_a_non_file_during_the_load_then_restored(tmp_path: Path, kind: str) -> None:
    path = _large_run(tmp_path)
    data = path.read_bytes()
    model, chart = _sampled_model(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink loop":
        os.symlink(path.name, path)
    started = time.monotonic()
    model.refresh(budget_bytes=LARGER_THAN)
    assert time.monotonic() - started < 2, "a FIFO must not be waited for"
    assert not chart.sampled and chart.rows == 0  # nothing of the old file is left on screen
    expected = {
        "fifo": Rule.NOT_A_FILE,
        "directory": Rule.NOT_A_FILE,
        "symlink loop": Rule.NOT_A_FILE,
        "gone": Rule.MISSING_CSV,
    }[kind]
    assert [problem.rule for problem in model.problems] == [expected]
    if kind == "directory":
        path.rmdir()
    elif kind != "gone":
        path.unlink()
    path.write_bytes(data)
    _load(model)
    assert chart.rows == 200_000
    _assert_same_as_fresh(model, tmp_path)


# -- what the sampled windows land in ------------------------------------------------------


def _spoiled(rows: int, every: int, spoil: bytes) -> bytes:
    """`rows` good rows with `spoil` (a whole line) after every `every`-th of them."""
    lines = _lines(rows)
    for index in range(every, rows, every):
        lines[index] = spoil + lines[index]
    return b"".join(lines)


@pytest.mark.parametrize(
    "spoil",
    [
        # 1.2-1.9 s of CPU each: one in the quick suite, the others slow.
        pytest.param(b"\0" * 5000 + b"\n", id="NUL line", marks=pytest.mark.slow),
        pytest.param(b"\0" * 40, id="NULs inside a row", marks=pytest.mark.slow),
        pytest.param(b"1000500,1.5", id="cut row"),
        pytest.param(b"\xef\xbb\xbf", id="BOM inside a row", marks=pytest.mark.slow),
        pytest.param(b"x" * 6000 + b"\n", id="line longer than a window", marks=pytest.mark.slow),
    ],
)
def test_sampled_windows_landing_in_broken_lines_show_only_rows_of_the_file(
    tmp_path: Path, spoil: bytes
) -> None:
    write_layout(tmp_path, {"loss": list(Y_AXIS)})
    (tmp_path / "loss.csv").write_bytes(_spoiled(300_000, 997, spoil))
    model, chart = _sampled_model(tmp_path)
    _assert_rows_of_the_file(chart.steps(), chart.values(0))
    assert chart.steps().size > 1000 and chart.stats(0).sampled
    assert np.all(np.diff(chart.steps()) > 0)
    _load(model)
    assert model.problems  # the full read reports what the sample skipped
    _assert_same_as_fresh(model, tmp_path)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_ten_megabyte_line_without_newline(tmp_path: Path, where: str) -> None:
    write_layout(tmp_path, {"loss": list(Y_AXIS)})
    lines = _lines(200_000)
    huge = b"9" * (10 * 1024 * 1024)
    if where == "start":
        data = huge + b"\n" + b"".join(lines)
    elif where == "middle":
        data = b"".join(lines[:100_000]) + huge + b"\n" + b"".join(lines[100_000:])
    else:
        data = b"".join(lines) + huge  # a row never finished
    (tmp_path / "loss.csv").write_bytes(data)
    model, chart = _sampled_model(tmp_path)
    _assert_rows_of_the_file(chart.steps(), chart.values(0))
    _load(model)
    assert chart.rows == 200_000
    rules = {problem.rule for problem in model.problems}
    # An unfinished line already too long is both: skipped, and not finished.
    unfinished = {Rule.PARTIAL_LINE} if where == "end" else set()
    assert rules == {Rule.LINE_TOO_LONG} | unfinished, rules
    _assert_same_as_fresh(model, tmp_path)


def test_a_bom_and_crlf_endings_in_a_sampled_file(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": list(Y_AXIS)})
    data = b"".join(line.replace(b"\n", b"\r\n") for line in _lines(200_000))
    (tmp_path / "loss.csv").write_bytes(b"\xef\xbb\xbf" + data)
    model, chart = _sampled_model(tmp_path)
    _assert_rows_of_the_file(chart.steps(), chart.values(0))
    assert chart.last_step == FIRST_STEP + 199_999
    _load(model)
    _assert_same_as_fresh(model, tmp_path)


def test_a_sparse_hole_of_nul_bytes_where_a_crash_left_one(tmp_path: Path) -> None:
    """A file extended by a crash (a hole of NULs) and written on after it."""
    write_layout(tmp_path, {"loss": list(Y_AXIS)})
    path = tmp_path / "loss.csv"
    with open(path, "wb") as csv:
        csv.write(b"".join(_lines(100_000)))
        csv.seek(8 * 1024 * 1024, os.SEEK_CUR)
        csv.write(b"\n" + b"".join(_lines(100_000, first=FIRST_STEP + 100_000)))
    model, chart = _sampled_model(tmp_path)
    _assert_rows_of_the_file(chart.steps(), chart.values(0))
    _load(model)
    assert chart.rows == 200_000
    _assert_same_as_fresh(model, tmp_path)


# -- metrics.json and the directory during the sampled load --------------------------------


def test_metrics_json_flipping_between_valid_and_invalid_during_the_load(tmp_path: Path) -> None:
    _large_run(tmp_path)
    good = (tmp_path / "metrics.json").read_bytes()
    model, _ = _sampled_model(tmp_path)
    for flip in range(12):
        bad = [b"{", b"", b'{"version": 1, "charts": 5}', b"\0" * 10][flip % 4]
        (tmp_path / "metrics.json").write_bytes(bad)
        model.refresh(budget_bytes=LARGER_THAN)
        assert not model.charts and model.problems
        (tmp_path / "metrics.json").write_bytes(good)
        model.refresh(budget_bytes=LARGER_THAN)
        assert len(model.charts) == 1
    _load(model)
    assert model.charts[0].rows == 200_000
    _assert_same_as_fresh(model, tmp_path)


def _session_rows(session: FollowSession) -> int:
    state = session.state
    return 0 if state is None or state.loading else state.status.rows


def _wait(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["deleted and recreated", "moved away and back"])
def test_the_watched_directory_goes_during_the_load_and_comes_back(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real session and its inotify watcher; the load is slowed to small slices so the
    directory goes while the charts are sampled and half read."""
    monkeypatch.setattr(session_module, "FIRST_LOAD_BUDGET", LARGER_THAN)
    monkeypatch.setattr(session_module, "LOAD_BUDGET", LARGER_THAN)
    run = tmp_path / "run"
    _large_run(run, rows=1_000_000)
    data = (run / "loss.csv").read_bytes()
    layout = (run / "metrics.json").read_bytes()
    session = FollowSession([run], lambda state: None)
    session.start()
    try:
        _wait(lambda: session.state is not None and session.state.reads >= 2)
        assert session.state is not None and session.state.loading
        if how == "deleted and recreated":
            shutil.rmtree(run)
            _wait(lambda: session.state is not None and session.state.charts == ())
            run.mkdir()
            (run / "loss.csv").write_bytes(data[: 1000 * LINE_BYTES])
            (run / "metrics.json").write_bytes(layout)
            expected = 1000
        else:
            away = tmp_path / "away"
            os.rename(run, away)
            _wait(lambda: session.state is not None and session.state.charts == ())
            os.rename(away, run)
            expected = 1_000_000
        _wait(lambda: _session_rows(session) == expected)
        with open(run / "loss.csv", "ab") as csv:
            csv.write(b"".join(_lines(5, first=FIRST_STEP + 1_000_000)))
        _wait(lambda: _session_rows(session) == expected + 5)
        (tracked,) = session.runs
        _assert_same_as_fresh(tracked.model, run)
    finally:
        session.stop()


# -- threads: the sample replaced, smoothing made ahead, while the screen draws -----------


def test_a_drawing_reads_one_set_of_rows_while_the_sample_is_replaced(tmp_path: Path) -> None:
    """The loading thread replaces the sample between two reads of a drawing (steps, then
    values): separate reads paired the sample's steps with the first rows' values, a frame
    of values drawn at steps they do not belong to. `drawn()` is read once per drawing."""
    _large_run(tmp_path)
    model, chart = _sampled_model(tmp_path)
    frame = chart.frame()  # what the reading thread publishes
    torn_steps = chart.steps()  # what a drawing read before the replacement ...
    _load(model)  # ... the loading thread replaces the sample ...
    torn_values = chart.values(0)[: len(torn_steps)]  # ... and what it read after
    assert not np.allclose(torn_values, 1 + (torn_steps % 1000) / 1000)  # the torn pairing
    _assert_rows_of_the_file(frame.steps, frame.values[0])  # a frame: consistent, unchanged
    shown = SeriesViews().shown(frame, 0, 0.0, False)
    assert len(shown.values(frame.values[0])) == len(frame.steps)


def _ema(values: np.ndarray, weight: float) -> np.ndarray:
    from ocms_tui.follow.views import ShownSeries

    return ShownSeries(weight, False).values(values).copy()


@pytest.mark.parametrize("when", ["file truncated and rewritten", "sample replaced by rows"])
def test_smoothing_made_ahead_of_older_rows_is_never_drawn_over_new_ones(
    tmp_path: Path, when: str
) -> None:
    """The worker smooths the rows of the moment; the rows change before it hands over."""
    path = _large_run(tmp_path)
    model, chart = _sampled_model(tmp_path)
    views = SeriesViews()
    if when == "file truncated and rewritten":
        _load(model)
        hand_over = views.prepare(chart.frame(), 0, 0.6)  # the worker, on the old rows
        path.write_bytes(b"".join(_lines(5000, first=11)))
        model.refresh(budget_bytes=LARGER_THAN)
    else:
        model.refresh(budget_bytes=LARGER_THAN)
        hand_over = views.prepare(chart.frame(), 0, 0.6)  # the worker, on the rows so far
        _load(model)
    hand_over()  # on the drawing thread, after the change
    frame = chart.frame()
    drawn = views.shown(frame, 0, 0.6, False).values(frame.values[0])
    assert np.allclose(drawn, _ema(frame.values[0], 0.6))
    _assert_same_as_fresh(model, tmp_path)


# -- extreme values through the sample's "~" bounds and the x axis's head-room -------------

EXTREMES = [b"1e308", b"-1e308", b"1.7976931348623157e308", b"5e-324", b"-5e-324", b"0", b""]
BIG_STEP = MAX_STEP - 200_000  # the largest legal steps: the head-room goes past them


def _extreme_rows(count: int, first: int) -> bytes:
    return b"".join(
        b"%d,%s,%s\n" % (first + row, EXTREMES[row % 7], EXTREMES[(row * 3) % 7])
        for row in range(count)
    )


async def test_extreme_values_through_the_sample_and_the_growing_x_axis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_layout(tmp_path, {"loss": list(Y_AXIS)})
    path = tmp_path / "loss.csv"
    path.write_bytes(_extreme_rows(150_000, BIG_STEP))
    monkeypatch.setattr(FollowSession, "_follow", lambda self: None)  # reads taken here
    monkeypatch.setattr(session_module, "FIRST_LOAD_BUDGET", LARGER_THAN)
    monkeypatch.setattr(session_module, "LOAD_BUDGET", 1 << 20)
    app = OcmsApp(tmp_path, watch=False, directory_label="run")
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.to_thread(app.session.step)
        await wait_for(pilot, lambda: len(app.grid.panels) == 1)
        await pilot.pause()
        assert app.session.runs[0].model.charts[0].sampled
        sampled = "\n".join(screen_lines(app))
        assert "~" in sampled and "Traceback" not in sampled, sampled
        for key in "sl]0sl":  # smoothing, log axis and zoom over the sample
            await pilot.press(key)
        while app.session.state is not None and app.session.state.loading:
            await asyncio.to_thread(app.session.step)
        for round_ in range(3):  # rows past the axis's end: the head-room grows it
            with open(path, "ab") as csv:
                csv.write(_extreme_rows(5000, BIG_STEP + 150_000 + 5000 * round_))
            app.session.read_everything()
            await asyncio.to_thread(app.session.step)
            await pilot.pause()
        await wait_for(pilot, lambda: app.idle)
        await pilot.pause()
        loaded = "\n".join(screen_lines(app))
        assert app.is_running and "Traceback" not in loaded
        assert f"step {BIG_STEP + 164_999:,}" in loaded, loaded
        assert (
            app.session.runs[0].model.charts[0].rows == 165_000
            and not app.session.runs[0].model.charts[0].sampled
        )


# -- quitting while the two parsing threads read a 6 x 1,000,000-row run --------------------

SIX_CHARTS = ("loss", "eval", "lr", "grad", "time", "mem")
QUIT_SECONDS = 3.0  # from the key (or signal) to the process gone, on 2 shared cores


@pytest.fixture(scope="module")
def six_million_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import polars as pl

    directory = tmp_path_factory.mktemp("six_by_1m")
    write_layout(directory, {name: ["a", "b", "c", "d"] for name in SIX_CHARTS})
    generator = np.random.default_rng(3)
    rows = 1_000_000
    for name in SIX_CHARTS:
        frame = pl.DataFrame(
            {"step": np.arange(rows)}
            | {key: generator.random(rows) * 10 for key in ("a", "b", "c", "d")}
        )
        frame.write_csv(directory / f"{name}.csv", include_header=False)
    return directory


@pytest.mark.slow
@pytest.mark.parametrize("how", ["q", "SIGTERM", "SIGINT", "SIGHUP", "q at once"])
def test_quitting_during_a_six_million_row_load_is_prompt_and_clean(
    six_million_rows: Path, how: str
) -> None:
    """The installed command on a pty; the key or signal comes while the charts are still
    read side by side (the status line says loading), or before the first screen."""
    terminal = Terminal([installed_command(), str(six_million_rows)], (160, 48))
    try:
        if how == "q at once":
            terminal.pump(0.3)  # the session reads while Textual is still imported
        else:
            terminal.wait_for("loading", timeout=60)
            assert "6,000,000 rows" not in terminal.text()
        started = time.monotonic()
        if how.startswith("q"):
            terminal.press(b"q")
        else:
            os.kill(terminal.pid, getattr(signal, how))
        code = terminal.exit_code(timeout=15)
        took = time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(terminal.pid, signal.SIGKILL)
            os.waitpid(terminal.pid, 0)
    output = terminal.output.decode(errors="replace")
    assert "Traceback" not in output and "Error" not in terminal.text(), terminal.text()
    expected = 0 if how.startswith("q") else 128 + getattr(signal, how)
    assert code == expected, terminal.text()
    assert took < QUIT_SECONDS, f"{how} took {took:.2f} s"
    print(f"\n{how} during the load: gone after {took:.2f} s")


def test_the_inotify_queue_overflows_while_the_run_is_replaced_mid_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel drops events (IN_Q_OVERFLOW) while a sampled run is half read and its
    files are replaced: the events of the replacement are lost, the overflow must still
    lead to the new files, every row of them and none of the old."""
    from test_watch import flood

    from ocms_tui.follow.session import run_key
    from ocms_tui.follow.watch import InotifyWatcher

    monkeypatch.setattr(session_module, "FIRST_LOAD_BUDGET", LARGER_THAN)
    monkeypatch.setattr(session_module, "LOAD_BUDGET", LARGER_THAN)
    _large_run(tmp_path, rows=1_000_000)
    session = FollowSession([tmp_path], lambda state: None, watch=False)
    watcher = InotifyWatcher(tmp_path, coalesce_seconds=3.0)
    watcher.start()
    try:
        (run,) = session.runs
        session.watchers[run_key(run)] = watcher
        session.step()
        session.step()
        assert session.state is not None and session.state.loading
        flood(tmp_path, 2 * int(Path("/proc/sys/fs/inotify/max_queued_events").read_text()))
        replacement = tmp_path / ".loss.csv.tmp"
        replacement.write_bytes(b"".join(_lines(3000, first=17)))
        os.replace(replacement, tmp_path / "loss.csv")  # its events dropped: the queue is full
        assert watcher.dirty.wait(10)
        deadline = time.monotonic() + 30
        while session.state is not None and session.state.loading:
            assert time.monotonic() < deadline
            session.step()
        _assert_same_as_fresh(run.model, tmp_path)
        assert run.model.charts[0].rows == 3000
    finally:
        session.stop()
        watcher.stop()


@pytest.mark.slow  # keys hammered through a 1M-row sampled load: 7.5 s of CPU
async def test_reload_and_smoothing_keys_hammered_during_the_sampled_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r (reload: every chart sampled again), s and → (smoothing made ahead on a worker)
    pressed over and over while the real follow thread reads two charts side by side."""
    monkeypatch.setattr(session_module, "FIRST_LOAD_BUDGET", LARGER_THAN)
    monkeypatch.setattr(session_module, "LOAD_BUDGET", 1 << 20)
    write_layout(tmp_path, {"loss": list(Y_AXIS), "eval": list(Y_AXIS)})
    for name in ("loss", "eval"):
        (tmp_path / f"{name}.csv").write_bytes(b"".join(_lines(600_000)))
    app = OcmsApp(tmp_path, watch=False, directory_label="run")
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        for key in "rs" * 4 + "r" + "s" * 3 + "r":
            await pilot.press(key)
            await pilot.press("right")
            await pilot.pause(0.05)
        await wait_for(pilot, lambda: app.idle and not app.session.state.loading, timeout=60)
        await pilot.pause(0.5)
        lines = "\n".join(screen_lines(app))
        assert "1,200,000 rows" in lines and "Traceback" not in lines, lines
        for panel in app.grid.panels:
            chart, smoothing = panel.chart, panel.view.smoothing
            assert not chart.sampled and chart.rows == 600_000
            _assert_rows_of_the_file(chart.steps, chart.values[0])
            if smoothing:  # a smoothing made ahead of other rows would differ from this
                drawn = app.shared.series.shown(chart, 0, smoothing, False)
                assert np.allclose(drawn.values(chart.values[0]), _ema(chart.values[0], smoothing))


@pytest.mark.slow
def test_sigterm_as_soon_as_the_terminal_is_set_up_leaves_it_as_it_was(
    six_million_rows: Path,
) -> None:
    """SIGTERM the moment the alternate screen is switched on, before the app is mounted
    (a 6x1M start: the session reads meanwhile): the app must still exit the way q does.
    It was killed outright, leaving the terminal in the alternate screen with mouse
    reporting on."""
    for _ in range(5):
        terminal = Terminal([installed_command(), str(six_million_rows)], (160, 48))
        try:
            deadline = time.monotonic() + 30
            while b"\x1b[?1049h" not in terminal.output:
                assert time.monotonic() < deadline, "the alternate screen never came"
                terminal.pump(0.005)
            os.kill(terminal.pid, signal.SIGTERM)
            code = terminal.exit_code(timeout=15)
        finally:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(terminal.pid, signal.SIGKILL)
                os.waitpid(terminal.pid, 0)
        assert code == 128 + signal.SIGTERM
        assert not terminal.private_mode_set(1049) and not terminal.private_mode_set(1000)
        assert b"Traceback" not in terminal.output
