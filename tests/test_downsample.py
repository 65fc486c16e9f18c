"""M4 reduction and debiased EMA: exactness against references (the same plotext canvas from
reduced series: tests/test_plotting.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ocms_tui.draw.downsample import (
    POLARS_EMA_FROM,
    EmaState,
    M4Memo,
    ema,
    ema_extend,
    m4,
    pixel_columns,
)
from ocms_tui.draw.pyramid import MinMaxPyramid


def reference_m4(x: np.ndarray, y: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """M4 by its definition: one pass per pixel column over a monotonic series."""
    keep = np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) <= 4 * width:
        return x, y
    columns = pixel_columns(x, float(x.min()), float(x.max()), width)
    chosen: set[int] = set()
    for column in np.unique(columns):
        members = np.flatnonzero(columns == column)
        chosen |= {
            int(members[0]),
            int(members[-1]),
            int(members[np.argmin(y[members])]),
            int(members[np.argmax(y[members])]),
        }
    index = sorted(chosen)
    return x[index], y[index]


def tensorboard_ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing loop, written out as in its source."""
    last, finite_count, out = 0.0, 0, []
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        finite_count += 1
        out.append(last / (1 - weight**finite_count))
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("seed", range(20))
def test_m4_equals_the_definition_on_random_monotonic_series(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 6000))
    width = int(rng.integers(1, 300))
    steps = np.sort(rng.integers(0, int(rng.integers(1, 50_000)), size=n))
    values = rng.normal(size=n)
    values[rng.random(n) < 0.2] = np.nan
    got_x, got_y = m4(steps, values, width)
    want_x, want_y = reference_m4(steps, values, width)
    np.testing.assert_array_equal(got_x, want_x)
    np.testing.assert_array_equal(got_y, want_y)
    assert got_x.dtype == steps.dtype


def test_m4_bounds_the_output_and_keeps_every_spike() -> None:
    steps = np.arange(1_000_000)
    values = np.zeros(1_000_000)
    values[[123_457, 654_321]] = [50.0, -70.0]
    x, y = m4(steps, values, 200)
    assert len(x) <= 4 * 200
    assert y.max() == 50.0 and y.min() == -70.0
    assert {123_457, 654_321} <= set(x.tolist())
    assert x[0] == 0 and x[-1] == 999_999


@pytest.mark.parametrize("x_range", [None, (1_000.0, 30_000.0)])
def test_m4_with_sorted_steps_promised_gives_the_same_points(x_range) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    steps = np.sort(rng.integers(0, 50_000, size=40_000))
    values = rng.normal(size=40_000)
    values[rng.random(40_000) < 0.3] = np.nan
    promised = m4(steps, values, 150, x_range=x_range, x_sorted=True)
    checked = m4(steps, values, 150, x_range=x_range)
    np.testing.assert_array_equal(promised[0], checked[0])
    np.testing.assert_array_equal(promised[1], checked[1])


def test_m4_edge_cases() -> None:
    empty_x, empty_y = m4(np.array([], dtype=np.int64), np.array([]), 100)
    assert empty_x.size == 0 and empty_y.size == 0
    x, y = m4(np.arange(10), np.arange(10.0), 0)
    assert x.size == 0 and y.size == 0
    x, y = m4(np.arange(5), np.array([np.nan, 1.0, np.inf, -np.inf, 2.0]), 10)
    assert x.tolist() == [1, 4] and y.tolist() == [1.0, 2.0]
    x, y = m4(np.full(1000, 7), np.arange(1000.0), 3)  # one step: one column
    assert sorted(y.tolist()) == [0.0, 999.0]
    with pytest.raises(ValueError):
        m4(np.arange(3), np.arange(4.0), 10)


def test_m4_x_range_drops_points_outside_and_uses_the_range_for_columns() -> None:
    steps = np.arange(10_000)
    values = np.sin(steps / 100.0)
    x, y = m4(steps, values, 50, x_range=(8_000, 9_999))
    assert y.size == x.size
    assert x.min() == 8_000 and x.max() == 9_999
    assert len(x) <= 200


def test_m4_keeps_a_resumed_run_as_two_passes() -> None:
    # A run crashed at step 10,000 and resumed from a checkpoint at step 8,000.
    steps = np.concatenate([np.arange(0, 10_000), np.arange(8_000, 15_000)])
    values = np.concatenate([np.linspace(5, 1, 10_000), np.linspace(1.5, 0.5, 7_000)])
    x, _y = m4(steps, values, 100)
    backward = np.flatnonzero(np.diff(x) < 0)
    assert len(backward) == 1
    assert x[backward[0]] == 9_999 and x[backward[0] + 1] == 8_000
    assert len(x) <= 2 * 4 * 100


def test_m4_bounds_the_work_when_steps_jump_back_and_forth() -> None:
    rng = np.random.default_rng(3)
    steps = rng.integers(0, 1_000_000, size=200_000)
    values = rng.normal(size=200_000)
    x, y = m4(steps, values, 100)
    assert len(x) <= 4 * 100
    assert y.max() == values.max() and y.min() == values.min()


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.9, 0.99, 0.999])
def test_ema_matches_tensorboard_and_keeps_gaps(weight: float) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(loc=3.0, size=20_000) * np.exp(rng.normal(size=20_000))
    values[rng.random(20_000) < 0.1] = np.nan
    values[7] = np.inf
    smoothed = ema(values, weight)
    want = tensorboard_ema(values, weight)
    assert np.array_equal(np.isfinite(smoothed), np.isfinite(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(smoothed[finite], want[finite], rtol=1e-9, atol=1e-12)


def test_ema_is_debiased_and_rejects_bad_weights() -> None:
    assert ema(np.full(50, 2.5), 0.9) == pytest.approx(np.full(50, 2.5))
    assert ema(np.array([4.0]), 0.99)[0] == pytest.approx(4.0)  # not 0.04: debiased
    assert ema(np.array([]), 0.6).size == 0
    assert np.isnan(ema(np.array([np.nan, np.nan]), 0.6)).all()
    with pytest.raises(ValueError):
        ema(np.arange(3.0), 1.0)


@pytest.mark.parametrize("seed", range(3))
def test_m4_with_a_memo_gives_the_same_points_and_reduces_only_changed_columns(seed: int) -> None:
    """A series growing a few rows at a time (gaps, ties, infinities), reduced at a fixed
    range and width with a memo and without: the same points, and per growth only the
    columns whose rows changed are asked of the pyramid. A new range or width, or other
    rows, are reduced in full."""
    rng = np.random.default_rng(40 + seed)
    total = 60_000
    steps = np.cumsum(rng.integers(0, 3, total)).astype(np.int64)
    values = rng.standard_normal(total).round(1)
    values[rng.random(total) < 0.2] = np.nan
    values[rng.random(total) < 0.005] = np.inf
    memo, pyramid, plain_pyramid = M4Memo(), MinMaxPyramid(block=64), MinMaxPyramid(block=64)
    seen, width = 20_000, 97
    x_range = (float(steps[0]), float(steps[-1]) + 50.0)
    calls = 0
    while seen < total:
        seen = min(total, seen + int(rng.integers(1, 400)))
        if rng.random() < 0.05:
            width = int(rng.integers(20, 200))
        if rng.random() < 0.05:
            x_range = (float(rng.integers(0, 1000)), x_range[1])
        rows = (0, seen) if rng.random() < 0.9 else (int(rng.integers(0, 100)), seen)
        before = memo.columns_reduced
        got = m4(steps, values, width, x_range, x_sorted=True, pyramid=pyramid, rows=rows,
                 memo=memo)  # fmt: skip
        want = m4(steps, values, width, x_range, x_sorted=True, pyramid=plain_pyramid,
                  rows=rows)  # fmt: skip
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1], equal_nan=True)
        calls += 1
        assert memo.columns_reduced - before <= width
    # Most growths changed a column or two, not all of them.
    assert memo.columns_reduced < calls * width / 4


def test_series_sharing_their_steps_find_their_columns_once_and_others_do_not() -> None:
    """One picture's series with the same steps array (a chart's four) search their pixel
    columns once; other steps (another chart's, a copy, a list made into an array for the
    call and freed after it, whose address the next one may reuse) search their own, and
    every series gets the points it gets alone."""
    rng = np.random.default_rng(12)
    total, width = 50_000, 90
    steps = np.cumsum(rng.integers(1, 3, total)).astype(np.int64)
    shifted = steps + 7  # same length, other columns
    x_range = (float(steps[0]), float(shifted[-1]))
    shared: dict = {}  # type: ignore[type-arg]
    calls = [(steps, 0), (steps, 1), (steps[:-10], 2), (shifted, 3), (steps.copy(), 4)]
    calls += [(list(shifted), 5), (list(steps), 6)]
    for x, seed in calls:
        values = np.random.default_rng(seed).standard_normal(total)[: len(x)]
        values[::97] = np.nan
        got = m4(x, values, width, x_range, x_sorted=True, pyramid=MinMaxPyramid(),
                 shared_columns=shared)  # fmt: skip
        want = m4(x, values, width, x_range, x_sorted=True, pyramid=MinMaxPyramid())
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1], equal_nan=True)
    # steps and steps[:-10] share an address and differ in their rows: two entries; shifted
    # and the copy one each; the lists none.
    assert len(shared) == 4


def test_m4_of_a_view_shown_again_reduces_no_column() -> None:
    """The same rows, range and width again (a key back to a view, a view made ahead): the
    memo's points, no column asked of the pyramid; rows added past the range change none."""
    rng = np.random.default_rng(9)
    steps = np.arange(200_000, dtype=np.int64)
    values = rng.standard_normal(steps.size)
    memo, pyramid = M4Memo(), MinMaxPyramid(block=64)
    x_range = (50_000.0, 150_000.0)
    first = m4(steps, values, 150, x_range, x_sorted=True, pyramid=pyramid, memo=memo,
               rows=(0, 180_000))  # fmt: skip
    reduced = memo.columns_reduced
    for rows in ((0, 180_000), (0, 200_000)):
        again = m4(steps, values, 150, x_range, x_sorted=True, pyramid=pyramid, memo=memo,
                   rows=rows)  # fmt: skip
        assert np.array_equal(again[0], first[0]) and np.array_equal(again[1], first[1])
        assert memo.columns_reduced == reduced
    fresh = m4(steps, values, 150, x_range, x_sorted=True, pyramid=MinMaxPyramid(block=64))
    assert np.array_equal(fresh[0], first[0]) and np.array_equal(fresh[1], first[1])


@pytest.mark.parametrize("weight", [0.6, 0.9, 0.99, 0.999])
@pytest.mark.parametrize("magnitude", [1.0, 1e300, 1e-310])
def test_an_ema_started_in_polars_and_extended_in_numpy_matches_tensorboard(
    weight: float, magnitude: float
) -> None:
    """A long series started afresh is smoothed by polars (POLARS_EMA_FROM values or more),
    the rows after it by the blockwise numpy code from the state polars left: together they
    give TensorBoard's loop, gaps (NaN, inf, -inf) kept as gaps and left out of the average,
    at ordinary, huge and subnormal magnitudes."""
    rng = np.random.default_rng(int(weight * 1000))
    count = POLARS_EMA_FROM * 3
    values = rng.normal(loc=3.0, size=count) * np.exp(rng.normal(size=count)) * magnitude
    values[rng.random(count) < 0.2] = np.nan
    values[[5, 900, 9000]] = [np.inf, -np.inf, np.inf]
    first = POLARS_EMA_FROM + 17
    head, state = ema_extend(values[:first], weight, EmaState())
    tail, state = ema_extend(values[first:], weight, state)
    smoothed = np.concatenate((head, tail))
    want = tensorboard_ema(values, weight)
    assert np.array_equal(np.isfinite(smoothed), np.isfinite(want))
    assert np.array_equal(np.isnan(smoothed), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(smoothed[finite], want[finite], rtol=1e-9, atol=0)
    assert state.count == int(np.count_nonzero(np.isfinite(values)))
