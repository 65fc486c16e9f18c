"""FollowSession without Textual, without its thread and without sleeps: `step()` is called
by hand and the clock is moved by hand, so timing and pause are exact. The last test runs
the real thread on real inotify events, to count its wake-ups."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from app_support import append_rows, write_layout

from ocms_tui.follow.runs import RunStatus
from ocms_tui.follow.runset import RESCAN_SECONDS
from ocms_tui.follow.session import (
    FIRST_LOAD_BUDGET,
    FOLLOW_SECONDS,
    FollowSession,
    SessionState,
)
from ocms_tui.format.ranking import SortKey


class HandClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def start_run(directory: Path, rows: int = 5) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_layout(directory, {"loss": ["loss"], "lr": ["lr"]})
    append_rows(directory / "loss.csv", [f"{step},{1 / (step + 1)!r}" for step in range(rows)])
    append_rows(directory / "lr.csv", [f"{step},0.001" for step in range(rows)])


def open_session(
    paths: list[Path], clock: HandClock, **options: object
) -> tuple[FollowSession, list[SessionState]]:
    states: list[SessionState] = []
    session = FollowSession(
        paths,
        states.append,
        monotonic=clock,
        clock=lambda: clock.now,
        **{"watch": False, **options},  # type: ignore[arg-type]
    )
    return session, states


def rows_of(state: SessionState) -> dict[str, int]:
    return {chart.name: chart.sources[0].chart.rows for chart in state.charts}


def test_each_step_publishes_one_state_with_what_changed(tmp_path: Path) -> None:
    start_run(tmp_path)
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    assert states == []
    session.step()
    (first,) = states
    assert rows_of(first) == {"loss": 5, "lr": 5}
    assert first.changed == {"loss", "lr"} and first.idle and first.reads == 1
    assert first.status.state is RunStatus.LIVE and first.status.rows == 10
    append_rows(tmp_path / "loss.csv", ["5,0.1"])
    session.step()
    assert rows_of(states[-1]) == {"loss": 6, "lr": 5}
    assert states[-1].changed == {"loss"}  # lr's panel need not be drawn again
    session.step()
    assert states[-1].changed == frozenset()
    assert [state.serial for state in states] == [1, 2, 3]


def test_a_stream_of_writes_is_read_at_most_every_follow_interval(tmp_path: Path) -> None:
    start_run(tmp_path)
    clock = HandClock()
    session, _ = open_session([tmp_path], clock)
    # Nothing else to do: wait out the interval from this read on.
    assert session.step() == pytest.approx(FOLLOW_SECONDS)
    clock.now += FOLLOW_SECONDS / 4
    assert session.step() == pytest.approx(FOLLOW_SECONDS)
    # Below a second, with room to draw: the promise of a new row on screen within 1 s.
    assert FOLLOW_SECONDS <= 0.5


def test_a_large_run_loads_in_slices_without_waiting(tmp_path: Path) -> None:
    rows = 120_000  # about 2.5 MiB: more than the first read's budget
    start_run(tmp_path, rows=rows)
    assert (tmp_path / "loss.csv").stat().st_size > 2 * FIRST_LOAD_BUDGET
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    assert session.step() == 0.0  # more to read: at once
    # The first state shows a sample of the whole file (its last step) and reads no row.
    first = states[-1]
    assert first.status.state is RunStatus.LOADING and not first.idle
    assert first.status.loaded == 0.0 and rows_of(first)["loss"] == 0
    loss = next(chart for chart in first.charts if chart.name == "loss").sources[0].chart
    assert loss.sampled and loss.last_step == rows - 1
    # Then slices of LOAD_BUDGET (model-level steps: test_preview.py).
    while session.step() == 0.0:
        pass
    last = next(chart for chart in states[-1].charts if chart.name == "loss").sources[0].chart
    assert rows_of(states[-1]) == {"loss": rows, "lr": rows} and not last.sampled
    # The first frame is a value: it still shows the sample it was made of.
    assert loss.sampled and loss.rows == 0 and last.generation != loss.generation
    assert states[-1].status.state is RunStatus.LIVE and states[-1].idle
    assert states[-1].status.loaded is None


def test_pause_reads_nothing_and_resuming_redraws_everything(tmp_path: Path) -> None:
    start_run(tmp_path)
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    session.step()
    session.set_paused(True)
    assert states[-1].status.state is RunStatus.PAUSED and states[-1].changed == frozenset()
    append_rows(tmp_path / "loss.csv", ["5,0.1", "6,0.2"])
    published = len(states)
    assert session.step() == 0.0
    assert len(states) == published  # paused: no read, no state
    assert session.runs[0].model.total_rows == 10
    session.set_paused(False)
    assert states[-1].status.state is RunStatus.LIVE
    assert states[-1].changed == {"loss", "lr"}  # the screen catches up on every chart
    session.step()
    assert rows_of(states[-1])["loss"] == 7 and states[-1].changed == {"loss"}


def test_parents_are_searched_again_every_rescan_interval(tmp_path: Path) -> None:
    start_run(tmp_path / "run_a")
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    session.step()
    assert [run.directory.name for run in states[-1].runs] == ["run_a"]
    start_run(tmp_path / "run_b")
    clock.now += RESCAN_SECONDS - 0.01
    session.step()
    assert len(states[-1].runs) == 1
    clock.now += 0.01
    session.step()
    assert [run.directory.name for run in states[-1].runs] == ["run_a", "run_b"]
    assert states[-1].overlaid and states[-1].status.directory.endswith("2/2 runs")


def test_hiding_a_run_drops_its_charts_from_the_state(tmp_path: Path) -> None:
    start_run(tmp_path / "run_a")
    start_run(tmp_path / "run_b")
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    session.step()
    assert [len(chart.sources) for chart in states[-1].charts] == [2, 2]
    session.show_run(str((tmp_path / "run_b").absolute()), False)
    assert [len(chart.sources) for chart in states[-1].charts] == [1, 1]
    assert states[-1].status.directory.endswith("1/2 runs")


def test_reload_reads_a_file_rewritten_in_place_again(tmp_path: Path) -> None:
    start_run(tmp_path)
    clock = HandClock()
    session, states = open_session([tmp_path], clock)
    session.step()
    # Same size, other numbers: nothing a follower can notice without being told.
    text = (tmp_path / "lr.csv").read_text(encoding="utf-8")
    (tmp_path / "lr.csv").write_text(text.replace("0.001", "0.002"), encoding="utf-8")
    session.reload()
    session.step()
    lr = next(chart for chart in states[-1].charts if chart.name == "lr")
    assert lr.sources[0].chart.stats[0].latest == 0.002


def test_the_watchers_changed_files_decide_what_is_read(tmp_path: Path) -> None:
    start_run(tmp_path)
    clock = HandClock()
    session, states = open_session([tmp_path], clock, watch=True, poll=0.05)
    try:
        session.watch_runs()
        session.step()
        (watcher,) = session.watchers.values()
        append_rows(tmp_path / "lr.csv", ["5,0.002"])
        assert watcher.dirty.wait(10)
        session.step()
        assert states[-1].changed == {"lr"}
        assert rows_of(states[-1]) == {"loss": 5, "lr": 6}
    finally:
        session.stop()


def test_a_burst_of_real_writes_wakes_the_thread_a_few_times_and_reads_only_that_file(
    tmp_path: Path,
) -> None:
    """The real thread on real inotify events: thousands of writes, a few reads."""
    start_run(tmp_path)
    states: list[SessionState] = []
    published = threading.Condition()

    def publish(state: SessionState) -> None:
        with published:
            states.append(state)
            published.notify_all()

    def wait_for(done: Callable[[SessionState], bool]) -> SessionState:
        with published:
            assert published.wait_for(lambda: bool(states) and done(states[-1]), timeout=30)
            return states[-1]

    session = FollowSession([tmp_path], publish)
    session.start()
    try:
        wait_for(lambda state: state.idle and rows_of(state) == {"loss": 5, "lr": 5})
        before = len(states)
        writes = 2000
        with open(tmp_path / "loss.csv", "a", encoding="utf-8") as loss:
            for step in range(5, 5 + writes):
                loss.write(f"{step},{1 / (step + 1)!r}\n")
                loss.flush()  # one write(2), one inotify event, each
        wait_for(lambda state: rows_of(state)["loss"] == 5 + writes)
        burst = states[before:]
    finally:
        session.stop()
    print(f"\n{writes} writes -> {len(burst)} published states")
    assert 1 <= len(burst) <= writes // 100, "the writes were not coalesced"
    # Only the written file was read again: lr's panel was never asked to redraw.
    assert frozenset().union(*(state.changed for state in burst)) == {"loss"}
    assert [sum(c.rows for c in run.charts) for run in burst[-1].runs] == [5 + writes + 5]


def test_runs_are_ranked_by_the_sort_series_and_the_ranking_follows_new_rows(
    tmp_path: Path,
) -> None:
    for name, rows in (("short", 2), ("long", 8), ("middle", 4)):
        start_run(tmp_path / name, rows=rows)  # loss 1/(step+1): longer runs are lower
    session, states = open_session([tmp_path], HandClock())
    session.step()
    ranking = states[-1].ranking
    assert ranking.sort is not None and ranking.sort.series == "loss"  # the default
    assert [Path(key).name for key in ranking.order] == ["long", "middle", "short"]
    assert ranking.values == (1 / 8, 1 / 4, 1 / 2)
    assert ranking.series == ("loss", "lr")
    session.set_sort(SortKey.parse("-loss"))
    assert [Path(key).name for key in states[-1].ranking.order] == ["short", "middle", "long"]
    append_rows(tmp_path / "short" / "loss.csv", ["2,0.01"])  # now the lowest
    session.set_sort(None)
    session.step(everything=True)
    assert [Path(key).name for key in states[-1].ranking.order] == ["short", "long", "middle"]
    session.set_sort(SortKey.parse("lr"))  # says nothing: lowest first, all equal, found order
    assert not states[-1].ranking.sort.known
    assert [Path(key).name for key in states[-1].ranking.order] == ["long", "middle", "short"]
