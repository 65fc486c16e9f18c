"""CsvFollower on real files: appends, partial lines, truncation, replacement, hostile files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ocms_tui.follow.chart_file import FileState
from ocms_tui.follow.line_blocks import MAX_LINE_BYTES
from ocms_tui.follow.reader import CsvFollower
from ocms_tui.format.parse import ParsedRows, concat_parsed
from ocms_tui.format.problems import Rule

Y_AXIS = ("loss", "eval_loss")


def _rows(result_parts: list[ParsedRows]) -> list[tuple[int, ...]]:
    merged = concat_parsed(result_parts, Y_AXIS)
    return [
        (int(step), *[None if np.isnan(v) else float(v) for v in values])
        for step, *values in zip(merged.steps, *merged.columns, strict=True)
    ]


def _follower(directory: Path, settle: float = 0.0) -> CsvFollower:
    return CsvFollower(directory, "loss.csv", Y_AXIS, settle_seconds=settle)


def test_reads_only_appended_bytes_and_completes_partial_lines(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n2,0.4,0.3\n3,0.3")
    follower = _follower(tmp_path)
    first = follower.poll()
    assert _rows(first.parts) == [(1, 0.5, None), (2, 0.4, 0.3)]
    # The offset stays at the end of the last whole line; the unfinished one is re-read.
    assert follower.partial_line and follower.offset == len(b"1,0.5,\n2,0.4,0.3\n")
    with csv.open("ab") as handle:
        handle.write(b"5,\n4,0.2,\n")
    second = follower.poll()
    assert not second.reset
    assert _rows(second.parts) == [(3, 0.35, None), (4, 0.2, None)]
    assert not follower.partial_line
    assert follower.poll().rows == 0


def test_truncation_resets_and_rereads(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n2,0.4,\n3,0.3,\n")
    follower = _follower(tmp_path)
    assert follower.poll().rows == 3
    csv.write_bytes(b"1,0.9,\n")
    result = follower.poll()
    assert result.reset and _rows(result.parts) == [(1, 0.9, None)]


def test_replacement_by_rename_resets(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n")
    follower = _follower(tmp_path)
    follower.poll()
    replacement = tmp_path / "loss.csv.tmp"
    replacement.write_bytes(b"1,0.5,\n2,0.25,0.75\n")
    os.replace(replacement, csv)
    result = follower.poll()
    assert result.reset
    assert _rows(result.parts) == [(1, 0.5, None), (2, 0.25, 0.75)]


def test_in_place_rewrite_with_other_start_resets(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n")
    follower = _follower(tmp_path)
    follower.poll()
    with csv.open("r+b") as handle:  # same inode, same size, other bytes, then more rows
        handle.write(b"7,0.1,\n8,0.2,\n")
    result = follower.poll()
    assert result.reset and _rows(result.parts) == [(7, 0.1, None), (8, 0.2, None)]


def test_file_deleted_then_recreated(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n")
    follower = _follower(tmp_path)
    follower.poll()
    csv.unlink()
    gone = follower.poll()
    assert gone.reset and follower.state is FileState.MISSING
    csv.write_bytes(b"1,0.7,\n")
    back = follower.poll()
    assert _rows(back.parts) == [(1, 0.7, None)]


def test_budget_reads_a_huge_file_in_steps(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").write_bytes(b"".join(b"%d,0.5,\n" % i for i in range(100_000)))
    follower = _follower(tmp_path)
    rows, polls = 0, 0
    while True:
        result = follower.poll(budget_bytes=256 * 1024)
        rows += result.rows
        polls += 1
        if not result.more:
            break
    assert rows == 100_000 and polls > 1
    assert follower.context.problems.problems == []


def test_fifo_is_not_opened_for_a_blocking_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "loss.csv")
    follower = _follower(tmp_path)
    outcome: list[FileState] = []
    worker = threading.Thread(target=lambda: (follower.poll(), outcome.append(follower.state)))
    worker.start()
    worker.join(timeout=5)
    assert outcome == [FileState.NOT_A_FILE]


def test_symlink_out_of_the_directory_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_bytes(b"1,42,\n")
    metrics = tmp_path / "run"
    metrics.mkdir()
    (metrics / "loss.csv").symlink_to(secret)
    follower = _follower(metrics)
    assert follower.poll().rows == 0
    assert follower.state is FileState.OUTSIDE


def test_symlink_inside_the_directory_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_bytes(b"1,0.5,\n")
    (tmp_path / "loss.csv").symlink_to(tmp_path / "real.csv")
    assert _follower(tmp_path).poll().rows == 1


def test_symlink_loop_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "loss.csv").symlink_to(tmp_path / "loss.csv")
    follower = _follower(tmp_path)
    assert follower.poll().rows == 0
    assert follower.state is FileState.UNREADABLE


def test_overlong_line_is_skipped_and_reported_once(tmp_path: Path) -> None:
    huge = b"1," + b"9" * (MAX_LINE_BYTES + 10) + b",\n"
    (tmp_path / "loss.csv").write_bytes(b"0,0.5,\n" + huge + b"2,0.25,\n")
    follower = _follower(tmp_path)
    result = follower.poll()
    assert _rows(result.parts) == [(0, 0.5, None), (2, 0.25, None)]
    problems = follower.context.problems.problems
    assert [(p.rule, p.line) for p in problems] == [(Rule.LINE_TOO_LONG, 2)]


def test_overlong_line_still_being_written_is_skipped_across_polls(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"0,0.5,\n1," + b"9" * (MAX_LINE_BYTES + 10))
    follower = _follower(tmp_path)
    follower.poll()
    assert follower.partial_line
    with csv.open("ab") as handle:
        handle.write(b"9" * 1000 + b",\n3,0.1,\n")
    result = follower.poll()
    assert _rows(result.parts) == [(3, 0.1, None)]
    assert [(p.rule, p.line) for p in follower.context.problems.problems] == [
        (Rule.LINE_TOO_LONG, 2)
    ]
    assert follower.lines_read == 3


def test_a_row_with_the_wrong_width_at_file_start_waits_to_settle(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,,0.1\n")
    follower = _follower(tmp_path, settle=10.0)
    start = time.monotonic()
    held = follower.poll(now=start)
    assert held.held and held.rows == 0 and follower.context.problems.problems == []
    late = follower.poll(now=start + 11)
    assert not late.held
    assert [p.rule for p in follower.context.problems.problems] == [Rule.ROW_WIDTH]


clean_rows = st.lists(
    st.tuples(
        st.integers(0, 10**9),
        st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
        st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    ),
    min_size=1,
    max_size=60,
)


def _csv_text(rows: list[tuple[int, float | None, float | None]]) -> bytes:
    def field(value: float | None) -> str:
        return "" if value is None else repr(value)

    return "".join(f"{s},{field(a)},{field(b)}\n" for s, a, b in rows).encode()


@settings(max_examples=60, deadline=None)
@given(clean_rows, st.lists(st.integers(1, 400), min_size=1, max_size=30))
def test_any_chunking_of_writes_gives_the_same_rows(
    tmp_path_factory: object, rows: list[tuple[int, float | None, float | None]], cuts: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("chunks")  # type: ignore[attr-defined]
    data = _csv_text(rows)
    whole = _follower(directory)
    (directory / "loss.csv").write_bytes(data)
    expected = _rows(whole.poll().parts)
    (directory / "loss.csv").unlink()

    incremental = CsvFollower(directory, "loss.csv", Y_AXIS, settle_seconds=0.0)
    parts: list[ParsedRows] = []
    position = 0
    with (directory / "loss.csv").open("wb") as handle:
        for cut in [*cuts, len(data)]:
            handle.write(data[position : position + cut])
            handle.flush()
            position += cut
            result = incremental.poll()
            assert not result.reset
            parts.extend(result.parts)
            if position >= len(data):
                break
        handle.write(data[position:])
    parts.extend(incremental.poll().parts)
    assert _rows(parts) == expected
    assert incremental.context.problems.summary() == whole.context.problems.summary()


def _problems(follower: CsvFollower) -> list[tuple[str, int | None]]:
    return [(problem.rule.value, problem.line) for problem in follower.problems]


def test_nul_bytes_are_reported_at_their_line_and_lose_no_other_row(tmp_path: Path) -> None:
    """A crash before a flush can leave a hole of NUL bytes where a row was."""
    (tmp_path / "loss.csv").write_bytes(
        b"1,0.5,\n\x00\x00\x00,0.1,\n" + b"\x00" * 8 + b"\n4,0.4,\n5,0.5\x00,\n6,0.6,\n"
    )
    follower = _follower(tmp_path)
    result = follower.poll()
    # Row 5 keeps its step; its unreadable value is a gap.
    assert _rows(result.parts) == [(1, 0.5, None), (4, 0.4, None), (5, None, None), (6, 0.6, None)]
    assert _problems(follower) == [("bad-step", 2), ("row-width", 3), ("bad-value", 5)]


def test_rows_separated_by_lone_crs_are_one_unfinished_line_then_one_problem(
    tmp_path: Path,
) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\r2,0.4,\r3,")
    follower = _follower(tmp_path)
    assert follower.poll().rows == 0
    assert follower.partial_line and follower.lone_carriage_return_in_tail
    with csv.open("ab") as handle:
        handle.write(b"0.3,\n4,0.2,\n")
    result = follower.poll()
    assert _rows(result.parts) == [(4, 0.2, None)]
    assert _problems(follower) == [("lone-cr", 1)]
    assert not follower.lone_carriage_return_in_tail


def test_a_file_shrinking_between_budgeted_reads_is_read_again_from_its_start(
    tmp_path: Path,
) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"".join(b"%d,0.5,\n" % i for i in range(100_000)))
    follower = _follower(tmp_path)
    first = follower.poll(budget_bytes=64 * 1024)
    assert first.more and 0 < first.rows < 100_000
    with csv.open("r+b") as handle:  # truncated in place below what was read
        handle.truncate(len(b"".join(b"%d,0.5,\n" % i for i in range(100))) + 3)
    result = follower.poll(budget_bytes=64 * 1024)
    assert result.reset and not result.more and follower.partial_line
    assert [row[0] for row in _rows(result.parts)] == list(range(100))


def test_a_file_replaced_between_budgeted_reads_is_read_whole_and_alone(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"".join(b"%d,0.5,\n" % i for i in range(100_000)))
    follower = _follower(tmp_path)
    assert follower.poll(budget_bytes=64 * 1024).more
    replacement = tmp_path / "loss.csv.tmp"
    replacement.write_bytes(b"".join(b"%d,0.25,0.75\n" % i for i in range(5, 90_000)))
    os.replace(replacement, csv)
    parts: list[ParsedRows] = []
    resets = 0
    while True:
        result = follower.poll(budget_bytes=64 * 1024)
        resets += result.reset
        parts += result.parts
        if not result.more:
            break
    rows = _rows(parts)
    assert resets == 1 and len(rows) == 90_000 - 5
    assert rows[0] == (5, 0.25, 0.75) and rows[-1] == (89_999, 0.25, 0.75)
    assert _problems(follower) == []


def test_a_file_truncated_to_nothing_and_written_again_keeps_no_old_row(tmp_path: Path) -> None:
    csv = tmp_path / "loss.csv"
    csv.write_bytes(b"1,0.5,\n2,0.4,\n")
    follower = _follower(tmp_path)
    assert follower.poll().rows == 2
    csv.write_bytes(b"")
    emptied = follower.poll()
    assert emptied.reset and emptied.rows == 0
    csv.write_bytes(b"9,0.9,\n")
    assert _rows(follower.poll().parts) == [(9, 0.9, None)]
