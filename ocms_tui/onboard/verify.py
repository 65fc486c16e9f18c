"""`ocms-tui verify`: the guide's verify_ocms.py as a subcommand.

Without an output directory it self-tests the recorder in a temporary directory (write,
read back, check); with one it checks that run's metric files. Either way it says whether
the proprietary `ocms` package is importable. One line per result; exit 0 or 1.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ocms_recorder import (
    DEFAULT_SUBDIR,
    METRICS_ENV,
    OcmsRecorder,
    chart_file_name,
    resolve_metrics_dir,
    sanitize_key,
)

from ocms_tui.follow.checker import CheckResult, check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.report import dropped_keys, printable, problem_lines
from ocms_tui.format.directories import directory_problem

OK, FAILED = 0, 1

SELF_TEST_STEPS = 5


def self_test_metrics(step: int) -> dict[str, float]:
    """A snapshot with a key for each of the guide's six default charts, including keys
    that must be sanitized (`learning_rate/<group>`, `timing/<phase>`)."""
    return {
        "loss": 2.0 / (step + 1),
        "vlm_loss": 1.0 / (step + 1),
        "learning_rate": 1e-4 * (step + 1),
        "learning_rate/vision_tower": 1e-5 * (step + 1),
        "epoch": step / SELF_TEST_STEPS,
        "timing/data": 0.01 * step,
        "timing/model": 0.125,
        "accuracy": step / 10,
        "grad_norm": 1.5 + step,
    }


def run_verify(output_dir: str | None, require_ocms: bool) -> int:
    """Print one line per result and return the exit code (0 all good, 1 otherwise).

    An empty `output_dir` means no output directory: the self-test. (The command line
    refuses `--output-dir ''`: an unset $OUTPUT_DIR must not pass as a self-test.)
    """
    ocms_ok = _report_ocms(require_ocms)
    files_ok = _check_run(output_dir) if output_dir else _self_test()
    return OK if ocms_ok and files_ok else FAILED


def _report_ocms(require_ocms: bool) -> bool:
    try:
        module = importlib.import_module("ocms")
    except Exception as error:  # a broken install counts as absent; say why
        reason = "not installed" if isinstance(error, ModuleNotFoundError) else repr(error)
        if require_ocms:
            print(
                f"ocms: FAILED: not importable ({printable(reason)}), and --require-ocms was given"
            )
            return False
        print(
            f"ocms: not importable ({printable(reason)}); fine off the Octopus platform: "
            "the recorder writes the metric files without it"
        )
        return True
    print(f"ocms: installed ({printable(_ocms_version(module))})")
    return True


def _ocms_version(module: object) -> str:
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return f"version {version}"
    try:
        return f"version {importlib.metadata.version('ocms')}"
    except importlib.metadata.PackageNotFoundError:
        return "version unknown"


def _self_test() -> bool:
    with tempfile.TemporaryDirectory(prefix="ocms-verify-") as temporary:
        log_dir = os.path.join(temporary, DEFAULT_SUBDIR)
        recorder = OcmsRecorder(log_dir=log_dir, mirror_to_ocms=False)
        if not recorder.active:
            print(
                f"self-test: FAILED: the recorder is disabled in this process (rank "
                f"{recorder.rank}); run verify outside a distributed launcher"
            )
            return False
        for step in range(SELF_TEST_STEPS):
            recorder.log(step=step, metrics=self_test_metrics(step))
        recorder.finish()

        result = check_directory(log_dir)
        if result.problems:
            _print_problems(result)
            print(
                f"self-test: FAILED: the files the recorder wrote have {len(result.problems)} problem(s)"
            )
            return False
        mismatch = _read_back_mismatch(log_dir)
        if mismatch:
            print(f"self-test: FAILED: read back {mismatch}")
            return False
    charts = ", ".join(chart.name for chart in result.charts)
    print(
        f"self-test: OK: metrics.json and {len(result.charts)} chart CSVs ({charts}) written, "
        f"read back ({SELF_TEST_STEPS} steps each) and checked without problems"
    )
    return True


def _read_back_mismatch(log_dir: str) -> str | None:
    """What differs between the self-test's snapshots and what the reader gets from disk."""
    expected: dict[str, dict[int, float]] = {}
    for step in range(SELF_TEST_STEPS):
        for key, value in self_test_metrics(step).items():
            expected.setdefault(sanitize_key(key), {})[step] = value
    model = RunModel(log_dir, settle_seconds=0.5)
    model.load_settled()
    found: dict[str, dict[int, float]] = {}
    for chart in model.charts:
        steps = [int(step) for step in chart.steps()]
        for index, name in enumerate(chart.y_axis):
            found[name] = {
                step: float(value)
                for step, value in zip(steps, chart.values(index), strict=True)
                if not math.isnan(value)
            }
    return _difference(expected, found)


def _difference(
    expected: Mapping[str, Mapping[int, float]], found: Mapping[str, Mapping[int, float]]
) -> str | None:
    if set(found) != set(expected):
        return f"series {sorted(found)}, expected {sorted(expected)}"
    for name, values in expected.items():
        if found[name] != values:
            return f"series {name!r} = {dict(found[name])}, expected {dict(values)}"
    return None


def _check_run(output_dir: str) -> bool:
    metrics_dir = resolve_metrics_dir(output_dir)
    source = f"${METRICS_ENV}" if os.environ.get(METRICS_ENV) else "--output-dir"
    shown = printable(metrics_dir)
    problem = directory_problem(Path(metrics_dir))
    if problem is not None and problem.may_appear:
        print(f"metrics: FAILED: {shown} (from {source}) does not exist: no metrics were recorded")
        return False
    if problem is not None:  # a file in its path, a name too long, no permission
        print(f"metrics: FAILED: {printable(problem.message)} (from {source})")
        return False
    result = check_directory(metrics_dir)
    _print_problems(result)
    rows = sum(chart.rows for chart in result.charts)
    if result.errors:
        print(f"metrics: FAILED: {shown} (from {source}) has {result.errors} error(s)")
        return False
    if rows == 0:
        print(f"metrics: FAILED: {shown} (from {source}) has metrics.json but no recorded rows")
        return False
    dropped = dropped_keys(result.problems)
    if dropped:
        names = ", ".join(printable(repr(key)) for key in dropped)
        print(f"metrics: not written by the recorder (see the dropped-metric lines): {names}")
    files = ", ".join(
        f"{printable(chart_file_name(chart.name))} ({chart.rows} rows)" for chart in result.charts
    )
    print(
        f"metrics: OK: {shown} (from {source}): metrics.json and {files}; "
        f"{result.warnings} warning(s)"
    )
    return True


def _print_problems(result: CheckResult) -> None:
    """The checker's own one-line-per-problem text."""
    for line in problem_lines(result, color=False):
        print(line)
