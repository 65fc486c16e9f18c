"""Axis ticks are round (1, 2, 2.5, 5 x 10^k; decades on log axes) and their labels short and
exact (3e-5, 0.25, 1.2k)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from ocms_tui.draw.ticks import (
    MAX_LABEL_CHARS,
    log_ticks,
    nice_ticks,
    spaced_ticks,
    tick_count,
    tick_label,
    tick_labels,
)


def is_round(value: float) -> bool:
    """1, 2, 2.5 or 5 times a power of ten (or 0)."""
    if value == 0:
        return True
    mantissa = abs(value) / 10 ** math.floor(math.log10(abs(value)))
    # (a difference of two ticks far from zero carries floating-point noise)
    return any(math.isclose(mantissa, factor, rel_tol=1e-6) for factor in (1, 2, 2.5, 5, 10))


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (0.25, "0.25"),
        (2.5, "2.5"),
        (120.0, "120"),
        (750.0, "750"),
        (1000.0, "1k"),
        (1200.0, "1.2k"),
        (2500.0, "2.5k"),
        (120_000.0, "120k"),
        (1_500_000.0, "1.5M"),
        (3e9, "3G"),
        (3e-5, "3e-5"),
        (2.5e-4, "2.5e-4"),
        (0.001, "0.001"),
        (-0.5, "-0.5"),
        (-2e-6, "-2e-6"),
        (0.1 + 0.2, "0.3"),  # floating-point noise is not a digit to show
    ],
)
def test_labels_are_short_and_exact(value: float, label: str) -> None:
    assert tick_label(value) == label


def test_the_issue_s_log_axis_gets_round_short_labels() -> None:
    # A learning rate from 1.3e-5 to 3e-4: plotext labelled it 0.00003000, 0.00001301, ...
    ticks = log_ticks(1.3e-5, 3e-4)
    assert tick_labels(ticks) == ["2e-5", "5e-5", "1e-4", "2e-4"]


def test_log_axes_over_many_decades_show_every_nth_decade() -> None:
    ticks = log_ticks(1e-9, 1e3, count=5)
    assert tick_labels(ticks) == ["1e-9", "1e-6", "0.001", "1", "1k"]
    assert all(1e-9 <= tick <= 1e3 for tick in ticks)


def test_a_log_axis_inside_one_decade_still_gets_round_ticks() -> None:
    assert tick_labels(log_ticks(0.2, 0.5)) == ["0.2", "0.3", "0.5"]
    assert tick_labels(log_ticks(0.3, 0.35)) == ["0.3", "0.31", "0.32", "0.33", "0.34", "0.35"]


def test_linear_ticks_of_familiar_ranges() -> None:
    assert tick_labels(nice_ticks(0, 999)) == ["0", "200", "400", "600", "800"]
    assert tick_labels(nice_ticks(0, 999, count=4)) == ["0", "250", "500", "750"]
    assert tick_labels(nice_ticks(1000, 2600)) == ["1k", "1.5k", "2k", "2.5k"]
    assert tick_labels(nice_ticks(-1, 1)) == ["-1", "-0.5", "0", "0.5", "1"]
    assert tick_labels(nice_ticks(0, 3.05e-4)) == ["0", "1e-4", "2e-4", "3e-4"]


def test_degenerate_ranges() -> None:
    assert nice_ticks(5.0, 5.0) == [5.0]
    assert nice_ticks(math.nan, 1.0) == []
    assert log_ticks(-1.0, 10.0) == []  # a log axis has no ticks at or below zero
    assert tick_count(3, 3) == 2 and tick_count(100, 3) == 6


@given(
    st.floats(-1e12, 1e12, allow_nan=False),
    st.floats(1e-9, 1e12, allow_nan=False),
    st.integers(2, 6),
)
@example(-999999992509.0, 999999992015.0, 2)  # found by CI: a tick at 0 for a range to -494
@example(-1.192092896e-07, 1e-09, 4)  # found by hypothesis: steps of 2.5e-10, -1.1875e-7
def test_linear_ticks_are_round_inside_the_range_and_labelled_distinctly(
    low: float, span: float, count: int
) -> None:
    # Ranges a double can subdivide: nine digits of the offset (a step counter at 1e12 still
    # gets a span of 1000).
    assume(span >= abs(low) * 1e-9)
    high = low + span
    ticks = nice_ticks(low, high, count)
    assert 1 <= len(ticks) <= 2 * count + 1
    step = ticks[1] - ticks[0] if len(ticks) > 1 else None
    for tick in ticks:
        assert low - abs(low) * 1e-9 - 1e-12 <= tick <= high + abs(high) * 1e-9 + 1e-12
    if step is not None:
        assert is_round(step)
    labels = tick_labels(ticks)
    assert len(set(labels)) == len(labels)
    if span >= abs(low) * 1e-3:  # a tight range far out needs long labels (100.00025k)
        assert all(len(label) <= MAX_LABEL_CHARS for label in labels), labels


@given(st.floats(1e-12, 1e12), st.floats(1.0001, 1e6))
def test_log_ticks_lie_inside_the_range(low: float, ratio: float) -> None:
    high = low * ratio
    ticks = log_ticks(low, high)
    assert ticks == sorted(ticks)
    assert all(low * (1 - 1e-9) <= tick <= high * (1 + 1e-9) for tick in ticks)
    labels = tick_labels(ticks)
    assert len(set(labels)) == len(labels)


def test_ticks_sharing_a_row_are_thinned_the_first_kept() -> None:
    # 0.13 .. 3.9 on 4 rows: 1, 2, 3 would share rows; plotext would pick between them.
    assert spaced_ticks([1.0, 2.0, 3.0], 0.13, 3.9, rows=4) == [1.0, 3.0]
    assert spaced_ticks([1.0, 2.0, 3.0], 0.13, 3.9, rows=3) == [1.0]
    assert spaced_ticks([1.0, 2.0, 3.0], 0.13, 3.9, rows=20) == [1.0, 2.0, 3.0]
    assert spaced_ticks([1e-5, 1e-4, 1e-3], 1e-5, 1e-3, rows=3, log=True) == [1e-5, 1e-3]
    assert spaced_ticks([1.0, 2.0], 1.0, 1.0, rows=10) == [1.0]
