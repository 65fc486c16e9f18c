"""Figures 6 and 7: following a live run.

6. `RunModel.refresh()` after 10 rows were appended, on a 1,000-row and a 1,000,000-row chart:
   the cost must not depend on the file's size.
7. Write-to-model latency in the real dashboard (`OcmsApp`, headless): from the moment the
   recorder's `log()` starts writing a row to the moment that row's step is in the
   dashboard's model. Rows come at random intervals (so they cannot line up with the app's
   timer), through inotify and through `--poll 1`. This stops at the model: what a person
   meets (the row drawn on the screen) is bench_screen's freshness rows. A run streaming
   rows is read at most every FOLLOW_SECONDS, each read redrawing the changed charts, so at
   10 rows/s a row waits on average half that interval by design (p50 ~FOLLOW_SECONDS / 2,
   p99 ~FOLLOW_SECONDS): reading sooner would redraw sooner too, the cost the following-CPU
   rows measure.
8. The watcher's own CPU while a run writes 1,000 rows/s to six charts (6,000 `os.write`s a
   second), ours against watchdog's observer on the same writes at the same time, each in a
   process of its own with a consumer draining it as the session does.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import Row, Sizes, make_row, seconds, thread_cpu_seconds
from data import LOSS_CHART, Workspace, chart_rows, format_rows
from ocms_recorder import OcmsRecorder, chart_file_name

from ocms_tui.follow.model import RunModel
from ocms_tui.ui.demo import DemoCurves

APPENDED_ROWS = 10
WARM_UP_SECONDS = 1.0
SLOW_RATE = 2.0  # rows/s: a training loop that logs every few steps
FAST_RATE = 10.0  # rows/s: the rate of the idle-CPU figure


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class _Follower:
    """A loaded one-chart model plus a writer appending rows as the recorder formats them."""

    def __init__(self, directory: Path, rows: int) -> None:
        self.path = directory / chart_file_name(LOSS_CHART[0])
        self.model = RunModel(directory)
        self.model.refresh()
        self.next_step = rows
        self.samples: list[float] = []

    def append_and_refresh(self) -> None:
        rows = chart_rows(0, APPENDED_ROWS, seed=self.next_step, first_step=self.next_step)
        with self.path.open("ab") as handle:
            handle.write(format_rows(rows))
        before = self.model.charts[0].rows
        start = time.perf_counter()
        change = self.model.refresh()
        self.samples.append(time.perf_counter() - start)
        if self.model.charts[0].rows != before + APPENDED_ROWS or not change.charts:
            raise AssertionError("refresh() did not pick up the appended rows")
        self.next_step += APPENDED_ROWS


def figure_incremental(sizes: Sizes, workspace: Workspace) -> Row:
    small = _Follower(
        workspace.copy(workspace.run(sizes.small_rows, 1), "follow-small"), sizes.small_rows
    )
    big = _Follower(workspace.copy(workspace.run(sizes.rows, 1), "follow-big"), sizes.rows)
    updates = 20 if sizes.is_tiny else 300
    for _ in range(updates):
        small.append_and_refresh()
        big.append_and_refresh()
    small_time, big_time = statistics.median(small.samples), statistics.median(big.samples)
    ratio = big_time / small_time
    return make_row(
        f"refresh() after {APPENDED_ROWS} appended rows: {sizes.rows:,}-row chart"
        f" vs {sizes.small_rows:,}-row chart",
        seconds(big_time),
        seconds(small_time),
        ratio,
        "<= 1.2 and < 1 ms",
        ratio <= 1.2 and big_time < 1e-3,
        f"medians of {updates} alternating updates; p90 {seconds(_percentile(big.samples, 0.9))}"
        f" vs {seconds(_percentile(small.samples, 0.9))}",
    )


class _Writer(threading.Thread):
    """Logs one step at a time through the real recorder, after each of `pauses`."""

    def __init__(self, directory: Path, first_step: int, pauses: list[float]) -> None:
        super().__init__(name="bench-writer", daemon=True)
        self.directory = directory
        self.first_step = first_step
        self.pauses = pauses
        self.started_at: dict[int, float] = {}
        self.failure: BaseException | None = None

    def run(self) -> None:
        curves = DemoCurves(steps=self.first_step + len(self.pauses), seed=1)
        try:
            with OcmsRecorder(log_dir=str(self.directory)) as recorder:
                for step, pause in enumerate(self.pauses, start=self.first_step):
                    time.sleep(pause)
                    metrics = curves.metrics(step)
                    self.started_at[step] = time.perf_counter()
                    recorder.log(step=step, metrics=metrics)
        except BaseException as error:  # reported by the benchmark, not lost in a thread
            self.failure = error


def _pauses(rows_per_second: float, count: int, seed: int) -> list[float]:
    """Random pauses around 1/rate, so that writes cannot line up with the app's timers."""
    jitter = random.Random(seed)
    return [jitter.uniform(0.6, 1.4) / rows_per_second for _ in range(count)]


def backfill(directory: Path, steps: int) -> None:
    curves = DemoCurves(steps=steps, seed=1)
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        for step in range(steps):
            recorder.log(step=step, metrics=curves.metrics(step))


async def _dashboard_latencies(
    directory: Path, poll: float | None, pauses: list[float], warm_up: float
) -> list[float]:
    """Seconds from each row's log() to that row's step in the app's model, in order."""
    from ocms_tui.ui.app import OcmsApp

    first_step = 1_000
    app = OcmsApp(directory, poll=poll)
    app.animation_level = "none"
    latencies: list[float] = []
    async with app.run_test(size=(160, 48)):
        await app.settle()
        # Let the first full draw of every chart finish: this figure is about following.
        await asyncio.sleep(warm_up)
        writer = _Writer(directory, first_step, pauses)
        writer.start()
        seen = first_step - 1
        deadline = time.monotonic() + sum(pauses) * 2 + 30
        while seen < first_step + len(pauses) - 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
            loss = next(
                (chart for chart in app.session.runs[0].model.charts if chart.name == "loss"), None
            )
            last = -1 if loss is None or loss.last_step is None else loss.last_step
            now = time.perf_counter()
            for step in range(seen + 1, last + 1):
                latencies.append(now - writer.started_at[step])
            seen = max(seen, last)
        writer.join(timeout=10)
        if writer.failure is not None:
            raise writer.failure
    if len(latencies) != len(pauses):
        raise AssertionError(f"saw {len(latencies)} of {len(pauses)} rows in the app's model")
    return latencies


def _latency_row(
    label: str, target: float, ours: list[float], theirs: list[float], note: str
) -> Row:
    fraction = 0.5 if label == "p50" else 0.99
    mine, baseline = _percentile(ours, fraction), _percentile(theirs, fraction)
    return make_row(
        f"write-to-model latency {label} (recorder log() -> dashboard model)" + note,
        seconds(mine),
        seconds(baseline),
        mine / baseline,
        f"{label} < {target * 1e3:.0f} ms",
        mine < target,
        f"{len(ours)} rows at random intervals; max {seconds(max(ours))}",
    )


def figure_latency(sizes: Sizes, workspace: Workspace) -> list[Row]:
    from ocms_tui.follow.session import FOLLOW_SECONDS as MIN_REFRESH_SECONDS

    samples = sizes.latency_samples
    warm_up = WARM_UP_SECONDS if sizes.name == "full" else 0.5
    slow, fast = _pauses(SLOW_RATE, samples, seed=7), _pauses(FAST_RATE, samples, seed=8)

    def session(name: str, poll: float | None, pauses: list[float]) -> list[float]:
        directory = workspace.scratch(f"latency-{name}")
        backfill(directory, 1_000)
        return asyncio.run(_dashboard_latencies(directory, poll, pauses, warm_up))

    # One inotify session: first the slow writes, then a 10 rows/s stream.
    inotify = session("inotify", None, slow + fast)
    inotify_slow, inotify_fast = inotify[:samples], inotify[samples:]
    polling = session("poll", 1.0, slow)
    slow_note = f", ~{SLOW_RATE:g} rows/s: inotify vs --poll 1"
    fast_note = (
        f", {FAST_RATE:g} rows/s stream (read at most every {seconds(MIN_REFRESH_SECONDS)}):"
        f" inotify vs inotify at ~{SLOW_RATE:g} rows/s"
    )
    return [
        _latency_row("p50", 0.1, inotify_slow, polling, slow_note),
        _latency_row("p99", 0.3, inotify_slow, polling, slow_note),
        _latency_row("p50", 0.1, inotify_fast, inotify_slow, fast_note),
        _latency_row("p99", 0.3, inotify_fast, inotify_slow, fast_note),
    ]


WATCH_RATE = 1_000.0  # rows/s to each of the six charts
WATCH_KINDS = ("inotify", "watchdog")  # ours, then the peer it replaced
BENCH_DIRECTORY = Path(__file__).resolve().parent


def watcher_cost_child(kind: str, directory: str, warm_up: float, window: float) -> None:
    """In a process of its own: watch `directory` with one kind of watcher, drain it every
    FOLLOW_SECONDS as the session does, and print (JSON) the CPU seconds of the watcher's
    threads and the counts over `window` seconds, from `warm_up` after stdin says "go"."""
    from ocms_tui.follow.session import FOLLOW_SECONDS
    from ocms_tui.follow.watch import InotifyWatcher, WatchdogWatcher, Watcher

    before = {thread.native_id for thread in threading.enumerate()}
    watcher: Watcher = (
        InotifyWatcher(directory) if kind == "inotify" else WatchdogWatcher(directory)
    )
    watcher.start()
    marks = [0]
    watcher.dirty.on_mark = lambda: marks.__setitem__(0, marks[0] + 1)
    print("ready", flush=True)
    sys.stdin.readline()
    time.sleep(warm_up)
    # Listed after the warm-up: watchdog starts its dispatcher thread from its reader thread.
    threads = [thread.native_id for thread in threading.enumerate()]
    threads = [native_id for native_id in threads if native_id not in before]

    def cpu() -> float:
        return sum(thread_cpu_seconds(native_id) for native_id in threads if native_id)

    cpu_before, marks_before, wall_before = cpu(), marks[0], time.monotonic()
    while time.monotonic() - wall_before < window:
        time.sleep(FOLLOW_SECONDS)
        watcher.take()
    wall = time.monotonic() - wall_before
    result = {
        "cpu": (cpu() - cpu_before) / wall,
        "marks": (marks[0] - marks_before) / wall,
        "threads": len(threads),
    }
    watcher.stop()
    print(json.dumps(result), flush=True)


def _watcher_costs(
    directory: Path, first_step: int, warm_up: float, window: float
) -> dict[str, dict[str, float]]:
    """Each kind of watcher in a process of its own, both at once on the same directory and
    the same writes (one writer process: bench_screen's LiveWriter, 6 charts at WATCH_RATE
    rows/s), so that both meet the same events and the same machine."""
    environment_path = [str(BENCH_DIRECTORY), *sys.path]
    writer_code = (
        f"import sys; sys.path[:0] = {environment_path!r}; from pathlib import Path;"
        f" from bench_screen import LiveWriter;"
        f" writer = LiveWriter(Path({str(directory)!r}), {first_step!r}, {WATCH_RATE!r},"
        f" {warm_up + window + 1.0!r}); writer.start(); writer.join()"
    )
    processes: list[subprocess.Popen[str]] = []
    try:
        watchers = {}
        for kind in WATCH_KINDS:
            code = (
                f"import sys; sys.path[:0] = {environment_path!r}; from bench_follow import"
                f" watcher_cost_child; watcher_cost_child({kind!r}, {str(directory)!r},"
                f" {warm_up!r}, {window!r})"
            )
            watchers[kind] = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            processes.append(watchers[kind])
        for kind, watcher in watchers.items():
            assert watcher.stdout is not None
            if watcher.stdout.readline().strip() != "ready":
                raise AssertionError(f"the {kind} watcher process did not start")
        writer = subprocess.Popen([sys.executable, "-c", writer_code], text=True)
        processes.append(writer)
        time.sleep(0.5)  # the writer imports numpy and formats its rows first
        for watcher in watchers.values():
            assert watcher.stdin is not None
            watcher.stdin.write("go\n")
            watcher.stdin.flush()
        outputs = {
            kind: watcher.communicate(timeout=warm_up + window + 60)[0]
            for kind, watcher in watchers.items()
        }
        writer.wait(timeout=60)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    failed = [process.returncode for process in processes if process.returncode != 0]
    if failed:
        raise AssertionError(f"watcher or writer processes failed: exit statuses {failed}")
    return {kind: json.loads(output.splitlines()[-1]) for kind, output in outputs.items()}


def figure_watcher_cost(sizes: Sizes, workspace: Workspace) -> Row:
    warm_up, window = {"tiny": (0.5, 1.0), "quick": (0.5, 2.0)}.get(sizes.name, (1.0, 5.0))
    repeats = 2 if sizes.name == "full" else 1
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in WATCH_KINDS}
    for repeat in range(repeats):
        directory = workspace.copy(workspace.run(sizes.small_rows), f"watch-{repeat}")
        for kind, cost in _watcher_costs(directory, sizes.small_rows, warm_up, window).items():
            runs[kind].append(cost)
    ours, theirs = (statistics.median(run["cpu"] for run in runs[kind]) for kind in WATCH_KINDS)
    mine, peer = runs["inotify"][-1], runs["watchdog"][-1]
    return make_row(
        f"watcher CPU while a run writes {WATCH_RATE:,.0f} rows/s to 6 charts"
        " (InotifyWatcher vs watchdog's observer)",
        f"{ours:.1%} of a core",
        f"{theirs:.1%} of a core",
        ours / theirs if theirs > 0 else None,
        "<= 0.03",
        ours <= 0.03,
        f"watcher threads only (/proc), medians of {repeats}; marks/s {mine['marks']:.0f} vs"
        f" {peer['marks']:.0f}; threads {mine['threads']:.0f} vs {peer['threads']:.0f}",
    )


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    return [
        figure_incremental(sizes, workspace),
        *figure_latency(sizes, workspace),
        figure_watcher_cost(sizes, workspace),
    ]
