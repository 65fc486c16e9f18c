"""Frames: what crosses from the reading thread to the UI is a value that never changes."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest
from app_support import append_rows, write_layout

from ocms_tui.draw.downsample import ema
from ocms_tui.follow.chart_data import ChartData
from ocms_tui.follow.frames import ChartFrame, overlay_frames, read_only
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.runset import RunSet, run_frame
from ocms_tui.follow.views import SeriesViews


def loss_run(directory: Path, rows: int = 10, y_axis: tuple[str, ...] = ("loss",)) -> RunModel:
    directory.mkdir(parents=True, exist_ok=True)
    write_layout(directory, {"loss": list(y_axis)})
    empty = "," * (len(y_axis) - 1)
    append_rows(
        directory / "loss.csv", [f"{step},{1.0 / (step + 1)}{empty}" for step in range(rows)]
    )
    model = RunModel(directory, settle_seconds=0.0)
    model.refresh()
    return model


def loss_chart(model: RunModel) -> ChartData:
    return next(chart for chart in model.charts if chart.name == "loss")


def copies(frame: ChartFrame) -> tuple[np.ndarray, ...]:
    return (frame.steps.copy(), *(values.copy() for values in frame.values))


def assert_unchanged(frame: ChartFrame, before: tuple[np.ndarray, ...], rows: int) -> None:
    assert frame.rows == rows and len(frame.steps) == rows
    for now, then in zip((frame.steps, *frame.values), before, strict=True):
        assert np.array_equal(now, then, equal_nan=True)
        # Bit for bit: -0.0 stays -0.0, a NaN stays the NaN it was.
        assert now.tobytes() == then.tobytes()


def test_writing_into_a_frame_raises(tmp_path: Path) -> None:
    frame = loss_chart(loss_run(tmp_path)).frame()
    with pytest.raises(ValueError, match="read-only"):
        frame.steps[0] = 99
    with pytest.raises(ValueError, match="read-only"):
        frame.values[0][-1] = 99.0
    with pytest.raises(AttributeError):
        frame.rows = 0  # type: ignore[misc]


def test_read_only_leaves_the_array_it_views_writable() -> None:
    array = np.arange(4.0)
    view = read_only(array)
    array[0] = -1.0
    assert view[0] == -1.0 and array.flags.writeable and not view.flags.writeable


def test_rows_read_after_publishing_never_show_through(tmp_path: Path) -> None:
    model = loss_run(tmp_path, rows=10)
    chart = loss_chart(model)
    published = chart.frame()
    before = copies(published)
    # Enough rows to grow the buffers (a copy) and some that fit (written behind the view).
    for batch in (3, 5000, 1):
        append_rows(tmp_path / "loss.csv", [f"{10 + i},{-0.0}" for i in range(batch)])
        model.refresh()
        assert_unchanged(published, before, 10)
    latest = chart.frame()
    assert latest.rows == 10 + 3 + 5000 + 1 and latest.version != published.version
    assert latest.generation == published.generation  # appended to: the same rows, longer
    assert np.array_equal(latest.steps[:10], published.steps)


def test_a_frame_read_on_another_thread_while_rows_arrive_stays_the_same(tmp_path: Path) -> None:
    model = loss_run(tmp_path, rows=100)
    chart = loss_chart(model)
    published = chart.frame()
    before = copies(published)
    torn: list[str] = []
    stop = threading.Event()

    def draw() -> None:
        while not stop.is_set():
            if published.steps.tobytes() != before[0].tobytes() or len(published.values[0]) != 100:
                torn.append("changed under the drawing")

    drawing = threading.Thread(target=draw)
    drawing.start()
    try:
        for start in range(100, 20_000, 997):
            append_rows(tmp_path / "loss.csv", [f"{s},{s}" for s in range(start, start + 997)])
            model.refresh()
    finally:
        stop.set()
        drawing.join()
    assert not torn
    assert_unchanged(published, before, 100)


def test_the_version_moves_if_and_only_if_the_content_does(tmp_path: Path) -> None:
    model = loss_run(tmp_path, rows=10)
    chart = loss_chart(model)
    first = chart.frame()
    model.refresh()  # nothing new on disk
    assert chart.frame() is first  # the same value: nothing to draw again
    append_rows(tmp_path / "loss.csv", ["10,0.5"])
    model.refresh()
    second = chart.frame()
    assert second.version != first.version and second.rows == 11
    assert chart.frame() is second
    # A file rewritten from scratch: new rows, a new generation (no view cache reused).
    (tmp_path / "loss.csv").write_text("0,7.0\n1,8.0\n")
    model.refresh()
    reset = chart.frame()
    assert reset.generation != second.generation and reset.version != second.version
    assert reset.rows == 2 and reset.stats[0].latest == 8.0
    # Versions never repeat across charts: a view cache keyed by one cannot mix them up.
    other = loss_chart(loss_run(tmp_path / "other", rows=2)).frame()
    assert len({first.version, second.version, reset.version, other.version}) == 4


def test_hostile_values_reach_the_frame_bit_for_bit(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    written = ["nan", "inf", "-inf", "1e308", "-1e308", "-0.0", "0.0", "5e-324", ""]
    append_rows(tmp_path / "loss.csv", [f"{step},{value}" for step, value in enumerate(written)])
    model = RunModel(tmp_path, settle_seconds=0.0)
    model.refresh()
    frame = loss_chart(model).frame()
    values = frame.values[0]
    assert frame.rows == len(written) == len(values)
    assert math.isnan(values[0]) and values[1] == math.inf and values[2] == -math.inf
    assert values[3] == 1e308 and values[4] == -1e308
    assert values[5] == 0.0 and math.copysign(1.0, values[5]) == -1.0  # the sign is kept
    assert values[7] == 5e-324 and math.isnan(values[8])  # an empty cell is a gap
    stats = frame.stats[0]
    assert (stats.minimum, stats.maximum) == (-1e308, 1e308)  # inf is a value, not a bound
    assert stats.latest == 5e-324 and stats.latest_step == 7
    # Every value the checks flag is marked: nan and inf above the curve, -inf below.
    assert frame.series_marks(0) == (
        (0, "non-finite", False),
        (1, "non-finite", False),
        (2, "non-finite", True),
    )
    assert frame.span() == (0.0, 8.0)


def test_an_empty_chart_is_a_frame_with_no_rows(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss", "eval"]})
    (tmp_path / "loss.csv").write_text("")
    model = RunModel(tmp_path, settle_seconds=0.0)
    model.refresh()
    frame = loss_chart(model).frame()
    assert frame.rows == 0 and frame.steps.shape == (0,) and frame.last_step is None
    assert [values.shape for values in frame.values] == [(0,), (0,)]
    assert [stats.count for stats in frame.stats] == [0, 0]
    assert frame.span() is None
    assert frame.series_marks(0) == () and frame.series_marks(5) == ()
    # Drawing it costs nothing and draws nothing.
    shown = SeriesViews().shown(frame, 1, 0.9, True)
    assert shown.values(frame.values[1]).shape == (0,)


def test_a_chart_whose_y_axis_grows_is_a_new_chart_and_the_old_frame_stays(tmp_path: Path) -> None:
    model = loss_run(tmp_path, rows=5)
    old_chart = loss_chart(model)
    old = old_chart.frame()
    runs = RunSet([tmp_path])
    runs.runs[0].model.refresh()
    structure = overlay_frames([run_frame(runs.runs[0])])[0].structure
    # The recorder widens the chart: metrics.json names a second series, rows carry it.
    write_layout(tmp_path, {"loss": ["loss", "eval"]})
    append_rows(tmp_path / "loss.csv", ["5,0.1,0.2", "6,0.1,0.3"])
    model.refresh()
    runs.runs[0].model.refresh()
    new = loss_chart(model).frame()
    assert new.y_axis == ("loss", "eval") and len(new.values) == len(new.stats) == 2
    assert new.chart_id != old.chart_id  # a new panel: its lines name other series
    assert new.values[1][-1] == 0.3 and new.last_step == 6
    assert old.y_axis == ("loss",) and len(old.values) == 1 and old.rows == 5
    assert overlay_frames([run_frame(runs.runs[0])])[0].structure != structure


def test_overlays_keep_their_structure_while_rows_arrive(tmp_path: Path) -> None:
    for name in ("a", "b"):
        loss_run(tmp_path / name, rows=3)
    runs = RunSet([tmp_path / "a", tmp_path / "b"])
    for run in runs.runs:
        run.model.refresh()
    before = overlay_frames([run_frame(run) for run in runs.runs])
    append_rows(tmp_path / "a" / "loss.csv", ["3,0.1"])
    runs.runs[0].model.refresh()
    after = overlay_frames([run_frame(run) for run in runs.runs])
    assert [o.structure for o in after] == [o.structure for o in before]
    a = str((tmp_path / "a").absolute())
    assert after[0].source(a).chart.rows == 4 and before[0].source(a).chart.rows == 3
    # Run b did not change: its frame is the very same value.
    assert after[0].sources[1].chart is before[0].sources[1].chart


def test_view_caches_follow_the_frames_generation(tmp_path: Path) -> None:
    model = loss_run(tmp_path, rows=300)
    chart = loss_chart(model)
    views = SeriesViews()
    first = chart.frame()
    smoothed = views.shown(first, 0, 0.9, False)
    assert np.allclose(smoothed.values(first.values[0]), ema(first.values[0], 0.9))
    append_rows(tmp_path / "loss.csv", [f"{s},{s}" for s in range(300, 400)])
    model.refresh()
    longer = chart.frame()
    assert views.shown(longer, 0, 0.9, False) is smoothed  # extended, not made again
    assert np.allclose(smoothed.values(longer.values[0]), ema(longer.values[0], 0.9))
    (tmp_path / "loss.csv").write_text("".join(f"{s},{-s}\n" for s in range(50)))
    model.refresh()
    reset = chart.frame()
    fresh = views.shown(reset, 0, 0.9, False)
    assert fresh is not smoothed
    assert np.allclose(fresh.values(reset.values[0]), ema(reset.values[0], 0.9))
    views.keep([reset.generation])
    assert views.shown(longer, 0, 0.9, False) is not smoothed  # forgotten with its rows
