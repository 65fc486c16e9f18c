"""Shared helpers for the reliability tests (no tests here).

Run as a script it is the deterministic training writer the soak, crash and concurrency
tests start as a separate process:

    python reliability_support.py DIR --first-step 0 --last-step 199999 [--pause-chance ...]

Every value it logs is a pure function of (metric key, step), so a test knows exactly what
each row must hold without trusting the code under test to tell it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import subprocess
import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, METRICS_JSON, OcmsRecorder, sanitize_key

THIS_FILE = Path(__file__).resolve()
TEMP_SUFFIX = ".tmp"  # the recorder's atomic writes go through `.<name>.<pid>.tmp`


def value_of(key: str, step: int) -> float:
    """A deterministic float for `key` at `step`, with varied digits and magnitudes."""
    mixed = (step * 2654435761 + zlib.crc32(key.encode())) % 2**32
    return (mixed / 2**32) * 10.0 ** ((mixed >> 7) % 13 - 6)


@dataclass(frozen=True)
class TrainingPlan:
    """Which keys are logged at which step.

    Every step logs loss, grad_norm and a learning rate. `eval_loss` starts at `widen_at`
    (the loss chart is widened then) and comes every `eval_every` steps. `timing/data`
    starts at `new_chart_at` (a chart added mid-run). With `widen_every`, a new key
    `w<j>_loss` joins the loss chart at step widen_from + j * widen_every (j = 1 ..
    max_widenings) and is logged again every `widen_every` steps: one widening rewrite
    per `widen_every` steps.
    """

    widen_at: int = 0
    eval_every: int = 50
    new_chart_at: int = 0
    widen_every: int = 0
    max_widenings: int = 0
    widen_from: int = 0

    def metrics(self, step: int) -> dict[str, float]:
        keys = ["loss", "grad_norm", "learning_rate/backbone"]
        if step >= self.widen_at and step % self.eval_every == 0:
            keys.append("eval_loss")
        if step >= self.new_chart_at:
            keys.append("timing/data")
        since = step - self.widen_from
        if self.widen_every and since > 0 and since % self.widen_every == 0:
            newest = min(since // self.widen_every, self.max_widenings)
            keys.extend(f"w{j}_loss" for j in range(1, newest + 1))
        return {key: value_of(key, step) for key in keys}

    def as_arguments(self) -> list[str]:
        return [
            f"--widen-at={self.widen_at}",
            f"--eval-every={self.eval_every}",
            f"--new-chart-at={self.new_chart_at}",
            f"--widen-every={self.widen_every}",
            f"--max-widenings={self.max_widenings}",
            f"--widen-from={self.widen_from}",
        ]


def chart_of(key: str) -> str:
    """The default chart group that takes `key` (the recorder's own table)."""
    return next(name for name, accepts in DEFAULT_CHART_GROUPS if accepts(key))


@dataclass
class ExpectedChart:
    """What a chart must hold: y-axis names in first-seen order and one row per step."""

    y_axis: list[str] = field(default_factory=list)
    rows: dict[int, dict[str, float]] = field(default_factory=dict)

    def row_values(self, step: int) -> list[float | None]:
        row = self.rows[step]
        return [row.get(name) for name in self.y_axis]


def charts_from_snapshots(
    snapshots: Iterable[tuple[int, dict[str, float]]],
) -> dict[str, ExpectedChart]:
    """Charts as the format says logged snapshots must land, from the format's rules alone
    (default groups, sanitizing, first-seen column order, no row without a value)."""
    charts: dict[str, ExpectedChart] = {}
    for step, metrics in snapshots:
        for key, value in metrics.items():
            chart = charts.setdefault(chart_of(key), ExpectedChart())
            name = sanitize_key(key)
            if name not in chart.y_axis:
                chart.y_axis.append(name)
            chart.rows.setdefault(step, {})[name] = value
    return charts


def expected_charts(plan: TrainingPlan, steps: range | list[int]) -> dict[str, ExpectedChart]:
    """The charts the plan's snapshots at `steps` must give."""
    return charts_from_snapshots((step, plan.metrics(step)) for step in steps)


def expected_arrays(plan: TrainingPlan, steps: range) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Per chart: its steps and one float64 array per y-axis name (NaN where the step has no
    value for it), to compare with what a reader holds."""
    import numpy as np

    arrays = {}
    for name, chart in expected_charts(plan, steps).items():
        chart_steps = np.fromiter(chart.rows, dtype=np.int64, count=len(chart.rows))
        columns = {
            series: np.fromiter(
                (row.get(series, np.nan) for row in chart.rows.values()),
                dtype=np.float64,
                count=len(chart.rows),
            )
            for series in chart.y_axis
        }
        arrays[name] = (chart_steps, columns)
    return arrays


def assert_exact_prefix(model: Any, expected: dict[str, Any], complete: bool = False) -> None:
    """Each chart of a RunModel holds the first `rows` rows of what was written (all of them
    when `complete`), its series in first-seen order, every value bit-exact, gaps as NaN.
    Safe while another thread appends: everything is cut to the row count read first."""
    import numpy as np

    for chart in model.charts:
        steps, columns = expected[chart.name]
        rows = chart.rows
        assert rows == len(steps) if complete else rows <= len(steps), (chart.name, rows)
        assert list(chart.y_axis) == list(columns)[: len(chart.y_axis)], chart.y_axis
        assert np.array_equal(chart.steps()[:rows], steps[:rows]), f"{chart.name}: steps differ"
        for index, name in enumerate(chart.y_axis):
            assert np.array_equal(
                chart.values(index)[:rows], columns[name][:rows], equal_nan=True
            ), f"{chart.name}/{name}: values differ"
    if complete:
        assert sorted(chart.name for chart in model.charts) == sorted(expected)


# -- reading a directory back with plain Python (never with the code under test) -----------


def read_metrics_json(directory: Path) -> dict[str, Any]:
    """metrics.json parsed, asserting the spec's structure (never half-written)."""
    document = json.loads((directory / METRICS_JSON).read_bytes().decode("utf-8"))
    assert isinstance(document, dict) and document.get("version") == 1, document
    assert isinstance(document["charts"], list) and len(document["charts"]) <= 6
    for chart in document["charts"]:
        assert chart["file"] == chart["name"] + ".csv" and isinstance(chart["y_axis"], list)
    return document


def declared_y_axes(directory: Path) -> dict[str, list[str]]:
    return {chart["name"]: chart["y_axis"] for chart in read_metrics_json(directory)["charts"]}


def csv_rows(path: Path) -> tuple[list[list[str]], bytes]:
    """(complete rows split into fields, the unfinished tail after the last newline)."""
    data = path.read_bytes() if path.exists() else b""
    complete, _, tail = data.rpartition(b"\n")
    lines = complete.decode("utf-8").split("\n") if complete or data.startswith(b"\n") else []
    return [line.split(",") for line in lines], tail


def next_step(directory: Path) -> int:
    """One past the largest step of any complete row: where a resumed writer goes on."""
    last = -1
    for path in directory.glob("*.csv"):
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 65536))
            tail = handle.read()
        end = tail.rfind(b"\n")  # a row is far shorter than 64 KiB here
        complete = tail[:end] if end >= 0 else b""
        if complete:
            last = max(last, int(complete.rsplit(b"\n", 1)[-1].split(b",")[0]))
    return last + 1


def temp_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(TEMP_SUFFIX))


def assert_rows_match_plan(
    directory: Path, plan: TrainingPlan, lost_steps_allowed: int = 0, resumed_at: Iterable[int] = ()
) -> int:
    """Every complete row of every chart holds exactly the plan's values for its step, in
    the declared columns; steps strictly increase (nothing doubled); at most
    `lost_steps_allowed` logged steps are missing per chart (a writer killed mid-log loses
    the rows it had not written yet). With `resumed_at` (the steps where a new writer went
    on after a kill), a chart may lose more, but only its newest rows before a kill: rows a
    killed writer kept in memory while it copied a big chart to widen it. Returns the
    number of rows checked."""
    declared = declared_y_axes(directory)
    rows_by_chart: dict[str, dict[int, list[str]]] = {}
    for chart, y_axis in declared.items():
        rows, _ = csv_rows(directory / f"{chart}.csv")
        steps = [int(row[0]) for row in rows]
        assert steps == sorted(set(steps)), f"{chart}: steps doubled or out of order"
        for row in rows:
            assert len(row) == 1 + len(y_axis), (chart, row)
        rows_by_chart[chart] = {int(row[0]): row[1:] for row in rows}
    last = max((max(rows, default=-1) for rows in rows_by_chart.values()), default=-1)
    lost = dict.fromkeys(declared, 0)
    logged = dict.fromkeys(declared, 0)
    kills = set(resumed_at)
    gap_since: dict[str, int] = {}  # chart -> first step of its current run of lost rows
    for step in range(last + 1):
        wanted: dict[str, dict[str, float]] = {}
        for key, value in plan.metrics(step).items():
            wanted.setdefault(chart_of(key), {})[sanitize_key(key)] = value
        for chart, values in wanted.items():
            logged[chart] = logged.get(chart, 0) + 1
            row = rows_by_chart.get(chart, {}).get(step)
            if row is None:
                lost[chart] = lost.get(chart, 0) + 1
                gap_since.setdefault(chart, step)
                continue
            if kills and chart in gap_since:
                first_lost = gap_since.pop(chart)
                assert any(first_lost < kill <= step for kill in kills), (
                    f"{chart}: rows {first_lost}..{step - 1} lost, and no kill came after them"
                )
            got = {
                name: float(text) for name, text in zip(declared[chart], row, strict=True) if text
            }
            assert got == values, (chart, step, got, values)
    if not kills:
        assert max(lost.values(), default=0) <= lost_steps_allowed, f"rows lost: {lost}"
    print(f"rows lost by chart: {lost}")
    for chart, rows in rows_by_chart.items():
        assert len(rows) == logged[chart] - lost[chart], f"{chart}: rows the plan never logged"
    return sum(len(rows) for rows in rows_by_chart.values())


# -- processes ----------------------------------------------------------------------------


def start_writer(
    directory: Path,
    plan: TrainingPlan,
    first_step: int,
    last_step: int,
    pause_chance: float = 0.0,
    pause_max_ms: float = 0.0,
    seed: int = 0,
    **popen: Any,
) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        "-B",
        str(THIS_FILE),
        str(directory),
        f"--first-step={first_step}",
        f"--last-step={last_step}",
        f"--pause-chance={pause_chance}",
        f"--pause-max-ms={pause_max_ms}",
        f"--seed={seed}",
        *plan.as_arguments(),
    ]
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    options.update(popen)
    return subprocess.Popen(command, **options)


def run_writer(directory: Path, plan: TrainingPlan, first_step: int, last_step: int) -> str:
    """Run the writer to completion; returns its stderr (the recorder's warnings)."""
    process = start_writer(directory, plan, first_step, last_step)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return stderr


def _writer_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--first-step", type=int, default=0)
    parser.add_argument("--last-step", type=int, required=True)
    parser.add_argument("--pause-chance", type=float, default=0.0)
    parser.add_argument("--pause-max-ms", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--widen-at", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--new-chart-at", type=int, default=0)
    parser.add_argument("--widen-every", type=int, default=0)
    parser.add_argument("--max-widenings", type=int, default=0)
    parser.add_argument("--widen-from", type=int, default=0)
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    plan = TrainingPlan(
        options.widen_at,
        options.eval_every,
        options.new_chart_at,
        options.widen_every,
        options.max_widenings,
        options.widen_from,
    )
    pauses = random.Random(options.seed)
    recorder = OcmsRecorder(log_dir=options.directory)
    for step in range(options.first_step, options.last_step + 1):
        recorder.log(step=step, metrics=plan.metrics(step))
        if options.pause_chance and pauses.random() < options.pause_chance:
            time.sleep(pauses.uniform(0, options.pause_max_ms) / 1000)
    recorder.finish()
    print(f"wrote steps {options.first_step}..{options.last_step}", flush=True)
    return 0


# -- the directory's state, memory, mounts ------------------------------------------------


def entry_snapshot(directory: Path) -> dict[str, tuple[int, int, int, int, int]]:
    """(inode, size, mtime_ns, ctime_ns, mode) of every entry, and of the directory itself."""
    snapshot = {}
    for path in [directory, *directory.iterdir()]:
        info = path.lstat()
        snapshot[path.name if path != directory else "."] = (
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_mode,
        )
    return snapshot


def peak_rss_kib() -> int:
    """This process's peak resident set since the last `reset_peak_rss()` (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise OSError("no VmHWM in /proc/self/status")


@dataclass
class CapFigure:
    """The worst value a figure reached over every case measured against its cap."""

    cap: float
    unit: str
    worst: float = 0.0
    worst_case: str = ""
    cases: int = 0


# Filled by the tests that measure a cap, printed when their module is done: docs/reliability.md
# quotes the caps with these figures beside them.
MEASURED_AGAINST_CAPS: dict[str, CapFigure] = {}


def measured_against_cap(figure: str, case: str, value: float, cap: float, unit: str) -> None:
    entry = MEASURED_AGAINST_CAPS.setdefault(figure, CapFigure(cap, unit))
    assert (entry.cap, entry.unit) == (cap, unit), f"{figure}: one cap per figure"
    entry.cases += 1
    if value >= entry.worst:
        entry.worst, entry.worst_case = value, case


def cap_report() -> list[str]:
    return [
        f"{figure}: at most {entry.worst:.2f} {entry.unit} ({entry.worst_case}, "
        f"{entry.cases} cases); cap {entry.cap:g} {entry.unit}"
        for figure, entry in MEASURED_AGAINST_CAPS.items()
    ]


def reset_peak_rss() -> int:
    """Reset the peak-RSS mark to the current RSS (writing 5 to clear_refs); returns it."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
        clear_refs.write("5")
    return peak_rss_kib()


def can_mount() -> bool:
    """True when this process may mount filesystems (root with CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        return False
    probe = Path(f"/tmp/ocms-mount-probe-{os.getpid()}")
    probe.mkdir(exist_ok=True)
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True
        )
        if mounted.returncode == 0:
            subprocess.run(["umount", str(probe)], check=True)
        return mounted.returncode == 0
    except OSError:
        return False
    finally:
        probe.rmdir()


@contextlib.contextmanager
def mounted(*mount_arguments: str, target: Path) -> Iterator[Path]:
    """`mount ... target` for the duration of the block (lazy unmount on the way out)."""
    subprocess.run(["mount", *mount_arguments, str(target)], check=True, capture_output=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True)


if __name__ == "__main__":
    raise SystemExit(_writer_main(sys.argv[1:]))
