"""The health corpus: healthy curves that must raise nothing, and the same curves with one
fault injected each (a NaN, a x20 spike, an exponential rise) that must be found at its step.

    python bench/health_corpus.py              # print the result table
    python bench/health_corpus.py --write      # also rewrite tests/data/health_corpus/RESULTS.md
    python bench/health_corpus.py extract OWNER/REPO PATH trainer_state.json
                                               # add the curves of one trainer_state.json

Every curve goes through `ocms-tui --check`'s own path (`check_directory` on an ocms
directory written by the recorder), so a fault counts as found only when --check reports it
with its chart, series and step. tests/test_health_corpus.py runs the same function.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ocms_tui.follow.health import LEVEL_BLOCK

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "health_corpus"
CURVES = CORPUS / "curves"
RESULTS = CORPUS / "RESULTS.md"
# A fault goes at this fraction of a curve's finite rows, so that it has history before it.
FAULT_AT = 0.7
SPIKE_FACTOR = 20.0
# The exponential rise doubles the loss every this many rows, from the fault row on.
RISE_DOUBLING_ROWS = 10
# A divergence is reported where the rise became clear: at most this many rows after it began.
DIVERGENCE_DELAY_ROWS = 48
# Curves shorter than this are in the corpus (no false alarm on them) but get no fault
# injected (no history to judge a fault against).
MIN_ROWS_FOR_FAULTS = 64
# Real events in the public logs, looked at by eye and kept as they are: the detectors must
# report exactly these on the curve as published (and nothing else).
KNOWN_EVENTS: dict[str, list[tuple[str, int]]] = {
    # One row at 35.6 between rows of 1.8-3.0 (15x the median), back at 2.4 the next row:
    # a gradient-norm spike the run recovered from. Reported, as it should be.
    "10844110_t5_summarization_demo__grad_norm.csv": [("spike", 190000)],
}
# Skipped when extracting: not curves of the training (totals, speeds, counters of time).
_SKIPPED_KEYS = re.compile(r"(runtime|per_second|total_flos|^train_loss$|^epoch$|^step$)")


@dataclass(frozen=True)
class Curve:
    name: str  # the series name (what direction and loss-likeness are read from)
    source: str  # file name in curves/
    steps: np.ndarray
    values: np.ndarray


def read_curves(directory: Path = CURVES) -> list[Curve]:
    curves = []
    for path in sorted(directory.glob("*.csv")):
        rows = np.loadtxt(path, delimiter=",", ndmin=2)
        series = path.stem.split("__")[-1]
        curves.append(Curve(series, path.name, rows[:, 0].astype(np.int64), rows[:, 1]))
    return curves


def synthetic_curves(seed: int = 7) -> list[Curve]:
    """Healthy shapes the real logs may lack: warm-up bumps, cosine and step schedules,
    evaluation bumps at epoch ends, 30 % multiplicative noise, heavy-tailed grad norms."""
    rng = np.random.default_rng(seed)
    rows = 2000
    steps = np.arange(rows, dtype=np.int64) * 10
    t = np.arange(rows) / rows
    noise = 1 + 0.3 * rng.uniform(-1, 1, rows)
    warmup = np.minimum(1.0, t / 0.05)
    cosine = 0.5 * (1 + np.cos(np.pi * t))
    decay = 0.4 + 3.0 * np.exp(-t * 6)
    bump = 1 + 0.8 * np.exp(-(((t - 0.02) / 0.01) ** 2))  # loss rises while lr warms up
    epoch_end = 1 + 0.5 * ((np.arange(rows) % 250) > 240)  # a bump at the end of each epoch
    curves = {
        "synthetic_warmup_bump__loss": decay * bump * (1 + 0.05 * rng.standard_normal(rows)),
        "synthetic_noise30__loss": decay * noise,
        "synthetic_epoch_ends__loss": decay * epoch_end * (1 + 0.1 * rng.uniform(-1, 1, rows)),
        "synthetic_cosine__learning_rate": 3e-4 * warmup * cosine,
        "synthetic_step_decay__learning_rate": 0.1 * 0.1 ** np.floor(t * 3),
        "synthetic_restarts__learning_rate": 1e-3 * (0.5 * (1 + np.cos(np.pi * ((t * 4) % 1)))),
        "synthetic_accuracy__eval_accuracy": (0.95 - 0.6 * np.exp(-t * 5)) * (1 + 0.02 * noise),
        "synthetic_grad_norm__grad_norm": np.abs(1.0 + 0.5 * rng.standard_t(3, rows)) + 0.1,
        "synthetic_plateau__loss": 2.0 + 0.3 * rng.standard_normal(rows),
        "synthetic_negative__loss": (decay - 5.0) * noise,  # a log-likelihood loss, falling
        "synthetic_extreme_large__loss": 1e307 * (1 + 0.3 * rng.uniform(-1, 1, rows)),
        "synthetic_extreme_small__loss": np.full(rows, 5e-324),
        "synthetic_constant__loss": np.full(rows, 0.25),
        "synthetic_single_row__loss": np.array([0.7]),
    }
    return [
        Curve(name.split("__")[1], name + " (generated)", steps[: len(values)], values)
        for name, values in curves.items()
    ]


def with_fault(curve: Curve, fault: str) -> tuple[np.ndarray, int]:
    """The curve's values with one fault injected, and the step it is at."""
    values = curve.values.astype(np.float64).copy()
    at = int(len(values) * FAULT_AT)
    if fault == "rise":  # a rise needs rows after it to be told from noise
        at = min(at, len(values) - DIVERGENCE_DELAY_ROWS)
    if fault == "nan":
        values[at] = math.nan
    elif fault == "spike":
        center = float(np.median(values[max(0, at - 64) : at]))
        values[at] = values[at] * SPIKE_FACTOR if values[at] != 0 else 20.0
        if abs(values[at] - center) < abs(center) * (SPIKE_FACTOR / 2):
            values[at] = center * SPIKE_FACTOR  # a value that happens to sit low, scaled
    elif fault == "rise":
        rows = np.arange(len(values) - at)
        scale = max(abs(float(np.median(values[max(0, at - 64) : at]))), 1e-12)
        values[at:] = values[at:] + scale * (2.0 ** (rows / RISE_DOUBLING_ROWS) - 1)
    return values, int(curve.steps[at])


def faults_for(curve: Curve) -> list[str]:
    from ocms_tui.format.direction import is_loss_like

    if len(curve.values) < MIN_ROWS_FOR_FAULTS or not np.isfinite(curve.values).all():
        return []
    if float(np.max(np.abs(curve.values))) > 1e300 or float(np.max(np.abs(curve.values))) < 1e-300:
        return ["nan"]  # x20 overflows or stays in the rounding noise there
    faults = ["nan", "spike"]
    if is_loss_like(curve.name):
        faults.append("rise")
    return faults


def check_curve(name: str, steps: np.ndarray, values: np.ndarray) -> list[tuple[str, int]]:
    """(rule, step) of every health finding --check reports for this one series."""
    from ocms_recorder import OcmsRecorder

    from ocms_tui.follow.checker import check_directory

    with tempfile.TemporaryDirectory() as scratch:
        recorder = OcmsRecorder(log_dir=scratch, chart_groups=[("curve", lambda key: key == name)])
        for step, value in zip(steps.tolist(), values.tolist(), strict=True):
            recorder.log(step=step, metrics={name: value})
        recorder.finish()
        result = check_directory(scratch, settle_seconds=0.0)
    return [
        (problem.rule.value, problem.step)
        for problem in result.problems
        if problem.rule.value in ("non-finite", "spike", "divergence")
        and problem.series == name
        and problem.step is not None
    ]


@dataclass(frozen=True)
class Outcome:
    curve: Curve
    alarms: list[tuple[str, int]]  # on the curve as published, beyond its known events
    known: list[tuple[str, int]]  # its known real events that were reported
    faults: list[tuple[str, int, list[tuple[str, int]]]]  # (fault, its step, findings)

    def found(self, fault: str, step: int, findings: list[tuple[str, int]]) -> bool:
        rule = {"nan": "non-finite", "spike": "spike", "rise": "divergence"}[fault]
        if fault == "rise":
            # The onset is the first step of the block of rows the rise began in.
            low = step_gap(self.curve.steps, step, -LEVEL_BLOCK)
            high = step_gap(self.curve.steps, step, DIVERGENCE_DELAY_ROWS)
            return any(r == rule and low <= at <= high for r, at in findings)
        return (rule, step) in findings


def step_gap(steps: np.ndarray, step: int, rows: int) -> int:
    position = int(np.searchsorted(steps, step))
    return int(steps[max(0, min(len(steps) - 1, position + rows))])


def run_corpus() -> Iterator[Outcome]:
    for curve in read_curves() + synthetic_curves():
        findings = check_curve(curve.name, curve.steps, curve.values)
        expected = KNOWN_EVENTS.get(curve.source, [])
        alarms = [finding for finding in findings if finding not in expected]
        known = [finding for finding in findings if finding in expected]
        faults = []
        for fault in faults_for(curve):
            values, step = with_fault(curve, fault)
            faults.append((fault, step, check_curve(curve.name, curve.steps, values)))
        yield Outcome(curve, alarms, known, faults)


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| curve | series | rows | false alarms | real events found | faults injected |"
        " faults found |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    totals = [0, 0, 0, 0, 0, 0]
    for outcome in outcomes:
        found = sum(outcome.found(*fault) for fault in outcome.faults)
        injected = ", ".join(f"{fault}@{step}" for fault, step, _ in outcome.faults) or "-"
        lines.append(
            f"| {outcome.curve.source} | {outcome.curve.name} | {len(outcome.curve.values)} | "
            f"{len(outcome.alarms)} | {len(outcome.known)} of "
            f"{len(KNOWN_EVENTS.get(outcome.curve.source, []))} | "
            f"{len(outcome.faults)} ({injected}) | {found} |"
        )
        expected = KNOWN_EVENTS.get(outcome.curve.source, [])
        for index, count in enumerate(
            (1, len(outcome.alarms), len(outcome.known), len(expected), len(outcome.faults), found)
        ):
            totals[index] += count
    lines.append(
        f"| **{totals[0]} curves** | | | **{totals[1]}** | **{totals[2]} of {totals[3]}** | "
        f"**{totals[4]}** | **{totals[5]}** |"
    )
    return "\n".join(lines) + "\n"


def extract(repository: str, path: str, state_file: Path, min_rows: int = 20) -> list[Path]:
    """Write each numeric curve of a trainer_state.json's log_history (steps and values
    only) as curves/<owner>_<repo>__<key>.csv; the README lists the sources."""
    history = json.loads(state_file.read_text()).get("log_history", [])
    series: dict[str, list[tuple[int, float]]] = {}
    for entry in history:
        step = entry.get("step")
        if not isinstance(step, int):
            continue
        for key, value in entry.items():
            if _SKIPPED_KEYS.search(key) or isinstance(value, bool):
                continue
            if isinstance(value, (int, float)) and math.isfinite(value):
                series.setdefault(key, []).append((step, float(value)))
    stem = re.sub(r"[^A-Za-z0-9]+", "_", repository).strip("_")
    written = []
    for key, rows in series.items():
        if len(rows) < min_rows:
            continue
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", key)
        target = CURVES / f"{stem}__{name}.csv"
        with target.open("w", newline="") as handle:
            csv.writer(handle).writerows((step, repr(value)) for step, value in rows)
        written.append(target)
    sources = CORPUS / "SOURCES.tsv"
    with sources.open("a") as handle:
        for target in written:
            handle.write(f"{target.name}\t{repository}\t{path}\n")
    return written


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"]:
        _, repository, path, state_file = argv
        for target in extract(repository, path, Path(state_file)):
            print(target.relative_to(ROOT))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {RESULTS.name}")
    arguments = parser.parse_args(argv)
    text = table(list(run_corpus()))
    print(text, end="")
    if arguments.write:
        RESULTS.write_text(
            "# Health corpus: results\n\nGenerated by `python bench/health_corpus.py --write`."
            " A fault counts as found when `--check` reports its rule with this series and"
            f" its step (a divergence: at most {DIVERGENCE_DELAY_ROWS} rows after the rise"
            " began).\n\n" + text
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
