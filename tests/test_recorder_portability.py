"""OcmsRecorder where it runs: only rank 0 writes (launcher variables, torch.distributed),
and it is one stdlib-only Python 3.8 file that never imports torch itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ocms_recorder import RANK_ENV_VARS, OcmsRecorder
from test_recorder_support import (
    RECORDER_FILE,
    assert_consistent,
    read_rows,
    run_python,
)

pytestmark = pytest.mark.usefixtures("no_launcher_environment")


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
    env = {key: value for key, value in os.environ.items() if key not in RANK_ENV_VARS}
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
    result = run_python(code, str(RECORDER_FILE.parent), str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_without_fcntl_the_recorder_writes_unlocked(tmp_path: Path) -> None:
    """Where `fcntl` does not exist (Windows), there is no lock: the recorder still writes,
    silently (a second one is not stopped then: the one-writer rule is not checked)."""
    code = """
        import sys
        sys.modules["fcntl"] = None  # `import fcntl` raises ImportError, as on Windows
        sys.path.insert(0, sys.argv[2])
        from ocms_recorder import OcmsRecorder
        first = OcmsRecorder(log_dir=sys.argv[1])
        first.log(step=0, metrics={"loss": 1.0})
        second = OcmsRecorder(log_dir=sys.argv[1])  # not stopped: nothing to check with
        second.log(step=1, metrics={"loss": 2.0})
        first.finish()
        second.finish()
    """
    result = run_python(code, tmp_path, RECORDER_FILE.parent)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert read_rows(tmp_path, "loss.csv") == [["0", "1.0"], ["1", "2.0"]]
    assert_consistent(tmp_path)
