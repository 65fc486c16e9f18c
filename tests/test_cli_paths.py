"""No traceback for any path or argument: the real CLI as a subprocess, exit code and words."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from app_support import screen_text, wait_for, write_layout

from ocms_tui.follow.report import ExitCode
from ocms_tui.ui.app import OcmsApp

ROOT = Path(__file__).resolve().parent.parent
LONG_NAME = "a" * 300  # over every filesystem's 255-byte name limit


def run_cli(
    *arguments: str, prefix: tuple[str, ...] = (), python: str = sys.executable, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    finished = subprocess.run(
        [*prefix, python, "-m", "ocms_tui", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        # Without $METRICS, which would win over the paths given here.
        env={
            **{k: v for k, v in os.environ.items() if k != "METRICS"},
            "PYTHONPATH": python_path(),
        },
    )
    assert "Traceback" not in finished.stdout + finished.stderr, finished.stderr
    return finished


def python_path() -> str:
    """This worktree first, then the packages of the interpreter running the tests (so that
    another interpreter of the same version finds them too)."""
    return os.pathsep.join([str(ROOT), str(ROOT / "recorder"), sysconfig.get_paths()["purelib"]])


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    directory.mkdir()
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_text("1,0.5\n2,0.25\n", encoding="utf-8")
    return directory


def test_a_300_character_path_is_reported_not_raised(tmp_path: Path, run_dir: Path) -> None:
    long_path = tmp_path / LONG_NAME
    checked = run_cli("--check", str(long_path))
    assert checked.returncode == ExitCode.USAGE
    assert f"the directory {long_path} cannot be opened: File name too long" in checked.stdout
    inside = run_cli("--check", str(long_path / "ocms_metrics"))
    assert inside.returncode == ExitCode.USAGE and "File name too long" in inside.stdout

    snapshot = run_cli(str(long_path), "--snapshot", str(tmp_path / "x.svg"))
    assert snapshot.returncode == ExitCode.USAGE
    assert "nothing to snapshot" in snapshot.stderr and "File name too long" in snapshot.stderr
    onto_long = run_cli(str(run_dir), "--snapshot", str(tmp_path / f"{LONG_NAME}.svg"))
    assert onto_long.returncode == ExitCode.USAGE
    assert "cannot be written: File name too long" in onto_long.stderr
    assert not list(tmp_path.glob("*.svg"))


def test_snapshot_into_a_missing_directory_or_onto_a_directory_is_a_usage_error(
    tmp_path: Path, run_dir: Path
) -> None:
    missing = run_cli(str(run_dir), "--snapshot", str(tmp_path / "no" / "x.svg"))
    assert missing.returncode == ExitCode.USAGE
    assert f"the directory {tmp_path / 'no'} does not exist" in missing.stderr
    onto = run_cli(str(run_dir), "--snapshot", str(tmp_path))
    assert onto.returncode == ExitCode.USAGE
    assert f"{tmp_path} is a directory; name a file like {tmp_path / 'dashboard.svg'}" in (
        onto.stderr
    )
    written = run_cli(str(run_dir), "--snapshot", str(tmp_path / "ok.svg"))
    assert written.returncode == ExitCode.OK and (tmp_path / "ok.svg").stat().st_size > 1000


def test_nothing_to_snapshot_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    absent = run_cli("/nope", "--snapshot", str(tmp_path / "x.svg"))
    assert absent.returncode == ExitCode.USAGE
    assert "nothing to snapshot: the directory /nope does not exist" in absent.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    no_json = run_cli(str(empty), "--snapshot", str(tmp_path / "x.svg"))
    assert no_json.returncode == ExitCode.USAGE
    assert f"nothing to snapshot: no metrics.json in {empty}" in no_json.stderr
    assert not (tmp_path / "x.svg").exists()


def test_check_of_a_file_says_it_is_a_file_and_what_to_pass(run_dir: Path) -> None:
    checked = run_cli("--check", str(run_dir / "metrics.json"))
    assert checked.returncode == ExitCode.USAGE
    assert (
        f"{run_dir / 'metrics.json'} is a file, not a directory: pass the metrics directory "
        f"that holds metrics.json and the chart CSVs (for a file of a run, that is {run_dir})"
    ) in checked.stdout
    assert "does not exist" not in checked.stdout


def test_empty_paths_are_usage_errors_never_the_current_directory(run_dir: Path) -> None:
    # The working directory is a valid run: '' must not quietly check it.
    for arguments in (("--check", ""), ("", "--snapshot", "x.svg"), ("--snapshot", "")):
        refused = run_cli(*arguments, cwd=run_dir)
        assert refused.returncode == ExitCode.USAGE, arguments
        assert refused.stdout == ""
        assert "an empty path is not allowed (it would mean the current directory)" in (
            refused.stderr
        )
    verify = run_cli("verify", "--output-dir", "", cwd=run_dir)
    assert verify.returncode == ExitCode.USAGE
    assert "argument --output-dir: an empty path is not allowed" in verify.stderr
    assert not (run_dir / "x.svg").exists()


@functools.cache
def unprivileged() -> tuple[tuple[str, ...], str] | None:
    """(command prefix, python) that run the CLI as uid/gid 65534 with no groups, when this
    process is root and setpriv exists; None otherwise. The interpreter must be reachable
    by that user: this one, or another of the same version given our packages."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        if python is None:
            continue
        probe = subprocess.run(
            [*prefix, python, "-c", "import numpy, textual, ocms_tui.cli"],
            capture_output=True,
            env={**os.environ, "PYTHONPATH": python_path()},
            cwd="/",
            timeout=60,
        )
        if probe.returncode == 0:
            return prefix, python
    return None


@pytest.mark.slow  # several processes as another user: 2.7 s of CPU
def test_a_directory_without_permission_as_a_non_root_user(run_dir: Path) -> None:
    user = unprivileged()
    if user is None:
        pytest.skip("needs root with setpriv and an interpreter uid 65534 can run")
    prefix, python = user
    # pytest's own temporary directories are private to root: use one the user can reach.
    base = Path(tempfile.mkdtemp(prefix="ocms-cli-perm-"))
    base.chmod(0o755)
    locked = base / "locked"
    shutil.copytree(run_dir, locked / "run")
    locked.chmod(0o000)

    def as_user(*arguments: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*arguments, prefix=prefix, python=python, cwd=Path("/"))

    try:
        own = as_user("--check", str(locked))
        assert own.returncode == ExitCode.USAGE
        assert f"the directory {locked} cannot be read: Permission denied" in own.stdout
        inside = as_user("--check", str(locked / "run"))
        assert inside.returncode == ExitCode.USAGE
        assert f"the directory {locked / 'run'} cannot be opened: Permission denied" in (
            inside.stdout
        )
        writable = base / "writable"
        writable.mkdir(mode=0o777)
        writable.chmod(0o777)
        snapshot = as_user(str(locked / "run"), "--snapshot", str(writable / "x.svg"))
        assert snapshot.returncode == ExitCode.USAGE
        assert "nothing to snapshot" in snapshot.stderr and "Permission denied" in snapshot.stderr
        shutil.copytree(run_dir, base / "readable")
        into = as_user(str(base / "readable"), "--snapshot", str(locked / "x.svg"))
        assert into.returncode == ExitCode.USAGE
        assert f"{locked / 'x.svg'} cannot be written: Permission denied" in into.stderr
        not_writable = as_user(str(base / "readable"), "--snapshot", str(base / "x.svg"))
        assert not_writable.returncode == ExitCode.USAGE  # base is root's 0755 directory
        assert (
            f"{base / 'x.svg'} cannot be written: the directory {base} is not writable for this "
            "user (Permission denied)"
        ) in not_writable.stderr
    finally:
        locked.chmod(0o755)
        shutil.rmtree(base)


async def test_the_dashboard_says_what_is_wrong_with_a_path(tmp_path: Path, run_dir: Path) -> None:
    for path, words in (
        (tmp_path / LONG_NAME, "File name too long"),
        (run_dir / "loss.csv", "is a file, not a directory"),
    ):
        app = OcmsApp(path, watch=True)
        async with app.run_test(size=(200, 30)) as pilot:
            await wait_for(pilot, lambda app=app, words=words: words in screen_text(app))
            assert "waiting for" not in screen_text(app)


def test_verify_says_why_an_output_dir_cannot_be_read(tmp_path: Path, run_dir: Path) -> None:
    long_dir = run_cli("verify", "--output-dir", str(tmp_path / LONG_NAME))
    assert long_dir.returncode == 1
    assert "cannot be opened: File name too long (from --output-dir)" in long_dir.stdout
    a_file = run_cli("verify", "--output-dir", str(run_dir / "loss.csv"))
    assert a_file.returncode == 1
    assert "does not exist (a part of its path is a file) (from --output-dir)" in a_file.stdout
