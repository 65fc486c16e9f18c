"""OcmsRecorder under real trouble while training: a directory that cannot be made, is
deleted or moved away or turns read-only, a disk that is full (a real RLIMIT_FSIZE, a real
tmpfs where one can be mounted), metrics.json that cannot be rewritten, a big chart widened
off the caller's thread, more keys than a chart may have, values that fail, and Ctrl-C.

In each, the training loop completes, each kind of fault is logged once, no exception
escapes log() or finish(), rows the disk refused are written once it takes them again, and
the directory passes the check at rest.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from format_support import format_problems
from ocms_recorder import MAX_PENDING_ROWS, MAX_SERIES_PER_CHART, OcmsRecorder
from reliability_support import can_mount, mounted
from test_recorder_support import (
    RECORDER_FILE,
    TEN_METRICS,
    assert_consistent,
    read_rows,
    run_python,
    warnings_from_recorder,
    y_axes,
)

from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.report import dropped_keys

# The values of these runs (reliability_support.value_of) jump across 13 orders of
# magnitude from step to step by design: spikes by any measure. These tests are about the
# files, so they read them without the curve health checks (health=False, --no-health).
pytestmark = pytest.mark.usefixtures("no_launcher_environment")


# -- faults while training: never an exception, one warning, recover when possible ----------


def test_a_log_dir_that_cannot_be_created_never_raises_warns_once_and_its_rows_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    blocker = tmp_path / "metrics"
    blocker.write_text("a file where the directory should be")  # root ignores chmod; not this
    recorder = OcmsRecorder(log_dir=str(blocker))
    recorder.health_check_interval_s = 0.0
    for step in range(5):
        recorder.log(step=step, metrics=TEN_METRICS)
    warnings = warnings_from_recorder(caplog)
    assert len(warnings) == 1 and "cannot" in warnings[0]
    blocker.unlink()  # the trouble goes away: the next call writes everything again
    recorder.log(step=5, metrics=TEN_METRICS)
    assert read_rows(blocker, "loss.csv") == [
        [str(step), "0.5", "0.25", "0.125"] for step in range(6)
    ]  # the rows that waited, before finish()
    recorder.finish()
    assert len(y_axes(blocker)) == 6
    assert_consistent(blocker)


def test_a_directory_deleted_mid_run_is_recreated(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    recorder = OcmsRecorder(log_dir=str(directory))
    recorder.health_check_interval_s = 0.0
    for step in range(3):
        recorder.log(step=step, metrics=TEN_METRICS)
    shutil.rmtree(directory)
    for step in range(3, 5):
        recorder.log(step=step, metrics=TEN_METRICS)
    recorder.finish()
    assert len(y_axes(directory)) == 6
    assert [row[0] for row in read_rows(directory, "loss.csv")] == ["3", "4"]
    assert_consistent(directory)


def test_a_csv_or_metrics_json_deleted_mid_run_is_written_again(tmp_path: Path) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.health_check_interval_s = 0.0
    recorder.log(step=0, metrics=TEN_METRICS)
    (tmp_path / "timing.csv").unlink()
    (tmp_path / "metrics.json").unlink()
    recorder.log(step=1, metrics=TEN_METRICS)
    recorder.finish()
    assert read_rows(tmp_path, "timing.csv") == [["1", "0.01", "0.2"]]
    assert len(read_rows(tmp_path, "loss.csv")) == 2
    assert_consistent(tmp_path)


def test_a_full_disk_drops_rows_without_raising_and_leaves_whole_lines(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes writes past 3000 bytes fail with EFBIG, as a full disk fails them.
    code = """
        import logging, resource, signal, sys
        sys.path.insert(0, sys.argv[2])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))
        logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
        from ocms_recorder import OcmsRecorder
        recorder = OcmsRecorder(log_dir=sys.argv[1])
        for step in range(2000):
            recorder.log(step=step, metrics={"loss": 0.123456789 * step, "grad_norm": 1.5})
        recorder.finish()
        print("training went on")
    """
    result = run_python(code, str(tmp_path), str(RECORDER_FILE.parent))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "training went on"
    failures = [line for line in result.stderr.splitlines() if "cannot write" in line]
    assert len(failures) == 1, result.stderr
    loss_rows = read_rows(tmp_path, "loss.csv")  # asserts the file ends with a whole row
    assert 50 < len(loss_rows) < 2000
    assert [row[0] for row in loss_rows] == [str(step) for step in range(len(loss_rows))]
    assert_consistent(tmp_path)


def _passes(directory: Path, dropped: tuple[str, ...] = ()) -> None:
    """Consistent, the format clean, and on record exactly the keys the test drops."""
    assert_consistent(directory)
    problems = check_directory(directory, health=False).problems
    assert format_problems(problems) == ()
    assert sorted(dropped_keys(problems)) == sorted(dropped)


# -- a transient write failure: rows wait in memory, metrics.json never runs ahead -----------

# The writer refuses loss.csv for a while with a real RLIMIT_FSIZE (EFBIG, as a full disk
# fails a write), then the limit is lifted and the next call adds a column.
TRANSIENT_FAILURE = """
import logging, os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
from ocms_recorder import OcmsRecorder
recorder = OcmsRecorder(log_dir=sys.argv[1])  # retries after 1 s: not before the widening
refused = int(sys.argv[3])
for step in range(100):
    recorder.log(step=step, metrics={"loss": 1.0})
size = os.path.getsize(os.path.join(sys.argv[1], "loss.csv"))
resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
for step in range(100, 100 + refused):
    recorder.log(step=step, metrics={"loss": 0.5})
print(os.path.getsize(os.path.join(sys.argv[1], "loss.csv")) == size, flush=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
recorder.log(step=100 + refused, metrics={"loss": 0.25, "val_loss": 0.125})
recorder.finish()
print("training went on", flush=True)
"""


def test_rows_refused_by_the_disk_are_written_once_it_takes_them_then_widened(
    tmp_path: Path,
) -> None:
    result = run_python(TRANSIENT_FAILURE, str(tmp_path), str(RECORDER_FILE.parent), "5")
    assert result.returncode == 0 and result.stdout == "True\ntraining went on\n", result.stderr
    failures = [line for line in result.stderr.splitlines() if line.startswith("ocms_recorder")]
    assert len(failures) == 1 and "File too large" in failures[0], result.stderr
    assert y_axes(tmp_path) == {"loss": ["loss", "val_loss"]}
    rows = read_rows(tmp_path, "loss.csv")
    assert rows[:100] == [[str(step), "1.0", ""] for step in range(100)]
    assert rows[100:] == [
        *([str(step), "0.5", ""] for step in range(100, 105)),
        ["105", "0.25", "0.125"],
    ]
    _passes(tmp_path)


def test_at_most_max_pending_rows_wait_in_memory_and_the_rest_is_said_once(
    tmp_path: Path,
) -> None:
    refused = MAX_PENDING_ROWS + 50
    result = run_python(TRANSIENT_FAILURE, str(tmp_path), str(RECORDER_FILE.parent), str(refused))
    assert result.returncode == 0 and result.stdout == "True\ntraining went on\n", result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("ocms_recorder")]
    assert len(warnings) == 3, result.stderr
    assert "File too large" in warnings[0] and f"{MAX_PENDING_ROWS} rows" in warnings[1]
    first_lost = 100 + MAX_PENDING_ROWS
    # Once written, how many rows were dropped and which: exactly, with the chart's file.
    assert warnings[2].endswith(
        f"51 rows of {tmp_path / 'loss.csv'} were dropped while the disk refused them: "
        f"steps {first_lost}-{first_lost + 50}"
    ), warnings[2]
    steps = [int(row[0]) for row in read_rows(tmp_path, "loss.csv")]
    # The first MAX_PENDING_ROWS refused rows were kept and written by finish(); the rows
    # after them were dropped, the last one too: it came before the retry (1 s later).
    assert steps == list(range(first_lost))
    _passes(tmp_path)


# -- metrics.json cannot be rewritten while a chart widens ---------------------------------


def test_rows_wait_in_memory_while_metrics_json_cannot_declare_their_columns(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.health_check_interval_s = 0.0
    for step in range(3):
        recorder.log(step=step, metrics={"loss": 1.0})
    # A directory where the recorder writes metrics.json's temp file: that write fails, as
    # on a quota or an odd filesystem, while the CSVs can still be appended to.
    blocker = tmp_path / f".metrics.json.{os.getpid()}.tmp"
    blocker.mkdir()
    for step in range(3, 6):
        recorder.log(step=step, metrics={"loss": 0.5, "eval_loss": 0.25})
        recorder.log(step=step, metrics={"grad_norm": 2.0})
        _passes_with(tmp_path, blocker)  # consistent at every moment, not just at the end
    assert y_axes(tmp_path) == {"loss": ["loss"]}
    assert len(read_rows(tmp_path, "loss.csv")) == 3  # the rest waits: never a narrowed row
    blocker.rmdir()
    recorder.log(step=6, metrics={"loss": 0.125, "eval_loss": 0.0625})
    recorder.finish()
    assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss"], "grad_norm": ["grad_norm"]}
    assert read_rows(tmp_path, "loss.csv")[2:] == [
        ["2", "1.0", ""],
        *([str(step), "0.5", "0.25"] for step in range(3, 6)),
        ["6", "0.125", "0.0625"],
    ]
    assert read_rows(tmp_path, "grad_norm.csv") == [["3", "2.0"], ["4", "2.0"], ["5", "2.0"]]
    _passes(tmp_path)
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 1 and "metrics.json" in warnings[0], warnings


def _passes_with(directory: Path, blocker: Path) -> None:
    """The check passes, but for the grad_norm CSV metrics.json could not declare yet."""
    problems = check_directory(directory, health=False).problems
    assert [(p.rule.value, p.path) for p in problems] == [("orphan-csv", "grad_norm.csv")]


# -- the run directory moved away mid-run ---------------------------------------------------


def test_a_run_directory_moved_away_mid_run_is_written_anew(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "run"
    recorder = OcmsRecorder(log_dir=str(directory))
    recorder.health_check_interval_s = 0.0
    for step in range(3):
        recorder.log(step=step, metrics={"loss": 1.0, "grad_norm": 2.0})
    directory.rename(tmp_path / "archived")  # a cleanup script, or a user tidying up
    for step in range(3, 6):
        recorder.log(step=step, metrics={"loss": 0.5, "grad_norm": 1.5})
    recorder.finish()
    assert [row[0] for row in read_rows(directory, "loss.csv")] == ["3", "4", "5"]
    assert [row[0] for row in read_rows(tmp_path / "archived", "loss.csv")] == ["0", "1", "2"]
    _passes(directory)
    _passes(tmp_path / "archived")


# -- a real full disk ------------------------------------------------------------------------

needs_mount = pytest.mark.skipif(
    not can_mount(), reason="needs root with CAP_SYS_ADMIN to mount a small tmpfs"
)


@needs_mount
def test_a_full_tmpfs_during_a_widening_keeps_the_directory_whole_and_every_row(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=256k", "tmpfs", target=disk):
        directory = disk / "run"
        recorder = OcmsRecorder(log_dir=str(directory))
        recorder.health_check_interval_s = 0.0
        step = 0
        while step < 2000:  # enough rows that a widened copy no longer fits beside them
            recorder.log(step=step, metrics={"loss": 1.0 / (step + 1), "grad_norm": 0.5})
            step += 1
        filler = disk / "filler"
        _fill(filler)  # someone else fills the disk
        faults_from = step
        for _ in range(200):  # a new key widens loss; rows keep failing with ENOSPC
            recorder.log(step=step, metrics={"loss": 0.25, "eval_loss": 0.5, "grad_norm": 0.5})
            step += 1
        _consistent_prefix(directory, faults_from)
        filler.unlink()  # space again: the run catches up by itself
        for _ in range(5):
            recorder.log(step=step, metrics={"loss": 0.125, "eval_loss": 0.5, "grad_norm": 0.5})
            step += 1
        recorder.finish()
        assert y_axes(directory)["loss"] == ["loss", "eval_loss"]
        loss_rows = read_rows(directory, "loss.csv")
        assert [int(row[0]) for row in loss_rows] == list(range(step))  # none lost
        assert loss_rows[faults_from] == [str(faults_from), "0.25", "0.5"]
        assert loss_rows[-1] == [str(step - 1), "0.125", "0.5"]
        assert len(read_rows(directory, "grad_norm.csv")) == step
        _passes(directory)
        warnings = warnings_from_recorder(recorder_warnings)
        assert len(warnings) == 1 and "No space left on device" in warnings[0], warnings


def _fill(path: Path) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(descriptor, b"\0" * 4096):
            pass
    except OSError:  # ENOSPC: full
        pass
    finally:
        os.close(descriptor)


def _consistent_prefix(directory: Path, faults_from: int) -> None:
    """Whole lines, declared widths, and every row written before the disk filled."""
    _passes(directory)
    steps = [int(row[0]) for row in read_rows(directory, "loss.csv")]
    assert steps[:faults_from] == list(range(faults_from))


# -- a directory that turns read-only mid-run -----------------------------------------------

READ_ONLY_WRITER = """
import logging, sys
from ocms_recorder import MAX_PENDING_ROWS, MAX_SERIES_PER_CHART, OcmsRecorder
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
recorder = OcmsRecorder(log_dir=sys.argv[1])
recorder.health_check_interval_s = 0.0
def phase(steps, metrics):
    for step in steps:
        recorder.log(step=step, metrics=metrics)
    print("done", flush=True)
    sys.stdin.readline()  # the test changes the directory's permissions meanwhile
phase(range(0, 50), {"loss": 1.0})
phase(range(50, 100), {"loss": 0.5, "eval_loss": 0.25, "grad_norm": 2.0})
phase(range(100, 110), {"loss": 0.25, "eval_loss": 0.125, "grad_norm": 1.0})
recorder.finish()
print("training went on", flush=True)
"""


def _without_root_override() -> list[str]:
    """A command prefix under which chmod binds the writer: none for a normal user; for
    root, a user namespace where it owns its files but has no capabilities."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    prefix = [unshare or "unshare", "-U", "--map-user=1000", "--map-group=1000"]
    probe = subprocess.run([*prefix, "true"], capture_output=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("root, and no user namespace to run a writer without its override")
    return prefix


def test_a_directory_turning_read_only_mid_run(tmp_path: Path) -> None:
    prefix = _without_root_override()
    directory = tmp_path / "run"
    directory.mkdir()
    writer = subprocess.Popen(
        [*prefix, sys.executable, "-B", "-c", textwrap.dedent(READ_ONLY_WRITER), str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline() == "done\n"
        directory.chmod(0o555)  # no new files, no renames; open CSVs can still be appended
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == "done\n"
        _passes(directory)  # nothing new could be declared: the new rows wait in memory
        assert y_axes(directory) == {"loss": ["loss"]}
        assert [row[0] for row in read_rows(directory, "loss.csv")] == list(map(str, range(50)))
        directory.chmod(0o755)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        stdout, stderr = writer.communicate(timeout=60)
    finally:
        directory.chmod(0o755)
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0 and stdout == "done\ntraining went on\n", stderr
    assert y_axes(directory) == {"loss": ["loss", "eval_loss"], "grad_norm": ["grad_norm"]}
    loss_rows = read_rows(directory, "loss.csv")
    assert [row[0] for row in loss_rows] == list(map(str, range(110)))
    assert loss_rows[50] == ["50", "0.5", "0.25"] and loss_rows[-1] == ["109", "0.25", "0.125"]
    assert [row[0] for row in read_rows(directory, "grad_norm.csv")] == list(
        map(str, range(50, 110))
    )
    _passes(directory)
    warnings = [line for line in stderr.splitlines() if line.startswith("ocms_recorder")]
    assert len(warnings) == 1 and "Permission denied" in warnings[0], stderr


# -- more keys for one chart than a chart may have --------------------------------------------


def test_a_chart_takes_at_most_the_series_a_chart_may_have(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    metrics = {f"layer{index}_loss": 1.0 for index in range(MAX_SERIES_PER_CHART + 5)}
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics=metrics)
        recorder.log(step=1, metrics=metrics)
    assert len(y_axes(tmp_path)["loss"]) == MAX_SERIES_PER_CHART
    assert [len(row) for row in read_rows(tmp_path, "loss.csv")] == [1 + MAX_SERIES_PER_CHART] * 2
    _passes(tmp_path, dropped=tuple(f"layer{MAX_SERIES_PER_CHART + n}_loss" for n in range(5)))
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 1 and f"'layer{MAX_SERIES_PER_CHART}_loss'" in warnings[0], warnings


# -- values that fail part-way, and Ctrl-C ---------------------------------------------------


class _FailsAfter:
    """A number until its device goes away: then __float__ and item() raise."""

    def __init__(self, value: float, good_calls: int) -> None:
        self.value = value
        self.calls = 0
        self.good_calls = good_calls

    def __float__(self) -> float:
        self.calls += 1
        if self.calls > self.good_calls:
            raise RuntimeError("CUDA error: device-side assert triggered")
        return self.value


def test_a_value_that_starts_failing_mid_run_leaves_gaps_and_one_warning(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    value = _FailsAfter(0.75, good_calls=20)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        for step in range(40):
            recorder.log(step=step, metrics={"loss": 1.0, "eval_loss": value})
    rows = read_rows(tmp_path, "loss.csv")
    assert [row[0] for row in rows] == list(map(str, range(40)))
    assert {row[2] for row in rows[:5]} == {"0.75"} and {row[2] for row in rows[-5:]} == {""}
    warnings = warnings_from_recorder(recorder_warnings)
    assert len(warnings) == 1 and "device-side assert" in warnings[0], warnings
    _passes(tmp_path, dropped=("eval_loss",))


class _Interrupted:
    def __float__(self) -> float:
        raise KeyboardInterrupt


def test_ctrl_c_inside_log_still_stops_training_and_leaves_whole_rows(tmp_path: Path) -> None:
    recorder = OcmsRecorder(log_dir=str(tmp_path))
    recorder.log(step=0, metrics={"loss": 1.0, "grad_norm": 2.0})
    with pytest.raises(KeyboardInterrupt):  # the recorder never swallows Ctrl-C
        recorder.log(step=1, metrics={"loss": 0.5, "grad_norm": _Interrupted()})
    recorder.log(step=2, metrics={"loss": 0.25, "grad_norm": 1.0})
    recorder.finish()
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0"], ["2", "0.25"]]
    assert read_rows(tmp_path, "grad_norm.csv") == [["0", "2.0"], ["2", "1.0"]]
    _passes(tmp_path)
