"""OcmsRecorder meeting a directory that already exists: resuming a run into it, a hostile
metrics.json or chart file (each in a subprocess with a timeout, so a hang fails instead of
blocking the suite), one writer per directory (a second real process), and keys finding the
columns they had before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ocms_recorder import OcmsRecorder, write_layout
from test_recorder_support import (
    RECORDER_DIR,
    assert_consistent,
    read_layout,
    read_rows,
    run_python,
    warnings_from_recorder,
    y_axes,
)

from ocms_tui.follow.checker import check_directory

PYTHON = (sys.executable, "-B", "-c")


pytestmark = pytest.mark.usefixtures("no_launcher_environment")


def _passes(directory: Path) -> None:
    assert_consistent(directory)
    assert check_directory(directory).problems == ()


# -- resuming into an existing directory ---------------------------------------------------


def _first_run(directory: Path) -> None:
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        for step in range(3):
            recorder.log(step=step, metrics={"vlm_loss": 0.5, "loss": 1.0, "grad_norm": 2.0})


def test_a_resumed_run_appends_to_the_existing_charts_in_their_column_order(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    _first_run(tmp_path)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=3, metrics={"loss": 0.25, "vlm_loss": 0.125})
    assert y_axes(tmp_path) == {"loss": ["vlm_loss", "loss"], "grad_norm": ["grad_norm"]}
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "0.5", "1.0"],
        ["1", "0.5", "1.0"],
        ["2", "0.5", "1.0"],
        ["3", "0.125", "0.25"],
    ]
    assert len(read_rows(tmp_path, "grad_norm.csv")) == 3
    assert warnings_from_recorder(recorder_warnings) == []
    assert_consistent(tmp_path)


def test_a_partial_last_line_left_by_a_crash_is_discarded(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    _first_run(tmp_path)
    with (tmp_path / "loss.csv").open("a") as handle:
        handle.write("3,0.12")  # the crash came mid-row
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=3, metrics={"loss": 0.25, "vlm_loss": 0.125})
    assert read_rows(tmp_path, "loss.csv")[2:] == [["2", "0.5", "1.0"], ["3", "0.125", "0.25"]]
    assert any("partial last line" in text for text in warnings_from_recorder(recorder_warnings))
    assert_consistent(tmp_path)


def test_a_new_key_in_a_resumed_run_widens_the_old_rows(tmp_path: Path) -> None:
    _first_run(tmp_path)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=3, metrics={"eval_loss": 0.75})
    assert y_axes(tmp_path)["loss"] == ["vlm_loss", "loss", "eval_loss"]
    assert read_rows(tmp_path, "loss.csv")[0] == ["0", "0.5", "1.0", ""]
    assert read_rows(tmp_path, "loss.csv")[3] == ["3", "", "", "0.75"]
    assert_consistent(tmp_path)


def test_a_crash_between_declaring_and_widening_a_column_is_repaired_on_resume(
    tmp_path: Path,
) -> None:
    # metrics.json is rewritten first, so a crash there leaves rows narrower than declared.
    write_layout(tmp_path, {"loss": ["loss", "eval_loss"]})
    (tmp_path / "loss.csv").write_text("0,1.0\n1,0.5\n")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=2, metrics={"loss": 0.25})
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0", ""],
        ["1", "0.5", ""],
        ["2", "0.25", ""],
    ]
    assert_consistent(tmp_path)


def test_charts_of_the_old_layout_that_no_group_takes_are_kept(tmp_path: Path) -> None:
    groups = [("reward", lambda key: "reward" in key)]
    with OcmsRecorder(log_dir=str(tmp_path), chart_groups=groups) as recorder:
        recorder.log(step=0, metrics={"mean_reward": 1.0})
    _first_run(tmp_path)
    assert list(y_axes(tmp_path)) == ["loss", "grad_norm", "reward"]
    assert read_rows(tmp_path, "reward.csv") == [["0", "1.0"]]
    assert_consistent(tmp_path)


def test_a_csv_that_metrics_json_does_not_describe_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_text("0,1,2,3\n")
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=5, metrics={"loss": 0.5})
    assert read_rows(tmp_path, "loss.csv") == [["5", "0.5"]]
    [aside] = tmp_path.glob("loss.csv.old-*")
    assert aside.read_text() == "0,1,2,3\n"
    assert_consistent(tmp_path)


@pytest.mark.parametrize(
    "document",
    [
        "{not json",
        "[]",
        '{"version": 1, "charts": {"loss": 1}}',
        '{"version": 1, "charts": [{"name": "../x", "file": "x.csv", "y_axis": []}]}',
        '{"version": 1, "charts": [{"name": "x", "file": "/etc/passwd", "y_axis": []}]}',
        '{"version": 1, "charts": [{"name": "x", "file": "x.csv", "y_axis": [1]}]}',
        '{"version": 1, "charts": [{"name": "x", "file": "x.csv", "y_axis": ["a b"]}]}',
        '{"version": 1, "charts": [{"name": "loss", "file": "metrics.json", "y_axis": []}]}',
        '{"version": 1, "charts": [{"name": "loss", "file": "grad.csv", "y_axis": []}]}',
        '{"version": 2, "charts": []}',
        '{"version": 1, "charts": [{"name": "'
        + "x" * 101
        + '", "file": "'
        + "x" * 101
        + '.csv", "y_axis": []}]}',
    ],
)
def test_an_unusable_metrics_json_is_replaced_by_a_new_layout(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture, document: str
) -> None:
    (tmp_path / "metrics.json").write_text(document)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    assert y_axes(tmp_path) == {"loss": ["loss"]}
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0"]]
    assert len(warnings_from_recorder(recorder_warnings)) == 1
    _passes(tmp_path)


# -- a hostile directory: each case in a subprocess with a timeout ---------------------------

HOSTILE_WRITER = """
import logging, sys
sys.path.insert(0, sys.argv[2])
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
from ocms_recorder import OcmsRecorder
with OcmsRecorder(log_dir=sys.argv[1]) as recorder:
    for step in range(3):
        recorder.log(step=step, metrics={"loss": 1.0 / (step + 1), "grad_norm": 2.0})
print("training went on", flush=True)
"""


def _the_one_warning_of_a_writer(directory: Path) -> str:
    """Run the writer in its own process: a recorder that hangs fails this by the timeout
    (subprocess.TimeoutExpired) instead of blocking the suite; 1 GB of address space makes
    one that reads /dev/zero into memory fail fast too. The training must go on, with one
    warning from the recorder, returned."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
    result = run_python(limit + textwrap.dedent(HOSTILE_WRITER), directory, RECORDER_DIR)
    assert result.returncode == 0 and result.stdout == "training went on\n", result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("ocms_recorder")]
    assert len(warnings) == 1, result.stderr
    return warnings[0]


def _make_fifo(path: Path) -> None:
    os.mkfifo(path)


def _make_zero_symlink(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _make_deeply_nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _make_too_big(path: Path) -> None:
    path.write_text('{"version": 1, "charts": []' + " " * (4 * 1024 * 1024) + "}")


def _make_self_referring(path: Path) -> None:
    path.write_text(
        '{"version": 1, "charts": [{"name": "loss", "file": "metrics.json", "x_axis": "step",'
        ' "y_axis": ["loss"]}]}'
    )


@pytest.mark.parametrize(
    "make",
    [_make_fifo, _make_zero_symlink, _make_deeply_nested, _make_too_big, _make_self_referring],
    ids=["fifo", "symlink-to-dev-zero", "nested-100000-deep", "over-4-MiB", "file-is-itself"],
)
def test_a_hostile_metrics_json_means_a_fresh_layout_said_once(tmp_path: Path, make) -> None:
    make(tmp_path / "metrics.json")
    assert "new layout" in _the_one_warning_of_a_writer(tmp_path)
    assert (tmp_path / "metrics.json").is_file() and not (tmp_path / "metrics.json").is_symlink()
    assert y_axes(tmp_path) == {"loss": ["loss"], "grad_norm": ["grad_norm"]}
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0"],
        ["1", "0.5"],
        ["2", "0.3333333333333333"],
    ]
    _passes(tmp_path)


@pytest.mark.parametrize(
    "make", [_make_fifo, _make_zero_symlink], ids=["fifo", "symlink-to-dev-zero"]
)
def test_a_chart_file_that_is_not_a_regular_file_is_moved_aside(tmp_path: Path, make) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    make(tmp_path / "loss.csv")
    assert "moved it to" in _the_one_warning_of_a_writer(tmp_path)
    assert (tmp_path / "loss.csv").is_file() and not (tmp_path / "loss.csv").is_symlink()
    assert [row[0] for row in read_rows(tmp_path, "loss.csv")] == ["0", "1", "2"]
    [aside] = tmp_path.glob("loss.csv.old-*")
    aside.unlink()  # not the recorder's to delete; the check would list it
    _passes(tmp_path)


# -- one writer per directory -----------------------------------------------------------------

FIRST_WRITER = """
import sys
sys.path.insert(0, sys.argv[2])
from ocms_recorder import OcmsRecorder
recorder = OcmsRecorder(log_dir=sys.argv[1])
for step in range(10):
    recorder.log(step=step, metrics={"loss": 1.0})
print("writing", flush=True)
sys.stdin.readline()
recorder.log(step=10, metrics={"loss": 0.5})
recorder.finish()
print("finished", flush=True)
sys.stdin.readline()
"""


def _start_first_writer(directory: Path) -> subprocess.Popen:
    """The first recorder, in a process of its own; it prints "writing" once it writes."""
    return subprocess.Popen(
        [*PYTHON, textwrap.dedent(FIRST_WRITER), str(directory), str(RECORDER_DIR)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_second_recorder_writes_nothing_while_a_live_process_writes_the_directory(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    first = _start_first_writer(tmp_path)
    assert first.stdin is not None and first.stdout is not None
    try:
        assert first.stdout.readline() == "writing\n"
        layout_before = read_layout(tmp_path)
        second = OcmsRecorder(log_dir=str(tmp_path))
        second.health_check_interval_s = 0.0
        for step in range(100, 103):
            second.log(step=step, metrics={"loss": 9.0, "eval_loss": 9.0, "grad_norm": 9.0})
        assert read_layout(tmp_path) == layout_before
        assert sorted(path.name for path in tmp_path.iterdir()) == ["loss.csv", "metrics.json"]
        assert [row[0] for row in read_rows(tmp_path, "loss.csv")] == list(map(str, range(10)))
        first.stdin.write("go\n")
        first.stdin.flush()
        assert first.stdout.readline() == "finished\n"  # the first one has let go
        second.log(step=103, metrics={"loss": 0.25, "eval_loss": 0.125})
        second.finish()
    finally:
        first.kill()
        first.wait()
    assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss"]}
    steps = [row[0] for row in read_rows(tmp_path, "loss.csv")]
    assert steps == [*map(str, range(11)), "103"]
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 1 and "another recorder" in warnings[0], warnings
    _passes(tmp_path)


def test_the_lock_is_on_the_directory_and_goes_with_a_killed_writer(tmp_path: Path) -> None:
    first = _start_first_writer(tmp_path)
    assert first.stdout is not None
    try:
        assert first.stdout.readline() == "writing\n"
        blocked = OcmsRecorder(log_dir=str(tmp_path))
        blocked.log(step=50, metrics={"loss": 9.0})
        assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []
    finally:
        first.kill()  # SIGKILL: no finish(); the kernel drops the lock with the process
        first.wait()
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=10, metrics={"loss": 0.5})
    assert [row[0] for row in read_rows(tmp_path, "loss.csv")] == list(map(str, range(11)))
    blocked.finish()
    _passes(tmp_path)


def test_two_recorders_of_one_process_take_turns(tmp_path: Path) -> None:
    first = OcmsRecorder(log_dir=str(tmp_path))
    first.log(step=0, metrics={"loss": 1.0})
    second = OcmsRecorder(log_dir=str(tmp_path))
    second.health_check_interval_s = 0.0
    second.log(step=1, metrics={"loss": 2.0})
    first.finish()
    second.log(step=2, metrics={"loss": 3.0})
    second.finish()
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0"], ["2", "3.0"]]
    _passes(tmp_path)


# -- a key finds the column it had before ----------------------------------------------------


def test_after_a_restart_each_key_lands_in_its_old_column_whatever_the_order(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0, "eval_loss": 2.0, "timing/data": 3.0})
        recorder.log(step=1, metrics={"timing/model": 4.0, "learning_rate/head": 5.0})
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=2, metrics={"timing/model": 40.0, "eval_loss": 20.0})
        recorder.log(step=3, metrics={"learning_rate/head": 50.0, "timing/data": 30.0})
    assert y_axes(tmp_path) == {
        "loss": ["loss", "eval_loss"],
        "learning_rate": ["lr_head"],
        "timing": ["data", "model"],
    }
    assert read_rows(tmp_path, "loss.csv")[-1] == ["2", "", "20.0"]
    assert read_rows(tmp_path, "timing.csv")[-2:] == [["2", "", "40.0"], ["3", "30.0", ""]]
    assert warnings_from_recorder(recorder_warnings) == []
    _passes(tmp_path)


def test_after_a_restart_keys_that_sanitize_to_one_name_are_said_to_be_unknowable(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:  # x.y_loss first: x_y_loss is _2
        recorder.log(step=0, metrics={"x.y_loss": 1.0, "x_y_loss": 2.0})
    assert y_axes(tmp_path) == {"loss": ["x_y_loss", "x_y_loss_2"]}
    recorder_warnings.clear()
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:  # the other one comes first now
        recorder.log(step=1, metrics={"x_y_loss": 20.0})
        recorder.log(step=2, metrics={"x.y_loss": 10.0})
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 1, warnings
    assert "x_y_loss, x_y_loss_2" in warnings[0] and "cannot know" in warnings[0]
    _passes(tmp_path)
