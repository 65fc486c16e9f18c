"""A min/max/first/last pyramid over a growing series: M4 for any range in O(columns x log n).

Pure numpy, no Textual. M4 (see `downsample`) keeps, per pixel column, the first, last,
minimum and maximum finite point. Done directly, that is a pass over every point in view:
at 1,000,000 rows, most of a redraw. The pyramid keeps those four answers for aligned blocks
of the series (BLOCK values at the bottom level, each level above merging pairs), so the
answer for any index range is the merge of at most two partial blocks (read raw) and about
2 log2(n / BLOCK) whole blocks, looked up for all columns at once.

It is extended, never rebuilt: `extend(values)` takes the series so far (the old values a
prefix of the new) and adds only the blocks completed since. Memory: about 2 x 48 bytes per
BLOCK values (0.4 bytes per value at BLOCK = 256).

Ties go left, as numpy's argmin/argmax do, and non-finite values (gaps, inf) are never
chosen, so the points are exactly those of a brute-force M4 over the same columns.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BLOCK = 256  # values per bottom-level block; partial blocks are read raw (< 2 BLOCK per column)
_NONE = np.iinfo(np.int64).max  # "no finite value" as a first index
_GROWTH = 2


class _Summary:
    """Min, argmin, max, argmax, first and last finite index of some ranges (one per entry).

    A range without finite values has min +inf, max -inf, first _NONE and last -1; merging
    with it changes nothing.
    """

    __slots__ = ("first", "last", "max_at", "max_value", "min_at", "min_value")

    def __init__(
        self,
        min_value: FloatArray,
        min_at: IntArray,
        max_value: FloatArray,
        max_at: IntArray,
        first: IntArray,
        last: IntArray,
    ) -> None:
        self.min_value = min_value
        self.min_at = min_at
        self.max_value = max_value
        self.max_at = max_at
        self.first = first
        self.last = last

    @classmethod
    def empty(cls, count: int) -> _Summary:
        return cls(
            np.full(count, np.inf),
            np.full(count, -1, dtype=np.int64),
            np.full(count, -np.inf),
            np.full(count, -1, dtype=np.int64),
            np.full(count, _NONE, dtype=np.int64),
            np.full(count, -1, dtype=np.int64),
        )

    @classmethod
    def of_rows(
        cls, values: FloatArray, offsets: IntArray, valid: npt.NDArray[np.bool_]
    ) -> _Summary:
        """Summaries of the rows of a 2-d gather: `values[i, j]` is the value at index
        `offsets[i] + j`, counted only where `valid[i, j]` and finite."""
        counted = valid & np.isfinite(values)
        low = np.where(counted, values, np.inf)
        high = np.where(counted, values, -np.inf)
        min_column = np.argmin(low, axis=1)
        max_column = np.argmax(high, axis=1)
        rows = np.arange(values.shape[0])
        any_counted = counted.any(axis=1)
        width = values.shape[1]
        first_column = np.argmax(counted, axis=1)
        last_column = width - 1 - np.argmax(counted[:, ::-1], axis=1)
        return cls(
            low[rows, min_column],
            np.where(any_counted, offsets + min_column, -1),
            high[rows, max_column],
            np.where(any_counted, offsets + max_column, -1),
            np.where(any_counted, offsets + first_column, _NONE),
            np.where(any_counted, offsets + last_column, -1),
        )

    def merged(self, right: _Summary, where: npt.NDArray[np.bool_] | None = None) -> _Summary:
        """`self` followed by `right` (ties go to `self`); only where `where` is True."""
        take_min = right.min_value < self.min_value
        take_max = right.max_value > self.max_value
        first = np.minimum(self.first, right.first)
        last = np.maximum(self.last, right.last)
        if where is not None:
            take_min &= where
            take_max &= where
            first = np.where(where, first, self.first)
            last = np.where(where, last, self.last)
        return _Summary(
            np.where(take_min, right.min_value, self.min_value),
            np.where(take_min, right.min_at, self.min_at),
            np.where(take_max, right.max_value, self.max_value),
            np.where(take_max, right.max_at, self.max_at),
            first,
            last,
        )

    def select(self, where: npt.NDArray[np.bool_], otherwise: _Summary) -> _Summary:
        """`self` where `where` is True, else `otherwise`."""
        return _Summary(
            *(
                np.where(where, mine, theirs)
                for mine, theirs in zip(self._fields(), otherwise._fields(), strict=True)
            )
        )

    def _fields(self) -> tuple[np.ndarray, ...]:
        return (self.min_value, self.min_at, self.max_value, self.max_at, self.first, self.last)

    def take(self, index: IntArray) -> _Summary:
        return _Summary(
            self.min_value[index],
            self.min_at[index],
            self.max_value[index],
            self.max_at[index],
            self.first[index],
            self.last[index],
        )


class _Level:
    """One level's block summaries in growable buffers (views of the filled part)."""

    def __init__(self) -> None:
        self.length = 0
        self._floats = np.empty((2, 0))
        self._ints = np.empty((4, 0), dtype=np.int64)

    def summary(self) -> _Summary:
        floats, ints, n = self._floats, self._ints, self.length
        return _Summary(
            floats[0, :n], ints[0, :n], floats[1, :n], ints[1, :n], ints[2, :n], ints[3, :n]
        )

    def write(self, start: int, summary: _Summary) -> None:
        """Set blocks start, start+1, ... (overwriting a partial last block is allowed)."""
        stop = start + len(summary.min_value)
        if stop > self._floats.shape[1]:
            capacity = max(stop, self._floats.shape[1] * _GROWTH, 16)
            floats = np.empty((2, capacity))
            ints = np.empty((4, capacity), dtype=np.int64)
            floats[:, : self.length] = self._floats[:, : self.length]
            ints[:, : self.length] = self._ints[:, : self.length]
            self._floats, self._ints = floats, ints
        self._floats[0, start:stop] = summary.min_value
        self._floats[1, start:stop] = summary.max_value
        self._ints[0, start:stop] = summary.min_at
        self._ints[1, start:stop] = summary.max_at
        self._ints[2, start:stop] = summary.first
        self._ints[3, start:stop] = summary.last
        self.length = max(self.length, stop)


class MinMaxPyramid:
    """Block summaries of a series that only grows; see the module docstring."""

    def __init__(self, block: int = BLOCK) -> None:
        self.block = block
        self.length = 0  # values covered by whole blocks
        self._levels: list[_Level] = []

    @property
    def nbytes(self) -> int:
        return sum(48 * level.length for level in self._levels)

    def extend(self, values: FloatArray) -> None:
        """Take in the whole blocks of `values` not yet summarised (`values` starts with
        every value seen before)."""
        whole = len(values) // self.block * self.block
        if whole <= self.length:
            return
        new = values[self.length : whole].reshape(-1, self.block)
        offsets = np.arange(self.length, whole, self.block, dtype=np.int64)
        summary = _Summary.of_rows(new, offsets, np.ones(new.shape, dtype=bool))
        changed_from = self.length // self.block
        if not self._levels:
            self._levels.append(_Level())
        self._levels[0].write(changed_from, summary)
        self.length = whole
        # Each level above merges pairs of the one below; only pairs with a new child change.
        depth = 0
        while self._levels[depth].length > 1:
            below = self._levels[depth].summary()
            changed_from //= 2
            if depth + 1 == len(self._levels):
                self._levels.append(_Level())
            parents = -(-below.min_value.size // 2)
            left = below.take(np.arange(2 * changed_from, 2 * parents, 2))
            right_index = np.arange(2 * changed_from + 1, 2 * parents + 1, 2)
            has_right = right_index < below.min_value.size
            right = below.take(np.minimum(right_index, below.min_value.size - 1))
            self._levels[depth + 1].write(changed_from, left.merged(right, has_right))
            depth += 1

    def m4_indices(self, values: FloatArray, starts: IntArray, stops: IntArray) -> IntArray:
        """Sorted unique indices of the first, last, minimum and maximum finite value of each
        range [starts[i], stops[i]) of `values` (the series this pyramid was extended with,
        possibly longer: the tail past the whole blocks is read raw). Ranges must be
        non-empty; a range with no finite value contributes nothing."""
        starts = np.asarray(starts, dtype=np.int64)
        stops = np.asarray(stops, dtype=np.int64)
        if starts.size == 0:
            return np.zeros(0, dtype=np.int64)
        block = self.block
        whole_blocks = self.length // block
        first_block = np.minimum(-(-starts // block), whole_blocks)
        end_block = np.minimum(stops // block, whole_blocks)
        inner = first_block < end_block
        # Raw heads: up to the first whole block, or the whole range when it holds none.
        head_stop = np.where(inner, first_block * block, stops)
        tail_start = np.where(inner, end_block * block, stops)
        total = _raw(values, starts, head_stop)
        if inner.any():
            total = total.merged(self._query(first_block, end_block, inner), inner)
        total = total.merged(_raw(values, tail_start, stops))
        found = total.first != _NONE
        chosen = np.concatenate(
            (total.first[found], total.last[found], total.min_at[found], total.max_at[found])
        )
        return np.unique(chosen)

    def _query(self, low: IntArray, high: IntArray, active: npt.NDArray[np.bool_]) -> _Summary:
        """Merged summaries of whole blocks [low, high) per range, by the bottom-up walk of a
        segment tree: at each level take the odd end nodes, then halve both ends."""
        count = low.size
        from_left = _Summary.empty(count)
        from_right = _Summary.empty(count)
        low = np.where(active, low, 0)
        high = np.where(active, high, 0)
        for level in self._levels:
            if not (low < high).any():
                break
            nodes = level.summary()
            last = max(level.length - 1, 0)
            take_low = ((low & 1) == 1) & (low < high)
            from_left = from_left.merged(nodes.take(np.minimum(low, last)), take_low)
            low = low + take_low
            take_high = ((high & 1) == 1) & (low < high)
            high = high - take_high
            from_right = (
                nodes.take(np.minimum(high, last)).merged(from_right).select(take_high, from_right)
            )
            low >>= 1
            high >>= 1
        return from_left.merged(from_right)


def _raw(values: FloatArray, starts: IntArray, stops: IntArray) -> _Summary:
    """Summaries of short ranges read straight from the values (one gather for all)."""
    lengths = stops - starts
    width = int(lengths.max()) if lengths.size else 0
    if width <= 0:
        return _Summary.empty(starts.size)
    columns = np.arange(width, dtype=np.int64)
    valid = columns[None, :] < lengths[:, None]
    index = np.minimum(starts[:, None] + columns[None, :], max(len(values) - 1, 0))
    return _Summary.of_rows(values[index], starts, valid)
