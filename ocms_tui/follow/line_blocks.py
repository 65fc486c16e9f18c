"""Cutting a chart file's bytes at line ends: where a read block should end so that it holds
whole lines, and which lines are too long to be rows at all.
"""

from __future__ import annotations

import os

import numpy as np

# No legitimate row is anywhere near this long; past it the line is skipped unread.
MAX_LINE_BYTES = 1024 * 1024
_PROBE_BYTES = 4096


def long_line_spans(complete: bytes) -> list[tuple[int, int]]:
    """(start, end past the newline) of every line longer than MAX_LINE_BYTES."""
    half = MAX_LINE_BYTES // 2
    # Any line over the cap contains a whole aligned half-window without a newline,
    # so a chunk where every half-window has one (the normal case) costs a few finds.
    if all(
        complete.find(b"\n", window, window + half) >= 0
        for window in range(0, len(complete) - half + 1, half)
    ):
        return []
    newlines = np.flatnonzero(np.frombuffer(complete, dtype=np.uint8) == ord("\n"))
    starts = np.concatenate(([0], newlines[:-1] + 1))
    lengths = newlines - starts
    return [
        (int(starts[i]), int(newlines[i]) + 1) for i in np.flatnonzero(lengths > MAX_LINE_BYTES)
    ]


def up_to_last_newline(descriptor: int, offset: int, length: int) -> int:
    """`length`, shortened to end just past the last newline in its final few kilobytes.

    A block that ends on a line boundary is parsed as read; cutting the unfinished line off
    afterwards would copy the whole block (and fault in fresh pages for the copy).
    """
    probe_start = max(offset, offset + length - _PROBE_BYTES)
    probe = os.pread(descriptor, offset + length - probe_start, probe_start)
    newline = probe.rfind(b"\n")
    return length if newline < 0 else probe_start + newline + 1 - offset
