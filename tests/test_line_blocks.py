"""Cutting a chart file's bytes at line ends, on broken bytes: a truncated last line, lone
CRs, NUL bytes, lines just under and over the limit, a file that shrank."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocms_tui.follow.line_blocks import MAX_LINE_BYTES, long_line_spans, up_to_last_newline


def test_ordinary_and_empty_chunks_have_no_long_line() -> None:
    assert long_line_spans(b"") == []
    assert long_line_spans(b"1,0.5,\n" * 100_000) == []
    assert long_line_spans(b"\n") == []


def test_a_line_of_exactly_the_limit_is_a_line_and_one_byte_more_is_not() -> None:
    at_limit = b"9" * MAX_LINE_BYTES + b"\n"
    over = b"9" * (MAX_LINE_BYTES + 1) + b"\n"
    assert long_line_spans(at_limit) == []
    assert long_line_spans(b"1,2,\n" + over + b"3,4,\n") == [(5, 5 + len(over))]


def test_every_long_line_is_found_wherever_it_is() -> None:
    over = b"x" * (MAX_LINE_BYTES + 7) + b"\n"
    row = b"1,0.5,\n"
    chunk = over + row * 3 + over + over + row
    first, second = len(over) + 3 * len(row), 2 * len(over) + 3 * len(row)
    assert long_line_spans(chunk) == [
        (0, len(over)),
        (first, first + len(over)),
        (second, second + len(over)),
    ]


@pytest.mark.parametrize("filler", [b"\r", b"\x00", b"1,0.5,\r"])
def test_lone_crs_and_nul_bytes_are_not_line_ends(filler: bytes) -> None:
    # Rows separated by \r alone, or NUL bytes, make one line: too long once past the limit.
    body = filler * (MAX_LINE_BYTES // len(filler) + 2)
    assert long_line_spans(b"1,2,\n" + body + b"\n") == [(5, 5 + len(body) + 1)]
    assert long_line_spans(filler * 10 + b"\n") == []


def _descriptor(path: Path, data: bytes) -> int:
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


def test_a_block_ends_just_past_its_last_newline(tmp_path: Path) -> None:
    descriptor = _descriptor(tmp_path / "loss.csv", b"1,0.5,\n2,0.6,\n3,0.")
    try:
        size = os.fstat(descriptor).st_size
        assert up_to_last_newline(descriptor, 0, size) == 14  # the truncated row left out
        assert up_to_last_newline(descriptor, 0, 14) == 14  # already whole lines
        assert up_to_last_newline(descriptor, 7, size - 7) == 7  # from an offset
        assert up_to_last_newline(descriptor, 0, 0) == 0
    finally:
        os.close(descriptor)


@pytest.mark.parametrize("data", [b"no newline at all", b"1,0.5\r2,0.6\r", b"\x00" * 5000])
def test_a_block_without_a_newline_in_its_end_is_left_whole(tmp_path: Path, data: bytes) -> None:
    descriptor = _descriptor(tmp_path / "loss.csv", data)
    try:
        assert up_to_last_newline(descriptor, 0, len(data)) == len(data)
    finally:
        os.close(descriptor)


def test_only_the_last_few_kilobytes_are_looked_at(tmp_path: Path) -> None:
    # A newline far before the end is not searched for: the block is kept whole (and the
    # unfinished line is then cut by the reader, which finds no newline in a long run).
    data = b"1,0.5,\n" + b"9" * 100_000
    descriptor = _descriptor(tmp_path / "loss.csv", data)
    try:
        assert up_to_last_newline(descriptor, 0, len(data)) == len(data)
    finally:
        os.close(descriptor)


def test_a_file_that_shrank_since_it_was_sized_leaves_the_length_asked(tmp_path: Path) -> None:
    """Its end no longer holds the probe: the length asked is kept, and the read that
    follows gets only what the file holds (the reader then cuts at its last newline)."""
    path = tmp_path / "loss.csv"
    descriptor = _descriptor(path, b"1,0.5,\n" * 1000)
    try:
        os.truncate(path, 7 * 10 + 3)  # shrank (truncated by the writer) after it was sized
        assert up_to_last_newline(descriptor, 0, 7 * 1000) == 7 * 1000
        assert up_to_last_newline(descriptor, 0, 7 * 10 + 3) == 7 * 10
    finally:
        os.close(descriptor)
