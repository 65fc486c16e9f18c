"""Whole lines sampled across a chart file, on broken files: empty, one huge line, a
truncated last line, lone CRs, NUL bytes, a file that shrank since it was sized, a FIFO.
Every line sampled is a whole line of the file, in file order, never twice."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ocms_tui.follow.preview_sample import PREVIEW_BLOCK_BYTES, PREVIEW_BLOCKS, sample_lines


def _sample(path: Path, data: bytes, size: int | None = None) -> bytes:
    path.write_bytes(data)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return sample_lines(descriptor, len(data) if size is None else size)
    finally:
        os.close(descriptor)


def _assert_whole_lines_in_order(sample: bytes, data: bytes) -> None:
    """Every sampled line is a line of `data` (after a newline or at its start), in order."""
    assert sample == b"" or sample.endswith(b"\n")
    position = 0
    for line in sample.splitlines(keepends=True):
        found = data.find(line, position)
        while found > 0 and data[found - 1 : found] != b"\n":
            found = data.find(line, found + 1)
        assert found >= 0, line[:80]
        position = found + len(line)


def test_a_small_file_is_sampled_whole(tmp_path: Path) -> None:
    data = b"".join(b"%d,0.5,\n" % step for step in range(100))
    assert _sample(tmp_path / "loss.csv", data) == data


def test_a_large_file_is_sampled_across_its_whole_length(tmp_path: Path) -> None:
    data = b"".join(b"%d,0.5,\n" % step for step in range(1_000_000))
    sample = _sample(tmp_path / "loss.csv", data)
    _assert_whole_lines_in_order(sample, data)
    assert len(sample) <= PREVIEW_BLOCKS * PREVIEW_BLOCK_BYTES
    lines = sample.splitlines()
    assert lines[0] == b"0,0.5," and lines[-1] == b"999999,0.5,"  # first and latest rows
    assert len(lines) == len(set(lines))  # no window read twice


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"9" * (PREVIEW_BLOCK_BYTES * 3),  # one huge unfinished line
        b"9" * (PREVIEW_BLOCK_BYTES * 3) + b"\n",  # one huge line
        b"1,0.5,\r" * 50_000,  # rows separated by lone CRs: one line, never finished
        b"\x00" * 300_000 + b"\n1,0.5,\n",  # a hole of NUL bytes (a crash before a flush)
        b"".join(b"%d,0.5,\n" % i for i in range(50_000)) + b"50000,0.",  # truncated last row
        b"".join(b"%d,0.5,\r\n" % i for i in range(50_000)),  # CRLF
    ],
)
def test_broken_files_give_whole_lines_of_the_file_or_nothing(tmp_path: Path, data: bytes) -> None:
    sample = _sample(tmp_path / "loss.csv", data)
    _assert_whole_lines_in_order(sample, data)
    assert not sample.endswith(b"50000,0.")
    if b"\n" not in data[:-1] and not data.endswith(b"\n"):
        assert sample == b""


def _sample_after(path: Path, data: bytes, change: Callable[[], None]) -> bytes:
    """The sample of `data` (sized as written) after `change` hit the file opened."""
    path.write_bytes(data)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        change()
        return sample_lines(descriptor, len(data))
    finally:
        os.close(descriptor)


ROWS = b"".join(b"%d,0.5,\n" % step for step in range(200_000))


def test_a_file_that_shrank_since_it_was_sized_gives_lines_it_still_has(tmp_path: Path) -> None:
    path = tmp_path / "loss.csv"
    kept = 10_000 * 9 + 5
    # Truncated by its writer after the fstat.
    sample = _sample_after(path, ROWS, lambda: os.truncate(path, kept))
    _assert_whole_lines_in_order(sample, ROWS[:kept])


def test_a_file_replaced_while_sampled_is_sampled_from_the_file_opened(tmp_path: Path) -> None:
    path, replacement = tmp_path / "loss.csv", tmp_path / "new.csv"
    replacement.write_bytes(b"7,7,\n" * 10)
    # The writer renames a new file over it.
    sample = _sample_after(path, ROWS, lambda: os.replace(replacement, path))
    _assert_whole_lines_in_order(sample, ROWS)
    assert sample.splitlines()[-1] == b"199999,0.5,"


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "loss.csv")
    outcome: list[BaseException | bytes] = []

    def sample() -> None:
        descriptor = os.open(tmp_path / "loss.csv", os.O_RDONLY | os.O_NONBLOCK)
        try:
            outcome.append(sample_lines(descriptor, 10 * PREVIEW_BLOCK_BYTES))
        except OSError as error:  # a FIFO cannot be read at an offset
            outcome.append(error)
        finally:
            os.close(descriptor)

    worker = threading.Thread(target=sample)
    worker.start()
    worker.join(timeout=5)
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)
