"""CSV rows -> numbers and problems: one exact per-line parser and one native bulk parser.

The exact parser is the reference: it finds every problem with its line. The bulk parser
(polars) handles large clean chunks about 15x faster; it only answers when it can prove the
chunk is clean in the same sense, and otherwise the chunk is split and retried, down to
small pieces that the exact parser takes. A property test proves both agree on any input.
"""

from __future__ import annotations

import io
import math
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
from ocms_recorder import MAX_STEP, row_width

from ocms_tui.format.problems import ProblemCollector, Rule

# A sign is tolerated as int() and the bulk parser do; the value must still be >= 0.
STEP_RE = re.compile(rb"[+-]?[0-9]+")
# Past this many significant digits a step is beyond MAX_STEP whatever they are: it is never
# given to int(), which refuses 4,301 digits or more (ValueError, CVE-2020-10735).
_MAX_STEP_DIGITS = len(str(MAX_STEP))
# What Python's repr(float) writes, plus the spellings of nan/inf that float() accepts.
VALUE_RE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf|infinity))"
)

# Bytes a clean chunk can contain. Anything else (spaces, quotes, a lone \r, letters outside
# nan/inf/e) sends the chunk to the exact parser, so polars' leniencies never matter.
# Digits, signs, dots and newlines are deleted in one pass; what is left must be commas and,
# rarely, the letters of nan/inf/exponents, so the same pass also says whether a chunk can
# hold a non-finite value at all.
_BULK_DIGITS_AND_NEWLINES = b"0123456789.-+\n"
_BULK_LETTERS = b"eEnaifNAIF"
BULK_MIN_BYTES = 32 * 1024
# Below this, handing the native parse to a thread costs more than it overlaps.
BACKGROUND_MIN_BYTES = 1024 * 1024
_HEADER_HINT = re.compile(rb"[A-Za-z]")


@dataclass
class ParsedRows:
    """Rows of one chunk: steps, one float column per series (NaN = gap), and where they are."""

    steps: np.ndarray
    columns: list[np.ndarray]
    last_step: int | None = None
    lines: int = 0  # complete lines consumed
    exact_lines: int = 0  # lines that needed the exact parser (for benchmarks and tests)

    @property
    def rows(self) -> int:
        return len(self.steps)


@dataclass
class ChunkContext:
    """What a chunk needs to know about the file it comes from."""

    path: str
    y_axis: tuple[str, ...]
    problems: ProblemCollector
    first_line: int = 1  # 1-based line number of the chunk's first line
    previous_step: int | None = None
    chart: str | None = None  # the chart's name, for problems that name their place

    @property
    def width(self) -> int:
        return row_width(self.y_axis)


def _value_label(value: float) -> str:
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def _report_non_finite(
    context: ChunkContext, series: int, line: int, value: float, step: int
) -> None:
    name = context.y_axis[series]
    context.problems.add(
        Rule.NON_FINITE,
        f"{name} is {_value_label(value)}; the Octopus UI may not draw it",
        line,
        chart=context.chart,
        series=name,
        step=step,
    )


def _report_regression(context: ChunkContext, line: int, step: int, previous: int) -> None:
    context.problems.add(
        Rule.STEP_REGRESSION,
        f"step {step} after step {previous} (a resumed run re-logging steps?); rows are kept",
        line,
        step=step,
    )


def step_number(field: bytes) -> int | None:
    """The step a CSV field holds, or None unless it is an integer in 0..MAX_STEP. Any
    field, however long, gets an answer: a run of 5,000 digits is a step out of range."""
    if STEP_RE.fullmatch(field) is None:
        return None
    digits = field.lstrip(b"+-").lstrip(b"0")
    if len(digits) > _MAX_STEP_DIGITS:
        return None
    step = int(digits or b"0")
    if field.startswith(b"-") and step:
        return None
    return step if step <= MAX_STEP else None


def _bad_step_message(field: bytes) -> str:
    shown = _shorten(field)
    if STEP_RE.fullmatch(field) is None:
        return f"step {shown} is not a non-negative integer; row skipped"
    if field.startswith(b"-"):
        return f"step {shown} is negative; row skipped"
    digits = len(field.lstrip(b"+").lstrip(b"0"))
    return (
        f"step {shown} ({digits:,} digits) is larger than {MAX_STEP} (2^53 - 1, the largest "
        "step a JavaScript number holds exactly); row skipped"
    )


def _shorten(raw: bytes, limit: int = 40) -> str:
    text = raw.decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_exact(data: bytes, context: ChunkContext) -> ParsedRows:
    """Parse complete lines (`data` ends with b"\\n" or is empty), reporting every problem."""
    width = context.width
    steps: list[int] = []
    columns: list[list[float]] = [[] for _ in context.y_axis]
    previous = context.previous_step
    lines = data.split(b"\n")
    lines.pop()  # the empty string after the final newline
    nan = math.nan
    # Only a chunk with a carriage return pays for the per-line line-ending checks.
    has_carriage_return = b"\r" in data
    for offset, raw in enumerate(lines):
        line_no = context.first_line + offset
        if has_carriage_return:
            if raw.endswith(b"\r"):
                raw = raw[:-1]  # a \r\n row end reads exactly like \n (format decision)
            if b"\r" in raw:
                _report_lone_carriage_return(context, line_no)
                continue
        fields = raw.split(b",")
        if len(fields) != width:
            if line_no == 1 and _looks_like_header(fields):
                _report_header(context, raw)
            elif not raw:
                context.problems.add(
                    Rule.ROW_WIDTH, "blank line; every line must be a row", line_no
                )
            else:
                context.problems.add(
                    Rule.ROW_WIDTH,
                    f"{len(fields)} fields, expected {width} (step + {len(context.y_axis)} "
                    f"series of metrics.json)",
                    line_no,
                )
            continue
        step_field = fields[0]
        step = step_number(step_field)
        if step is None:
            if line_no == 1 and _looks_like_header(fields):
                _report_header(context, raw)
            else:
                context.problems.add(Rule.BAD_STEP, _bad_step_message(step_field), line_no)
            continue
        if previous is not None and step < previous:
            _report_regression(context, line_no, step, previous)
        previous = step
        steps.append(step)
        for series, value_field in enumerate(fields[1:]):
            if not value_field:
                columns[series].append(nan)
                continue
            if VALUE_RE.fullmatch(value_field) is None:
                context.problems.add(
                    Rule.BAD_VALUE,
                    f"{context.y_axis[series]}: {_shorten(value_field)} is not a number "
                    "(leave the field empty for a missing value); shown as a gap",
                    line_no,
                    series=context.y_axis[series],
                    step=step,
                )
                columns[series].append(nan)
                continue
            value = float(value_field)
            if not math.isfinite(value):
                _report_non_finite(context, series, line_no, value, step)
            columns[series].append(value)
    return ParsedRows(
        steps=np.array(steps, dtype=np.int64),
        columns=[np.array(column, dtype=np.float64) for column in columns],
        last_step=previous,
        lines=len(lines),
        exact_lines=len(lines),
    )


def _report_lone_carriage_return(context: ChunkContext, line: int) -> None:
    context.problems.add(
        Rule.LONE_CR,
        "a lone \\r inside the line (rows separated by \\r alone?); end every row with \\n "
        "or \\r\\n; row skipped",
        line,
    )


def _report_header(context: ChunkContext, raw: bytes) -> None:
    context.problems.add(
        Rule.HEADER_ROW,
        f"the first row {_shorten(raw)} looks like a header; ocms CSVs have none: delete it",
        1,
    )


def _looks_like_header(fields: list[bytes]) -> bool:
    return _HEADER_HINT.search(fields[0]) is not None and not VALUE_RE.fullmatch(fields[0])


@dataclass
class _NativeRows:
    """polars' reading of a chunk, already checked for what needs no context."""

    frame: pl.DataFrame
    steps: np.ndarray
    columns: list[np.ndarray]


def _read_native(data: bytes, series: int) -> _NativeRows | None:
    """polars' parse of a chunk; None when it refuses it or reads something unclean."""
    schema = {"step": pl.Int64, **{f"v{i}": pl.Float64 for i in range(series)}}
    try:
        frame = pl.read_csv(io.BytesIO(data), has_header=False, schema=schema, quote_char=None)
    except (pl.exceptions.PolarsError, ValueError, OverflowError):
        return None
    # Blank lines are rows of nulls; short rows are caught by the comma count.
    if frame.height == 0 or frame.get_column("step").null_count():
        return None
    steps = frame.get_column("step").to_numpy()
    if steps.min() < 0 or steps.max() > MAX_STEP:
        return None
    columns = [
        frame.get_column(f"v{i}").to_numpy().astype(np.float64, copy=False) for i in range(series)
    ]
    return _NativeRows(frame, steps, columns)


# Two native parses at once: while a large run loads, two charts are read side by side
# (see model.READ_IN_PARALLEL), each with its next block parsing here.
NATIVE_WORKERS = 2
_native_worker: ThreadPoolExecutor | None = None
_native_worker_lock = threading.Lock()


class NativeParse:
    """polars' parse of one chunk, running on a worker thread while the caller goes on.

    polars works without the GIL, so the caller can check the chunk's bytes or store the
    previous chunk meanwhile: the passes overlap instead of adding up. The result is only
    used by `parse_chunk` for exactly this `data`, after its own checks. The check stays
    with the caller: while a run's charts load side by side, each chart's thread checks
    its own blocks instead of queueing that work behind the parses on the workers.
    """

    def __init__(self, data: bytes, series: int) -> None:
        global _native_worker
        self.data = data
        self.series = series
        with _native_worker_lock:
            if _native_worker is None:
                _native_worker = ThreadPoolExecutor(
                    max_workers=NATIVE_WORKERS, thread_name_prefix="ocms-parse"
                )
            self._future: Future[_NativeRows | None] = _native_worker.submit(
                _read_native, data, series
            )

    def result(self) -> _NativeRows | None:
        return self._future.result()


def start_native_parse(data: bytes, series: int) -> NativeParse | None:
    """Start parsing a chunk in the background, when it is big enough to be worth a thread."""
    return NativeParse(data, series) if len(data) >= BACKGROUND_MIN_BYTES else None


def _plain_commas(data: bytes) -> int | None:
    """The comma count of a chunk made only of digits, `.`, `-`, `+`, `,` and newlines (the
    usual chunk: no nan, inf or exponent); None for any other chunk.

    A few comparisons and counts over the bytes as one polars column (no copy): compiled,
    without the GIL and each a bitmap rather than a byte per byte, they cost about 40% of
    one bytes.translate pass. Below "9" the bytes "+" to "9" are all allowed but "/"; every
    byte below "+" must be a newline.
    """
    if not data:
        return None
    codes = pl.Series(np.frombuffer(data, dtype=np.uint8))
    if codes.max() > ord("9"):
        return None
    if (codes < ord("+")).sum() != (codes == ord("\n")).sum() or (codes == ord("/")).any():
        return None
    return int((codes == ord(",")).sum())


def _bulk_commas(data: bytes) -> tuple[int, bool] | None:
    """(commas, holds letters) of a chunk with nothing but bulk bytes; None otherwise."""
    plain = _plain_commas(data)
    if plain is not None:
        return plain, False
    # Letters (nan, inf, exponents) or \r\n row ends: one pass of bytes.translate, the
    # rest small (about one byte per field).
    rest = data.translate(None, _BULK_DIGITS_AND_NEWLINES)
    if b"\r" in rest:
        # \r\n row ends (polars reads them as \n); a lone \r is for the exact parser.
        if data.count(b"\r") != data.count(b"\r\n"):
            return None
        rest = rest.replace(b"\r", b"")
    commas = rest.count(b",")
    has_letters = commas != len(rest)
    if has_letters and rest.translate(None, b"," + _BULK_LETTERS):
        return None
    return commas, has_letters


def _parse_bulk(
    data: bytes, context: ChunkContext, started: NativeParse | None = None
) -> ParsedRows | None:
    """Parse a chunk natively when it is provably clean; None means "use the exact path"."""
    series = len(context.y_axis)
    if started is None or started.data is not data or started.series != series:
        # Even alone, the native parse overlaps with the byte check below. A chunk found
        # unclean wastes that parse, which only happens on the way down to a bad row.
        started = start_native_parse(data, series)
    checked = _bulk_commas(data)
    if checked is None:
        return None
    commas, has_letters = checked
    native = _read_native(data, series) if started is None else started.result()
    if native is None or commas != len(native.steps) * (context.width - 1):
        return None
    steps, columns = native.steps, native.columns
    _report_bulk_warnings(has_letters, native.frame, steps, columns, context)
    return ParsedRows(steps=steps, columns=columns, last_step=int(steps[-1]), lines=len(steps))


def _report_bulk_warnings(
    has_letters: bool,
    frame: pl.DataFrame,
    steps: np.ndarray,
    columns: list[np.ndarray],
    context: ChunkContext,
) -> None:
    """The warnings a clean chunk can still carry, exactly as the exact parser words them."""
    problems = context.problems
    first = context.first_line
    # Row i regresses when steps[i] < steps[i - 1]; row 0 compares with the previous chunk.
    regressions = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    previous = context.previous_step
    if previous is not None and steps[0] < previous:
        regressions = np.concatenate(([0], regressions))
    listed = regressions[: problems.remaining(Rule.STEP_REGRESSION)]
    for row in listed.tolist():
        before = previous if row == 0 else int(steps[row - 1])
        _report_regression(context, first + row, int(steps[row]), before)
    problems.add_unlisted(Rule.STEP_REGRESSION, len(regressions) - len(listed))

    if not has_letters and not any(np.isinf(values).any() for values in columns):
        # Without nan, inf or an exponent only a value of 309+ digits can be infinite.
        return
    room = problems.remaining(Rule.NON_FINITE)
    total = 0
    candidates: list[tuple[int, int]] = []
    for series, values in enumerate(columns):
        present = ~frame.get_column(f"v{series}").is_null().to_numpy()
        rows = np.flatnonzero(~np.isfinite(values) & present)
        total += len(rows)
        # The first `room` in line order are among the first `room` of each series.
        candidates.extend((row, series) for row in rows[:room].tolist())
    candidates.sort()
    listed_pairs = candidates[:room]
    for row, series in listed_pairs:
        value = float(columns[series][row])
        _report_non_finite(context, series, first + row, value, int(steps[row]))
    problems.add_unlisted(Rule.NON_FINITE, total - len(listed_pairs))


def _split_at_newline(data: bytes) -> int:
    """Index just past the newline nearest the middle of `data` (0 if there is none)."""
    middle = len(data) // 2
    cut = data.find(b"\n", middle)
    if cut < 0 or cut == len(data) - 1:
        cut = data.rfind(b"\n", 0, middle)
    return cut + 1


def parse_chunk(
    data: bytes,
    context: ChunkContext,
    bulk_min_bytes: int = BULK_MIN_BYTES,
    started: NativeParse | None = None,
) -> ParsedRows:
    """Parse complete lines, on the fast path wherever the chunk allows it.

    Updates `context.first_line` and `context.previous_step` so that the next chunk of the
    same file continues where this one ended. `started` is this chunk's native parse when
    the caller began it earlier (see `start_native_parse`).
    """
    if len(data) < bulk_min_bytes:
        parsed = parse_exact(data, context)
    else:
        parsed = _parse_bulk(data, context, started)
        if parsed is None:
            cut = _split_at_newline(data)
            if cut <= 0 or cut >= len(data):
                parsed = parse_exact(data, context)
            else:
                head = parse_chunk(data[:cut], context, bulk_min_bytes)
                tail = parse_chunk(data[cut:], context, bulk_min_bytes)
                return concat_parsed([head, tail], context.y_axis)
    context.first_line += parsed.lines
    if parsed.last_step is not None:
        context.previous_step = parsed.last_step
    return parsed


def concat_parsed(parts: list[ParsedRows], y_axis: tuple[str, ...]) -> ParsedRows:
    parts = [part for part in parts if part.lines]
    if not parts:
        return empty_rows(len(y_axis))
    if len(parts) == 1:
        return parts[0]
    last_step = next((p.last_step for p in reversed(parts) if p.last_step is not None), None)
    return ParsedRows(
        steps=np.concatenate([part.steps for part in parts]),
        columns=[np.concatenate([part.columns[i] for part in parts]) for i in range(len(y_axis))],
        last_step=last_step,
        lines=sum(part.lines for part in parts),
        exact_lines=sum(part.exact_lines for part in parts),
    )


def empty_rows(series: int) -> ParsedRows:
    return ParsedRows(
        steps=np.empty(0, dtype=np.int64),
        columns=[np.empty(0, dtype=np.float64) for _ in range(series)],
    )
