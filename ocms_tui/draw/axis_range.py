"""Y axes for any finite doubles: what plotext is given, so that it never fails on a range.

plotext's own tick code overflows or divides by zero on extreme ranges (`1e307` with
`-1e307`, `5e-324`, a log axis up to `1.8e308`). Values whose non-zero magnitudes all lie in
PLOTEXT_SAFE_MAGNITUDES go to plotext as they are (it draws and labels them itself, log scale
included). Any other set is drawn in a range plotext handles, with our own tick labels that
name the real values:
- linear: divided by a power of ten (the largest magnitude becomes 1..10);
- log: as log10 of the values on a linear axis, labelled with the powers they stand for.
Only the picture is scaled: legends read the exact numbers from the model, not from here.

Core module: no Textual, no plotext.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

# Non-zero magnitudes plotext's own ticks and log scale handle (measured: 18,000 random
# ranges within these bounds build, linear and log; 1e-310, 1e307 and their mixes fail).
PLOTEXT_SAFE_MAGNITUDES = (1e-15, 1e15)
# After scaling, values this much smaller than the axis' largest are below one pixel;
# they become 0 so that plotext never meets a magnitude outside its safe range.
_BELOW_A_PIXEL = 1e-12
# A tick between two powers of ten on a log axis: 3.2e306 says enough.
_LOG_LABEL_DIGITS = 2
# Significant digits of a label never need more than a double holds.
_MAX_DIGITS = 17


class AxisMode(str, Enum):
    NATIVE = "native"  # plotext draws the values and labels them itself
    SCALED = "scaled"  # values / 10**exponent on a linear axis
    LOG10 = "log10"  # log10(values) on a linear axis


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values (1, 2, 2.5 or 5 times a power of ten) within [low, high]."""
    span = high - low
    if not span > 0 or not math.isfinite(span):
        return [low]
    raw = span / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(
        (magnitude * factor for factor in (1, 2, 2.5, 5) if magnitude * factor >= raw),
        magnitude * 10,
    )
    first = math.ceil(low / step) * step
    return [first + index * step for index in range(int((high - first) / step + 1e-9) + 1)]


@dataclass(frozen=True)
class YAxis:
    """How a chart's values reach plotext, and the y ticks to give it (none when NATIVE)."""

    mode: AxisMode
    log_y: bool = False
    exponent: int = 0
    ticks: tuple[float, ...] = ()
    labels: tuple[str, ...] = ()

    @property
    def plotext_log(self) -> bool:
        """Whether plotext's own log scale is used (only for a NATIVE log axis)."""
        return self.log_y and self.mode is AxisMode.NATIVE

    def drawn(self, values: FloatArray) -> FloatArray:
        """`values` (finite; positive on a log axis) as plotext should draw them."""
        if self.mode is AxisMode.NATIVE:
            return values
        if self.mode is AxisMode.LOG10:
            shown = np.log10(values)
        else:
            shown = scale_by_power_of_ten(values, -self.exponent)
        return np.where(np.abs(shown) < _BELOW_A_PIXEL * _largest(shown), 0.0, shown)


def _largest(values: FloatArray) -> float:
    return float(np.max(np.abs(values))) if values.size else 0.0


def scale_by_power_of_ten(values: FloatArray, exponent: int) -> FloatArray:
    """values * 10**exponent without overflowing the factor itself (10**-323 is subnormal,
    10**323 is inf): applied in two halves, each a normal double."""
    first = exponent // 2
    return (values * 10.0**first) * 10.0 ** (exponent - first)


def y_axis(values: list[FloatArray], log_y: bool, tick_count: int = 5) -> YAxis:
    """The axis for these series' finite values (NaN gaps already removed; only positive
    values on a log axis)."""
    present = [array for array in values if array.size]
    if not present:
        return YAxis(AxisMode.NATIVE, log_y)
    magnitudes = np.abs(np.concatenate(present))
    non_zero = magnitudes[magnitudes > 0]
    low_safe, high_safe = PLOTEXT_SAFE_MAGNITUDES
    if non_zero.size == 0 or (non_zero.min() >= low_safe and non_zero.max() <= high_safe):
        return YAxis(AxisMode.NATIVE, log_y)
    if log_y:
        return _log10_axis(present, tick_count)
    return _scaled_axis(present, float(non_zero.max()), tick_count)


def _scaled_axis(values: list[FloatArray], largest: float, tick_count: int) -> YAxis:
    exponent = math.floor(math.log10(largest))
    draft = YAxis(AxisMode.SCALED, exponent=exponent)
    drawn = [draft.drawn(array) for array in values]
    low = min(float(array.min()) for array in drawn)
    high = max(float(array.max()) for array in drawn)
    ticks = nice_ticks(low, high, tick_count)
    labels = tick_labels(ticks, exponent)
    return YAxis(AxisMode.SCALED, False, exponent, tuple(ticks), labels)


def _log10_axis(values: list[FloatArray], tick_count: int) -> YAxis:
    logs = [np.log10(array) for array in values]
    low = min(float(array.min()) for array in logs)
    high = max(float(array.max()) for array in logs)
    ticks = _decade_ticks(low, high, tick_count) or nice_ticks(low, high, tick_count)
    labels = tuple(power_label(tick, _LOG_LABEL_DIGITS) for tick in ticks)
    return YAxis(AxisMode.LOG10, True, 0, tuple(ticks), labels)


def _decade_ticks(low: float, high: float, count: int) -> list[float] | None:
    """Whole powers of ten, every 1, 2, 5, 10, ... decades, at most `count` + 1 of them;
    None when fewer than two fit (then ticks between powers are needed)."""
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500):
        first = math.ceil(low / step) * step
        decades = range(first, math.floor(high) + 1, step)
        if len(decades) < 2:
            return None
        if len(decades) <= count + 1:
            return [float(decade) for decade in decades]
    return None


def _label_digits(ticks: list[float]) -> int:
    """Significant digits that tell neighbouring ticks apart."""
    if len(ticks) < 2:
        return 3
    step = abs(ticks[1] - ticks[0])
    largest = max(abs(tick) for tick in ticks)
    if step == 0 or largest == 0:
        return 3
    digits = math.floor(math.log10(largest)) - math.floor(math.log10(step)) + 1
    return max(1, min(_MAX_DIGITS, digits))


def tick_labels(ticks: list[float], exponent: int) -> tuple[str, ...]:
    """Labels for ticks on an axis scaled by 10**-exponent: the values they stand for."""
    digits = _label_digits(ticks)
    return tuple(scaled_label(tick, exponent, digits) for tick in ticks)


def scaled_label(mantissa: float, exponent: int, digits: int = 3) -> str:
    """`mantissa * 10**exponent` written short (`-1e307`, `2.5e-310`, `0`), computed in
    decimal text so that no double overflows on the way."""
    if mantissa == 0:
        return "0"
    digit_text, _, own_exponent = f"{mantissa:.{digits - 1}e}".partition("e")
    power = int(own_exponent) + exponent
    if "." in digit_text:
        digit_text = digit_text.rstrip("0").rstrip(".")
    if -4 <= power < 6:
        # An ordinary size: a plain number reads better than an exponent.
        return f"{float(digit_text) * 10.0**power:.{digits}g}"
    return f"{digit_text}e{power}"


def power_label(log10_value: float, digits: int = 3) -> str:
    """The label of a tick at log10_value on a log10 axis: 10**log10_value, written short."""
    power = math.floor(log10_value)
    return scaled_label(10.0 ** (log10_value - power), power, digits)
