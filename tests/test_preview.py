"""A large CSV's first screen: a sample of its whole file, replaced when every row is read.

Real files throughout; every hostile case checks two promises: the sample holds only rows
that are in the file (whole lines, never a cut one), and the full read still reports every
problem at its line.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import threading
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from app_support import screen_lines, wait_for, write_layout
from format_support import format_problems

from ocms_tui.follow import model as model_module
from ocms_tui.follow import session as session_module
from ocms_tui.follow.chart_file import FileState
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.preview_sample import PREVIEW_BLOCK_BYTES, PREVIEW_BLOCKS
from ocms_tui.follow.reader import CsvFollower
from ocms_tui.follow.session import FollowSession
from ocms_tui.follow.views import SeriesViews
from ocms_tui.format.problems import Rule
from ocms_tui.ui.app import OcmsApp

Y_AXIS = ("loss", "eval_loss")
FIRST_STEP = 1_000_000  # seven digits: every line is LINE_BYTES long
LINE_BYTES = len(b"1000000,1.000,\n")
LARGER_THAN = 64 * 1024


def _value(step: int) -> float:
    return 1 + step % 1000 / 1000


def _lines(count: int, ending: bytes = b"\n") -> list[bytes]:
    """Fixed-width rows whose value is a function of the step: a row can be checked alone."""
    return [
        b"%d,%.3f,%s" % (step, _value(step), ending)
        for step in range(FIRST_STEP, FIRST_STEP + count)
    ]


def _follower(directory: Path) -> CsvFollower:
    return CsvFollower(directory, "loss.csv", Y_AXIS, settle_seconds=0.0)


def _assert_rows_of_the_file(steps: np.ndarray, values: np.ndarray) -> None:
    assert len(steps) and np.all(np.diff(steps) > 0)
    expected = 1 + (steps % 1000) / 1000
    assert np.allclose(values, expected)


def _full_read(follower: CsvFollower) -> None:
    while follower.poll(budget_bytes=LARGER_THAN).more:
        pass


def test_the_sample_spans_the_file_and_ends_with_its_last_row(tmp_path: Path) -> None:
    rows = 300_000
    (tmp_path / "loss.csv").write_bytes(b"".join(_lines(rows)))
    follower = _follower(tmp_path)
    preview = follower.preview(LARGER_THAN)
    assert preview is not None
    steps, values = preview.rows.steps, preview.rows.columns[0]
    _assert_rows_of_the_file(steps, values)
    assert steps[0] == FIRST_STEP and steps[-1] == FIRST_STEP + rows - 1
    # Every window contributed: the sample is spread over the whole range, not a prefix.
    windows = np.unique((steps - FIRST_STEP) * PREVIEW_BLOCKS // rows)
    assert len(windows) >= PREVIEW_BLOCKS * 0.9
    assert preview.rows.rows <= PREVIEW_BLOCKS * PREVIEW_BLOCK_BYTES // LINE_BYTES
    # The follower itself has read nothing: the full read starts at the first row.
    assert follower.offset == 0 and follower.lines_read == 0


def test_no_sample_for_a_file_read_in_one_go(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_bytes(b"".join(_lines(1000)))
    assert _follower(tmp_path).preview(LARGER_THAN) is None


def test_crlf_rows_sample_like_lf_rows(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_bytes(b"".join(_lines(300_000, b"\r\n")))
    preview = _follower(tmp_path).preview(LARGER_THAN)
    assert preview is not None
    _assert_rows_of_the_file(preview.rows.steps, preview.rows.columns[0])
    assert preview.rows.steps[-1] == FIRST_STEP + 300_000 - 1


def test_bad_rows_inside_and_outside_the_sample_are_reported_by_the_full_read(
    tmp_path: Path,
) -> None:
    rows = 300_000
    lines = _lines(rows)
    stride = (rows * LINE_BYTES - PREVIEW_BLOCK_BYTES) // (PREVIEW_BLOCKS - 1)
    sampled = 10  # line 11: inside the first window
    between = (PREVIEW_BLOCK_BYTES + stride) // 2 // LINE_BYTES  # between windows 0 and 1
    lone_cr = rows - 3  # inside the last window
    lines[sampled] = b"1000010,oops,\n"
    lines[between] = b"1000020,1.0\n"  # a field short
    lines[lone_cr] = lines[lone_cr].replace(b",", b"\r", 1)
    (tmp_path / "loss.csv").write_bytes(b"".join(lines))
    follower = _follower(tmp_path)
    preview = follower.preview(LARGER_THAN)
    assert preview is not None
    # The broken rows are not in the sample, the others of their windows are.
    steps = preview.rows.steps
    assert FIRST_STEP + sampled + 1 in steps and FIRST_STEP + rows - 1 in steps
    assert FIRST_STEP + lone_cr not in steps
    assert follower.problems == []  # a sample reports nothing: its line numbers are unknown
    _full_read(follower)
    found = {(problem.rule, problem.line) for problem in follower.problems}
    assert {
        (Rule.BAD_VALUE, sampled + 1),
        (Rule.ROW_WIDTH, between + 1),
        (Rule.LONE_CR, lone_cr + 1),
    } <= found


def test_lines_longer_than_a_window_add_nothing_to_the_sample(tmp_path: Path) -> None:
    rows = 300_000
    lines = _lines(rows)
    middle = rows // 2
    lines[middle] = b"9" * (3 * PREVIEW_BLOCK_BYTES) + b"\n"  # spans whole windows
    lines.insert(0, b"x" * (2 * PREVIEW_BLOCK_BYTES) + b"\n")  # the first window has no end
    (tmp_path / "loss.csv").write_bytes(b"".join(lines))
    follower = _follower(tmp_path)
    preview = follower.preview(LARGER_THAN)
    assert preview is not None
    _assert_rows_of_the_file(preview.rows.steps, preview.rows.columns[0])
    _full_read(follower)
    found = {(problem.rule, problem.line) for problem in follower.problems}
    assert (Rule.ROW_WIDTH, 1) in found or (Rule.HEADER_ROW, 1) in found
    assert (Rule.ROW_WIDTH, middle + 2) in found


def test_a_fifo_named_like_a_csv_is_not_sampled_and_not_waited_for(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "loss.csv")
    follower = _follower(tmp_path)
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(follower.preview(0)))
    worker.start()
    worker.join(timeout=5)
    assert outcome == [None]
    follower.poll()
    assert follower.state is FileState.NOT_A_FILE


def test_symlinks_are_sampled_only_inside_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside.csv"
    outside.write_bytes(b"".join(_lines(300_000)))
    run = tmp_path / "run"
    run.mkdir()
    (run / "loss.csv").symlink_to(outside)
    assert _follower(run).preview(LARGER_THAN) is None
    (run / "inside.csv").write_bytes(outside.read_bytes())
    (run / "loss.csv").unlink()
    (run / "loss.csv").symlink_to(run / "inside.csv")
    assert _follower(run).preview(LARGER_THAN) is not None


# -- the model: the sample on screen while every row is read ------------------------------


def _large_run(directory: Path, rows: int = 300_000) -> bytes:
    write_layout(directory, {"loss": list(Y_AXIS)})
    data = b"".join(_lines(rows))
    (directory / "loss.csv").write_bytes(data)
    return data


def test_the_model_shows_the_sample_until_every_row_is_read(tmp_path: Path) -> None:
    size = len(_large_run(tmp_path))
    model = RunModel(tmp_path)
    change = model.refresh(budget_bytes=LARGER_THAN)
    (chart,) = model.charts
    assert change.more and chart.sampled and model.loading
    assert chart.last_step == FIRST_STEP + 300_000 - 1  # the latest row, exact
    assert chart.stats(0).sampled and chart.stats(0).latest == _value(chart.last_step)
    assert chart.steps()[0] == FIRST_STEP
    # The first read only samples: the first screen waits for nothing else, and says
    # nothing false about the file meanwhile (not "missing", not "no rows yet").
    assert model.loaded_bytes == (0, size) and chart.rows == 0
    assert model.problems == () and model.last_write is not None
    version = chart.version
    assert model.refresh(budget_bytes=LARGER_THAN).more
    assert 0 < model.loaded_bytes[0] < size and chart.rows > 0
    while model.refresh(budget_bytes=LARGER_THAN).more:
        assert chart.version == version and chart.sampled  # nothing to draw meanwhile
    assert not chart.sampled and chart.version == version + 1 and model.loaded_bytes == (0, 0)
    # The default view's M4 pyramids were built as the rows came, not left to the first draw.
    # They go to the view side with the first frame of the rows they cover.
    frame = chart.frame()
    assert len(frame.pyramids) == len(Y_AXIS)
    for series in range(len(Y_AXIS)):
        pyramid = SeriesViews().shown(frame, series, 0.0, False).pyramid
        assert pyramid is frame.pyramids[series]
        assert pyramid.length == chart.rows // pyramid.block * pyramid.block > 0
    whole = RunModel(tmp_path)
    whole.refresh()
    (reference,) = whole.charts
    assert np.array_equal(chart.steps(), reference.steps())
    assert np.array_equal(chart.values(0), reference.values(0))
    assert chart.stats(0) == reference.stats(0) and not chart.stats(0).sampled


def test_charts_read_side_by_side_equal_a_read_in_one_go(tmp_path: Path) -> None:
    names = ("a", "b", "c")
    write_layout(tmp_path, {name: list(Y_AXIS) for name in names})
    for index, name in enumerate(names):
        lines = _lines(150_000)
        lines[1000 * (index + 1)] = b"oops\n"  # a bad row at a line of its own per chart
        (tmp_path / f"{name}.csv").write_bytes(b"".join(lines))
    model = RunModel(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    assert all(chart.sampled for chart in model.charts)
    while model.refresh(budget_bytes=LARGER_THAN).more:
        pass
    assert model_module._chart_readers is not None  # the side-by-side path was taken
    whole = RunModel(tmp_path)
    whole.refresh()
    for chart, reference in zip(model.charts, whole.charts, strict=True):
        assert not chart.sampled and chart.rows == reference.rows == 149_999
        assert np.array_equal(chart.steps(), reference.steps())
        assert np.array_equal(chart.values(0), reference.values(0))
    assert model.problems == whole.problems
    lines = sorted((problem.path, problem.line) for problem in format_problems(model.problems))
    assert lines == [("a.csv", 1001), ("b.csv", 2001), ("c.csv", 3001)]


def test_rows_appended_between_the_sample_and_the_full_read_are_all_shown(
    tmp_path: Path,
) -> None:
    data = _large_run(tmp_path)
    model = RunModel(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    more = b"".join(_lines(300_010)[300_000:])
    with open(tmp_path / "loss.csv", "ab") as csv:
        csv.write(more)
    while model.refresh(budget_bytes=LARGER_THAN).more:
        pass
    (chart,) = model.charts
    assert not chart.sampled and chart.rows == 300_010
    assert chart.last_step == FIRST_STEP + 300_009
    assert len(data) + len(more) == os.path.getsize(tmp_path / "loss.csv")


def test_a_file_truncated_during_the_load_drops_the_sample(tmp_path: Path) -> None:
    _large_run(tmp_path)
    model = RunModel(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    model.refresh(budget_bytes=LARGER_THAN)
    with open(tmp_path / "loss.csv", "r+b") as csv:
        csv.truncate(0)
        csv.write(b"5,0.5,\n6,0.25,\n")
    model.refresh(budget_bytes=LARGER_THAN)
    (chart,) = model.charts
    assert not chart.sampled
    assert chart.steps().tolist() == [5, 6] and chart.last_step == 6


def test_a_file_replaced_during_the_load_drops_the_sample(tmp_path: Path) -> None:
    _large_run(tmp_path)
    model = RunModel(tmp_path)
    model.refresh(budget_bytes=LARGER_THAN)
    replacement = tmp_path / "new.csv"
    replacement.write_bytes(b"1,0.5,\n2,0.25,\n")
    os.replace(replacement, tmp_path / "loss.csv")
    model.refresh(budget_bytes=LARGER_THAN)
    (chart,) = model.charts
    assert not chart.sampled and chart.steps().tolist() == [1, 2]


# -- on screen -----------------------------------------------------------------------------

SCREEN = (120, 40)
CLOCK_NOW = 2_000_000_000.0


def _dashboard_run(directory: Path) -> int:
    """Two noisy charts of 100,000 rows (about 3 MB each: more than the first read)."""
    write_layout(directory, {"loss": ["loss", "eval_loss"], "lr": ["lr"]})
    rows = 100_000
    generator = np.random.default_rng(7)
    steps = np.arange(rows)
    for name, series in (("loss", 2), ("lr", 1)):
        columns = [np.exp(-steps / 30_000) * (1 + 0.3 * generator.random(rows))] * series
        text = "".join(
            ",".join([str(step), *(repr(float(column[step])) for column in columns)]) + "\n"
            for step in range(rows)
        )
        (directory / f"{name}.csv").write_text(text)
    return rows


def _app(directory: Path) -> OcmsApp:
    app = OcmsApp(directory, watch=False, directory_label="run", clock=lambda: CLOCK_NOW)
    app.animation_level = "none"
    return app


async def test_a_large_run_first_shows_its_whole_range_and_says_it_is_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _dashboard_run(tmp_path)
    os.utime(tmp_path / "loss.csv", (CLOCK_NOW - 600, CLOCK_NOW - 600))
    os.utime(tmp_path / "lr.csv", (CLOCK_NOW - 600, CLOCK_NOW - 600))
    # The follow thread does nothing: this test takes each read itself.
    monkeypatch.setattr(FollowSession, "_follow", lambda self: None)
    monkeypatch.setattr(session_module, "LOAD_BUDGET", 1 << 20)
    app = _app(tmp_path)
    async with app.run_test(size=SCREEN) as pilot:
        await asyncio.to_thread(app.session.step)
        await wait_for(pilot, lambda: len(app.grid.panels) == 2)
        await pilot.pause()
        first = "\n".join(screen_lines(app))
        assert all(chart.sampled for chart in app.session.runs[0].model.charts)
        # The latest step in both legends, and that their rows are not all read.
        assert first.count(f"step {rows - 1:,} · loading …") == 2, first
        assert re.search(r"◌ loading \d+%", first), first
        assert "~" in first  # the sampled bounds say they are not final
        assert "80k" in first  # the x axis spans the whole run, not its first megabyte
        while app.session.state is not None and app.session.state.loading:
            await asyncio.to_thread(app.session.step)
        await wait_for(pilot, lambda: app.idle)
        await pilot.pause()
        loaded = screen_lines(app)
    assert not any(chart.sampled for chart in app.session.runs[0].model.charts)
    assert "loading" not in loaded[0] and f"{2 * rows:,} rows" in loaded[0]
    assert "~" not in "\n".join(loaded)

    # The same run read in one go, without a sample: the very same screen.
    monkeypatch.setattr(session_module, "FIRST_LOAD_BUDGET", 1 << 30)
    whole = _app(tmp_path)
    async with whole.run_test(size=SCREEN) as pilot:
        await asyncio.to_thread(whole.session.step)
        await wait_for(pilot, lambda: whole.idle and len(whole.grid.panels) == 2)
        await pilot.pause()
        assert not any(chart.sampled for chart in whole.session.runs[0].model.charts)
        assert screen_lines(whole) == loaded


async def test_a_session_started_before_the_app_hands_its_states_over(tmp_path: Path) -> None:
    """As `ocms-tui DIR` starts: the runs are read while Textual is imported; the first
    read waits on screen before the rest of a large run is read."""
    rows = _dashboard_run(tmp_path)
    first_state = threading.Event()
    session = FollowSession(
        [tmp_path],
        lambda state: first_state.set(),
        watch=False,
        directory_label="run",
        wait_for_first_screen=True,
    )
    session.start()
    try:
        assert await asyncio.to_thread(first_state.wait, 10), "nothing was read"
        before_app = session.state
        assert before_app is not None and before_app.loading
        assert all(chart.sources[0].chart.sampled for chart in before_app.charts)
        app = OcmsApp(tmp_path, session=session)
        app.animation_level = "none"
        async with app.run_test(size=SCREEN) as pilot:
            await wait_for(pilot, lambda: app.idle and len(app.grid.panels) == 2)
            await pilot.pause()
            lines = screen_lines(app)
            assert f"{2 * rows:,} rows" in lines[0] and "loading" not in lines[0]
            assert "\n".join(lines).count(f"step {rows - 1:,} · {rows:,} rows") == 2
    finally:
        session.stop()


def _page_cache() -> ModuleType:
    """bench/page_cache.py, loaded by its path (the benchmarks are not a package)."""
    path = Path(__file__).resolve().parent.parent / "bench" / "page_cache.py"
    spec = importlib.util.spec_from_file_location("bench_page_cache", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    preview = _follower(directory).preview(LARGER_THAN)
    assert preview is not None
    return preview.rows.steps, preview.rows.columns[0]


def test_the_sample_of_a_file_out_of_the_page_cache_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's windows are asked of the kernel at once (one batch of disk reads for a
    run written long ago): the same rows from a file evicted from the page cache, on a
    system without posix_fadvise (macOS), and when the advice fails."""
    path = tmp_path / "loss.csv"
    path.write_bytes(b"".join(_lines(200_000)))
    warm = _sample(tmp_path)
    _page_cache().evict(path)
    samples = [_sample(tmp_path)]

    def refused(*_: object) -> None:
        raise OSError(29, "Illegal seek")

    monkeypatch.setattr(os, "posix_fadvise", refused)
    samples.append(_sample(tmp_path))
    monkeypatch.delattr(os, "posix_fadvise")
    samples.append(_sample(tmp_path))
    for steps, values in samples:
        assert np.array_equal(steps, warm[0]) and np.array_equal(values, warm[1])
    _assert_rows_of_the_file(*warm)
