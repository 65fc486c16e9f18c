"""OcmsRecorder: the API, the layout it writes, and how it maps metrics onto charts.
Resuming into an existing directory is in test_recorder_resume.py, faults while training in
test_recorder_faults.py, ranks and the one-stdlib-file promise in test_recorder_portability.py."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import sys
import tempfile
import types
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ocms_recorder import (
    DEFAULT_CHART_GROUPS,
    MAX_CHART_NAME_LENGTH,
    MAX_STEP,
    SIDECAR,
    OcmsRecorder,
    sanitize_key,
)
from test_recorder_support import (
    BIG_CHART,
    RECORDER_DIR,
    TEN_METRICS,
    assert_consistent,
    read_layout,
    read_rows,
    read_sidecar,
    run_python,
    warnings_from_recorder,
    y_axes,
)

from ocms_tui.follow.checker import check_directory

pytestmark = pytest.mark.usefixtures("no_launcher_environment")


def test_from_output_dir_prefers_the_metrics_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METRICS", str(tmp_path / "platform"))
    recorder = OcmsRecorder.from_output_dir(tmp_path / "out")
    recorder.log(step=0, metrics={"loss": 1.0})
    recorder.finish()
    assert read_rows(tmp_path / "platform", "loss.csv") == [["0", "1.0"]]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("metrics_value", [None, ""])
def test_from_output_dir_falls_back_to_ocms_metrics_under_output_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metrics_value: str | None
) -> None:
    if metrics_value is not None:
        monkeypatch.setenv("METRICS", metrics_value)
    recorder = OcmsRecorder.from_output_dir(str(tmp_path / "out"))
    recorder.log(step=3, metrics={"loss": 2.0})
    recorder.finish()
    assert recorder.log_dir == str(tmp_path / "out" / "ocms_metrics")
    assert read_rows(tmp_path / "out" / "ocms_metrics", "loss.csv") == [["3", "2.0"]]


def test_without_log_dir_it_writes_to_ocms_metrics_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with OcmsRecorder() as recorder:
        recorder.log(step=1, metrics={"grad_norm": 0.5})
    assert read_rows(tmp_path / "ocms_metrics", "grad_norm.csv") == [["1", "0.5"]]


def test_ten_metrics_fill_the_six_default_charts_in_their_order(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=TEN_METRICS)
        recorder.log(step=10, metrics=TEN_METRICS)
    layout = read_layout(tmp_path)
    assert layout == {
        "version": 1,
        "charts": [
            {
                "name": "loss",
                "file": "loss.csv",
                "x_axis": "step",
                "y_axis": ["loss", "vlm_loss", "action_dit_loss"],
            },
            {
                "name": "learning_rate",
                "file": "learning_rate.csv",
                "x_axis": "step",
                "y_axis": ["learning_rate", "lr_vision_tower"],
            },
            {"name": "epoch", "file": "epoch.csv", "x_axis": "step", "y_axis": ["epoch"]},
            {"name": "timing", "file": "timing.csv", "x_axis": "step", "y_axis": ["data", "model"]},
            {
                "name": "eval_score",
                "file": "eval_score.csv",
                "x_axis": "step",
                "y_axis": ["accuracy"],
            },
            {
                "name": "grad_norm",
                "file": "grad_norm.csv",
                "x_axis": "step",
                "y_axis": ["grad_norm"],
            },
        ],
    }
    assert read_rows(tmp_path, "loss.csv") == [["0", "0.5", "0.25", "0.125"]] * 1 + [
        ["10", "0.5", "0.25", "0.125"]
    ]
    assert read_rows(tmp_path, "learning_rate.csv")[1] == ["10", "0.0001", "1e-05"]
    assert read_rows(tmp_path, "epoch.csv") == [["0", "1.0"], ["10", "1.0"]]
    assert read_rows(tmp_path, "timing.csv")[0] == ["0", "0.01", "0.2"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "epoch.csv",
        "eval_score.csv",
        "grad_norm.csv",
        "learning_rate.csv",
        "loss.csv",
        "metrics.json",
        "timing.csv",
    ]
    assert_consistent(tmp_path)


def test_chart_order_follows_the_groups_not_the_first_logged_key(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"grad_norm": 1.0})
        recorder.log(step=1, metrics={"epoch": 0})
        recorder.log(step=2, metrics={"loss": 3.0})
    assert [chart["name"] for chart in read_layout(tmp_path)["charts"]] == [
        "loss",
        "epoch",
        "grad_norm",
    ]


def test_values_are_floats_as_repr_writes_them_and_steps_are_integers(tmp_path: Path) -> None:
    metrics = {"loss": 2, "vlm_loss": True, "action_dit_loss": 0.1 + 0.2, "eval_loss": -0.0}
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=7, metrics=metrics)
        recorder.log(step=np.int64(8), metrics={"loss": float("nan"), "eval_loss": math.inf})
        recorder.log(step=9.0, metrics={"loss": 1e308 * 10})
    assert read_rows(tmp_path, "loss.csv") == [
        ["7", "2.0", "1.0", "0.30000000000000004", "-0.0"],
        ["8", "nan", "", "", "inf"],
        ["9", "inf", "", "", ""],
    ]


def test_an_absent_metric_is_an_empty_field_and_a_chart_without_values_gets_no_row(
    tmp_path: Path,
) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0, "eval_loss": 2.0, "grad_norm": 0.5})
        recorder.log(step=1, metrics={"eval_loss": 1.5})
        recorder.log(step=2, metrics={"loss": 0.75})
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0", "2.0"],
        ["1", "", "1.5"],
        ["2", "0.75", ""],
    ]
    assert read_rows(tmp_path, "grad_norm.csv") == [["0", "0.5"]]


def test_keys_are_sanitized_into_legal_y_axis_names(tmp_path: Path) -> None:
    metrics = {
        "learning_rate/vision tower": 1e-5,
        "timing/data.load": 0.1,
        "loss@rank:0_loss": 0.5,
        "mIoU": 0.25,
    }
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=metrics)
    assert y_axes(tmp_path) == {
        "loss": ["loss_rank_0_loss"],
        "learning_rate": ["lr_vision_tower"],
        "timing": ["data_load"],
        "eval_score": ["mIoU"],
    }
    assert_consistent(tmp_path)


def test_keys_sanitizing_to_one_name_get_suffixes_and_one_warning_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    metrics = {"timing/a b": 1.0, "timing/a.b": 2.0, "timing/a_b": 3.0}
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(5):
            recorder.log(step=step, metrics=metrics)
    assert y_axes(tmp_path) == {"timing": ["a_b", "a_b_2", "a_b_3"]}
    assert read_rows(tmp_path, "timing.csv")[4] == ["4", "1.0", "2.0", "3.0"]
    collisions = [text for text in warnings_from_recorder(caplog) if "sanitizes to" in text]
    assert len(collisions) == 2
    assert "'timing/a.b'" in collisions[0] and "'a_b_2'" in collisions[0]


def test_custom_groups_route_each_key_to_the_first_group_that_accepts_it(tmp_path: Path) -> None:
    groups = [
        ("reward", lambda key: "reward" in key),
        ("all-else", lambda key: True),
    ]
    with OcmsRecorder(log_dir=str(tmp_path), chart_groups=groups) as recorder:
        recorder.log(step=0, metrics={"reward_loss": 1.0, "loss": 2.0, "mean_reward": 3.0})
    assert y_axes(tmp_path) == {"reward": ["reward_loss", "mean_reward"], "all-else": ["loss"]}


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([(f"chart{index}", bool) for index in range(7)], "at most 6"),
        ([("bad name", bool)], "only letters"),
        ([("", bool)], "only letters"),
        ([("loss", bool), ("loss", bool)], "two chart groups"),
        ([("loss", "not callable")], "pair"),
        ([("loss",)], "pair"),
        ([], "empty"),
        ([("x" * (MAX_CHART_NAME_LENGTH + 1), bool)], "at most 100"),
    ],
)
def test_bad_chart_groups_raise_a_clear_value_error_at_construction(
    tmp_path: Path, groups: list[Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        OcmsRecorder(log_dir=str(tmp_path), chart_groups=groups)
    assert list(tmp_path.iterdir()) == []


def test_a_chart_name_of_the_longest_allowed_length_is_written(tmp_path: Path) -> None:
    name = "x" * MAX_CHART_NAME_LENGTH
    with OcmsRecorder(log_dir=str(tmp_path), chart_groups=[(name, bool)]) as recorder:
        recorder.log(step=0, metrics={"a": 1.0})
        recorder.log(step=1, metrics={"a": 1.0, "b": 2.0})  # a widening's temp file fits too
    assert read_rows(tmp_path, name + ".csv") == [["0", "1.0", ""], ["1", "1.0", "2.0"]]
    assert check_directory(tmp_path).problems == ()


def test_six_groups_are_allowed(tmp_path: Path) -> None:
    OcmsRecorder(log_dir=str(tmp_path), chart_groups=list(DEFAULT_CHART_GROUPS)).finish()


def test_a_late_key_widens_its_chart_with_atomic_rewrites(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(3):
            recorder.log(step=step, metrics={"loss": 1.0, "grad_norm": 2.0})
        csv_inode = (tmp_path / "loss.csv").stat().st_ino
        json_inode = (tmp_path / "metrics.json").stat().st_ino
        untouched_inode = (tmp_path / "grad_norm.csv").stat().st_ino
        recorder.log(step=3, metrics={"loss": 0.5, "eval_loss": 0.75})
        # Seen by a reader before finish(): both files were replaced, not edited in place.
        assert (tmp_path / "loss.csv").stat().st_ino != csv_inode
        assert (tmp_path / "metrics.json").stat().st_ino != json_inode
        assert (tmp_path / "grad_norm.csv").stat().st_ino == untouched_inode
        assert y_axes(tmp_path)["loss"] == ["loss", "eval_loss"]
        assert read_rows(tmp_path, "loss.csv") == [
            ["0", "1.0", ""],
            ["1", "1.0", ""],
            ["2", "1.0", ""],
            ["3", "0.5", "0.75"],
        ]
        recorder.log(step=4, metrics={"loss": 0.25})
    assert read_rows(tmp_path, "loss.csv")[-1] == ["4", "0.25", ""]
    assert_consistent(tmp_path)


# The copy of a big chart is held at its first read (an audit hook on the copying thread's
# open) until the caller has logged 50 more steps: a log() that waited for the copy would
# deadlock here, and the hook's timeout would then let the copy go and report it.
WIDENING_OFF_THE_CALLERS_THREAD = (
    BIG_CHART
    + """
import json, threading
size_before = os.path.getsize(csv_path)
caller_went_on = threading.Event()
held = []
def hold_the_copy(event, args):
    if event == "open" and args[0] == csv_path and threading.current_thread().name == "ocms-recorder-widen":
        held.append(caller_went_on.wait(timeout=60))
sys.addaudithook(hold_the_copy)
recorder = OcmsRecorder(log_dir=directory)
recorder.health_check_interval_s = 0.0
recorder.log(step=rows, metrics={"loss": 0.25, "eval_loss": 0.125})  # a new column: widen
for step in range(rows + 1, rows + 51):
    recorder.log(step=step, metrics={"loss": 0.25, "eval_loss": 0.125})
if sys.argv[3] == "another-key-meanwhile":  # and metrics.json lost: saved again meanwhile
    os.remove(os.path.join(directory, "metrics.json"))
    recorder.log(step=rows + 51, metrics={"loss": 0.25, "x_loss": 1.0})
with open(os.path.join(directory, "metrics.json")) as handle:
    declared = json.load(handle)["charts"][0]["y_axis"]
size_while_copying = os.path.getsize(csv_path)
caller_went_on.set()
recorder.finish()
unchanged = size_while_copying == size_before
print(json.dumps({"held": held, "declared": declared, "rows": rows, "unchanged": unchanged}))
"""
)


@pytest.mark.parametrize("mode", ["one-key", "another-key-meanwhile"])
def test_a_big_chart_is_widened_off_the_callers_thread_and_keeps_every_row(
    tmp_path: Path, mode: str
) -> None:
    result = run_python(WIDENING_OFF_THE_CALLERS_THREAD, tmp_path, RECORDER_DIR, mode)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["held"][0] is True, "log() waited for the copy"
    # While the copy ran, metrics.json and the CSV stayed as they were: the new rows waited.
    assert report["declared"] == ["loss"] and report["unchanged"]
    rows = report["rows"]
    written = read_rows(tmp_path, "loss.csv")
    assert written[0][:2] == ["0", "0.5"] and written[rows - 1][:2] == [str(rows - 1), "0.5"]
    logged = [[str(step), "0.25", "0.125"] for step in range(rows, rows + 51)]
    if mode == "one-key":
        assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss"]}
        assert written[rows:] == logged
    else:  # the first copy ran to its end unused, then a second one, wider
        assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss", "x_loss"]}
        last = [str(rows + 51), "0.25", "", "1.0"]
        assert written[rows:] == [*([*row, ""] for row in logged), last]
    assert check_directory(tmp_path).problems == ()
    assert_consistent(tmp_path)


EXIT_DURING_A_WIDENING = (
    BIG_CHART
    + """
import signal, time
recorder = OcmsRecorder(log_dir=directory)
for step in range(rows, rows + 20):
    recorder.log(step=step, metrics={"loss": 0.25, "eval_loss": 0.125})
print(rows, flush=True)  # and exit without finish(): the rows that wait are written anyway
if sys.argv[3] == "ctrl-c":  # a real SIGINT while the copy runs: KeyboardInterrupt ends it
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
"""
)


@pytest.mark.parametrize("ending", ["exit", "ctrl-c"])
def test_rows_waiting_for_a_widening_are_written_when_the_script_exits_without_finish(
    tmp_path: Path, ending: str
) -> None:
    result = run_python(EXIT_DURING_A_WIDENING, tmp_path, RECORDER_DIR, ending)
    if ending == "exit":
        assert result.returncode == 0 and result.stderr == "", result.stderr
    else:  # Python ends a script a KeyboardInterrupt stopped by the signal (after atexit)
        assert result.returncode == -signal.SIGINT and "KeyboardInterrupt" in result.stderr
    rows = int(result.stdout)
    written = read_rows(tmp_path, "loss.csv")
    assert written[rows:] == [[str(step), "0.25", "0.125"] for step in range(rows, rows + 20)]
    assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss"]}
    assert check_directory(tmp_path).problems == ()


def test_rows_are_on_disk_as_soon_as_log_returns(tmp_path: Path) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    for step in range(3):
        recorder.log(step=step, metrics=TEN_METRICS)
        for chart in read_layout(tmp_path)["charts"]:
            assert len(read_rows(tmp_path, chart["file"])) == step + 1
    recorder.finish()


def test_numpy_scalars_are_numbers(tmp_path: Path) -> None:
    metrics = {
        "loss": np.float32(0.1),
        "vlm_loss": np.float64(0.2),
        "eval_loss": np.int64(3),
        "x_loss": np.bool_(True),
        "y_loss": np.array(0.5),
    }
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(3):  # later calls take the fast path: the same text must come out
            recorder.log(step=step, metrics=metrics)
    expected = ["0.10000000149011612", "0.2", "3.0", "1.0", "0.5"]
    assert read_rows(tmp_path, "loss.csv") == [[str(step), *expected] for step in range(3)]


def test_zero_dimensional_torch_tensors_are_numbers(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    metrics = {
        "loss": torch.tensor(0.5),
        "vlm_loss": torch.tensor(0.1, dtype=torch.float64),
        "eval_loss": torch.tensor(7),
        "grad_norm": torch.tensor([1.0, 2.0]),  # not a scalar: skipped
    }
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(3):
            recorder.log(step=torch.tensor(step), metrics=metrics)
    assert read_rows(tmp_path, "loss.csv") == [
        [str(step), "0.5", "0.1", "7.0"] for step in range(3)
    ]
    assert not (tmp_path / "grad_norm.csv").exists()


class _WithItem:
    def item(self) -> float:
        return 0.25


class _WithFloat:
    def __float__(self) -> float:
        return 0.75


class _FloatRaises:
    def __float__(self) -> float:
        raise RuntimeError("device lost")


def test_objects_with_item_or_float_are_numbers(tmp_path: Path) -> None:
    metrics = {"loss": _WithItem(), "vlm_loss": _WithFloat(), "eval_loss": Fraction(1, 4)}
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=metrics)
        recorder.log(step=1, metrics=metrics)
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "0.25", "0.75", "0.25"],
        ["1", "0.25", "0.75", "0.25"],
    ]


def test_a_float_method_that_raises_skips_that_value_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(4):
            recorder.log(step=step, metrics={"loss": 1.0, "eval_loss": _FloatRaises()})
    assert read_rows(tmp_path, "loss.csv") == [[str(step), "1.0"] for step in range(4)]
    warnings = warnings_from_recorder(caplog)
    assert len(warnings) == 1 and "'eval_loss'" in warnings[0] and "device lost" in warnings[0]


def test_strings_and_other_objects_are_skipped_with_one_warning_per_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    metrics = {"loss": "0.5", "vlm_loss": None, "eval_loss": [1.0], "grad_norm": 2.0}
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(5):
            recorder.log(step=step, metrics=metrics)
    assert not (tmp_path / "loss.csv").exists()
    assert y_axes(tmp_path) == {"grad_norm": ["grad_norm"]}
    warnings = warnings_from_recorder(caplog)
    assert len(warnings) == 3
    assert {"'loss'", "'vlm_loss'", "'eval_loss'"} == {
        text.split()[1].rstrip(":") for text in warnings
    }


def test_keys_no_group_accepts_are_skipped_with_one_warning_per_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(5):
            recorder.log(step=step, metrics={"loss": 1.0, "tokens_per_s": 9.0, "phase": "train"})
    assert y_axes(tmp_path) == {"loss": ["loss"]}
    warnings = warnings_from_recorder(caplog)
    assert len(warnings) == 2
    assert all("matches no chart group" in text for text in warnings)


def test_a_predicate_that_raises_counts_as_not_accepting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    groups = [("picky", lambda key: key.startswith("p") or 1 / 0), ("rest", lambda key: True)]
    with OcmsRecorder(log_dir=str(tmp_path), chart_groups=groups) as recorder:
        recorder.log(step=0, metrics={"p1": 1.0, "q1": 2.0, "q2": 3.0})
    assert y_axes(tmp_path) == {"picky": ["p1"], "rest": ["q1", "q2"]}
    assert len(warnings_from_recorder(caplog)) == 1


@pytest.mark.parametrize(
    "step", [-1, 2.5, "ten", None, np.float64(-3.0), MAX_STEP + 1, 2**63, np.uint64(2**63)]
)
def test_a_step_that_is_not_a_non_negative_integer_skips_the_snapshot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, step: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=step, metrics={"loss": 1.0})
        recorder.log(step=step, metrics={"loss": 1.0})
        recorder.log(step=5, metrics={"loss": 2.0})
    assert read_rows(tmp_path, "loss.csv") == [["5", "2.0"]]
    assert len(warnings_from_recorder(caplog)) == 1


def test_the_largest_step_is_written_and_passes_the_check(tmp_path: Path) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=MAX_STEP, metrics={"loss": 1.0})
        recorder.log(step=np.int64(MAX_STEP), metrics={"loss": 2.0})
    assert read_rows(tmp_path, "loss.csv") == [[str(MAX_STEP), "1.0"], [str(MAX_STEP), "2.0"]]
    assert check_directory(tmp_path).problems == ()


@pytest.mark.parametrize("metrics", [None, ["loss", 1.0], 3.0])
def test_metrics_that_are_not_a_mapping_never_raise(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, metrics: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=metrics)
        recorder.log(step=1, metrics=metrics)
        recorder.log(step=2, metrics={"loss": 1.0})
    assert read_rows(tmp_path, "loss.csv") == [["2", "1.0"]]
    assert len(warnings_from_recorder(caplog)) == 1


def test_finish_is_idempotent_and_a_later_log_appends_again(tmp_path: Path) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.log(step=0, metrics={"loss": 1.0})
    recorder.finish()
    recorder.finish()
    recorder.log(step=1, metrics={"loss": 2.0, "eval_loss": 3.0})
    recorder.finish()
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0", ""], ["1", "2.0", "3.0"]]


def test_the_context_manager_closes_its_files_and_lets_go_of_the_directory(
    tmp_path: Path,
) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=TEN_METRICS)
        open_before = len(os.listdir("/proc/self/fd"))
    assert len(os.listdir("/proc/self/fd")) == open_before - 7  # six CSVs and the lock


def test_a_disabled_recorder_writes_nothing(tmp_path: Path) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path / "off"), enabled=False)
    recorder.log(step=0, metrics=TEN_METRICS)
    recorder.finish()
    assert not (tmp_path / "off").exists()
    assert recorder.active is False


def test_the_ocms_package_when_installed_gets_each_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: list[tuple[int, dict[str, Any]]] = []
    fake_ocms = types.ModuleType("ocms")  # the proprietary package: the one allowed fake
    fake_ocms.log = lambda step, metrics: received.append((step, metrics))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ocms", fake_ocms)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=4, metrics={"loss": 1.0, "phase": "train"})
    assert received == [(4, {"loss": 1.0, "phase": "train"})]
    assert read_rows(tmp_path, "loss.csv") == [["4", "1.0"]]
    with OcmsRecorder(log_dir=str(tmp_path / "selftest"), mirror_to_ocms=False) as quiet:
        quiet.log(step=5, metrics={"loss": 2.0})
    assert len(received) == 1, "a self-test sends nothing to the platform"
    assert read_rows(tmp_path / "selftest", "loss.csv") == [["5", "2.0"]]


def test_a_failing_ocms_package_is_dropped_and_the_files_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    calls: list[int] = []

    def failing_log(step: int, metrics: dict[str, Any]) -> None:
        calls.append(step)
        raise ConnectionError("platform unreachable")

    fake_ocms = types.ModuleType("ocms")
    fake_ocms.log = failing_log  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ocms", fake_ocms)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(3):
            recorder.log(step=step, metrics={"loss": 1.0})
    assert calls == [0]
    assert len(read_rows(tmp_path, "loss.csv")) == 3
    assert len(warnings_from_recorder(caplog)) == 1


# -- a property: whatever the key sets and value types, the files say what was logged ----

_KEYS = (
    "loss",
    "eval_loss",
    "vlm_loss",
    "learning_rate",
    "learning_rate/vision_tower",
    "epoch",
    "timing/data",
    "grad_norm",
    "accuracy",
    "mIoU",
    "tokens_seen",
)
_VALUES = st.one_of(
    st.floats(allow_nan=False),
    st.integers(),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
    st.builds(np.float32, st.floats(width=32, allow_nan=False)),
)
_SNAPSHOTS = st.lists(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6), max_size=12)


def _expected_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    try:
        return repr(float(value))
    except OverflowError:
        return None


def _expected_charts(snapshots: list[dict[str, Any]]) -> dict[str, tuple[list[str], list[dict]]]:
    """An independent model: chart -> (y_axis in first-seen order, rows as {column: text})."""
    charts: dict[str, tuple[list[str], list[dict]]] = {}
    for step, metrics in enumerate(snapshots):
        rows: dict[str, dict[str, str]] = {}
        for key, value in metrics.items():
            group = next((name for name, accepts in DEFAULT_CHART_GROUPS if accepts(key)), None)
            text = _expected_text(value)
            if group is None or text is None:
                continue
            y_axis, _ = charts.setdefault(group, ([], []))
            if sanitize_key(key) not in y_axis:
                y_axis.append(sanitize_key(key))
            rows.setdefault(group, {"step": str(step)})[sanitize_key(key)] = text
        for group, row in rows.items():
            charts[group][1].append(row)
    return charts


@settings(max_examples=60, deadline=None)
@given(_SNAPSHOTS)
def test_any_sequence_of_snapshots_is_written_exactly(snapshots: list[dict[str, Any]]) -> None:
    logging.getLogger("ocms_recorder").disabled = True  # thousands of expected warnings
    try:
        with tempfile.TemporaryDirectory() as directory:
            # Twice over: the second pass meets known key sets, so it takes the fast path.
            snapshots = snapshots + snapshots
            with OcmsRecorder(log_dir=directory) as recorder:
                for step, metrics in enumerate(snapshots):
                    recorder.log(step=step, metrics=metrics)
            expected = _expected_charts(snapshots)
            if not expected:
                assert not os.path.exists(os.path.join(directory, "metrics.json"))
                return
            written = y_axes(Path(directory))
            assert written == {name: y_axis for name, (y_axis, _) in expected.items()}
            group_order = [name for name, _ in DEFAULT_CHART_GROUPS]
            assert list(written) == sorted(written, key=group_order.index)
            for name, (y_axis, rows) in expected.items():
                assert read_rows(Path(directory), name + ".csv") == [
                    [row["step"], *(row.get(column, "") for column in y_axis)] for row in rows
                ]
    finally:
        logging.getLogger("ocms_recorder").disabled = False


_ANY_STEP = st.one_of(st.integers(min_value=-10, max_value=2**64), st.sampled_from([MAX_STEP]))
_ANY_KEY = st.one_of(st.sampled_from(_KEYS), st.text(max_size=8).map(lambda text: text + "_loss"))
_ANY_VALUE = st.one_of(st.floats(), st.integers(min_value=-(2**70), max_value=2**70), st.text())


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(_ANY_STEP, st.dictionaries(_ANY_KEY, _ANY_VALUE, max_size=5)), max_size=15)
)
def test_whatever_is_logged_the_directory_passes_the_check(
    calls: list[tuple[int, dict[str, Any]]],
) -> None:
    """Steps up to 2^64, any float (nan, inf, 5e-324, 1e308), huge integers, any key text:
    the recorder's own output never has an error `--check` reports (warnings are allowed:
    nan/inf values, steps that go back)."""
    logging.getLogger("ocms_recorder").disabled = True  # many expected warnings
    try:
        with tempfile.TemporaryDirectory() as directory:
            with OcmsRecorder(log_dir=directory) as recorder:
                for step, metrics in calls:
                    recorder.log(step=step, metrics=metrics)
            if os.path.exists(os.path.join(directory, SIDECAR)):
                read_sidecar(Path(directory))  # what was dropped is on record, in its layout
            if not os.path.exists(os.path.join(directory, "metrics.json")):
                assert set(os.listdir(directory)) <= {SIDECAR}  # nothing usable was logged
                return
            result = check_directory(directory)
            assert result.errors == 0, result.problems
            assert_consistent(Path(directory))
    finally:
        logging.getLogger("ocms_recorder").disabled = False
