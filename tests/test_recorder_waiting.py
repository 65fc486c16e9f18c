"""OcmsRecorder's promise "rows wait in memory and are written later", tried in every path
with the real fault: a widening copy held on its thread while a fast loop logs more rows
than the refused-disk bound, a recorder garbage-collected without finish() (while its copy
runs, and while a real RLIMIT_FSIZE refuses its rows), a directory that cannot be created
(a full tmpfs, a file in the way), a resumed CRLF chart widened, and a real fork().

Each scenario runs in a fresh interpreter (collection, exit and fork are the point), with
this worktree's recorder first on its path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from format_support import format_problems
from ocms_recorder import MAX_PENDING_ROWS
from reliability_support import can_mount, mounted
from test_recorder_support import (
    BIG_CHART,
    RECORDER_DIR,
    TEN_METRICS,
    assert_consistent,
    read_rows,
    run_python,
    y_axes,
)

from ocms_tui.follow.checker import check_directory

pytestmark = pytest.mark.usefixtures("no_launcher_environment")


def _passes(directory: Path) -> None:
    assert_consistent(directory)  # also: no temp file left
    # The rows are a writer's test data, not a training curve: the format is what is judged.
    assert format_problems(check_directory(directory).problems) == ()


# -- 1. a widening with a healthy disk drops nothing --------------------------------------

# The copy is held at its first read (an audit hook on the copying thread's open) until the
# loop has logged 2.5 x MAX_PENDING_ROWS rows, with a second and a third late key meanwhile.
FAST_LOOP_DURING_WIDENINGS = (
    BIG_CHART
    + """
import json, logging, threading
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
from ocms_recorder import MAX_PENDING_ROWS
logged = threading.Event()
def hold_the_copy(event, args):
    if event == "open" and args[0] == csv_path and threading.current_thread().name == "ocms-recorder-widen":
        logged.wait(timeout=60)
sys.addaudithook(hold_the_copy)
recorder = OcmsRecorder(log_dir=directory)
count = MAX_PENDING_ROWS * 5 // 2
for index in range(count):
    metrics = {"loss": 0.25, "eval_loss": 0.125}
    if index >= count // 2:
        metrics["x_loss"] = 1.0  # a second late key while the first copy runs
    if index >= count * 3 // 4:
        metrics["y_loss"] = 2.0  # and a third
    recorder.log(step=rows + index, metrics=metrics)
logged.set()
recorder.finish()
print(json.dumps({"rows": rows, "count": count}))
"""
)


def test_a_widening_with_a_healthy_disk_keeps_every_row_of_a_fast_loop(tmp_path: Path) -> None:
    result = run_python(FAST_LOOP_DURING_WIDENINGS, tmp_path, RECORDER_DIR)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # nothing dropped, and no disk blamed
    report = json.loads(result.stdout)
    rows, count = report["rows"], report["count"]
    assert count > 2 * MAX_PENDING_ROWS
    assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss", "x_loss", "y_loss"]}
    written = read_rows(tmp_path, "loss.csv")
    assert len(written) == rows + count
    assert [int(row[0]) for row in written[rows:]] == list(range(rows, rows + count))
    assert written[rows] == [str(rows), "0.25", "0.125", "", ""]
    assert written[-1] == [str(rows + count - 1), "0.25", "0.125", "1.0", "2.0"]
    _passes(tmp_path)


# -- 2. collected without finish() ---------------------------------------------------------

# The guide's pattern: the recorder lives in main(), the final test_loss is a new key of a
# big chart (so it waits for a copy), main() returns and finish() is never called.
COLLECTED_DURING_A_WIDENING = (
    BIG_CHART
    + """
import gc, json, time
def main():
    recorder = OcmsRecorder(log_dir=directory)
    for step in range(rows, rows + 20):
        recorder.log(step=step, metrics={"loss": 0.25})
    recorder.log(step=rows + 20, metrics={"test_loss": 0.125})
main()
gc.collect()
deadline = time.monotonic() + 60  # written once the copy is done, before the exit
while time.monotonic() < deadline:
    with open(csv_path, "rb") as handle:
        if handle.read().endswith(b"%d,,0.125\\n" % (rows + 20)):
            break
    time.sleep(0.01)
leftovers = [name for name in os.listdir(directory) if name.endswith(".tmp")]
print(json.dumps({"rows": rows, "before_exit": time.monotonic() < deadline, "tmp": leftovers}))
"""
)


def test_rows_waiting_for_a_copy_are_written_when_the_recorder_is_collected(
    tmp_path: Path,
) -> None:
    result = run_python(COLLECTED_DURING_A_WIDENING, tmp_path, RECORDER_DIR)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    report = json.loads(result.stdout)
    assert report["before_exit"] and report["tmp"] == []
    rows = report["rows"]
    written = read_rows(tmp_path, "loss.csv")
    assert written[rows:] == [
        *([str(step), "0.25", ""] for step in range(rows, rows + 20)),
        [str(rows + 20), "", "0.125"],
    ]
    assert y_axes(tmp_path) == {"loss": ["loss", "test_loss"]}
    _passes(tmp_path)


# The disk (a real RLIMIT_FSIZE) refuses the rows while main() runs; the recorder is
# collected with them waiting; the disk takes writes again before the interpreter exits.
COLLECTED_WHILE_THE_DISK_REFUSES = """
import gc, os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from ocms_recorder import OcmsRecorder
def main():
    recorder = OcmsRecorder(log_dir=sys.argv[1])
    recorder.log(step=0, metrics={"loss": 1.0})
    size = os.path.getsize(os.path.join(sys.argv[1], "loss.csv"))
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    for step in range(1, 50):
        recorder.log(step=step, metrics={"loss": 0.5})
main()
gc.collect()
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("exit")
"""


def test_rows_a_collected_recorder_could_not_write_are_written_at_exit(tmp_path: Path) -> None:
    result = run_python(COLLECTED_WHILE_THE_DISK_REFUSES, tmp_path, RECORDER_DIR)
    assert result.returncode == 0 and result.stdout == "exit\n", result.stderr
    assert "File too large" in result.stderr
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0"],
        *([str(step), "0.5"] for step in range(1, 50)),
    ]
    _passes(tmp_path)


# -- 3. the directory cannot be created at the first log() ---------------------------------

needs_mount = pytest.mark.skipif(
    not can_mount(), reason="needs root with CAP_SYS_ADMIN to mount a small tmpfs"
)


@needs_mount
def test_rows_wait_while_a_full_disk_refuses_the_directory_and_are_written_after(
    tmp_path: Path, recorder_warnings: pytest.LogCaptureFixture
) -> None:
    from ocms_recorder import OcmsRecorder

    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=1m,nr_inodes=16", "tmpfs", target=disk):
        fillers = []
        try:
            while True:  # every inode taken: mkdir fails with ENOSPC, as on a full disk
                filler = disk / f"filler-{len(fillers)}"
                filler.touch()
                fillers.append(filler)
        except OSError:
            pass
        directory = disk / "run"
        recorder = OcmsRecorder(log_dir=str(directory))
        recorder.health_check_interval_s = 0.0
        for step in range(5):
            recorder.log(step=step, metrics=TEN_METRICS)
        assert not directory.exists()
        for filler in fillers:
            filler.unlink()  # space again
        recorder.log(step=5, metrics=TEN_METRICS)
        assert [row[0] for row in read_rows(directory, "loss.csv")] == list("012345")
        assert [row[0] for row in read_rows(directory, "timing.csv")] == list("012345")
        recorder.finish()
        _passes(directory)
    warnings = [record.getMessage() for record in recorder_warnings.records]
    assert len(warnings) == 1 and "No space left on device" in warnings[0], warnings
    assert "wait in memory" in warnings[0]


# A file where the directory should be, for the whole run: at exit the snapshots that
# waited are lost, and the last message says exactly how many and which steps.
NEVER_CREATABLE = """
import logging, sys
sys.path.insert(0, sys.argv[2])
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
from ocms_recorder import OcmsRecorder
open(sys.argv[1], "w").close()
recorder = OcmsRecorder(log_dir=sys.argv[1])
for step in [*range(0, 5), *range(10, 13)]:
    recorder.log(step=step, metrics={"loss": 1.0})
print("training went on")
"""


def test_snapshots_that_never_found_their_directory_are_said_exactly_at_exit(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "metrics"
    result = run_python(NEVER_CREATABLE, blocker, RECORDER_DIR)
    assert result.returncode == 0 and result.stdout == "training went on\n", result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert "cannot create the directory" in lines[0]
    assert lines[1] == (
        f"ocms_recorder 8 snapshots for {blocker} were dropped while the disk refused them: "
        "steps 0-4, 10-12"
    )


# -- 4. a resumed CRLF chart widened --------------------------------------------------------


@pytest.mark.parametrize("rows", [10, 120_000], ids=["inline", "on-a-thread"])
def test_widening_a_resumed_chart_with_crlf_rows_keeps_every_value_readable(
    tmp_path: Path, rows: int
) -> None:
    from ocms_recorder import OcmsRecorder, write_layout

    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(
        b"".join(b"%d,%r\r\n" % (step, 1.0 / (step + 1)) for step in range(rows))
    )
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=rows, metrics={"loss": 0.25, "eval_loss": 0.5})
    assert y_axes(tmp_path) == {"loss": ["loss", "eval_loss"]}
    written = read_rows(tmp_path, "loss.csv")
    assert written[:rows] == [[str(step), repr(1.0 / (step + 1)), ""] for step in range(rows)]
    assert written[rows:] == [[str(rows), "0.25", "0.5"]]
    assert b"\r" not in (tmp_path / "loss.csv").read_bytes()
    _passes(tmp_path)


# -- 5. fork() ------------------------------------------------------------------------------

# A child forked while the parent writes (a DataLoader worker) lives on after the parent's
# finish(); a later recorder of the parent must be able to write the directory. (The child
# lets go of the lock as fork() returns in it: the parent waits until the child has started.)
FORK_KEEPS_NO_LOCK = """
import os, sys
sys.path.insert(0, sys.argv[2])
from ocms_recorder import OcmsRecorder
recorder = OcmsRecorder(log_dir=sys.argv[1])
recorder.log(step=0, metrics={"loss": 1.0})
read_end, write_end = os.pipe()
started_read, started_write = os.pipe()
child = os.fork()
if child == 0:
    os.close(write_end)
    os.write(started_write, b"s")
    os.read(read_end, 1)  # lives until the parent is done
    os._exit(0)
os.close(read_end)
os.read(started_read, 1)
recorder.finish()
later = OcmsRecorder(log_dir=sys.argv[1])
later.log(step=1, metrics={"loss": 0.5})
later.finish()
os.close(write_end)
os.waitpid(child, 0)
print("done")
"""


def test_a_forked_child_does_not_keep_the_directory_locked(tmp_path: Path) -> None:
    result = run_python(FORK_KEEPS_NO_LOCK, tmp_path, RECORDER_DIR)
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    assert result.stderr == ""  # no "another recorder is writing"
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0"], ["1", "0.5"]]
    _passes(tmp_path)


# Rows wait in the parent (a real RLIMIT_FSIZE refuses them) when it forks; the child, which
# the limit does not bind, logs with the inherited recorder and exits normally (atexit
# runs); then the parent's disk takes writes again. Every row is written once, by the parent.
FORK_WRITES_NOT_THE_PARENTS_ROWS = """
import logging, os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
logging.basicConfig(level=logging.WARNING, format="%(process)d %(name)s %(message)s")
from ocms_recorder import OcmsRecorder
recorder = OcmsRecorder(log_dir=sys.argv[1])
recorder.log(step=0, metrics={"loss": 1.0})
size = os.path.getsize(os.path.join(sys.argv[1], "loss.csv"))
resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
for step in range(1, 20):
    recorder.log(step=step, metrics={"loss": 0.5})
child = os.fork()
if child == 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    recorder.log(step=99, metrics={"loss": 9.0})
    sys.exit(0)
_, status = os.waitpid(child, 0)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
recorder.finish()
print(os.waitstatus_to_exitcode(status), child)
"""


def test_a_forked_child_never_writes_the_parents_waiting_rows(tmp_path: Path) -> None:
    result = run_python(FORK_WRITES_NOT_THE_PARENTS_ROWS, tmp_path, RECORDER_DIR)
    assert result.returncode == 0, result.stderr
    status, child = result.stdout.split()
    assert status == "0"
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0"],
        *([str(step), "0.5"] for step in range(1, 20)),
    ]
    said_by_child = [line for line in result.stderr.splitlines() if line.startswith(child)]
    assert len(said_by_child) == 1 and "forked process" in said_by_child[0], result.stderr
    _passes(tmp_path)
