"""Follow one chart CSV: read only appended bytes, notice truncation and replacement.

No Textual here: the dashboard, the checker and the benchmarks all use this class.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ocms_tui.follow.chart_file import FileState, open_chart_file
from ocms_tui.follow.line_blocks import MAX_LINE_BYTES, long_line_spans, up_to_last_newline
from ocms_tui.follow.preview_sample import Preview, sample_lines
from ocms_tui.format.parse import (
    ChunkContext,
    NativeParse,
    ParsedRows,
    concat_parsed,
    parse_chunk,
    start_native_parse,
)
from ocms_tui.format.problems import Problem, ProblemCollector, Rule

# Big enough that polars' per-call cost vanishes, small enough to keep the peak of a load low.
READ_BLOCK_BYTES = 8 * 1024 * 1024
_FINGERPRINT_BYTES = 64
# Blocks read ahead of the one being finished: the native parser always has the next block
# while this thread checks and stores the one before.
READ_AHEAD_BLOCKS = 2


@dataclass
class _Block:
    """Complete lines read, waiting for their parse to be finished."""

    data: bytes
    long_lines: list[tuple[int, int]]
    started: NativeParse | None
    end: int  # file offset just past the block


RowSink = Callable[[ParsedRows], None]


@dataclass
class ReadResult:
    """What one poll found. Rows went to the sink (or into `parts` when none was given)."""

    reset: bool = False  # the file was replaced, truncated or lost: drop its rows first
    parts: list[ParsedRows] = field(default_factory=list)
    rows: int = 0
    more: bool = False  # bytes are left to read (a budget or a settling file stopped this poll)
    held: bool = False  # the file's first row does not fit the schema yet; looked at again later


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None on other C libraries."""
    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def _give_back_freed_blocks() -> None:
    """Return the freed read blocks to the OS after a large read.

    glibc keeps freed memory at the top of its heap for reuse, up to twice the largest
    block, so a dashboard that loaded a big run once would hold a block's worth of memory
    for nothing while it only follows small appends.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class CsvFollower:
    """Incremental reader of one chart CSV with a fixed row layout."""

    def __init__(
        self,
        directory: Path,
        file_name: str,
        y_axis: tuple[str, ...],
        settle_seconds: float = 1.0,
        chart: str | None = None,
    ) -> None:
        self.directory = directory
        self.chart = chart  # named in problems that have a place in the picture
        self.settle_seconds = settle_seconds
        self._held_since: float | None = None
        self.file_name = file_name
        self.y_axis = y_axis
        self.state = FileState.MISSING
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino)
        self._fingerprint = b""
        self.offset = 0
        self._parsed_offset = 0  # end of the last block parsed (offset can be blocks ahead)
        self._read_since_trim = 0
        self.size = 0
        self.mtime: float | None = None
        self._partial = False
        # The unfinished last line holds a \r before its end: rows separated by \r alone.
        self.lone_carriage_return_in_tail = False
        self._skipping_long_line = False
        self._new_context()

    def _new_context(self) -> None:
        self.context = ChunkContext(
            self.file_name, self.y_axis, ProblemCollector(self.file_name), chart=self.chart
        )

    def _forget(self) -> None:
        self._identity = None
        self._fingerprint = b""
        self.offset = 0
        self._parsed_offset = 0
        self.size = 0
        self._partial = False
        self.lone_carriage_return_in_tail = False
        self._skipping_long_line = False
        self._new_context()

    @property
    def identity(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the file being read; None before it is read."""
        return self._identity

    @property
    def problems(self) -> list[Problem]:
        return self.context.problems.summary()

    @property
    def partial_line(self) -> bool:
        """The last line has no newline yet (a row still being written)."""
        return self._partial or self._skipping_long_line

    @property
    def lines_read(self) -> int:
        return self.context.first_line - 1

    def _open(self) -> tuple[int | None, FileState]:
        """A descriptor of the chart's file (the caller closes it), or None and why not."""
        return open_chart_file(self.directory, self.file_name)

    def preview(self, larger_than: int) -> Preview | None:
        """A sample of the whole file when nothing of it is read yet and it holds more than
        `larger_than` bytes; None otherwise (a small file is simply read). Reads nothing
        for `poll`, which reads the file from its start as always; notes the file's state,
        size and mtime."""
        if self._identity is not None or self.offset:
            return None
        descriptor, _ = self._open()
        if descriptor is None:
            return None  # poll() finds out why and says so
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or info.st_size <= larger_than:
                return None
            sample = sample_lines(descriptor, info.st_size)
        except OSError:
            return None
        finally:
            os.close(descriptor)
        # What the file is, as seen now: until the first poll, its problems must not say
        # that it is missing or empty.
        self.state, self.size, self.mtime = FileState.OK, info.st_size, info.st_mtime
        # A throwaway context: a sampled line's number is unknown, and its problems are
        # reported by the full read.
        context = ChunkContext(self.file_name, self.y_axis, ProblemCollector(self.file_name))
        rows = parse_chunk(sample, context)
        return Preview(rows, (info.st_dev, info.st_ino))

    def poll(
        self,
        budget_bytes: int | None = None,
        now: float | None = None,
        on_reset: Callable[[], None] | None = None,
        on_rows: RowSink | None = None,
    ) -> ReadResult:
        """Read what was appended since the last poll (at most `budget_bytes` of it).

        `on_reset` runs before any row of a replaced file reaches `on_rows`, so a caller
        can stream rows straight into its storage without holding a second copy.
        """
        result = ReadResult()
        if on_rows is None:
            on_rows = result.parts.append
        counted_sink = on_rows

        def on_rows_counted(parsed: ParsedRows) -> None:
            result.rows += parsed.rows
            counted_sink(parsed)

        descriptor, state = self._open()
        if descriptor is None:
            return self._lost(state, on_reset)
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                return self._lost(FileState.NOT_A_FILE, on_reset)
            self.state = FileState.OK
            self.mtime = info.st_mtime
            identity = (info.st_dev, info.st_ino)
            replaced = self._identity is not None and (
                identity != self._identity
                or info.st_size < self.offset
                or not self._same_start(descriptor)
            )
            if (replaced or self.offset == 0) and self._must_settle(descriptor, now):
                return ReadResult(more=True, held=True)
            if replaced:
                self._forget()
                result.reset = True
                if on_reset is not None:
                    on_reset()
            self._identity = identity
            self.size = info.st_size
            result.more = self._read_new(descriptor, info.st_size, budget_bytes, on_rows_counted)
            return result
        except OSError:
            self.state = FileState.UNREADABLE
            return ReadResult()
        finally:
            os.close(descriptor)

    def _lost(self, state: FileState, on_reset: Callable[[], None] | None) -> ReadResult:
        had_rows = self._identity is not None or self.lines_read > 0
        self._forget()
        self.state = state
        if had_rows and on_reset is not None:
            on_reset()
        return ReadResult(reset=had_rows)

    def _must_settle(self, descriptor: int, now: float | None) -> bool:
        """Wait a moment before reading a file whose first row has the wrong width.

        A writer widening a chart replaces the CSV and metrics.json one after the other;
        a read between the two renames sees a width mismatch that is gone a moment later.
        """
        head = os.pread(descriptor, 64 * 1024, 0)
        newline = head.find(b"\n")
        if newline < 0 or head[:newline].count(b",") + 1 == 1 + len(self.y_axis):
            self._held_since = None
            return False
        now = time.monotonic() if now is None else now
        if self._held_since is None:
            self._held_since = now
        if now - self._held_since < self.settle_seconds:
            return True
        self._held_since = None
        return False

    def _same_start(self, descriptor: int) -> bool:
        """Rewritten in place (same inode) shows as different first bytes."""
        if not self._fingerprint:
            return True
        return os.pread(descriptor, len(self._fingerprint), 0) == self._fingerprint

    def _read_new(
        self, descriptor: int, size: int, budget_bytes: int | None, on_rows: RowSink
    ) -> bool:
        """Parse the complete lines after `offset`; True when a budget left bytes unread.

        `offset` only ever moves past whole lines, so an unfinished last line is simply
        read again next time instead of being kept and concatenated. Blocks are pipelined:
        READ_AHEAD_BLOCKS are read and being parsed natively on worker threads while this
        thread finishes the oldest and hands its rows to `on_rows`.
        """
        end = size if budget_bytes is None else min(size, self.offset + budget_bytes)
        self._partial = False
        self.lone_carriage_return_in_tail = False
        start = self.offset
        ahead: deque[_Block] = deque()

        def finish_oldest() -> None:
            block = ahead.popleft()
            parsed = self._parse_complete(block.data, block.long_lines, block.started)
            self._parsed_offset = block.end
            if parsed.rows:
                on_rows(parsed)

        def finish_all() -> None:
            while ahead:
                finish_oldest()

        try:
            while (complete := self._next_block(descriptor, size, end, finish_all)) is not None:
                long_lines = long_line_spans(complete)
                started = None if long_lines else start_native_parse(complete, len(self.y_axis))
                ahead.append(_Block(complete, long_lines, started, self.offset))
                # Held by `ahead` alone: a finished block is freed before the next is read,
                # so that the allocator hands the same memory out again.
                complete, started = b"", None
                if len(ahead) >= READ_AHEAD_BLOCKS:
                    finish_oldest()
        finally:
            # Blocks already read are parsed and handed over even when reading the next one
            # failed: the offset has moved past them.
            finish_all()
        # Once caught up with the file, and only then: a load that goes on in budgeted steps
        # reuses the same memory from step to step.
        self._read_since_trim += self.offset - start
        if end >= size and self._read_since_trim >= READ_BLOCK_BYTES:
            self._read_since_trim = 0
            _give_back_freed_blocks()
        # An unfinished last line is not "more": it cannot be read until it is finished.
        return end < size and self.offset < size and not self._partial

    def _next_block(
        self, descriptor: int, size: int, end: int, before_skipping: Callable[[], None]
    ) -> bytes | None:
        """The next run of complete lines before `end` (offset moves past it), or None.

        `before_skipping` runs before a line too long to read is counted: the blocks read
        before it must be parsed first, for every line to keep its number.
        """
        while self.offset < end:
            # Read at least one line's worth past the budget, so no line can stall it.
            want = max(min(READ_BLOCK_BYTES, end - self.offset), MAX_LINE_BYTES + 1)
            want = up_to_last_newline(descriptor, self.offset, min(want, size - self.offset))
            block = os.pread(descriptor, want, self.offset)
            if not block:
                return None
            if self.offset == 0:
                self._fingerprint = block[:_FINGERPRINT_BYTES]
            if self._skipping_long_line:
                before_skipping()
                newline = block.find(b"\n")
                if newline < 0:
                    self.offset += len(block)
                    continue
                self._skipping_long_line = False
                self.context.first_line += 1
                self.offset += newline + 1
                continue
            last_newline = block.rfind(b"\n")
            if last_newline < 0:
                if len(block) > MAX_LINE_BYTES:
                    before_skipping()
                    self._report_long_line(self.context.first_line)
                    self._skipping_long_line = True
                    self.offset += len(block)
                    continue
                self._partial = True  # a row still being written
                # A \r as the last byte may be a \r\n row end half written; any other one
                # is a row separator no row end can follow.
                self.lone_carriage_return_in_tail = block.find(b"\r", 0, len(block) - 1) >= 0
                return None
            complete = block if last_newline + 1 == len(block) else block[: last_newline + 1]
            self.offset += len(complete)
            return complete
        return None

    def expected_rows(self) -> int:
        """The file's row count, extrapolated from the lines read so far."""
        if not self._parsed_offset:
            return 0
        return int(self.lines_read * self.size / self._parsed_offset)

    def _parse_complete(
        self,
        complete: bytes,
        long_lines: list[tuple[int, int]],
        started: NativeParse | None,
    ) -> ParsedRows:
        if not long_lines:
            return parse_chunk(complete, self.context, started=started)
        # Skip each huge line unparsed, report it, and parse the rest around it.
        parts: list[ParsedRows] = []
        position = 0
        for start, end in long_lines:
            if position < start:
                parts.append(parse_chunk(complete[position:start], self.context))
            self._report_long_line(self.context.first_line)
            self.context.first_line += 1
            position = end
        if position < len(complete):
            parts.append(parse_chunk(complete[position:], self.context))
        return concat_parsed(parts, self.y_axis)

    def _report_long_line(self, line: int) -> None:
        self.context.problems.add(
            Rule.LINE_TOO_LONG,
            f"line longer than {MAX_LINE_BYTES:,} bytes; skipped unread (a row is a few dozen bytes)",
            line,
        )
