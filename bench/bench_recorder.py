"""Figure 1 of the benchmarks: the recorder's log() cost against two baselines, same run.

(a) tensorboardX `SummaryWriter.add_scalar` once per metric (10 calls per step);
(b) a naive writer: the same rows to the same 6 files with `csv.writer` + `flush` per file.

Rounds alternate between the three writers so machine noise hits them alike; each figure is
the median over rounds of the per-call time. Run alone: `python bench/bench_recorder.py`.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, OcmsRecorder, chart_file_name

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


def time_ours(directory: Path, snapshots: list[dict[str, float]]) -> float:
    recorder = OcmsRecorder(log_dir=str(directory))
    recorder.log(step=0, metrics=snapshots[0])  # the first call lays out the charts
    log = recorder.log
    start = time.perf_counter()
    for step, metrics in enumerate(snapshots):
        log(step=step, metrics=metrics)
    elapsed = time.perf_counter() - start
    recorder.finish()
    return elapsed / len(snapshots)


def time_naive(directory: Path, snapshots: list[dict[str, float]]) -> float:
    writer = NaiveCsvWriter(directory)
    start = time.perf_counter()
    for step, metrics in enumerate(snapshots):
        writer.log(step, metrics)
    elapsed = time.perf_counter() - start
    writer.close()
    return elapsed / len(snapshots)


def time_tensorboardx(directory: Path, snapshots: list[dict[str, float]]) -> float:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir=str(directory))
    add_scalar = writer.add_scalar
    start = time.perf_counter()
    for step, metrics in enumerate(snapshots):
        for key, value in metrics.items():
            add_scalar(key, value, step)
    writer.flush()  # its writes are queued to a thread; count getting them to disk
    elapsed = time.perf_counter() - start
    writer.close()
    return elapsed / len(snapshots)


def _sample(
    timer: Callable[[Path, list[dict[str, float]]], float], snapshots: list[dict[str, float]]
) -> float:
    """Seconds per step of one writer, in a fresh directory."""
    with tempfile.TemporaryDirectory(prefix="bench-recorder-") as directory:
        return timer(Path(directory), snapshots)


def measure(quick: bool) -> dict[str, float]:
    """Median µs per step for each writer, measured in interleaved rounds."""
    steps = 2_000 if quick else 20_000
    rounds = 5 if quick else 9
    snapshots = make_snapshots(steps)
    # tensorboardX costs ~50x more per step: fewer steps give as many samples in less time.
    tensorboard_snapshots = snapshots[: max(200, steps // 10)]
    samples: dict[str, list[float]] = {"ours": [], "naive": [], "tensorboardx": []}
    for _ in range(rounds):
        samples["ours"].append(_sample(time_ours, snapshots))
        samples["naive"].append(_sample(time_naive, snapshots))
        samples["tensorboardx"].append(_sample(time_tensorboardx, tensorboard_snapshots))
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows for bench/run.py: ratio is our time / the baseline's time (lower is better)."""
    micros = measure(quick)
    ours = micros["ours"]
    versus_tensorboard = ours / micros["tensorboardx"]
    versus_naive = ours / micros["naive"]
    return [
        {
            "figure": FIGURE + " vs tensorboardX add_scalar x10",
            "ours": f"{ours:.1f} µs/call",
            "baseline": f"{micros['tensorboardx']:.1f} µs/call",
            "ratio": round(versus_tensorboard, 3),
            "target": "<= 0.1 (>= 10x faster)",
            "met": versus_tensorboard <= 0.1,
            "note": f"{1 / versus_tensorboard:.1f}x faster than tensorboardX",
        },
        {
            "figure": FIGURE + " vs naive csv.writer + flush",
            "ours": f"{ours:.1f} µs/call",
            "baseline": f"{micros['naive']:.1f} µs/call",
            "ratio": round(versus_naive, 3),
            "target": "<= 1.0",
            "met": versus_naive <= 1.0,
            "note": "same rows, same 6 files, flushed every call",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    arguments = parser.parse_args()
    rows = run(arguments.quick)
    columns = ("figure", "ours", "baseline", "ratio", "target", "met", "note")
    widths = {name: max(len(name), *(len(str(row[name])) for row in rows)) for name in columns}
    print("  ".join(name.ljust(widths[name]) for name in columns))
    for row in rows:
        print("  ".join(str(row[name]).ljust(widths[name]) for name in columns))


if __name__ == "__main__":
    main()
