"""Axis ticks: a few round values (1, 2, 2.5 or 5 times a power of ten; decades on a log
axis) and short labels for them (`3e-5`, `0.25`, `1.2k`). Pure Python, no drawing library:
the plot asks for the ticks of its ranges and hands them to plotext."""

from __future__ import annotations

import math

LINEAR_FACTORS = (1.0, 2.0, 2.5, 5.0)
# Mantissas of the ticks inside each decade of a log axis, fewest first.
LOG_MANTISSAS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0))
SUFFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
SCIENTIFIC_BELOW = 1e-3  # smaller magnitudes read better as 3e-5 than as 0.00003
MAX_SIGNIFICANT = 17
# Labels up to this long leave the plot its width; a step of 2.5 needs one digit more than
# 2 or 5 (-1.1875e-7 beside -1.185e-7), so past this length the next round step is taken.
MAX_LABEL_CHARS = 9


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values (1, 2, 2.5 or 5 times a power of ten) within [low, high]:
    the smallest round step at least span/count that still puts two ticks in range."""
    span = high - low
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if not span > 0 or not math.isfinite(span):  # an overflowing span has no round step
        return [low]
    raw = span / max(1, count)  # ticks rarely sit on both ends: count steps, not count-1
    magnitude = 10.0 ** math.floor(math.log10(raw))
    steps = [magnitude * factor for factor in (*LINEAR_FACTORS, 10.0)]
    candidates = [(step, _ticks_every(low, high, step)) for step in steps]
    wide_enough = [ticks for step, ticks in candidates if step >= raw and len(ticks) >= 2]
    if wide_enough:
        short = [ticks for ticks in wide_enough if _labels_fit(ticks)]
        return short[0] if short else wide_enough[0]
    two_or_more = [ticks for _, ticks in candidates if len(ticks) >= 2]
    return two_or_more[-1] if two_or_more else candidates[0][1]


def _labels_fit(ticks: list[float]) -> bool:
    return all(len(tick_label(tick)) <= MAX_LABEL_CHARS for tick in ticks)


def _ticks_every(low: float, high: float, step: float) -> list[float]:
    first = math.ceil(low / step) * step
    # Rounded to the step's own digits: 0.1 * 3 is 0.30000000000000004, not a round label.
    digits = max(0, 2 - math.floor(math.log10(step)))
    # Up to a rounding past the end relative to the step: a tick that falls on `high` but
    # computes a hair short of it is kept (0.2 * 5 for 1.0) ...
    ticks = []
    for index in range(max(0, math.floor((high - first) / step + 1e-9) + 1)):
        tick = round(first + index * step, digits)
        ticks.append(0.0 if tick == 0 else tick)  # no "-0"
    # ... but not one past it by more than a rounding of the ends themselves: over a span of
    # 1e12 ending at -494, 1e-9 of the step would let a tick at 0 in.
    return [
        tick
        for tick in ticks
        if low - abs(low) * 1e-9 - 1e-12 <= tick <= high + abs(high) * 1e-9 + 1e-12
    ]


def log_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values for a log axis over [low, high] (both > 0): decades (every n-th when
    there are many), then 1-2-5 within them when few; a range inside one decade gets
    linear round values."""
    if not (low > 0 and high > low and math.isfinite(high)):
        return nice_ticks(low, high, count) if low > 0 else []
    first_decade, last_decade = math.floor(math.log10(low)), math.ceil(math.log10(high))
    decades = last_decade - first_decade
    if decades > count:
        every = math.ceil(decades / count)
        return [
            10.0**exponent
            for exponent in range(first_decade, last_decade + 1)
            if exponent % every == 0 and low <= 10.0**exponent <= high
        ]
    best: list[float] = []
    for mantissas in LOG_MANTISSAS:
        ticks = [
            _round_significant(mantissa * 10.0**exponent)
            for exponent in range(first_decade, last_decade + 1)
            for mantissa in mantissas
            if low <= mantissa * 10.0**exponent <= high
        ]
        if len(ticks) > count + 1:
            break
        best = ticks
        if len(ticks) >= max(2, count - 2):
            return ticks
    return best if len(best) >= 2 else nice_ticks(low, high, count)


def _round_significant(value: float, digits: int = 12) -> float:
    """3 * 10**-5 is 3.0000000000000004e-05 in floating point; the tick is 3e-05."""
    return float(f"{value:.{digits}g}")


def tick_label(value: float) -> str:
    """The shortest exact label: 0, 0.25, 120, 2.5k, 1.5M, 3e-5, 2.5e-4."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = abs(value)
    for suffix, size in SUFFIXES:
        if magnitude >= size:
            return _shortest(value / size, scientific=False) + suffix
    return _shortest(value, scientific=magnitude < SCIENTIFIC_BELOW)


def _shortest(value: float, scientific: bool) -> str:
    for digits in range(1, MAX_SIGNIFICANT + 1):
        if scientific:
            mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
            text = f"{_trim(mantissa)}e{int(exponent)}"
        else:
            text = _trim(f"{value:.{digits}g}")
            if "e" in text:
                continue  # 1e+03 (rounded up to the next unit): more digits
        if math.isclose(float(text), value, rel_tol=1e-14):
            return text
    return repr(value)


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def tick_labels(ticks: list[float]) -> list[str]:
    return [tick_label(tick) for tick in ticks]


def spaced_ticks(
    ticks: list[float], low: float, high: float, rows: int, log: bool = False
) -> list[float]:
    """`ticks` thinned so that no two land on one row of an axis of `rows` rows over
    [low, high] (1.5 rows apart: rounding each to its row cannot join them): plotext itself
    picks one of two labels on a row, and not always the same one (its choice varies
    between processes)."""
    if rows < 2 or not high > low or (log and low <= 0):
        return ticks[:1]

    def position(value: float) -> float:
        if log:
            return (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))
        return (value - low) / (high - low)

    kept: list[float] = []
    for tick in ticks:
        if not kept or (position(tick) - position(kept[-1])) * (rows - 1) >= 1.5:
            kept.append(tick)
    return kept


def tick_count(cells: int, cells_per_tick: int) -> int:
    """How many ticks an axis of `cells` holds with room between them (2 to 6)."""
    return max(2, min(6, cells // cells_per_tick))
