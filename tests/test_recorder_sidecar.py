"""The recorder's `.ocms-recorder.json`: each key it did not write, why, at which steps and
how often; the chart groups in force as text; its version. Written atomically when a key is
first dropped and at finish(), never per step; a sidecar that cannot be written (a real
EFBIG, a blocked temp file) never stops the CSVs nor makes the directory invalid."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from ocms_recorder import (
    DEFAULT_CHART_GROUPS,
    MAX_SERIES_PER_CHART,
    MAX_STEP,
    SIDECAR,
    OcmsRecorder,
    rule_text,
)
from test_recorder_support import (
    RECORDER_DIR,
    assert_consistent,
    dropped,
    read_rows,
    read_sidecar,
    run_python,
    warnings_from_recorder,
)

from ocms_tui.follow.checker import check_directory

pytestmark = pytest.mark.usefixtures("no_launcher_environment")

DEFAULT_RULES_TEXT = [
    {"chart": "loss", "accepts": "k == 'loss' or k.endswith('_loss')"},
    {"chart": "learning_rate", "accepts": "k == 'learning_rate' or k.startswith('learning_rate/')"},
    {"chart": "epoch", "accepts": "k == 'epoch'"},
    {"chart": "timing", "accepts": "k.startswith('timing/')"},
    {"chart": "eval_score", "accepts": "k in ('mse_score', 'accuracy', 'mIoU')"},
    {"chart": "grad_norm", "accepts": "k == 'grad_norm'"},
]


def _no_errors(directory: Path) -> None:
    """At rest the directory is whole; a checker may warn about the dropped keys only."""
    assert_consistent(directory)
    result = check_directory(directory)
    assert result.errors == 0, result.problems


def test_each_dropped_key_is_on_record_with_its_reason_steps_and_count(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(1201):  # the fast path after the first call: counted all the same
            recorder.log(step=step, metrics={"loss": 1.0 / (step + 1), "lr": 0.1})
        recorder.log(step=5, metrics={"loss": 0.5, "note_loss": "warm-up done"})
        recorder.log(step=7, metrics={"loss": "n/a"})
        recorder.log(step=MAX_STEP + 1, metrics={"loss": 0.25})
        recorder.log(step=MAX_STEP + 9, metrics={"loss": 0.25})
    document = read_sidecar(tmp_path)
    assert document["chart_groups"] == DEFAULT_RULES_TEXT
    entries = {(entry["key"], entry["reason"]): entry for entry in document["dropped"]}
    assert entries[("lr", "no-chart-group")] == {
        "key": "lr",
        "reason": "no-chart-group",
        "first_step": 0,
        "last_step": 1200,
        "count": 1201,
        "message": "no chart group accepts 'lr'",
    }
    assert dropped(tmp_path) == {
        ("lr", "no-chart-group"): (0, 1200, 1201),
        ("note_loss", "not-a-number"): (5, 5, 1),
        ("loss", "not-a-number"): (7, 7, 1),
        (None, "step-too-large"): (MAX_STEP + 1, MAX_STEP + 9, 2),
    }
    assert "not a number" in entries[("note_loss", "not-a-number")]["message"]
    assert str(MAX_STEP + 1) in entries[(None, "step-too-large")]["message"]
    assert len(read_rows(tmp_path, "loss.csv")) == 1202
    _no_errors(tmp_path)
    assert len(warnings_from_recorder(recorder_warnings)) == 4  # each said once, as before


def test_a_key_over_the_y_axis_cap_is_on_record(tmp_path: Path) -> None:
    groups = [("many", lambda k: k.startswith("m"))]
    metrics = {f"m{index}": 1.0 for index in range(MAX_SERIES_PER_CHART + 2)}
    logging.getLogger("ocms_recorder").disabled = True
    try:
        with OcmsRecorder(log_dir=str(tmp_path), chart_groups=groups) as recorder:
            for step in range(3):
                recorder.log(step=step, metrics=metrics)
    finally:
        logging.getLogger("ocms_recorder").disabled = False
    over = f"m{MAX_SERIES_PER_CHART}", f"m{MAX_SERIES_PER_CHART + 1}"
    assert dropped(tmp_path) == {(key, "y-axis-cap"): (0, 2, 3) for key in over}
    _no_errors(tmp_path)


def test_the_sidecar_is_written_at_a_new_drop_and_at_finish_never_per_step(
    tmp_path: Path,
) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.log(step=0, metrics={"loss": 1.0, "lr": 0.1})
    assert dropped(tmp_path) == {("lr", "no-chart-group"): (0, 0, 1)}  # at once
    written = (tmp_path / SIDECAR).stat()
    for step in range(1, 2000):
        recorder.log(step=step, metrics={"loss": 1.0, "lr": 0.1})
    unchanged = (tmp_path / SIDECAR).stat()
    assert (unchanged.st_ino, unchanged.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert dropped(tmp_path) == {("lr", "no-chart-group"): (0, 0, 1)}  # counts lag meanwhile
    recorder.health_check_interval_s = 0.0  # a new key is written at once, not a second later
    recorder.log(step=2000, metrics={"loss": 1.0, "momentum": 0.9})
    assert dropped(tmp_path) == {
        ("lr", "no-chart-group"): (0, 1999, 2000),  # folded in when the file is written
        ("momentum", "no-chart-group"): (2000, 2000, 1),
    }
    recorder.log(step=2001, metrics={"loss": 1.0, "momentum": 0.9, "lr": 0.1})
    recorder.finish()
    assert dropped(tmp_path) == {
        ("lr", "no-chart-group"): (0, 2001, 2001),
        ("momentum", "no-chart-group"): (2000, 2001, 2),
    }
    _no_errors(tmp_path)


def test_a_run_that_drops_nothing_writes_no_sidecar(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    assert not (tmp_path / SIDECAR).exists()


def test_a_resumed_run_carries_the_earlier_record_on(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(10):
            recorder.log(step=step, metrics={"loss": 1.0, "lr": 0.1})
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(10, 15):
            recorder.log(step=step, metrics={"loss": 1.0, "lr": 0.1, "note_loss": "x"})
    assert dropped(tmp_path) == {
        ("lr", "no-chart-group"): (0, 14, 15),
        ("note_loss", "not-a-number"): (10, 14, 5),
    }


def test_keys_are_written_as_given(tmp_path: Path) -> None:
    keys = ['say "hi"', "line\nbreak", "\u2028\u202e[red]x[/red]", "\x1b[2J", "caf\u00e9", "\ud800"]
    logging.getLogger("ocms_recorder").disabled = True
    try:
        with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
            recorder.log(step=0, metrics={"loss": 1.0, 7: 1.0, **dict.fromkeys(keys, 1.0)})
    finally:
        logging.getLogger("ocms_recorder").disabled = False
    assert set(dropped(tmp_path)) == {(key, "no-chart-group") for key in [*keys, "7"]}
    assert (tmp_path / SIDECAR).read_bytes().isascii()  # every odd character escaped
    _no_errors(tmp_path)


def _named_rule(key: str) -> bool:
    return key.startswith("val/")


class _Accepts:
    __hash__ = None  # an unhashable callable: no lookup may fail on it

    def __call__(self, key: str) -> bool:
        return key == "other"


class _Hostile:
    def __call__(self, key: str) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        raise RuntimeError("no attributes here")


def _starts_with(prefix: str) -> Callable[[str], bool]:
    return lambda k: k.startswith(prefix)


def test_chart_groups_are_readable_text() -> None:
    first, second = lambda k: k.endswith("acc"), lambda k: "f1" in k  # two on one line
    assert [rule_text(accepts) for _, accepts in DEFAULT_CHART_GROUPS] == [
        rule["accepts"] for rule in DEFAULT_RULES_TEXT
    ]
    assert rule_text(lambda key: key == "x" or key.endswith(")")) == (
        'lambda key: key == "x" or key.endswith(")")'
    )
    assert rule_text(first) == 'lambda k: k.endswith("acc")'
    assert rule_text(second) == 'lambda k: "f1" in k'
    assert rule_text(_named_rule) == f"{__name__}._named_rule"
    assert rule_text(_Accepts()) == f"{__name__}._Accepts object"
    assert rule_text(functools.partial(str.startswith)) == "functools.partial object"
    made_elsewhere = eval("lambda k: True")  # no source file: its name, honestly
    assert rule_text(made_elsewhere) == f"{__name__}.<lambda>"
    assert rule_text(_Hostile()) == f"{__name__}._Hostile object"
    closures = [rule_text(_starts_with(prefix)) for prefix in ("a", "b")]
    assert closures == ["lambda k: k.startswith(prefix)"] * 2


# -- faults: the sidecar never stops the metrics ---------------------------------------------

# A real RLIMIT_FSIZE below the sidecar's size (it lists six chart groups) but above what the
# CSVs and metrics.json need: every write of the sidecar fails with EFBIG.
SIDECAR_TOO_BIG = """
import logging, os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (400, 400))
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
from ocms_recorder import OcmsRecorder
recorder = OcmsRecorder(log_dir=sys.argv[1])
recorder.health_check_interval_s = 0.0  # retried at every call: still never in the way
for step in range(30):
    recorder.log(step=step, metrics={"loss": 0.5, "lr": 0.1, "step_%d" % (step % 3): 1.0})
recorder.finish()
print("training went on")
"""


def test_a_sidecar_the_disk_refuses_never_stops_the_csvs(tmp_path: Path) -> None:
    result = run_python(SIDECAR_TOO_BIG, tmp_path, RECORDER_DIR)
    assert result.returncode == 0 and result.stdout == "training went on\n", result.stderr
    warnings = result.stderr.splitlines()
    assert len(warnings) == 5, result.stderr  # lr, step_0, step_1, step_2, and the sidecar
    about_the_sidecar = [line for line in warnings if SIDECAR in line]
    assert len(about_the_sidecar) == 1 and "File too large" in about_the_sidecar[0]
    assert read_rows(tmp_path, "loss.csv") == [[str(step), "0.5"] for step in range(30)]
    assert not (tmp_path / SIDECAR).exists()
    _no_errors(tmp_path)  # and no temp file left


def test_a_blocked_sidecar_is_written_once_it_can_be(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / f".{SIDECAR}.{os.getpid()}.tmp"  # its temp file's name, a directory
    blocker.mkdir()
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.health_check_interval_s = 0.0
    for step in range(5):
        recorder.log(step=step, metrics={"loss": 1.0, "lr": 0.1})
    assert len(read_rows(tmp_path, "loss.csv")) == 5 and not (tmp_path / SIDECAR).exists()
    blocker.rmdir()
    recorder.log(step=5, metrics={"loss": 1.0, "lr": 0.1})  # the health check writes it
    assert dropped(tmp_path)[("lr", "no-chart-group")][0] == 0
    recorder.finish()
    assert dropped(tmp_path) == {("lr", "no-chart-group"): (0, 5, 6)}
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 2 and SIDECAR in warnings[1], warnings
    _no_errors(tmp_path)


def test_a_hostile_earlier_sidecar_is_replaced(tmp_path: Path) -> None:
    (tmp_path / SIDECAR).write_text('{"format": "ocms-recorder", "version": 1, "dropped": [')
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=3, metrics={"loss": 1.0, "lr": 0.1})
    assert dropped(tmp_path) == {("lr", "no-chart-group"): (3, 3, 1)}
