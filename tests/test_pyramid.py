"""The M4 pyramid and the extended EMA give what the plain way gives.

Each is checked against a brute-force or from-scratch reference on random data with gaps,
infinities, ties and series that grow in random chunks (as a followed run grows).
"""

from __future__ import annotations

import numpy as np
import pytest

from ocms_tui.draw.downsample import EmaState, ema, ema_extend, m4, pixel_columns
from ocms_tui.draw.pyramid import FEW_NEW_LEAVES, MinMaxPyramid
from ocms_tui.follow.frames import ChartFrame, next_version, read_only
from ocms_tui.follow.series import SeriesStore
from ocms_tui.follow.views import SeriesViews


def frame_of(store: SeriesStore) -> ChartFrame:
    """A one-series store's rows as the reading thread publishes them."""
    return ChartFrame(
        name="chart",
        file="chart.csv",
        y_axis=("value",),
        chart_id=0,
        generation=store.generation,
        version=next_version(),
        rows=store.rows,
        steps=read_only(store.steps()),
        values=(read_only(store.values(0)),),
        stats=(store.stats(0),),
    )


def brute_force_m4(values: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """First, last, minimum and maximum finite value of each range, one range at a time."""
    chosen: list[int] = []
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        finite = start + np.flatnonzero(np.isfinite(values[start:stop]))
        if finite.size:
            kept = values[finite]
            chosen += [finite[0], finite[-1], finite[np.argmin(kept)], finite[np.argmax(kept)]]
    return np.unique(np.array(chosen, dtype=np.int64))


def hostile_values(rng: np.random.Generator, count: int, huge: bool = True) -> np.ndarray:
    """Rounded (so ties are common), with NaN gaps at a random density, some infinities and
    (`huge`) some of the largest finite doubles, which must win over every other value and
    lose to no infinity."""
    values = rng.standard_normal(count).round(int(rng.integers(0, 3)))
    if huge:
        values[rng.random(count) < 0.002] = np.finfo(np.float64).max
        values[rng.random(count) < 0.002] = -np.finfo(np.float64).max
    values[rng.random(count) < rng.random() * 0.6] = np.nan
    values[rng.random(count) < 0.01] = np.inf
    values[rng.random(count) < 0.01] = -np.inf
    return values


@pytest.mark.parametrize("seed", range(6))
def test_pyramid_matches_brute_force_m4_while_the_series_grows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(25):
        count = int(rng.integers(1, 6000))
        values = hostile_values(rng, count)
        pyramid = MinMaxPyramid(block=int(rng.choice([1, 2, 3, 5, 16, 64, 256])))
        seen = 0
        while seen < count:
            seen = min(count, seen + int(rng.integers(1, 1500)))
            pyramid.extend(values[:seen])
            # Ranges over the grown series, the unsummarised tail included.
            edges = rng.integers(0, seen, int(rng.integers(1, 60)))
            bounds = np.unique(np.concatenate(([0], edges, [seen])))
            starts, stops = bounds[:-1], bounds[1:]
            expected = brute_force_m4(values[:seen], starts, stops)
            assert np.array_equal(pyramid.m4_indices(values[:seen], starts, stops), expected)


def test_a_range_of_gaps_only_gives_no_points_and_an_empty_query_gives_none() -> None:
    values = np.full(2000, np.nan)
    values[1500] = 3.0
    pyramid = MinMaxPyramid(block=16)
    pyramid.extend(values)
    starts, stops = np.array([0, 1000, 1600]), np.array([1000, 1600, 2000])
    assert pyramid.m4_indices(values, starts, stops).tolist() == [1500]
    assert pyramid.m4_indices(values, np.array([]), np.array([])).size == 0


def test_pyramid_memory_is_a_small_fraction_of_the_series() -> None:
    values = np.random.default_rng(1).standard_normal(1_000_000)
    pyramid = MinMaxPyramid()
    pyramid.extend(values)
    # About two nodes of four 32-bit indices per 64 values: half a byte per 8-byte value.
    assert pyramid.nbytes < 0.55 * values.size


def test_a_pyramid_grown_block_by_block_answers_as_one_built_at_once() -> None:
    """Growth moves the heap to a wider one many times (1 -> 2 -> ... -> 512 leaves); every
    answer on the way is the brute-force one, and the end is the same as a single build."""
    rng = np.random.default_rng(7)
    values = hostile_values(rng, 16 * 300 + 9)
    grown = MinMaxPyramid(block=16)
    for seen in range(1, values.size + 1, 13):
        grown.extend(values[:seen])
        bounds = np.unique(np.concatenate(([0], rng.integers(0, seen, 20), [seen])))
        expected = brute_force_m4(values[:seen], bounds[:-1], bounds[1:])
        assert np.array_equal(grown.m4_indices(values[:seen], bounds[:-1], bounds[1:]), expected)
    grown.extend(values)
    built = MinMaxPyramid(block=16)
    built.extend(values)
    assert grown.length == built.length == 16 * 300 and grown.nbytes == built.nbytes
    for width in (1, 7, 100, 1000):
        bounds = np.linspace(0, values.size, width + 1).astype(np.int64)
        starts, stops = bounds[:-1], bounds[1:]
        assert np.array_equal(
            grown.m4_indices(values, starts, stops), built.m4_indices(values, starts, stops)
        )
        assert np.array_equal(
            built.m4_indices(values, starts, stops), brute_force_m4(values, starts, stops)
        )


def used_nodes(pyramid: MinMaxPyramid) -> list[list[list[int]]]:
    """The node rows in use, level by level from the leaves (the heap's room is garbage)."""
    levels, level, count = [], pyramid._capacity, pyramid._leaves
    while level >= 1 and count:
        levels.append(pyramid._nodes[level : level + count].tolist())
        level, count = level // 2, -(-count // 2)
    return levels


@pytest.mark.parametrize("seed", range(4))
def test_few_new_leaves_merged_in_python_equal_the_vectorised_merge(seed: int) -> None:
    """A followed run adds a few leaves per read (the Python merge); a load adds many (the
    numpy one): every node either way is the same."""
    rng = np.random.default_rng(seed)
    block = int(rng.choice([1, 4, 64]))
    values = hostile_values(rng, block * int(rng.integers(200, 900)) + 5)
    grown, seen = MinMaxPyramid(block=block), 0
    while seen < values.size:
        seen = min(values.size, seen + block * int(rng.integers(0, FEW_NEW_LEAVES + 2)) + 1)
        grown.extend(values[:seen])
    built = MinMaxPyramid(block=block)
    built.extend(values)
    assert used_nodes(grown) == used_nodes(built)


@pytest.mark.parametrize(
    "values",
    [
        np.array([2.5]),
        np.full(1000, 4.0),  # every value ties: the first is min, max, first
        np.full(1000, np.inf),
        np.array([np.nan] * 300 + [1.0] + [np.nan] * 300),
        np.array([-np.inf, 1e308, -1e308, np.inf, 0.0] * 200),
    ],
    ids=["one row", "all equal", "all inf", "one finite value", "huge and inf"],
)
def test_pyramid_on_degenerate_series(values: np.ndarray) -> None:
    pyramid = MinMaxPyramid(block=4)
    pyramid.extend(values)
    for width in (1, 3, 50):
        bounds = np.unique(np.linspace(0, values.size, width + 1).astype(np.int64))
        starts, stops = bounds[:-1], bounds[1:]
        expected = brute_force_m4(values, starts, stops)
        assert np.array_equal(pyramid.m4_indices(values, starts, stops), expected)


def m4_by_pixel_column(
    steps: np.ndarray, values: np.ndarray, width: int, x_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """M4 by its definition: the finite points in range, grouped by plotext's pixel column."""
    keep = np.isfinite(values) & (steps >= x_range[0]) & (steps <= x_range[1])
    index = np.flatnonzero(keep)
    columns = pixel_columns(steps[index], *x_range, width)
    bounds = np.flatnonzero(np.diff(columns)) + 1
    starts = np.concatenate(([0], bounds))
    stops = np.concatenate((bounds, [index.size]))
    chosen = brute_force_m4(values[index], starts, stops) if index.size else index
    return steps[index[chosen]], values[index[chosen]]


@pytest.mark.parametrize("seed", range(4))
def test_m4_with_a_pyramid_picks_the_m4_points(seed: int) -> None:
    """Sorted steps with repeats and gaps in the values, any range and width: the pyramid
    path picks exactly the first, last, lowest and highest finite point of every column."""
    rng = np.random.default_rng(100 + seed)
    count = int(rng.integers(5_000, 60_000))
    steps = np.cumsum(rng.integers(0, 4, count)).astype(np.int64)
    values = hostile_values(rng, count)
    pyramid = MinMaxPyramid(block=64)
    compared = 0
    for _ in range(15):
        width = int(rng.integers(1, 400))
        low, high = sorted(rng.uniform(-10, steps[-1] + 10, 2).tolist())
        in_range = int(np.count_nonzero((steps >= low) & (steps <= high)))
        got = m4(steps, values, width, (low, high), x_sorted=True, pyramid=pyramid)
        if in_range <= 4 * width:  # too few points to reduce: all of them are drawn
            assert got[0].size == np.count_nonzero(
                np.isfinite(values) & (steps >= low) & (steps <= high)
            )
            continue
        expected = m4_by_pixel_column(steps, values, width, (low, high))
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        compared += 1
    assert compared >= 5


@pytest.mark.parametrize("zoom", [None, (0.25, 0.27), (0.0, 0.5), (0.9, 1.2)])
def test_m4_with_the_default_pyramid_on_a_long_noisy_series(
    zoom: tuple[float, float] | None,
) -> None:
    """A dashboard-sized case: 300,000 rows of a noisy curve with gaps (the default block),
    the whole range and zoomed ones, one step repeated many times: exactly the definition's
    points."""
    rng = np.random.default_rng(11)
    count = 300_000
    steps = np.arange(count, dtype=np.int64) * 3
    steps[1000:1400] = steps[1000]  # a step logged 400 times
    values = (1 + np.exp(-steps / 1e5)) * (1 + 0.3 * rng.standard_normal(count))
    values[rng.random(count) < 0.05] = np.nan
    values[::997] = np.inf
    pyramid = MinMaxPyramid()
    last = float(steps[-1])
    x_range = (0.0, last) if zoom is None else (zoom[0] * last, zoom[1] * last)
    for width in (102, 307):
        got = m4(steps, values, width, x_range, x_sorted=True, pyramid=pyramid)
        expected = m4_by_pixel_column(steps, values, width, x_range)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_m4_given_a_pyramid_for_unsorted_steps_or_one_row_gives_the_definitions_points() -> None:
    """The pyramid serves sorted steps only: with steps that go back (a resumed run) m4
    reduces each monotonic run by itself, as without a pyramid; one row is one point."""
    rng = np.random.default_rng(12)
    steps = np.concatenate((np.arange(0, 20_000), np.arange(15_000, 40_000))).astype(np.int64)
    values = rng.standard_normal(steps.size)
    with_pyramid = m4(steps, values, 120, pyramid=MinMaxPyramid())
    without = m4(steps, values, 120)
    assert np.array_equal(with_pyramid[0], without[0])
    assert np.array_equal(with_pyramid[1], without[1])
    one = m4(
        np.array([5]), np.array([1.5]), 102, (5.0, 5.0), x_sorted=True, pyramid=MinMaxPyramid()
    )
    assert one[0].tolist() == [5] and one[1].tolist() == [1.5]


@pytest.mark.parametrize("weight", [0.0, 0.6, 0.99, 0.999])
def test_ema_extended_piece_by_piece_is_the_ema_of_the_whole(weight: float) -> None:
    rng = np.random.default_rng(7)
    values = hostile_values(rng, 20_000, huge=False) * 10 + 50
    whole = ema(values, weight)
    pieces, state, seen = [], EmaState(), 0
    while seen < values.size:
        step = int(rng.integers(1, 3000))
        piece, state = ema_extend(values[seen : seen + step], weight, state)
        pieces.append(piece)
        seen += step
    joined = np.concatenate(pieces)
    assert np.array_equal(np.isnan(joined), np.isnan(whole))
    assert np.allclose(joined, whole, rtol=1e-9, atol=0, equal_nan=True)


def test_shown_series_extends_smoothing_and_log_as_rows_arrive() -> None:
    from ocms_tui.format.parse import ParsedRows

    rng = np.random.default_rng(3)
    values = rng.standard_normal(5000)
    store = SeriesStore(1)
    views = SeriesViews()
    for start in range(0, 5000, 700):
        chunk = values[start : start + 700]
        steps = np.arange(start, start + chunk.size, dtype=np.int64)
        store.append(ParsedRows(steps, (chunk,), chunk.size))
        shown = views.shown(frame_of(store), 0, 0.9, True)
        got = shown.values(frame_of(store).values[0])
        expected = ema(values[: start + chunk.size], 0.9)
        expected = np.where(expected > 0, expected, np.nan)
        assert np.allclose(got, expected, rtol=1e-9, equal_nan=True)
    raw = frame_of(store).values[0]
    assert (
        views.shown(frame_of(store), 0, 0.0, False).values(raw) is raw
    )  # nothing to derive: no copy
    # One derived copy per series at a time: another setting replaces it.
    smoothed = views.shown(frame_of(store), 0, 0.9, True)
    assert views.shown(frame_of(store), 0, 0.6, False) is not smoothed
    assert views.shown(frame_of(store), 0, 0.9, True) is not smoothed  # made again, not kept
    assert views.shown(frame_of(store), 0, 0.0, False).values(raw) is raw


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("smoothing", [0.0, 0.6])
def test_log_view_is_its_linear_view_until_a_value_is_not_positive(
    seed: int, smoothing: float
) -> None:
    """A log axis gaps values <= 0. While a series has none, its log view is its linear view
    (the same array and pyramid: no copy); once one arrives (zero, negative, -inf), the log
    view keeps its own values, and both values and M4 points equal the brute-force ones."""
    from ocms_tui.format.parse import ParsedRows

    rng = np.random.default_rng(seed)
    count = 6000
    values = np.abs(hostile_values(rng, count)) + 0.5  # positive, with gaps and +inf
    turn = int(rng.integers(1000, 5000))  # from here on, values <= 0 too
    values[turn:][rng.random(count - turn) < 0.2] = 0.0
    values[turn:][rng.random(count - turn) < 0.2] *= -1
    values[turn + 1] = -np.inf
    store = SeriesStore(1)
    views = SeriesViews()
    seen = 0
    while seen < count:
        chunk = values[seen : seen + int(rng.integers(1, 900))]
        steps = np.arange(seen, seen + chunk.size, dtype=np.int64)
        store.append(ParsedRows(steps, (chunk,), chunk.size))
        seen += chunk.size
        raw = frame_of(store).values[0]
        linear = views.shown(frame_of(store), 0, smoothing, False)
        logged = views.shown(frame_of(store), 0, smoothing, True)
        got = logged.values(raw)
        linear_values = linear.values(raw)
        expected = np.where(linear_values > 0, linear_values, np.nan)
        assert np.array_equal(got, expected, equal_nan=True)
        if seen <= turn:
            assert np.shares_memory(got, linear_values)
            assert logged.pyramid is linear.pyramid and not logged.holds_copy
        else:
            assert logged.holds_copy and logged.pyramid is not linear.pyramid
        edges = rng.integers(0, seen, 40)
        bounds = np.unique(np.concatenate(([0], edges, [seen])))
        logged.pyramid.extend(got)
        assert np.array_equal(
            logged.pyramid.m4_indices(got, bounds[:-1], bounds[1:]),
            brute_force_m4(expected, bounds[:-1], bounds[1:]),
        )


@pytest.mark.parametrize("seed", range(4))
def test_a_linear_view_counts_its_positive_rows_once_as_it_grows(seed: int) -> None:
    """`positive_rows` is the length of the leading run of values none <= 0 (gaps count as
    positive), for every prefix a growing series has had; the rows it knew are not looked
    at again (a value changed behind them is not seen: they only ever grow)."""
    from ocms_tui.follow.views import ShownSeries

    rng = np.random.default_rng(seed)
    values = np.abs(hostile_values(rng, 5000, huge=False)) + 0.5
    turn = int(rng.integers(100, 5000))
    values[turn] = float(rng.choice([0.0, -1.0, -np.inf]))
    view, seen = ShownSeries(0.0, False), 0
    while seen < values.size:
        seen = min(values.size, seen + int(rng.integers(1, 700)))
        assert view.positive_rows(values[:seen]) == min(seen, turn)
    grown = values.copy()
    grown[: min(turn, 10)] = -1.0  # behind what is known: never looked at again
    assert view.positive_rows(grown) == turn


def test_toggling_the_log_axis_keeps_the_smoothing_it_is_made_from() -> None:
    from ocms_tui.format.parse import ParsedRows

    values = np.linspace(1.0, 2.0, 3000)
    store = SeriesStore(1)
    views = SeriesViews()
    store.append(ParsedRows(np.arange(3000, dtype=np.int64), (values,), 3000))
    smoothed = views.shown(frame_of(store), 0, 0.9, False)
    first = smoothed.values(frame_of(store).values[0])
    # The log view shows the smoothing's own array: no second EMA, no copy.
    assert np.shares_memory(
        views.shown(frame_of(store), 0, 0.9, True).values(frame_of(store).values[0]), first
    )
    assert views.shown(frame_of(store), 0, 0.9, False) is smoothed
    assert not np.shares_memory(
        views.shown(frame_of(store), 0, 0.6, True).values(frame_of(store).values[0]), first
    )
    assert (
        views.shown(frame_of(store), 0, 0.9, False) is not smoothed
    )  # another smoothing replaced it


def test_a_smoothing_prepared_on_another_thread_while_rows_arrive_is_taken_and_extended() -> None:
    """`prepare` runs on a thread while this one appends; the first `shown` of that smoothing
    takes its result and smooths only the rows that came meanwhile: values equal the EMA of
    the whole series, and the M4 points of its pyramid equal brute force."""
    import threading

    from ocms_tui.format.parse import ParsedRows

    rng = np.random.default_rng(11)
    values = hostile_values(rng, 120_000)
    store = SeriesStore(1)
    views = SeriesViews()

    def append(start: int, stop: int) -> None:
        chunk = values[start:stop]
        store.append(ParsedRows(np.arange(start, stop, dtype=np.int64), (chunk,), chunk.size))

    append(0, 50_000)
    hand_overs = []
    before = frame_of(store)  # what the reading thread published
    preparing = threading.Thread(target=lambda: hand_overs.append(views.prepare(before, 0, 0.9)))
    preparing.start()
    for start in range(50_000, 120_000, 7_000):  # appended while the thread smooths
        append(start, start + 7_000)
    preparing.join()
    assert views.prepared_smoothing(frame_of(store), 0) is None  # not handed over yet
    hand_overs[0]()
    assert views.prepared_smoothing(frame_of(store), 0) == 0.9
    assert (
        views.shown(frame_of(store), 0, 0.6, False).values(frame_of(store).values[0]) is not None
    )  # another level
    assert views.prepared_smoothing(frame_of(store), 0) == 0.9  # ... leaves it be
    shown = views.shown(frame_of(store), 0, 0.9, True)  # a log view's base takes it
    assert views.prepared_smoothing(frame_of(store), 0) is None
    linear = views.shown(frame_of(store), 0, 0.9, False).values(frame_of(store).values[0])
    expected = ema(values, 0.9)
    assert np.allclose(linear, expected, rtol=1e-9, equal_nan=True)
    got = shown.values(frame_of(store).values[0])
    logged = np.where(expected > 0, expected, np.nan)
    assert np.allclose(got, logged, rtol=1e-9, equal_nan=True)
    bounds = np.unique(np.concatenate(([0], rng.integers(0, values.size, 50), [values.size])))
    shown.pyramid.extend(got)
    assert np.array_equal(
        shown.pyramid.m4_indices(got, bounds[:-1], bounds[1:]),
        brute_force_m4(got, bounds[:-1], bounds[1:]),
    )


def test_pixel_columns_are_plotexts_own() -> None:
    import plotext._utility as plotext_utility

    data = np.random.default_rng(5).uniform(-3, 1e6, 5000)
    expected = plotext_utility.get_matrix_data(data.tolist(), [-3.0, 1e6], 417)
    assert pixel_columns(data, -3.0, 1e6, 417).tolist() == expected
