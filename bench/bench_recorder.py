"""Figure 1 of the benchmarks: the recorder's log() cost against two baselines, same run.

(a) tensorboardX `SummaryWriter.add_scalar` once per metric (10 calls per step);
(b) a naive writer: the same rows to the same 6 files with `csv.writer` + `flush` per file.

Rounds alternate between the writers (bench/common.py's `interleaved`) so machine noise hits
them alike; each figure is the median round, from opening the files to closing them, divided
by the steps written.

Figure 1b: the slowest log() call while a chart of 1 GB is widened (a new key reaches it).
The copy runs on a thread of its own; the baseline is how long that copy takes, which is
what log() stalled for when it copied on the caller's thread.

Run alone: `python bench/bench_recorder.py [--quick] [--widen-mb N]`.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import itertools
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from common import FULL, QUICK, Row, interleaved, make_row, not_measured
from ocms_recorder import (
    DEFAULT_CHART_GROUPS,
    METRICS_JSON,
    OcmsRecorder,
    chart_file_name,
    write_layout,
)

METRIC_KEYS = (
    "loss",
    "vlm_loss",
    "action_dit_loss",
    "learning_rate",
    "learning_rate/vision_tower",
    "epoch",
    "timing/data",
    "timing/model",
    "accuracy",
    "grad_norm",
)
FIGURE = "recorder log(), 10 metrics over 6 charts"
WIDENING_FIGURE = "slowest recorder log() while a {size} chart widens"
WIDEN_FULL_BYTES = 1 << 30  # the 1 GB
# --quick: a copy of about a second still has hundreds of log() calls waiting on it.
WIDEN_QUICK_BYTES = 256 << 20
WIDEN_TINY_BYTES = 16 << 20  # the smoke test's: still above the recorder's inline size
# A training step every few ms: fast training; the rows logged during the copy wait in
# memory (all of them, while the disk takes writes) and are written when it ends.
STEP_INTERVAL_S = 0.004
WIDENING_TARGET_S = 0.050


def make_snapshots(count: int) -> list[dict[str, float]]:
    """Training-like values: every step differs, so no writer gains from repetition."""
    snapshots = []
    for step in range(count):
        decay = math.exp(-step / 5000.0)
        snapshots.append(
            {
                "loss": 2.5 * decay + 0.1 + 0.01 * math.sin(step),
                "vlm_loss": 1.5 * decay + 0.05 + 0.01 * math.cos(step),
                "action_dit_loss": 1.0 * decay + 0.05,
                "learning_rate": 1e-4 * (0.5 + 0.5 * math.cos(step / 1000.0)),
                "learning_rate/vision_tower": 1e-5 * (0.5 + 0.5 * math.cos(step / 1000.0)),
                "epoch": float(step // 1000),
                "timing/data": 0.01 + 0.001 * math.sin(step / 7.0),
                "timing/model": 0.2 + 0.01 * math.cos(step / 3.0),
                "accuracy": 1.0 - 0.5 * decay,
                "grad_norm": 1.0 + 0.3 * math.sin(step / 11.0),
            }
        )
    return snapshots


class NaiveCsvWriter:
    """Baseline (b): the obvious implementation, with the chart layout fixed up front."""

    def __init__(self, directory: Path) -> None:
        self.charts: list[tuple[Any, Any, list[str]]] = []
        for chart_name, accepts in DEFAULT_CHART_GROUPS:
            keys = [key for key in METRIC_KEYS if accepts(key)]
            handle = (directory / chart_file_name(chart_name)).open("a", newline="")
            self.charts.append((handle, csv.writer(handle), keys))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for handle, writer, keys in self.charts:
            writer.writerow([step, *(metrics.get(key, "") for key in keys)])
            handle.flush()

    def close(self) -> None:
        for handle, _, _ in self.charts:
            handle.close()


def write_ours(directory: Path, snapshots: list[dict[str, float]]) -> None:
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        log = recorder.log
        for step, metrics in enumerate(snapshots):
            log(step=step, metrics=metrics)


def write_naive(directory: Path, snapshots: list[dict[str, float]]) -> None:
    directory.mkdir()
    writer = NaiveCsvWriter(directory)
    for step, metrics in enumerate(snapshots):
        writer.log(step, metrics)
    writer.close()


def write_tensorboardx(directory: Path, snapshots: list[dict[str, float]]) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir=str(directory))
    add_scalar = writer.add_scalar
    for step, metrics in enumerate(snapshots):
        for key, value in metrics.items():
            add_scalar(key, value, step)
    writer.close()  # its events are queued to a thread: count getting them to disk


def measure(quick: bool) -> dict[str, float]:
    """Median µs per step of each writer, from opening to closing its files."""
    steps = 5_000 if quick else 20_000
    sizes = QUICK if quick else FULL
    snapshots = make_snapshots(steps)
    # tensorboardX costs ~50x more per step: fewer steps give as many rounds in less time.
    tensorboard_snapshots = snapshots[: steps // 10]
    with tempfile.TemporaryDirectory(prefix="bench-recorder-") as root:
        fresh = (Path(root) / str(index) for index in itertools.count())
        candidates = {
            "ours": lambda: write_ours(next(fresh), snapshots),
            "naive": lambda: write_naive(next(fresh), snapshots),
        }
        if importlib.util.find_spec("tensorboardX") is not None:
            candidates["tensorboardx"] = lambda: write_tensorboardx(
                next(fresh), tensorboard_snapshots
            )
        timings = interleaved(candidates, sizes.rounds)
    per_run = {"ours": steps, "naive": steps, "tensorboardx": len(tensorboard_snapshots)}
    return {name: timing.median / per_run[name] * 1e6 for name, timing in timings.items()}


def run(quick: bool) -> list[Row]:
    """Rows for bench/run.py: ratio is our time / the baseline's time (lower is better)."""
    micros = measure(quick)
    ours = micros["ours"]
    rows = []
    tensorboard_figure = FIGURE + " vs tensorboardX add_scalar x10"
    tensorboard_target = "<= 0.1 (>= 10x faster)"
    if "tensorboardx" in micros:
        ratio = ours / micros["tensorboardx"]
        rows.append(
            make_row(
                tensorboard_figure,
                f"{ours:.1f} µs/call",
                f"{micros['tensorboardx']:.1f} µs/call",
                ratio,
                tensorboard_target,
                ratio <= 0.1,
                f"{1 / ratio:.0f}x faster than tensorboardX",
            )
        )
    else:
        rows.append(not_measured(tensorboard_figure, tensorboard_target, "pip install '.[bench]'"))
    ratio = ours / micros["naive"]
    rows.append(
        make_row(
            FIGURE + " vs naive csv.writer + flush",
            f"{ours:.1f} µs/call",
            f"{micros['naive']:.1f} µs/call",
            ratio,
            "<= 1.0",
            ratio <= 1.0,
            "same rows to the same 6 files, flushed every call",
        )
    )
    return rows


def _write_big_chart(directory: Path, size_bytes: int) -> int:
    """metrics.json with one `loss` column and a loss.csv of about `size_bytes` (a block of
    rows repeated: the recorder copies bytes, it never reads the steps). Returns its rows."""
    block = b"".join(b"%d,%r\n" % (step, 1.0 / (step + 1)) for step in range(100_000))
    repeats = max(1, size_bytes // len(block))
    write_layout(directory, {"loss": ["loss"]})
    with open(directory / chart_file_name("loss"), "wb") as handle:
        for _ in range(repeats):
            handle.write(block)
    return repeats * 100_000


def _declared_columns(directory: Path) -> int:
    with open(directory / METRICS_JSON, encoding="utf-8") as handle:
        return len(json.load(handle)["charts"][0]["y_axis"])


def measure_widening(size_bytes: int) -> dict[str, float]:
    """Log a step every STEP_INTERVAL_S from the call that adds a column to a chart of
    `size_bytes` until metrics.json declares it: the slowest call, the copy's duration, the
    calls made meanwhile."""
    with tempfile.TemporaryDirectory(prefix="bench-widen-") as root:
        directory = Path(root)
        step = _write_big_chart(directory, size_bytes)
        recorder = OcmsRecorder(log_dir=str(directory), mirror_to_ocms=False)
        recorder.log(step=step, metrics={"loss": 0.5})  # opens the file: not part of it
        slowest, calls = 0.0, 0
        started = time.perf_counter()
        while True:
            step += 1
            before = time.perf_counter()
            recorder.log(step=step, metrics={"loss": 0.25, "eval_loss": 0.125})
            slowest = max(slowest, time.perf_counter() - before)
            calls += 1
            if calls % 25 == 0 and _declared_columns(directory) == 2:
                break
            time.sleep(STEP_INTERVAL_S)
        copy_seconds = time.perf_counter() - started
        recorder.finish()
        with open(directory / chart_file_name("loss"), "rb") as handle:
            handle.seek(-200, 2)
            last_row = handle.read().splitlines()[-1]
        assert last_row == b"%d,0.25,0.125" % step, last_row  # every row reached the disk
    return {"slowest": slowest, "copy": copy_seconds, "calls": calls}


def widening_rows(size_bytes: int) -> list[Row]:
    size = f"{size_bytes / 2**30:g} GB" if size_bytes >= 2**30 else f"{size_bytes >> 20} MB"
    result = measure_widening(size_bytes)
    slowest = result["slowest"]
    return [
        make_row(
            WIDENING_FIGURE.format(size=size),
            f"{slowest * 1000:.1f} ms",
            f"{result['copy']:.1f} s copy",
            slowest / result["copy"],
            f"< {WIDENING_TARGET_S * 1000:.0f} ms",
            slowest < WIDENING_TARGET_S,
            f"{result['calls']:.0f} calls during the copy, one every "
            f"{STEP_INTERVAL_S * 1000:.0f} ms; baseline: the stall of a copy on log()'s thread",
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    parser.add_argument(
        "--widen-mb", type=int, default=WIDEN_FULL_BYTES >> 20, help="chart size widened (1b)"
    )
    arguments = parser.parse_args()
    rows = run(arguments.quick) + widening_rows(arguments.widen_mb << 20)
    columns = ("figure", "ours", "baseline", "ratio", "target", "met", "note")
    widths = {name: max(len(name), *(len(str(row[name])) for row in rows)) for name in columns}
    print("  ".join(name.ljust(widths[name]) for name in columns))
    for row in rows:
        print("  ".join(str(row[name]).ljust(widths[name]) for name in columns))


if __name__ == "__main__":
    main()
