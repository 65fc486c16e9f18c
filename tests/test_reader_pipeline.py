import random
from pathlib import Path

import numpy as np
import pytest

import ocms_tui.parse as parse_module
import ocms_tui.reader as reader_module
from ocms_tui.parse import ChunkContext, concat_parsed, parse_exact
from ocms_tui.problems import ProblemCollector
from ocms_tui.reader import CsvFollower

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
