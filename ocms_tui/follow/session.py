"""FollowSession: the runs a dashboard follows, read as they change, published as one state.

Plain Python, no Textual. The session owns the run set, one watcher per run, the thread that
alone reads the runs (woken by the watchers, with the files each one saw change), the load
budgets, the rescans for new runs, pause and reload. After every read it hands an immutable
`SessionState` to one callback; the dashboard forwards that to its UI thread and draws it.

The thread only waits and calls `step()`; `step()` says how long to wait before the next, so
the timing (coalescing a stream of writes, rescans, pause) is tested by calling `step()` with
a hand-moved clock, without threads or sleeps.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ocms_tui.follow.frames import OverlayFrame, RunFrame, overlay_frames
from ocms_tui.follow.run_table import NOT_RANKED, Ranking, rank_runs
from ocms_tui.follow.runs import LIVE_SECONDS, RunStatus, quiet_status
from ocms_tui.follow.runset import (
    RESCAN_SECONDS,
    OutsideProblems,
    RunSet,
    TrackedRun,
    run_frame,
    run_key,
)
from ocms_tui.follow.runset import combined_problems as all_problems
from ocms_tui.follow.watch import DIRECTORY, InotifyHub, Watcher, open_watcher
from ocms_tui.format.problems import Problem
from ocms_tui.format.ranking import SortKey

# A run streaming rows is read (and shown) at most this often; the first write after a quiet
# spell is read at once. Below the 1 s a new row may take to reach the screen, with room for
# the drawing: measured in tmux at 160x48 under a load average of 7, a new row was on screen
# at p95 0.6-0.75 s with 0.4 s here. Each read costs a redraw of every changed chart.
FOLLOW_SECONDS = 0.5
SAFETY_REFRESH_SECONDS = 5.0  # read everything even without events (missed events)
SETTLE_RETRY_SECONDS = 0.1  # rows wait for metrics.json to catch up: look again soon
# The first read takes a chart's file whole up to this size; a larger one is sampled across
# its whole length (ChartData) and read in LOAD_BUDGET slices behind its sample.
FIRST_LOAD_BUDGET = 1 << 20
LOAD_BUDGET = 16 << 20  # bytes per chart per later read while a large run loads
STALE_AFTER_SECONDS = LIVE_SECONDS  # the live window: one constant, in runs.py
# With `wait_for_first_screen`, the thread reads no more after its first read until the
# dashboard says that read is on screen (or this long has passed): on two cores, reading the
# rest of a large run would otherwise take the CPU the first screen needs.
FIRST_SCREEN_WAIT_SECONDS = 3.0

PathArgument = str | os.PathLike[str]


@dataclass(frozen=True)
class Status:
    state: RunStatus
    directory: str  # untrusted (a path): plain text only
    charts: int
    rows: int
    last_write_age: float | None
    watching: str
    # While a large run loads: the share of its bytes read (its charts show samples until
    # then); None otherwise.
    loaded: float | None = None


@dataclass(frozen=True)
class SessionState:
    """What the dashboard shows, as of one read: values only (frames, see `follow.frames`),
    never an object the reading thread keeps changing. `changed` names the charts with new
    rows drawn (or a new structure) since the previous state: only their panels need
    drawing."""

    serial: int
    runs: tuple[RunFrame, ...]  # every run followed, shown or not
    charts: tuple[OverlayFrame, ...]  # the shown runs' charts, overlaid by name
    problems: tuple[Problem, ...]
    status: Status
    changed: frozenset[str]
    hidden_runs: frozenset[str]
    reads: int  # 0: nothing read yet
    loading: bool  # a run is still being read in slices
    idle: bool  # everything on disk is read (and this state says so)
    ranking: Ranking = NOT_RANKED  # every run, best first by the sort series

    @property
    def overlaid(self) -> bool:
        return len(self.runs) > 1


def label_of(paths: Sequence[PathArgument]) -> str:
    """How the status line names what is followed: the path as given, or the common parent
    of several."""
    if len(paths) == 1:
        return str(paths[0])
    return os.path.commonpath([os.path.abspath(path) for path in paths])


class FollowSession:
    """Follows `paths` (runs, or parents searched for runs). `poll`: poll every that many
    seconds instead of inotify; `watch=False`: read only on the safety refresh (snapshots).
    `publish` receives every new state, on the session's thread (or the caller's, for
    `pause`, `show_run` and `reload`)."""

    def __init__(
        self,
        paths: Sequence[PathArgument],
        publish: Callable[[SessionState], None],
        *,
        poll: float | None = None,
        watch: bool = True,
        directory_label: str = "",
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        stale_after: float = STALE_AFTER_SECONDS,
        wait_for_first_screen: bool = False,
        sort: SortKey | None = None,
        outside_problems: OutsideProblems | None = None,
        health: bool = True,
    ) -> None:
        """`sort`: the series runs are ranked by (None: `rank_runs` picks one).
        `outside_problems`: a run directory's problems found outside it (the own problems of
        another tool's log converted into it), shown before the run's own.
        `health=False`: no curve health findings (`--no-health`, as for `--check`)."""
        self.sort = sort
        self.outside_problems = outside_problems
        self.runset = RunSet(list(paths), health=health)
        self.publish = publish
        self.poll = poll
        self.watch_enabled = watch
        self.directory_label = directory_label
        self.clock = clock
        self.monotonic = monotonic
        self.stale_after = stale_after
        self.watchers: dict[str, Watcher] = {}
        self.inotify = InotifyHub()  # one instance and thread for every run's watcher
        self.paused = False
        self.hidden_runs: frozenset[str] = frozenset()
        self.state: SessionState | None = None
        self._lock = threading.RLock()  # one step (or publish) at a time
        self._reads = 0
        self._run_reads: dict[str, int] = {}
        self._more = False
        self._reload_requested = False
        self._full_read_requested = False
        self._failure: str | None = None
        self._read_at = float("-inf")
        self._rescanned_at = monotonic()
        self._published_versions: dict[str, tuple[tuple[int, int], ...]] = {}
        self._serial = 0
        self._wake = threading.Event()
        self._wake.set()  # the first read
        self._stopping = threading.Event()
        self._first_screen = threading.Event()  # see FIRST_SCREEN_WAIT_SECONDS
        if not wait_for_first_screen:
            self._first_screen.set()
        self._thread: threading.Thread | None = None

    @property
    def runs(self) -> tuple[TrackedRun, ...]:
        return self.runset.runs

    # -- the thread --------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._thread is not None

    def attach(self, publish: Callable[[SessionState], None]) -> SessionState | None:
        """Hand every later state to `publish` instead; returns the latest state published
        before (None if there was none), which `publish` did not receive. A dashboard
        started reading before its UI was ready takes over here."""
        with self._lock:
            self.publish = publish
            return self.state

    def start(self) -> None:
        """Watch the runs and follow them on a daemon thread until `stop()`."""
        self.watch_runs()
        self._thread = threading.Thread(target=self._follow, name="ocms-follow", daemon=True)
        self._thread.start()

    def first_screen_shown(self) -> None:
        """The dashboard shows the first read: the thread may read on (any thread)."""
        self._first_screen.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._first_screen.set()
        for watcher in list(self.watchers.values()):
            watcher.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _follow(self) -> None:
        while not self._stopping.is_set():
            woken = self._wake.wait(self._safety_seconds())
            if self._stopping.is_set():
                return
            delay = self.step(everything=not woken)
            if not self._first_screen.is_set():
                self._first_screen.wait(FIRST_SCREEN_WAIT_SECONDS)
                self._first_screen.set()
            if delay > 0:
                # Coalesce: whatever is written meanwhile is read by the next step.
                self._stopping.wait(delay)

    def _safety_seconds(self) -> float:
        """A parent (or a directory not yet a run) may gain runs: search it every
        RESCAN_SECONDS; else read everything every SAFETY_REFRESH_SECONDS."""
        searches = len(self.runs) > 1 or any(not run.model.has_metrics_json for run in self.runs)
        return RESCAN_SECONDS if searches else SAFETY_REFRESH_SECONDS

    def watch_runs(self) -> None:
        """Start a watcher on every run not yet watched (unless `watch=False`)."""
        if self.watch_enabled:
            for run in self.runs:
                self._watch(run)

    def _watch(self, run: TrackedRun) -> None:
        if run_key(run) in self.watchers or self._stopping.is_set():
            return
        watcher = open_watcher(run.directory, self.poll, self.inotify)
        watcher.dirty.on_mark = self._wake.set
        self.watchers[run_key(run)] = watcher

    # -- one read ----------------------------------------------------------------------

    def step(self, everything: bool = False) -> float:
        """Read what changed (everything, with `everything` or without watchers), publish
        the state, and return how long to wait before the next step (0: at once)."""
        with self._lock:
            # Cleared before the watchers' marks are taken: a mark after this wakes us again.
            self._wake.clear()
            if self.paused:
                return 0.0  # the watchers keep their marks; resuming wakes the thread
            now = self.monotonic()
            if now - self._rescanned_at >= RESCAN_SECONDS:
                self._rescan(now)
            everything, self._full_read_requested = everything or self._full_read_requested, False
            self._read(everything)
            self._publish()
            if self._more:
                self._wake.set()  # a large run loads in slices: the screen fills as it goes
                return 0.0
            if any(run.model.settling for run in self.runs):
                self._wake.set()
                return SETTLE_RETRY_SECONDS
            return max(0.0, self._read_at + FOLLOW_SECONDS - self.monotonic())

    def _rescan(self, now: float) -> None:
        self._rescanned_at = now
        before = self.runs
        try:
            if not self.runset.rescan():
                return
        except Exception as error:  # a search must not take the dashboard down
            self._failure = f"search error: {type(error).__name__}: {error}"
            return
        for run in before:
            if run not in self.runs and (watcher := self.watchers.pop(run_key(run), None)):
                watcher.stop()
        self.watch_runs()

    def _read(self, everything: bool) -> None:
        reload, self._reload_requested = self._reload_requested, False
        more = False
        try:
            for run in self.runs:
                key = run_key(run)
                watcher = self.watchers.get(key)
                changed = watcher.take() if watcher is not None else None
                first = self._run_reads.get(key, 0) == 0
                budget = FIRST_LOAD_BUDGET if first or reload else LOAD_BUDGET
                if reload:
                    change = run.model.reload(budget)
                else:
                    files = None if everything or first or changed is None else changed
                    if files is not None and DIRECTORY in files:
                        files = None  # the directory itself came or went: read it all
                    change = run.model.refresh(budget, files=files)
                self._run_reads[key] = self._run_reads.get(key, 0) + 1
                more |= change.more
            self._failure = None
        except Exception as error:  # a reader bug must not take the dashboard down
            self._failure = f"read error: {type(error).__name__}: {error}"
        finally:
            self._more = more
            self._reads += 1
            self._read_at = self.monotonic()

    # -- what the user asks ------------------------------------------------------------

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self.paused = paused
            self._publish(everything_changed=not paused)
        if not paused:
            self._wake.set()

    def show_run(self, key: str, shown: bool) -> None:
        with self._lock:
            self.hidden_runs = self.hidden_runs - {key} if shown else self.hidden_runs | {key}
            self._publish()

    def set_sort(self, sort: SortKey | None) -> None:
        with self._lock:
            self.sort = sort
            self._publish()

    def reload(self) -> None:
        self._reload_requested = True
        self._wake.set()

    def read_everything(self) -> None:
        """Look at every file on the next read, not only those a watcher reported: a
        barrier for callers that must see what is on disk now (inotify may still be
        delivering the last writes' events)."""
        self._full_read_requested = True
        self._wake.set()

    def selected_runs(self) -> tuple[TrackedRun, ...]:
        return tuple(run for run in self.runs if run_key(run) not in self.hidden_runs)

    # -- the published state -----------------------------------------------------------

    def _publish(self, everything_changed: bool = False) -> None:
        runs = self.runs
        frames = tuple(run_frame(run) for run in runs)
        selected = [frame for frame in frames if frame.key not in self.hidden_runs]
        charts = overlay_frames(selected)
        # What is drawn: a large file's rows read behind its sample change no picture.
        drawn: dict[str, list[tuple[int, int]]] = {}
        for run, frame in zip(runs, frames, strict=True):
            if frame.key not in self.hidden_runs:
                for chart in run.model.charts:
                    drawn.setdefault(chart.name, []).append((chart.chart_id, chart.version))
        versions = {name: tuple(found) for name, found in drawn.items()}
        if self.paused:
            changed: frozenset[str] = frozenset()  # paused: the screen keeps its picture
        else:
            changed = frozenset(
                name
                for name, version in versions.items()
                if everything_changed or self._published_versions.get(name) != version
            )
            self._published_versions = versions
        self._serial += 1
        self.state = SessionState(
            serial=self._serial,
            runs=frames,
            charts=charts,
            problems=all_problems(runs, self.outside_problems) if runs else (),
            status=self._status(runs, len(charts)),
            changed=changed,
            hidden_runs=self.hidden_runs,
            reads=self._reads,
            loading=self._reads == 0 or any(run.model.loading for run in runs),
            idle=self._idle(),
            ranking=rank_runs([(run_key(run), run.model) for run in runs], self.sort)
            if len(runs) > 1
            else NOT_RANKED,
        )
        self.publish(self.state)

    def _idle(self) -> bool:
        return (
            self._reads > 0
            and all(self._run_reads.get(run_key(run), 0) > 0 for run in self.runs)
            and not (self._more or self._reload_requested or self._full_read_requested)
            and not self._wake.is_set()
            and not any(run.model.settling for run in self.runs)
        )

    def _status(self, runs: tuple[TrackedRun, ...], charts: int) -> Status:
        models = [run.model for run in runs]
        writes = [model.last_write for model in models if model.last_write is not None]
        age = None if not writes else self.clock() - max(writes)
        if not any(model.exists for model in models) and self._reads > 0:
            state = RunStatus.WAITING
        elif self.paused:
            state = RunStatus.PAUSED
        elif self._reads == 0 or any(model.loading for model in models) or self._more:
            state = RunStatus.LOADING
        else:
            state = quiet_status(age, live_seconds=self.stale_after)
        loaded = None
        if state is RunStatus.LOADING:
            parts = [model.loaded_bytes for model in models]
            done, total = sum(read for read, _ in parts), sum(held for _, held in parts)
            loaded = done / total if total else None
        watchers = list(self.watchers.values())
        watching = watchers[0].description if watchers else "not watching"
        directory = self.directory_label
        if len(runs) > 1:
            directory = f"{directory} · {len(self.selected_runs())}/{len(runs)} runs"
        return Status(
            state=state,
            directory=directory,
            charts=charts,
            rows=sum(model.total_rows for model in models),
            last_write_age=age,
            watching=self._failure or watching,
            loaded=loaded,
        )
