import random
from pathlib import Path

import numpy as np
import pytest
from format_support import format_problems
from ocms_recorder import write_layout

import ocms_tui.follow.reader as reader_module
import ocms_tui.format.parse as parse_module
from ocms_tui.follow.line_blocks import MAX_LINE_BYTES
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.reader import CsvFollower
from ocms_tui.format.parse import ChunkContext, concat_parsed, parse_exact
from ocms_tui.format.problems import ProblemCollector

Y_AXIS = ("loss", "eval_loss", "aux_loss")


@pytest.mark.parametrize("block_bytes", [1, 3 * 1024 * 1024])  # the reader's minimum and more
def test_blocks_parsed_ahead_in_the_background_give_what_one_exact_parse_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int
) -> None:
    monkeypatch.setattr(reader_module, "READ_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(parse_module, "BACKGROUND_MIN_BYTES", 64 * 1024)
    rng = random.Random(1)
    lines, step = [], 0
    for index in range(100_000):
        step += -5 if index % 20_011 == 7 else 1  # a few regressions
        if index % 17_003 == 5:
            lines.append(f"{step},oops,,1.5")  # a bad value now and then
        elif index % 23_005 == 9:
            lines.append(f"{step},nan,inf,")
        elif index % 31_007 == 11:
            lines.append("")
        else:
            gap = "" if index % 7 else repr(rng.random())
            lines.append(f"{step},{rng.random()!r},{gap},{rng.random() * 1e-7!r}")
    complete = ("\n".join(lines) + "\n").encode()
    (tmp_path / "loss.csv").write_bytes(complete + b"77,0.5")  # and a row being written

    reference_context = ChunkContext("loss.csv", Y_AXIS, ProblemCollector("loss.csv"))
    reference = parse_exact(complete, reference_context)
    follower = CsvFollower(tmp_path, "loss.csv", Y_AXIS)
    result = follower.poll()

    merged = concat_parsed(result.parts, Y_AXIS)
    assert len(result.parts) > 1  # several blocks, handed over one behind the other
    assert sum(part.exact_lines for part in result.parts) < len(lines) // 10
    assert merged.steps.tolist() == reference.steps.tolist()
    for ours, theirs in zip(merged.columns, reference.columns, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert follower.problems == reference_context.problems.summary()
    assert follower.partial_line and follower.lines_read == len(lines)


def _clean_rows(first_step: int, count: int, width: int = 60) -> list[bytes]:
    """Rows of about `width` bytes (the values padded with digits), steps counting up."""
    digits = max(1, width - 30)
    return [
        b"%d,0.%0*d,,%d.5" % (step, digits, step, step % 7)
        for step in range(first_step, first_step + count)
    ]


def test_rows_and_line_numbers_survive_blocks_read_ahead_and_a_line_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Blocks of the reader's minimum (just over 1 MiB), parsed natively in the background:
    # a bad row in the block read ahead of the one being finished, a line too long to read
    # after a few blocks (it is skipped while earlier blocks are still being parsed), and a
    # bad row after it must each keep their own line number.
    monkeypatch.setattr(reader_module, "READ_BLOCK_BYTES", 1)
    monkeypatch.setattr(parse_module, "BACKGROUND_MIN_BYTES", 64 * 1024)
    lines = _clean_rows(0, 60_000)
    lines[25_000] = b"25000,oops,,1.5"  # in the second block
    huge = b"60000," + b"9" * (MAX_LINE_BYTES + 10) + b",,"
    after = _clean_rows(60_001, 30_000)
    after[12_345] = b"72346,1.5,,x"
    (tmp_path / "loss.csv").write_bytes(b"\n".join([*lines, huge, *after]) + b"\n")

    follower = CsvFollower(tmp_path, "loss.csv", Y_AXIS)
    result = follower.poll()

    assert len(result.parts) > 3
    merged = concat_parsed(result.parts, Y_AXIS)
    context = ChunkContext("loss.csv", Y_AXIS, ProblemCollector("loss.csv"))
    reference = parse_exact(b"\n".join([*lines, *after]) + b"\n", context)
    assert merged.steps.tolist() == reference.steps.tolist()
    for ours, theirs in zip(merged.columns, reference.columns, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert [(p.rule.value, p.line) for p in follower.problems] == [
        ("bad-value", 25_001),
        ("line-too-long", 60_001),
        ("bad-value", 60_001 + 12_345 + 1),
    ]
    assert follower.lines_read == len(lines) + 1 + len(after)
    assert sum(part.exact_lines for part in result.parts) < 10_000


@pytest.mark.parametrize("long_rows_first", [True, False])
def test_every_row_is_stored_when_the_first_block_misjudges_the_row_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_rows_first: bool
) -> None:
    # The store is sized once, from the first block's rows per byte. Rows of 70 bytes then
    # rows of 10 (the estimate far too low: the buffers grow while blocks are parsed ahead)
    # or the other way round (far too high) must both end with exactly the file's rows.
    monkeypatch.setattr(reader_module, "READ_BLOCK_BYTES", 1)  # blocks of just over 1 MiB
    monkeypatch.setattr(parse_module, "BACKGROUND_MIN_BYTES", 64 * 1024)
    write_layout(tmp_path, {"loss": list(Y_AXIS)})

    def long_row(step: int) -> bytes:  # about 40 bytes
        return b"%d,%r,,%r" % (step, step / 7, -step / 3)

    def short_row(step: int) -> bytes:  # about 10 bytes
        return b"%d,1,,2" % step

    kinds = [long_row] * 30_000 + [short_row] * 200_000
    lines = [row(step) for step, row in enumerate(kinds if long_rows_first else kinds[::-1])]
    data = b"\n".join(lines) + b"\n"
    (tmp_path / "loss.csv").write_bytes(data)

    model = RunModel(tmp_path)
    model.refresh()

    (chart,) = model.charts
    context = ChunkContext("loss.csv", Y_AXIS, ProblemCollector("loss.csv"))
    reference = parse_exact(data, context)
    assert chart.rows == len(lines)
    assert chart.steps().tolist() == reference.steps.tolist()
    for series, theirs in enumerate(reference.columns):
        np.testing.assert_array_equal(chart.values(series), theirs)
    assert not format_problems(model.problems)  # the sawtooth rows are no training curve
