"""The dashboard as a person meets it: the real command in tmux at 160x48, read off the screen.

`python -m ocms_tui DIR` runs in a tmux pane of its own server (a private socket); the
benchmark reads the pane's text with `tmux capture-pane` and presses keys with
`tmux send-keys`, as a person would look and type. The data is the benchmark's noisy
training run (6 charts x 4 series, 0-30% noise and random walks), at 1,000 and 1,000,000
rows per chart. Figures, each against its target from issue 19:

- freshness: a writer appends rows to all six CSVs at 10 and 100 rows/s. In the numbers: a
  row is shown when every panel's legend says its step (or a later one). On the plot: every
  10th row is a spike (a new highest value of each chart's first series), which must change
  the picture; it is shown when every legend says its step and the plot areas' braille has
  changed since it was written (at 1M rows an ordinary row seldom moves a pixel, so it cannot
  be seen arrive). p50 and p95 per rate and size; the note gives the longest time without a
  new step while rows arrived.
- CPU of the dashboard process (/proc), no screen sampling meanwhile: idle (a finished run),
  following 10 rows/s, following 1,000 rows/s.
- keys: from `send-keys` until the screen (the status line left out) stops changing, per key,
  on a finished run, p50 and p95, 1M rows against 1k rows.
- start: from the command's start to the first screen with every chart's plot and its
  latest step in every legend, so the whole step range (first paint; a large run may show a
  sample of its rows then, and must say it is loading), and to the screen whose status line
  counts every row of the run and no longer says loading (whole run loaded). Measured with
  the run's files out of the page cache, as a run written hours ago is (this machine's
  kernel reclaims pages unused for a minute or two: a launch right after others found the
  files cached, a launch later did not, and the 1M/1k ratio moved from 1.05 to 1.4 between
  runs of this benchmark); medians of alternating launches, big first. `--quick` makes one
  cold launch of each run and measures the other figures in that same launch.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from common import Row, Sizes, make_row, not_measured, process_cpu_seconds, seconds
from data import RUN_CHARTS, Workspace, chart_rows, format_rows
from ocms_recorder import chart_file_name
from page_cache import CAN_EVICT, evict

TERMINAL = (160, 48)
# A legend's header right inside its panel's border (`│ step 1,426 · 1,427 rows`, `│ pass 2 ·
# step 179`), not a step the problems pane names (`spikes to 100 at step 1005`).
STEP = re.compile(r"│ (?:pass [\d,]+ · )?step ([\d,]+)")
ROWS = re.compile(r"([\d,]+) rows")
ESCAPE = re.compile(r"\x1b\[[0-9;:?]*[A-Za-z]")
UTF8 = "C.UTF-8"
SPIKE_HEIGHT = 100.0  # far above every generated value (they stay below about 20)
SPIKE_GROWTH = 1.05
PLOT_SPIKE_EVERY = 10  # rows; a spike is the row whose arrival on the plot is timed
SETTLED_AFTER = 0.6
FIRST_CHANGE_SECONDS = 5.0  # no change for this long: the screen has settled
SAMPLE_SECONDS = 0.01


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _braille(lines: list[str]) -> str:
    """The plot areas: every braille character on screen, in order."""
    return "".join(char for line in lines for char in line if "\u2800" <= char <= "\u28ff")


@dataclass(frozen=True)
class Screen:
    at: float  # time.monotonic() when captured
    styled: tuple[str, ...]  # with colours (a focus change shows only in colour)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(ESCAPE.sub("", line) for line in self.styled)

    @property
    def steps(self) -> list[int]:
        """The step each panel's legend shows."""
        return [int(found.replace(",", "")) for line in self.lines for found in STEP.findall(line)]

    @property
    def shown_step(self) -> int | None:
        """The step every panel shows (the least of them), None before all six show one."""
        steps = self.steps
        return min(steps) if len(steps) >= len(RUN_CHARTS) else None

    @property
    def plot(self) -> str:
        return _braille(list(self.lines))

    @property
    def body(self) -> tuple[str, ...]:
        return self.styled[1:]  # the status line ticks ("last write 3 s ago") on its own


# The tmux server hands its environment to the pane: COLUMNS and LINES (set by pytest, for
# one) would make Textual lay out for that size instead of the pane's.
_TMUX_ENVIRONMENT = {
    **{name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")},
    "LANG": UTF8,
    "LC_ALL": UTF8,
}


def _orphan_guard(owner: int) -> str:
    """A shell job for the tmux server that ends the dashboard and the server once `owner`
    (this benchmark) is gone without closing them: killed outright (SIGKILL, `timeout -k`),
    it can run no cleanup of its own, and a tmux server is a daemon that would keep the
    dashboard drawing for hours. tmux fills in the pane's and its own pid and socket; it
    ends its jobs when it exits, so after a normal close nothing of the guard is left."""
    return (
        f"while kill -0 {owner} 2>/dev/null; do sleep 1; done;"
        ' rm -f "#{socket_path}"; kill -TERM #{pane_pid} 2>/dev/null; sleep 2;'
        " kill -KILL #{pane_pid} 2>/dev/null; kill #{pid} 2>/dev/null"
    )


class TmuxDashboard:
    """`python -m ocms_tui DIR` in a tmux pane of a private tmux server."""

    _count = 0

    def __init__(self, directory: Path) -> None:
        TmuxDashboard._count += 1
        self.socket = f"ocms-bench-{os.getpid()}-{TmuxDashboard._count}"
        environment = f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}"
        shell_command = f"exec {sys.executable} -m ocms_tui {directory}"
        self.started = time.monotonic()
        # The guard is set up by the same tmux command as the session: a benchmark killed
        # right after starting the server must not leave it running.
        self._tmux(
            "new-session", "-d", "-x", str(TERMINAL[0]), "-y", str(TERMINAL[1]),
            "-e", environment, "-e", "TERM=xterm-256color", "-e", f"LANG={UTF8}",
            "-e", f"LC_ALL={UTF8}", "-e", f"COLUMNS={TERMINAL[0]}", "-e", f"LINES={TERMINAL[1]}",
            shell_command, ";", "run-shell", "-b", _orphan_guard(os.getpid()),
        )  # fmt: skip
        pane, socket_path = (
            self._tmux("display-message", "-p", "#{pane_pid}\t#{socket_path}")
            .rstrip("\n")
            .split("\t")
        )
        self.pid = int(pane)
        self.socket_path = Path(socket_path)

    def _tmux(self, *arguments: str) -> str:
        # -u and a UTF-8 locale: without them tmux shows braille as "_" to a client it
        # believes cannot take UTF-8 (a benchmark started from cron or nohup has no LANG).
        finished = subprocess.run(
            ["tmux", "-u", "-L", self.socket, "-f", "/dev/null", *arguments],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
            env=_TMUX_ENVIRONMENT,
        )
        return finished.stdout

    def capture(self) -> Screen:
        text = self._tmux("capture-pane", "-p", "-e")
        return Screen(time.monotonic(), tuple(text.splitlines()))

    def press(self, key: str) -> float:
        self._tmux("send-keys", key)
        return time.monotonic()

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def ui_cpu_seconds(self) -> float:
        """CPU time of the app's main thread (Textual's event loop: layout, builds, paint),
        without threads that work for it off the loop: on a shared machine a steadier figure
        of what a key costs than wall time."""
        return process_cpu_seconds(self.pid, thread=self.pid)

    def wait_for(self, done: Callable[[Screen], bool], timeout: float) -> Screen:
        deadline = time.monotonic() + timeout
        screen = self.capture()
        while time.monotonic() < deadline:
            screen = self.capture()
            if done(screen):
                return screen
            time.sleep(SAMPLE_SECONDS)
        shown = "\n".join(screen.lines)
        raise AssertionError(f"the dashboard did not get there in {timeout:.0f} s:\n{shown}")

    def close(self) -> None:
        """End the dashboard at once (SIGKILL: a graceful `q` took 2-4 s on a loaded machine,
        and what it does is not measured here), then its tmux server."""
        try:
            if _is_dashboard(self.pid):
                os.kill(self.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while _is_dashboard(self.pid) and time.monotonic() < deadline:
                time.sleep(0.01)  # the tmux server reaps it
        finally:
            subprocess.run(
                ["tmux", "-L", self.socket, "kill-server"],
                capture_output=True,
                check=False,
                timeout=30,
            )
            self.socket_path.unlink(missing_ok=True)  # kill-server leaves it


def _is_dashboard(pid: int) -> bool:
    """`pid` is still a live dashboard (not exited, not a process that took over its pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"ocms_tui" in cmdline.read()
    except OSError:
        return False


class LiveWriter(threading.Thread):
    """Appends rows to all six CSVs at `rate` rows/s as the recorder does: files kept open,
    one `os.write` per row and chart (no batching: 1,000 rows/s is 6,000 writes/s), rows
    formatted ahead of time so the writer keeps its pace. Notes when each step was written."""

    _spikes_made = 0

    def __init__(
        self,
        directory: Path,
        first_step: int,
        rate: float,
        seconds_: float,
        spike_every: int | None = None,
    ) -> None:
        """`spike_every`: every that many rows, each chart's first series jumps to a new
        highest value, a row that always changes the picture (see `spikes`)."""
        super().__init__(name="bench-live-writer", daemon=True)
        self.directory = directory
        self.first_step = first_step
        self.next_step = first_step
        self.rate = rate
        count = int(rate * seconds_) + 10
        self.spikes: set[int] = set()
        self._rows = []
        for index in range(len(RUN_CHARTS)):
            rows = chart_rows(index, count, seed=first_step, first_step=first_step)
            if spike_every:
                first = rows.columns[0]
                positions = np.arange(spike_every // 2, count, spike_every)
                # Each spike 5% above every value before it, earlier writers' spikes too:
                # the y axis grows visibly each time.
                numbers = np.arange(positions.size) + LiveWriter._spikes_made
                first[positions] = SPIKE_HEIGHT * SPIKE_GROWTH**numbers
                self.spikes = set((first_step + positions).tolist())
            self._rows.append(format_rows(rows).splitlines(keepends=True))
        LiveWriter._spikes_made += len(self.spikes)
        self.written_at: dict[int, float] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        descriptors = [
            os.open(self.directory / chart_file_name(name), os.O_WRONLY | os.O_APPEND)
            for name, _ in RUN_CHARTS
        ]
        try:
            started = time.monotonic()
            written = 0
            while not self._stop_event.is_set() and written < len(self._rows[0]):
                due = min(len(self._rows[0]), int((time.monotonic() - started) * self.rate) + 1)
                for row in range(written, due):
                    now = time.monotonic()
                    for descriptor, rows in zip(descriptors, self._rows, strict=True):
                        os.write(descriptor, rows[row])
                    self.written_at[self.first_step + row] = now
                written = due
                self.next_step = self.first_step + written
                self._stop_event.wait(max(0.0, started + written / self.rate - time.monotonic()))
        finally:
            for descriptor in descriptors:
                os.close(descriptor)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)


def _painted(rows: int) -> Callable[[Screen], bool]:
    """Every panel shows the run's latest step (its whole step range) and a plot."""
    return lambda screen: screen.shown_step == rows - 1 and bool(screen.plot)


def _says_loading(screen: Screen) -> bool:
    return "loading" in screen.lines[0]


def _loaded(rows: int) -> Callable[[Screen], bool]:
    """Painted, and the status line counts every row of the six charts, loading no more."""
    every_row = f"{len(RUN_CHARTS) * rows:,} rows"
    painted = _painted(rows)
    return lambda screen: (
        painted(screen) and every_row in screen.lines[0] and not _says_loading(screen)
    )


@dataclass
class _Freshness:
    numbers: list[float]  # seconds from each row's write to its step in every legend
    plots: list[float]  # seconds from each spike row's write to a changed plot
    longest: float  # the longest time without a new step on screen
    next_step: int  # the next step to write


def _freshness(
    screen: TmuxDashboard, directory: Path, first_step: int, rate: float, duration: float
) -> _Freshness:
    """Rows written at `rate` for `duration` seconds, the screen read all along."""
    writer = LiveWriter(directory, first_step, rate, duration + 1, PLOT_SPIKE_EVERY)
    samples: list[Screen] = []
    writer.start()
    end = time.monotonic() + duration
    try:
        while time.monotonic() < end:
            samples.append(screen.capture())
            time.sleep(SAMPLE_SECONDS)
    finally:
        writer.stop()
    times = [sample.at for sample in samples]
    # The least step shown from each sample on: the first sample showing a step is found by
    # binary search instead of a scan per row.
    shown_from = [sample.shown_step if sample.shown_step is not None else -1 for sample in samples]
    for index in range(len(shown_from) - 2, -1, -1):
        shown_from[index] = min(shown_from[index], shown_from[index + 1])
    numbers: list[float] = []
    plots: list[float] = []
    for step, written in sorted(writer.written_at.items()):
        first_after = bisect.bisect_left(times, written)
        if first_after == 0 or written > end - 1.5:
            continue  # no screen before the write, or too late to be seen in the window
        shown = bisect.bisect_left(shown_from, step, lo=first_after)
        if shown >= len(samples):
            continue
        numbers.append(times[shown] - written)
        if step not in writer.spikes:
            # At 1M rows a new row seldom moves a pixel: only a row that must change the
            # picture (a new highest value) can be timed on the plot.
            continue
        plot_before = samples[first_after - 1].plot
        drawn = next(
            (
                index
                for index in range(shown, len(samples))  # with its step in every legend
                if samples[index].plot != plot_before
            ),
            None,
        )
        if drawn is not None:
            plots.append(times[drawn] - written)
    longest, previous_at, previous_step = 0.0, samples[0].at, samples[0].shown_step
    for sample in samples:
        if sample.shown_step != previous_step:
            longest = max(longest, sample.at - previous_at)
            previous_at, previous_step = sample.at, sample.shown_step
    return _Freshness(numbers, plots, longest, writer.next_step)


def _settle(screen: TmuxDashboard, *keys: str) -> float:
    """Seconds from a key press (from the last of `keys`, pressed one after the other)
    until the screen (status line aside) stopped changing: the last change before
    SETTLED_AFTER seconds without one. A loaded machine may take a while
    to show the first change; up to FIRST_CHANGE_SECONDS are waited for it. The screen is
    read every 5 ms (tmux capture-pane): measured at 13% of a core for this process and its
    tmux clients and 5% for the tmux server, on a 2-core machine it leaves the app its core."""
    before = screen.capture().body
    for key in keys:
        pressed = screen.press(key)
    last_change, last_body = None, before
    while True:
        sample = screen.capture()
        if sample.body != last_body:
            last_change, last_body = sample.at, sample.body
        quiet_since = last_change if last_change is not None else pressed
        limit = SETTLED_AFTER if last_change is not None else FIRST_CHANGE_SECONDS
        if sample.at - quiet_since > limit or sample.at - pressed > 15:
            break
        time.sleep(SAMPLE_SECONDS / 2)
    if last_change is None:
        raise AssertionError(f"keys {' '.join(keys)} changed nothing on screen")
    return last_change - pressed


# Keys a person presses while looking at charts: each changes every panel or the layout.
KEYS = (("s", "s (EMA)"), ("l", "l (log)"), ("]", "] (zoom)"), ("Right", "→ (focus)"),
        ("Enter", "⏎ (maximise)"), ("Escape", "esc (restore)"), ("0", "0 (zoom reset)"))  # fmt: skip


@dataclass(frozen=True)
class _Start:
    first_paint: float
    first_says_loading: bool  # the first paint said that rows were still being read
    loaded: float


@dataclass
class _SizeResult:
    start: _Start  # of this launch (files cached, or out of the cache when it was cold)
    keys: dict[str, list[float]]
    key_cpu: dict[str, list[float]]  # UI-thread CPU per press
    idle_cpu: float
    follow_cpu: float
    freshness: dict[float, _Freshness]
    fast_cpu: float | None = None


def _launch(directory: Path, rows: int, cold: bool) -> tuple[TmuxDashboard, _Start]:
    """The dashboard started on a run and waited for until it has loaded every row;
    `cold`: with the run's files out of the page cache first."""
    if cold:
        evict(directory)
    screen = TmuxDashboard(directory)
    try:
        painted = screen.wait_for(_painted(rows), timeout=120)
        loaded = screen.wait_for(_loaded(rows), timeout=300)
    except BaseException:
        screen.close()
        raise
    start = _Start(painted.at - screen.started, _says_loading(painted), loaded.at - screen.started)
    return screen, start


def _start(directory: Path, rows: int) -> _Start:
    """One launch on the run's files out of the page cache: first paint and whole load."""
    screen, start = _launch(directory, rows, cold=True)
    screen.close()
    return start


def _cold_starts(runs: list[tuple[Path, int]], launches: int) -> list[list[_Start]]:
    """`launches` cold launches of each run, alternating (so that both meet the same
    machine), in the order given."""
    starts: list[list[_Start]] = [[] for _ in runs]
    for _ in range(launches):
        for found, (directory, rows) in zip(starts, runs, strict=True):
            found.append(_start(directory, rows))
    return starts


def _median_start(starts: list[_Start]) -> _Start:
    return _Start(
        float(np.median([start.first_paint for start in starts])),
        all(start.first_says_loading for start in starts),
        float(np.median([start.loaded for start in starts])),
    )


@dataclass(frozen=True)
class _Windows:
    """Seconds of each measuring window, per benchmark size."""

    key_rounds: int
    idle: float  # CPU idle: a tick is 10 ms, 0.5% of a core over 2 s (target 1%)
    follow: float  # CPU while 10 and while 1,000 rows/s are written
    freshness: float  # per write rate
    writer_warm_up: float


WINDOWS = {
    "full": _Windows(key_rounds=5, idle=15.0, follow=15.0, freshness=20.0, writer_warm_up=1.0),
    "quick": _Windows(key_rounds=1, idle=2.0, follow=1.5, freshness=3.5, writer_warm_up=0.5),
    "tiny": _Windows(key_rounds=1, idle=1.0, follow=1.0, freshness=2.5, writer_warm_up=0.5),
}


def _following_cpu(
    screen: TmuxDashboard, directory: Path, first_step: int, rate: float, windows: _Windows
) -> tuple[float, int]:
    """(the dashboard's CPU in cores while a run writes `rate` rows/s, the next step); the
    screen is not read meanwhile."""
    writer = LiveWriter(directory, first_step, rate, windows.writer_warm_up + windows.follow + 1)
    writer.start()
    try:
        time.sleep(windows.writer_warm_up)
        cpu_before, wall_before = screen.cpu_seconds(), time.monotonic()
        time.sleep(windows.follow)
        cpu = (screen.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
    finally:
        writer.stop()
    return cpu, writer.next_step


def _measure(directory: Path, rows: int, sizes: Sizes, fast: bool, cold: bool) -> _SizeResult:
    """One launch on a run: keys, CPU idle and following 10 rows/s, freshness at 10 and
    100 rows/s, and with `fast` the CPU following 1,000 rows/s."""
    windows = WINDOWS[sizes.name]
    screen, start = _launch(directory, rows, cold)
    try:
        _settle_quietly(screen)
        keys: dict[str, list[float]] = {label: [] for _, label in KEYS}
        key_cpu: dict[str, list[float]] = {label: [] for _, label in KEYS}
        for _ in range(windows.key_rounds):
            for key, label in KEYS:
                cpu_before = screen.ui_cpu_seconds()
                keys[label].append(_settle(screen, key))
                key_cpu[label].append(screen.ui_cpu_seconds() - cpu_before)
        # Back to the view the run started with: EMA off (4 levels), linear axis.
        restore = ["s"] * (-windows.key_rounds % 4) + ["l"] * (windows.key_rounds % 2)
        if restore:
            _settle(screen, *restore)
        cpu_before, wall_before = screen.cpu_seconds(), time.monotonic()
        time.sleep(windows.idle)
        idle_cpu = (screen.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
        follow_cpu, next_step = _following_cpu(screen, directory, rows, 10.0, windows)
        freshness: dict[float, _Freshness] = {}
        for rate in (10.0, 100.0):
            freshness[rate] = _freshness(screen, directory, next_step, rate, windows.freshness)
            next_step = freshness[rate].next_step
        fast_cpu = None
        if fast:
            fast_cpu, next_step = _following_cpu(screen, directory, next_step, 1000.0, windows)
    finally:
        screen.close()
    return _SizeResult(start, keys, key_cpu, idle_cpu, follow_cpu, freshness, fast_cpu)


def _settle_quietly(screen: TmuxDashboard, timeout: float = 10.0) -> None:
    """Wait until the screen (status line aside) has not changed for SETTLED_AFTER."""
    last = screen.capture()
    quiet_since = last.at
    deadline = last.at + timeout
    while time.monotonic() < deadline and time.monotonic() - quiet_since < SETTLED_AFTER:
        time.sleep(SAMPLE_SECONDS)
        sample = screen.capture()
        if sample.body != last.body:
            last, quiet_since = sample, sample.at


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    if shutil.which("tmux") is None:
        return [not_measured("screen figures (tmux)", "-", "needs tmux on PATH")]
    big_rows, small_rows = sizes.rows, sizes.small_rows
    big = workspace.copy(workspace.run(big_rows), "screen-big")
    small = workspace.copy(workspace.run(small_rows), "screen-small")
    if sizes.name == "full":
        launches = 3
        cold_big, cold_small = (
            _median_start(starts)
            for starts in _cold_starts([(big, big_rows), (small, small_rows)], launches)
        )
        result_small = _measure(small, small_rows, sizes, fast=True, cold=False)
        result_big = _measure(big, big_rows, sizes, fast=False, cold=False)
        cached = (
            f"; files cached (one launch each): {seconds(result_big.start.first_paint)} vs"
            f" {seconds(result_small.start.first_paint)}"
        )
        cached_load = f"; files cached: {seconds(result_big.start.loaded)}"
    else:  # one cold launch of each, which the other figures then use
        launches = 1
        result_big = _measure(big, big_rows, sizes, fast=False, cold=True)
        result_small = _measure(small, small_rows, sizes, fast=True, cold=True)
        cold_big, cold_small = result_big.start, result_small.start
        cached = cached_load = ""
    size_label = {id(result_big): f"6x{big_rows:,}", id(result_small): f"6x{small_rows:,}"}
    where = f"`python -m ocms_tui` in tmux {TERMINAL[0]}x{TERMINAL[1]}"
    rows: list[Row] = []
    for result in (result_small, result_big):
        label = size_label[id(result)]
        for rate, fresh in result.freshness.items():
            longest = fresh.longest
            for name, samples in (("numbers", fresh.numbers), ("plot", fresh.plots)):
                if not samples:
                    rows.append(
                        not_measured(f"freshness {label} {rate:g} rows/s", "-", "no rows seen")
                    )
                    continue
                p50, p95 = _percentile(samples, 0.5), _percentile(samples, 0.95)
                rows.append(
                    make_row(
                        f"freshness: new row in the {name}, {label} rows, {rate:g} rows/s ({where})",
                        f"p50 {seconds(p50)}, p95 {seconds(p95)}",
                        "1 s",
                        p95,
                        "p95 <= 1 s; no gap > 1.5 s",
                        p95 <= 1.0 and longest <= 1.5,
                        f"{len(samples)} {'spike ' if name == 'plot' else ''}rows;"
                        f" longest without a new step on screen {seconds(longest)}",
                    )
                )
    for result in (result_small, result_big):
        label = size_label[id(result)]
        follow_cpu = result.follow_cpu
        rows.append(
            make_row(
                f"CPU following a run writing 10 rows/s, {label} rows ({where})",
                f"{follow_cpu:.1%} of a core",
                "1 core",
                follow_cpu,
                "<= 0.10",
                follow_cpu <= 0.10,
                "dashboard process only (/proc), screen not sampled meanwhile",
            )
        )
        rows.append(
            make_row(
                f"CPU idle on a finished run, {label} rows ({where})",
                f"{result.idle_cpu:.2%} of a core",
                "1 core",
                result.idle_cpu,
                "<= 0.01",
                result.idle_cpu <= 0.01,
                "nothing written; the status line still ticks",
            )
        )
    fast = result_small.fast_cpu or 0.0
    rows.append(
        make_row(
            f"CPU following a run writing 1,000 rows/s, {size_label[id(result_small)]} rows ({where})",
            f"{fast:.1%} of a core",
            "1 core",
            fast,
            "<= 0.15",
            fast <= 0.15,
            "one write per row and chart (6,000 writes/s), files kept open as the recorder does",
        )
    )
    for _, label in KEYS:
        big_keys, small_keys = result_big.keys[label], result_small.keys[label]
        p50, p95 = _percentile(big_keys, 0.5), _percentile(big_keys, 0.95)
        small_p50 = _percentile(small_keys, 0.5)
        ratio = p50 / small_p50 if small_p50 > 0 else None
        rows.append(
            make_row(
                f"key {label} to settled screen, {size_label[id(result_big)]} vs"
                f" {size_label[id(result_small)]} rows ({where})",
                f"p50 {seconds(p50)}, p95 {seconds(p95)}",
                f"p50 {seconds(small_p50)}",
                ratio,
                "p50 <= 150 ms, p95 <= 300 ms, ratio <= 1.3",
                p50 <= 0.150 and p95 <= 0.300 and (ratio is None or ratio <= 1.3),
                f"{len(big_keys)} presses each; settled = no change for {SETTLED_AFTER:g} s;"
                f" UI-thread CPU per press p50 {seconds(_percentile(result_big.key_cpu[label], 0.5))}"
                f" vs {seconds(_percentile(result_small.key_cpu[label], 0.5))}",
            )
        )
    cold = f"files {'out of' if CAN_EVICT else 'in'} the page cache" + (
        f", medians of {launches} alternating launches" if launches > 1 else ", one launch"
    )
    paint_ratio = cold_big.first_paint / cold_small.first_paint
    rows.append(
        make_row(
            f"first paint, {size_label[id(result_big)]} vs {size_label[id(result_small)]} rows ({where})",
            seconds(cold_big.first_paint),
            seconds(cold_small.first_paint),
            paint_ratio,
            "ratio <= 1.3",
            paint_ratio <= 1.3,
            "from the command's start to every chart's plot and latest step on screen (the"
            f" whole step range); {cold}; the first paint of the large run"
            f" {'said' if cold_big.first_says_loading else 'did not say'} it was loading" + cached,
        )
    )
    rows.append(
        make_row(
            f"whole run loaded, {size_label[id(result_big)]} rows ({where})",
            seconds(cold_big.loaded),
            seconds(cold_small.loaded),
            None,
            "<= 3 s",
            cold_big.loaded <= 3.0,
            f"until the status line counts all {len(RUN_CHARTS) * big_rows:,} rows and no"
            f" longer says loading; {cold}; baseline: the small run" + cached_load,
        )
    )
    return rows
