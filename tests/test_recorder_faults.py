"""OcmsRecorder under real trouble: resumed runs, crashed files, unwritable, deleted and full
disks, ranks, and the promise that it is one stdlib-only Python 3.8 file."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ocms_recorder import OcmsRecorder
from test_recorder_support import (
    TEN_METRICS,
    assert_consistent,
    read_rows,
    warnings_from_recorder,
    y_axes,
)

RECORDER_FILE = Path(__file__).resolve().parents[1] / "recorder" / "ocms_recorder.py"
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK")


@pytest.fixture(autouse=True)
def _no_launcher_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("METRICS", *RANK_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def _run_python(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-B", "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


# -- resuming into an existing directory ---------------------------------------------------


def _first_run(directory: Path) -> None:
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        for step in range(3):
            recorder.log(step=step, metrics={"vlm_loss": 0.5, "loss": 1.0, "grad_norm": 2.0})


def test_a_resumed_run_appends_to_the_existing_charts_in_their_column_order(
    tmp_path: Path,
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
    assert_consistent(tmp_path)


def test_a_partial_last_line_left_by_a_crash_is_discarded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    _first_run(tmp_path)
    with (tmp_path / "loss.csv").open("a") as handle:
        handle.write("3,0.12")  # the crash came mid-row
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=3, metrics={"loss": 0.25, "vlm_loss": 0.125})
    assert read_rows(tmp_path, "loss.csv")[2:] == [["2", "0.5", "1.0"], ["3", "0.125", "0.25"]]
    assert any("partial last line" in text for text in warnings_from_recorder(caplog))
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
    (tmp_path / "metrics.json").write_text(
        '{"version": 1, "charts": [{"name": "loss", "file": "loss.csv", "x_axis": "step",'
        ' "y_axis": ["loss", "eval_loss"]}]}'
    )
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
    ],
)
def test_an_unusable_metrics_json_is_replaced_by_a_new_layout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, document: str
) -> None:
    caplog.set_level(logging.WARNING, logger="ocms_recorder")
    (tmp_path / "metrics.json").write_text(document)
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    assert y_axes(tmp_path) == {"loss": ["loss"]}
    assert len(warnings_from_recorder(caplog)) == 1
    assert_consistent(tmp_path)


# -- faults while training: never an exception, one warning, recover when possible ----------


def test_a_log_dir_that_cannot_be_created_never_raises_and_warns_once(
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
    recorder.finish()
    assert read_rows(blocker, "loss.csv") == [["5", "0.5", "0.25", "0.125"]]
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
    result = _run_python(code, str(tmp_path), str(RECORDER_FILE.parent))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "training went on"
    failures = [line for line in result.stderr.splitlines() if "cannot write" in line]
    assert len(failures) == 1, result.stderr
    loss_rows = read_rows(tmp_path, "loss.csv")  # asserts the file ends with a whole row
    assert 50 < len(loss_rows) < 2000
    assert [row[0] for row in loss_rows] == [str(step) for step in range(len(loss_rows))]
    assert_consistent(tmp_path)


# -- ranks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environment", "writes"),
    [
        ({}, True),
        ({"RANK": "1"}, False),
        ({"RANK": "0", "SLURM_PROCID": "1"}, True),
        ({"SLURM_PROCID": "2"}, False),
        ({"OMPI_COMM_WORLD_RANK": "1"}, False),
        ({"PMI_RANK": "3"}, False),
        ({"LOCAL_RANK": "1"}, False),
        ({"PMI_RANK": "0", "LOCAL_RANK": "1"}, True),
        ({"RANK": "", "SLURM_PROCID": "1"}, False),
    ],
)
def test_only_rank_zero_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], writes: bool
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    directory = tmp_path / "metrics"
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    assert directory.exists() is writes


def test_the_rank_comes_from_torch_distributed_when_it_is_initialised(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    code = """
        import os, sys
        import torch.distributed as dist
        sys.path.insert(0, sys.argv[4])
        rank = int(sys.argv[3])
        dist.init_process_group(
            "gloo", init_method="file://" + sys.argv[2], rank=rank, world_size=2
        )
        from ocms_recorder import OcmsRecorder
        with OcmsRecorder(log_dir=sys.argv[1]) as recorder:
            recorder.log(step=rank, metrics={"loss": float(rank)})
        dist.barrier()
        dist.destroy_process_group()
    """
    # No launcher variables: the environment alone would make both processes rank 0.
    env = {key: value for key, value in os.environ.items() if key not in RANK_VARIABLES}
    env["GLOO_SOCKET_IFNAME"] = "lo"
    store = tmp_path / "store"
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-B",
                "-c",
                textwrap.dedent(code),
                str(tmp_path / "m"),
                str(store),
                str(rank),
                str(RECORDER_FILE.parent),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    assert read_rows(tmp_path / "m", "loss.csv") == [["0", "0.0"]]


# -- one stdlib-only Python 3.8 file ---------------------------------------------------------


def test_the_recorder_file_is_python_3_8_compatible() -> None:
    vermin = Path(sys.executable).with_name("vermin")
    result = subprocess.run(
        [str(vermin), "-t=3.8-", "--no-tips", "--violations", str(RECORDER_FILE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _python_3_8() -> str | None:
    """A Python 3.8 interpreter on this machine (on PATH or from pyenv), or None."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [
        shutil.which("python3.8"),
        *map(str, sorted(pyenv_root.glob("versions/3.8*/bin/python3.8"))),
    ]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 8)":
            return candidate
    return None


def test_the_recorder_runs_on_a_real_python_3_8(tmp_path: Path) -> None:
    interpreter = _python_3_8()
    if interpreter is None:
        pytest.skip("no Python 3.8 interpreter here; vermin still checks the syntax")
    code = """
        import sys
        sys.path.insert(0, sys.argv[1])
        from ocms_recorder import OcmsRecorder
        for first_step in (0, 2):  # the second recorder resumes the first one's directory
            with OcmsRecorder(log_dir=sys.argv[2]) as recorder:
                for step in range(first_step, first_step + 2):
                    recorder.log(step=step, metrics={"loss": 1.0, "timing/a b": step})
                recorder.log(step=first_step + 2, metrics={"eval_loss": 0.5})
    """
    result = subprocess.run(
        [
            interpreter,
            "-I",
            "-S",
            "-B",
            "-c",
            textwrap.dedent(code),
            str(RECORDER_FILE.parent),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert read_rows(tmp_path, "loss.csv") == [
        ["0", "1.0", ""],
        ["1", "1.0", ""],
        ["2", "", "0.5"],
        ["2", "1.0", ""],
        ["3", "1.0", ""],
        ["4", "", "0.5"],
    ]
    assert read_rows(tmp_path, "timing.csv")[-1] == ["3", "3.0"]
    assert_consistent(tmp_path)


def test_the_recorder_copied_alone_runs_on_the_standard_library_only(tmp_path: Path) -> None:
    shutil.copy(RECORDER_FILE, tmp_path / "ocms_recorder.py")
    code = """
        import sys
        sys.path.insert(0, sys.argv[1])
        from ocms_recorder import OcmsRecorder
        with OcmsRecorder(log_dir=sys.argv[2]) as recorder:
            recorder.log(step=0, metrics={"loss": 1.0, "learning_rate/a": 2.0, "odd": "x"})
            recorder.log(step=1, metrics={"loss": 1.0, "learning_rate/a": 2.0, "odd": "x"})
        top_level = {name.partition(".")[0] for name in sys.modules}
        print(sorted(top_level - set(sys.stdlib_module_names) - {"__main__", "ocms_recorder"}))
    """
    # -I -S: no PYTHONPATH, no site-packages, no .pth hooks: the copied file and the stdlib.
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-B",
            "-c",
            textwrap.dedent(code),
            str(tmp_path),
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert read_rows(tmp_path / "m", "loss.csv") == [["0", "1.0"], ["1", "1.0"]]


def test_the_recorder_never_imports_torch_itself(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # only meaningful where torch could be imported
    code = """
        import sys
        sys.path.insert(0, sys.argv[1])
        from ocms_recorder import OcmsRecorder
        with OcmsRecorder(log_dir=sys.argv[2]) as recorder:
            recorder.log(step=0, metrics={"loss": 1.0})
        print("torch" in sys.modules)
    """
    result = _run_python(code, str(RECORDER_FILE.parent), str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
