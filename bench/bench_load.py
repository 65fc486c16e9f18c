"""Figures 2 and 3: a cold load of one chart into RunModel, against native and naive parsers
and against TensorBoard's loader.

"Cold" means a fresh RunModel (no state, no buffers) on a file that is in the page cache, as
for every baseline: the benchmark compares parsing, not the disk.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from baselines import csv_reader_load, polars_load
from common import Row, Sizes, interleaved, make_row, seconds
from data import LOSS_CHART, Workspace, chart_rows, file_size_mb, write_tensorboard
from ocms_recorder import chart_file_name

from ocms_tui.follow.model import RunModel

SERIES = len(LOSS_CHART[1])


def cold_load(directory: Path, expected_rows: int) -> RunModel:
    """What the dashboard and --check do first: a new model reads the whole directory."""
    model = RunModel(directory)
    model.refresh()
    loaded = model.charts[0].rows
    if loaded != expected_rows:
        raise AssertionError(f"cold load read {loaded} rows, expected {expected_rows}")
    return model


def figure_cold_load(sizes: Sizes, workspace: Workspace) -> list[Row]:
    directory = workspace.run(sizes.rows, charts=1)
    path = directory / chart_file_name(LOSS_CHART[0])
    timings = interleaved(
        {
            "ours": lambda: cold_load(directory, sizes.rows),
            "polars": lambda: polars_load(path, SERIES),
        },
        sizes.rounds,
    )
    naive = interleaved(
        {"csv.reader": lambda: csv_reader_load(path, SERIES)}, sizes.slow_rounds, warmup=False
    )
    ours = timings["ours"].median
    polars_time = timings["polars"].median
    naive_time = naive["csv.reader"].median
    label = (
        f"cold load, 1 chart {sizes.rows:,} rows x {SERIES} series ({file_size_mb(path):.0f} MB)"
    )
    return [
        make_row(
            f"{label} vs polars.read_csv (schema) -> numpy",
            seconds(ours),
            seconds(polars_time),
            ours / polars_time,
            "<= 1.5",
            ours / polars_time <= 1.5,
            f"medians of {sizes.rounds} interleaved rounds; best {seconds(timings['ours'].best)}"
            f" vs {seconds(timings['polars'].best)}; CPU time"
            f" {timings['ours'].cpu_median / timings['polars'].cpu_median:.2f}x",
        ),
        make_row(
            f"{label} vs csv.reader + float()",
            seconds(ours),
            seconds(naive_time),
            ours / naive_time,
            "<= 0.125 (>= 8x faster)",
            ours / naive_time <= 0.125,
            f"{naive_time / ours:.1f}x faster than the pure-Python pass",
        ),
    ]


def figure_tensorboard(sizes: Sizes, workspace: Workspace) -> list[Row]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    steps = sizes.tensorboard_steps
    rows = chart_rows(0, steps)
    events = workspace.fixture(
        f"tensorboard-{steps}", lambda directory: write_tensorboard(directory, rows, LOSS_CHART[1])
    )
    scalars = int(sum(np.count_nonzero(~np.isnan(column)) for column in rows.columns))
    directory = workspace.run(steps, charts=1)

    def tensorboard_load() -> None:
        accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0})
        accumulator.Reload()
        loaded = sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])
        if loaded != scalars:
            raise AssertionError(f"TensorBoard loaded {loaded} scalars, expected {scalars}")

    ours = interleaved({"ours": lambda: cold_load(directory, steps)}, sizes.rounds)["ours"].median
    theirs = interleaved({"tensorboard": tensorboard_load}, sizes.slow_rounds, warmup=False)[
        "tensorboard"
    ].median
    return [
        make_row(
            f"cold load, {steps:,} steps x {SERIES} series ({scalars:,} scalars) vs TensorBoard"
            " EventAccumulator (event file by tensorboardX)",
            seconds(ours),
            seconds(theirs),
            ours / theirs,
            "<= 0.01 (>= 100x faster)",
            ours / theirs <= 0.01,
            f"{theirs / ours:.0f}x faster; TensorBoard {scalars / theirs:,.0f} scalars/s",
        )
    ]


def run(sizes: Sizes, workspace: Workspace) -> list[Row]:
    return figure_cold_load(sizes, workspace) + figure_tensorboard(sizes, workspace)
