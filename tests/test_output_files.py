"""Output paths: `--snapshot OUT.svg` and `import --out DIR` on anything a user may name.

`--snapshot` onto a FIFO waited for a reader forever. Now every path that is not a regular
file or a new name in a writable directory is a usage error (exit 2) before anything is
rendered; the real CLI runs as a subprocess on real FIFOs, sockets, devices and symlinks.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from app_support import write_layout

from ocms_tui.follow.report import ExitCode
from ocms_tui.format.output_files import output_file, replace_file
from tests.test_cli_paths import run_cli, unprivileged

QUICK_SECONDS = 30  # a refusal comes before any rendering; a hang is what this catches


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    directory.mkdir()
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_text("1,0.5\n2,0.25\n")
    return directory


@pytest.fixture
def places(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Output paths that must be refused, each with the words that say why."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "fifo")
    (out / "to-fifo").symlink_to("fifo")
    (out / "dangling").symlink_to("nowhere")
    (out / "a-file").write_text("x")
    (out / "to-dir").symlink_to(out)
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(out / "socket"))
    listening.close()
    return {
        "fifo": (out / "fifo", "is a FIFO, not a regular file"),
        "symlink to a fifo": (out / "to-fifo", f"(a symlink to {out / 'fifo'}) is a FIFO"),
        "device": (Path("/dev/null"), "/dev/null is a character device, not a regular file"),
        "dangling symlink": (out / "dangling", "is a symlink to nowhere, which does not exist"),
        "socket": (out / "socket", "is a socket, not a regular file"),
        "directory": (out, "is a directory; name a file like"),
        "symlink to a directory": (out / "to-dir", "is a directory"),
        "parent is a file": (out / "a-file" / "x.svg", "a part of its path is a file"),
        "missing parent": (out / "no" / "x.svg", f"the directory {out / 'no'} does not exist"),
    }


CASES = [
    "fifo",
    "symlink to a fifo",
    "device",
    "dangling symlink",
    "socket",
    "directory",
    "symlink to a directory",
    "parent is a file",
    "missing parent",
]


@pytest.mark.parametrize("case", CASES)
def test_snapshot_onto_anything_but_a_file_is_refused_at_once(
    run_dir: Path, places: dict[str, tuple[Path, str]], case: str
) -> None:
    path, words = places[case]
    before = sorted(os.listdir(path.parent)) if path.parent.is_dir() else None
    started = time.monotonic()
    result = run_cli(str(run_dir), "--snapshot", str(path))
    assert time.monotonic() - started < QUICK_SECONDS
    assert result.returncode == ExitCode.USAGE, result.stdout
    assert f"ocms-tui: error: --snapshot: {path}" in result.stderr and words in result.stderr
    if before is not None:  # nothing made beside it (no temp file), the FIFO still a FIFO
        assert sorted(os.listdir(path.parent)) == before
    assert stat.S_ISFIFO(os.lstat(places["fifo"][0]).st_mode)


# An empty directory is a valid --out, and import creates missing parents.
@pytest.mark.parametrize(
    "case", [case for case in CASES if case not in ("directory", "missing parent")]
)
def test_import_out_onto_anything_but_a_new_directory_is_refused_at_once(
    tmp_path: Path, places: dict[str, tuple[Path, str]], case: str
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "metrics.csv").write_text("step,loss\n1,0.5\n")
    path, _ = places[case]
    started = time.monotonic()
    result = run_cli("import", str(source), "--out", str(path))
    assert time.monotonic() - started < QUICK_SECONDS
    assert result.returncode == ExitCode.USAGE, result.stdout
    assert result.stderr.startswith("ocms-tui import: error: ")
    assert ("already exists" in result.stderr) is (os.path.lexists(path))
    assert not any(name.endswith(".importing") for name in os.listdir(places["fifo"][0].parent))


def test_a_file_or_a_symlink_to_one_is_replaced_whole_keeping_its_mode(
    tmp_path: Path, run_dir: Path
) -> None:
    existing = tmp_path / "existing.svg"
    existing.write_text("old")
    existing.chmod(0o640)
    (tmp_path / "link.svg").symlink_to("existing.svg")
    for name in ("existing.svg", "link.svg", "new.svg"):
        result = run_cli(str(run_dir), "--snapshot", str(tmp_path / name))
        assert result.returncode == ExitCode.OK, result.stderr
        assert (tmp_path / name).read_text().startswith("<svg")
    assert (tmp_path / "link.svg").is_symlink()
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o666 & ~_umask()
    assert sorted(os.listdir(tmp_path)) == ["existing.svg", "link.svg", "new.svg", "run"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_read_only_file_is_refused_for_a_non_root_user() -> None:
    user = unprivileged()
    if user is None:
        pytest.skip("needs root with setpriv and an interpreter uid 65534 can run")
    prefix, python = user
    # pytest's own temporary directories are private to root: use one the user can reach.
    base = Path(tempfile.mkdtemp(prefix="ocms-output-perm-"))
    try:
        base.chmod(0o777)
        run = base / "run"
        run.mkdir(mode=0o755)
        write_layout(run, {"loss": ["loss"]})
        (run / "loss.csv").write_text("1,0.5\n")
        for path in (run / "metrics.json", run / "loss.csv"):
            path.chmod(0o644)
        read_only = base / "read-only.svg"
        read_only.write_text("keep me")
        read_only.chmod(0o444)

        def as_user(out: Path) -> subprocess.CompletedProcess[str]:
            return run_cli(str(run), "--snapshot", str(out), prefix=prefix, python=python)

        refused = as_user(read_only)
        assert refused.returncode == ExitCode.USAGE
        assert f"{read_only} cannot be written: Permission denied" in refused.stderr
        assert read_only.read_text() == "keep me"
        written = as_user(base / "ok.svg")  # the same user, the same directory: written
        assert written.returncode == ExitCode.OK, written.stderr
        assert (base / "ok.svg").read_text().startswith("<svg")
    finally:
        shutil.rmtree(base)


def test_output_file_answers_without_opening_anything(
    places: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    for path, words in places.values():
        target, problem = output_file(path)
        assert target is None and problem is not None and words in problem
    (tmp_path / "file").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    assert output_file(tmp_path / "link") == (tmp_path / "file", None)
    assert output_file(tmp_path / "new") == (tmp_path / "new", None)
    assert output_file(Path("a\0b"))[0] is None


def test_a_fifo_that_appears_after_the_check_is_replaced_not_written_into(tmp_path: Path) -> None:
    """The race the check cannot close: the file is written beside the name and renamed
    over it, so a FIFO put there meanwhile is replaced; nothing opens it."""
    target = tmp_path / "out.svg"
    assert output_file(target) == (target, None)
    os.mkfifo(target)
    done = threading.Event()

    def replace() -> None:
        replace_file(target, lambda temp: temp.write_text("<svg/>"))
        done.set()

    worker = threading.Thread(target=replace, daemon=True)
    worker.start()
    assert done.wait(10), "replace_file opened the FIFO and waits for a reader"
    assert stat.S_ISREG(os.lstat(target).st_mode) and target.read_text() == "<svg/>"


def test_a_failing_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "out.svg"
    target.write_text("old")

    def fail(temp: Path) -> None:
        temp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        replace_file(target, fail)
    assert os.listdir(tmp_path) == ["out.svg"] and target.read_text() == "old"
