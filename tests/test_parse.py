"""The exact per-line parser is the reference; the bulk parser must agree with it on anything."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocms_tui.format.parse import ChunkContext, ParsedRows, parse_chunk, parse_exact, step_number
from ocms_tui.format.problems import ProblemCollector, Rule

Y_AXIS = ("loss", "eval_loss", "aux_loss")


def _context(first_line: int = 1, previous_step: int | None = None) -> ChunkContext:
    return ChunkContext(
        "loss.csv", Y_AXIS, ProblemCollector("loss.csv", cap=5), first_line, previous_step
    )


def _parse(data: bytes, bulk_min_bytes: int) -> tuple[ParsedRows, ChunkContext]:
    context = _context()
    return parse_chunk(data, context, bulk_min_bytes=bulk_min_bytes), context


def _same_rows(left: ParsedRows, right: ParsedRows) -> None:
    assert left.steps.tolist() == right.steps.tolist()
    for a, b in zip(left.columns, right.columns, strict=True):
        np.testing.assert_array_equal(a, b)  # NaN == NaN here, and exact float equality
    assert left.lines == right.lines
    assert left.last_step == right.last_step


def _assert_paths_agree(data: bytes) -> None:
    exact, exact_context = _parse(data, bulk_min_bytes=len(data) + 1)
    bulk, bulk_context = _parse(data, bulk_min_bytes=0)  # bulk first, split down on doubt
    _same_rows(exact, bulk)
    assert sorted(exact_context.problems.summary(), key=lambda p: p.sort_key()) == sorted(
        bulk_context.problems.summary(), key=lambda p: p.sort_key()
    )
    assert exact_context.first_line == bulk_context.first_line
    assert exact_context.previous_step == bulk_context.previous_step


value_text = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(4290, 5000), st.sampled_from(["", ".5", "e-4990", "e5"])).map(
        lambda parts: "3" * parts[0] + parts[1]
    ),
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(
        [
            *["", "", "nan", "NaN", "-nan", "+inf", "-inf", "inf", "Infinity", "1e400", "-1e-400"],
            *["1.", ".5", "5.e3", "1e5", "1E+05", "+1", "-0", "1_0", " 1", "1 ", "0x10", "e5"],
            *["1e", "-", ".", "nan1", "1.5.3", "--1", "+-1", "abc", '"1"', "1\r", "é", "inf5"],
        ]
    ),
)
step_text = st.one_of(
    st.integers(0, 2**64).map(str),
    # Past the 4,300 digits int() converts; leading zeros and signs around them.
    st.tuples(
        st.sampled_from(["", "+", "-"]), st.sampled_from(["", "0" * 4400]), st.integers(0, 4400)
    ).map(lambda parts: parts[0] + parts[1] + "7" * parts[2]),
    st.sampled_from(["-1", "+5", "-0", "01", "1.0", "", "step", "9223372036854775808", " 1"]),
)
row = st.one_of(
    st.tuples(step_text, st.lists(value_text, min_size=3, max_size=3)).map(
        lambda parts: ",".join([parts[0], *parts[1]])
    ),
    st.lists(value_text, min_size=0, max_size=6).map(",".join),
)


# Row ends: mostly \n, also \r\n (read the same) and a lone \r (an error).
row_end = st.sampled_from(["\n", "\n", "\r\n", "\r"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(row, row_end), min_size=1, max_size=40))
def test_bulk_and_exact_agree_on_any_rows(rows: list[tuple[str, str]]) -> None:
    _assert_paths_agree(("".join(text + end for text, end in rows) + "\n").encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=300))
def test_bulk_and_exact_agree_on_any_bytes(data: bytes) -> None:
    data = data if data.endswith(b"\n") else data + b"\n"
    _assert_paths_agree(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50))
def test_values_round_trip_exactly(values: list[float]) -> None:
    data = "".join(f"{step},{value!r},,{-value!r}\n" for step, value in enumerate(values)).encode()
    for bulk_min_bytes in (0, 10**9):
        parsed, context = _parse(data, bulk_min_bytes)
        assert parsed.columns[0].tolist() == values
        assert parsed.columns[2].tolist() == [-v for v in values]
        assert all(math.isnan(v) for v in parsed.columns[1])
        assert context.problems.problems == []


def test_large_clean_chunk_takes_the_bulk_path() -> None:
    data = b"".join(b"%d,%r,,0.5\n" % (step, step / 7) for step in range(20_000))
    parsed, context = _parse(data, bulk_min_bytes=1024)
    assert parsed.rows == 20_000
    assert parsed.exact_lines == 0
    assert context.first_line == 20_001


def test_one_bad_row_sends_only_a_small_piece_to_the_exact_path() -> None:
    rows = [b"%d,%r,,0.5\n" % (step, step / 7) for step in range(20_000)]
    rows[12_345] = b"12345,oops,,0.5\n"
    parsed, context = _parse(b"".join(rows), bulk_min_bytes=4096)
    assert parsed.rows == 20_000
    assert 0 < parsed.exact_lines < 500
    assert [(p.rule, p.line) for p in context.problems.problems] == [(Rule.BAD_VALUE, 12_346)]


def test_chunks_continue_line_numbers_and_steps() -> None:
    context = _context()
    parse_chunk(b"1,1,,\n5,1,,\n", context)
    parse_chunk(b"3,1,,\nx\n", context)
    assert [(p.rule, p.line) for p in context.problems.problems] == [
        (Rule.STEP_REGRESSION, 3),
        (Rule.ROW_WIDTH, 4),
    ]
    assert context.previous_step == 3 and context.first_line == 5


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (b"", Rule.ROW_WIDTH),
        (b"1,2", Rule.ROW_WIDTH),
        (b"1,2,3,4,5", Rule.ROW_WIDTH),
        (b"-1,2,3,4", Rule.BAD_STEP),
        (b"1.5,2,3,4", Rule.BAD_STEP),
        (b"99999999999999999999,2,3,4", Rule.BAD_STEP),
        (b"1,2,three,4", Rule.BAD_VALUE),
        (b"1,2\r,3,4", Rule.LONE_CR),
        (b"1,2,3,4\r5,2,3,4", Rule.LONE_CR),
        (b"1,2,3,4\r\r", Rule.LONE_CR),
        (b"9007199254740992,2,3,4", Rule.BAD_STEP),
        (b"1,2,nan,4", Rule.NON_FINITE),
        (b"1,2,-inf,4", Rule.NON_FINITE),
    ],
)
def test_each_row_rule(line: bytes, rule: Rule) -> None:
    context = _context(first_line=7)
    parse_exact(line + b"\n", context)
    assert [(p.rule, p.line) for p in context.problems.problems] == [(rule, 7)]


def test_header_only_on_the_first_line() -> None:
    first = _context(first_line=1)
    parse_exact(b"step,loss,eval_loss,aux_loss\n", first)
    later = _context(first_line=2)
    parse_exact(b"step,loss,eval_loss,aux_loss\n", later)
    assert first.problems.problems[0].rule is Rule.HEADER_ROW
    assert later.problems.problems[0].rule is Rule.BAD_STEP


def test_bad_value_keeps_the_row_as_a_gap() -> None:
    context = _context()
    parsed = parse_exact(b"1,0.5,bad,0.25\n", context)
    assert parsed.steps.tolist() == [1]
    assert parsed.columns[0].tolist() == [0.5]
    assert math.isnan(parsed.columns[1][0])
    assert parsed.columns[2].tolist() == [0.25]


@pytest.mark.parametrize(
    ("field", "step"),
    [
        (b"9007199254740991", 2**53 - 1),
        (b"9007199254740992", None),
        (b"1" * 4301, None),
        (b"0" * 5000 + b"5", 5),
        (b"+" + b"0" * 5000, 0),
        (b"-" + b"0" * 5000, 0),
        (b"-" + b"1" * 5000, None),
        (b"-1", None),
        (b"1.0", None),
        (b"", None),
    ],
    ids=["2^53-1", "2^53", "4301-digits", "zeros-then-5", "+zeros", "-zeros", "-5000-digits",
         "-1", "1.0", "empty"],
)  # fmt: skip
def test_step_number_answers_any_field_without_int_refusing_it(field: bytes, step: int) -> None:
    assert step_number(field) == step


@pytest.mark.parametrize("bulk_min_bytes", [0, 10**9])
def test_a_step_of_4301_digits_is_a_bad_step_at_its_line_on_both_paths(
    bulk_min_bytes: int,
) -> None:
    rows = [b"%d,0.5,,0.25\n" % step for step in range(3000)]
    rows[1234] = b"1" * 4301 + b",0.5,,0.25\n"
    rows[2000] = b"0" * 5000 + b"2000,0.5," + b"9" * 5000 + b"e-4999,0.25\n"
    parsed, context = _parse(b"".join(rows), bulk_min_bytes)
    assert parsed.steps.tolist() == [step for step in range(3000) if step != 1234]
    assert parsed.columns[1][1999] == float("9" * 5000 + "e-4999")
    assert [(p.rule, p.line) for p in context.problems.problems] == [(Rule.BAD_STEP, 1235)]
    assert "(4,301 digits) is larger than 9007199254740991" in context.problems.problems[0].message


def test_the_largest_step_of_the_format_is_a_step() -> None:
    context = _context()
    parsed = parse_exact(b"9007199254740991,1,2,3\n", context)
    assert parsed.steps.tolist() == [2**53 - 1]
    assert context.problems.problems == []


@pytest.mark.parametrize("bulk_min_bytes", [0, 10**9])
def test_crlf_rows_read_exactly_like_lf_rows(bulk_min_bytes: int) -> None:
    lf = b"".join(b"%d,%r,,-%r\n" % (step, step / 7, step / 3) for step in range(3000))
    with_lf, lf_context = _parse(lf, bulk_min_bytes)
    with_crlf, crlf_context = _parse(lf.replace(b"\n", b"\r\n"), bulk_min_bytes)
    _same_rows(with_lf, with_crlf)
    assert crlf_context.problems.problems == lf_context.problems.problems == []
    if bulk_min_bytes == 0:
        assert with_crlf.exact_lines == 0, "a \\r\\n file keeps the fast path"


@pytest.mark.parametrize("bulk_min_bytes", [0, 10**9])
def test_values_of_309_digits_are_non_finite_on_both_paths(bulk_min_bytes: int) -> None:
    huge = b"9" * 309  # no exponent, no letter: float() of it is inf
    rows = [b"%d,0.5,,0.25\n" % step for step in range(3000)]
    rows[1234] = b"1234,0.5,-" + huge + b",0.25\n"
    parsed, context = _parse(b"".join(rows), bulk_min_bytes)
    assert parsed.columns[1][1234] == -math.inf
    assert [(p.rule, p.line) for p in context.problems.problems] == [(Rule.NON_FINITE, 1235)]


@pytest.mark.parametrize("byte", range(256))
def test_every_byte_value_inside_a_clean_chunk_reads_the_same_on_both_paths(byte: int) -> None:
    # The bulk path's byte check works on ranges of byte values (after a wrapping shift);
    # each value, the edges of those ranges included ("/" between "." and "0", "\t"
    # next to "\n", ":" after "9"), must still give exactly what the exact parser gives.
    rows = [b"%d,%r,,0.5\n" % (step, step / 7) for step in range(200)]
    rows[101] = b"101,1%s5,,0.5\n" % bytes([byte])
    data = b"".join(rows)
    _assert_paths_agree(data)
    parsed, _ = _parse(data, bulk_min_bytes=0)
    # Still a number ("105", "1.5", "1e5"): no line needed the exact parser.
    assert (parsed.exact_lines == 0) == (byte in b"0123456789.eE")
