"""A chart's file is found inside its metrics directory only, and opened without waiting:
real files, symlinks (out, in, looping, dangling), a FIFO, a directory, odd names."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from ocms_tui.follow.chart_file import FileState, open_chart_file, resolve_inside


def test_a_plain_file_is_found_with_one_lstat(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,\n")
    assert resolve_inside(tmp_path, "loss.csv") == (tmp_path / "loss.csv", FileState.OK)
    assert resolve_inside(tmp_path, "missing.csv") == (None, FileState.MISSING)


def test_a_symlink_out_of_the_directory_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.csv").write_bytes(b"1,42,\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "loss.csv").symlink_to(tmp_path / "secret.csv")
    (run / "relative.csv").symlink_to(Path("..") / "secret.csv")
    assert resolve_inside(run, "loss.csv") == (None, FileState.OUTSIDE)
    assert resolve_inside(run, "relative.csv") == (None, FileState.OUTSIDE)
    assert open_chart_file(run, "loss.csv") == (None, FileState.OUTSIDE)


def test_a_symlink_inside_the_directory_is_followed_to_its_real_path(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_bytes(b"1,0.5,\n")
    (tmp_path / "loss.csv").symlink_to(tmp_path / "data" / "real.csv")
    path, state = resolve_inside(tmp_path, "loss.csv")
    assert state is FileState.OK and path == (tmp_path / "data" / "real.csv").resolve()


def test_looping_and_dangling_symlinks_are_unreadable_or_missing(tmp_path: Path) -> None:
    (tmp_path / "loop.csv").symlink_to(tmp_path / "loop.csv")
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "gone.csv")
    assert resolve_inside(tmp_path, "loop.csv") == (None, FileState.UNREADABLE)
    assert resolve_inside(tmp_path, "dangling.csv") == (None, FileState.MISSING)
    assert open_chart_file(tmp_path, "dangling.csv") == (None, FileState.MISSING)


@pytest.mark.parametrize("name", ["", ".", "..", "../loss.csv", "sub/../../loss.csv"])
def test_names_that_are_not_a_file_in_the_directory_lead_nowhere(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,\n")
    path, state = resolve_inside(run, name)
    assert path is None and state in (FileState.OUTSIDE, FileState.MISSING)


def test_a_fifo_is_opened_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "loss.csv")
    opened: list[tuple[int | None, FileState]] = []
    worker = threading.Thread(target=lambda: opened.append(open_chart_file(tmp_path, "loss.csv")))
    worker.start()
    worker.join(timeout=5)
    assert opened, "opening a FIFO waited for a writer"
    descriptor, state = opened[0]
    assert descriptor is not None and state is FileState.OK
    try:
        assert stat.S_ISFIFO(os.fstat(descriptor).st_mode)  # the reader then refuses it
    finally:
        os.close(descriptor)


def test_a_directory_named_like_a_chart_opens_for_the_reader_to_refuse(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").mkdir()
    descriptor, state = open_chart_file(tmp_path, "loss.csv")
    assert descriptor is not None and state is FileState.OK
    try:
        assert stat.S_ISDIR(os.fstat(descriptor).st_mode)
    finally:
        os.close(descriptor)


def test_a_file_the_process_may_not_read_is_unreadable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000")
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,\n")
    (tmp_path / "loss.csv").chmod(0)
    assert open_chart_file(tmp_path, "loss.csv") == (None, FileState.UNREADABLE)


def test_the_descriptor_is_not_inherited_by_child_processes(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_bytes(b"1,0.5,\n")
    descriptor, _ = open_chart_file(tmp_path, "loss.csv")
    assert descriptor is not None
    try:
        assert not os.get_inheritable(descriptor)
    finally:
        os.close(descriptor)
