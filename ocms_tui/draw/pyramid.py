"""A min/max/first/last pyramid over a growing series: M4 for any range in O(columns x log n).

Pure numpy, no Textual. M4 (see `downsample`) keeps, per pixel column, the first, last,
minimum and maximum finite point. Done directly, that is a pass over every point in view:
at 1,000,000 rows, most of a redraw. The pyramid is a segment tree over aligned blocks of
the series (BLOCK values per leaf): each node keeps the index of the minimum, the maximum,
the first and the last finite value of its rows, and the values themselves are read from
the series. Any index range is then at most two partial leaves (read raw, fewer than
2 BLOCK values) and about 2 log2(n / BLOCK) whole nodes.

A query answers every column at once with a fixed number of numpy calls, whatever the
series' length: the tree is one array in heap layout (node 1 the root, node i's children
2i and 2i + 1, leaf j at `capacity + j`), so the nodes that cover each column on every level
are computed by broadcasting over the levels, gathered in one take, and reduced together
with the raw rows. The per-level Python loop this replaces cost ~0.5 ms per series at 1M
rows, more than the whole M4 of a 1,000-row series.

It is extended, never rebuilt: `extend(values)` takes the series so far (the old values a
prefix of the new) and adds only the blocks completed since. Memory: 4 indices per node,
about 2 nodes per leaf: 32 bytes per BLOCK values (0.5 bytes per value at BLOCK = 64, while
indices fit 32 bits).

Ties go left, as numpy's argmin/argmax do, and non-finite values (gaps, inf) are never
chosen, so the points are exactly those of a brute-force M4 over the same columns.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BLOCK = 64  # values per leaf; partial leaves are read raw (< 2 BLOCK values per column)
# A node's four indices; -1 in all four: no finite value (node 0 stays so: the query's filler).
_MIN, _MAX, _FIRST, _LAST = range(4)
_NONE = np.iinfo(np.int64).max  # "no finite value" as a first index, while reducing
# Up to this many new leaves, `extend` merges their parents in Python (see `_merge_few`).
FEW_NEW_LEAVES = 32


class MinMaxPyramid:
    """Block summaries of a series that only grows; see the module docstring."""

    def __init__(self, block: int = BLOCK) -> None:
        self.block = block
        self.length = 0  # values covered by whole blocks
        self._leaves = 0
        self._capacity = 1  # leaves the heap has room for: a power of two
        self._nodes = np.full((2, 4), -1, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        """Bytes of the nodes in use (the heap's unused room is never written, so it is not
        resident either)."""
        used, count = 0, self._leaves
        while count > 1:
            used += count
            count = -(-count // 2)
        return (used + 1) * self._nodes.itemsize * 4

    def extend(self, values: FloatArray) -> None:
        """Take in the whole blocks of `values` not yet summarised (`values` starts with
        every value seen before)."""
        block = self.block
        whole = len(values) // block * block
        if whole <= self.length:
            return
        changed, leaves = self._leaves, whole // block
        self._reserve(leaves)
        nodes, capacity = self._nodes, self._capacity
        offsets = np.arange(self.length, whole, block, dtype=np.int64)
        nodes[capacity + changed : capacity + leaves] = _leaf_rows(
            values[self.length : whole].reshape(-1, block), offsets
        )
        self.length, self._leaves = whole, leaves
        # Each level above merges pairs of the one below; only parents of a new child change.
        first, count = capacity + changed, leaves
        level = capacity
        if leaves - changed <= FEW_NEW_LEAVES:
            self._merge_few(values, first, count, level)
            return
        while level > 1:
            parents = -(-count // 2)
            parent_level = level // 2
            low = parent_level + (first - level) // 2
            high = parent_level + parents
            left = 2 * np.arange(low, high)
            right = left + 1
            # A parent without a right child merges with node 0, the empty one.
            right[right >= level + count] = 0
            nodes[low:high] = _merged(values, nodes[left], nodes[right])
            first, count, level = low, parents, parent_level

    def _merge_few(self, values: FloatArray, first: int, count: int, level: int) -> None:
        """The parents of a few new leaves, merged pair by pair in Python: a followed run
        adds a handful of leaves per read, where the dozen numpy calls per level of the
        vectorised merge cost about 10x more than the few merges themselves."""
        nodes = self._nodes
        while level > 1:
            parent_level = level // 2
            low = parent_level + (first - level) // 2
            high = parent_level + -(-count // 2)
            children = nodes[2 * low : 2 * high].tolist()
            if 2 * high > level + count:  # the last parent has no right child
                children[-1] = [-1, -1, -1, -1]
            nodes[low:high] = [
                _merged_pair(values, left, right)
                for left, right in zip(children[::2], children[1::2], strict=True)
            ]
            first, count, level = low, -(-count // 2), parent_level

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
        first_leaf = np.minimum(-(-starts // block), self._leaves)
        end_leaf = np.minimum(stops // block, self._leaves)
        inner = first_leaf < end_leaf
        # Raw heads (up to the first whole leaf, or the whole range when it holds none) and
        # tails (from the last whole leaf on), in one gather.
        raw = _raw_rows(
            values,
            np.concatenate((starts, np.where(inner, end_leaf * block, stops))),
            np.concatenate((np.where(inner, first_leaf * block, stops), stops)),
        )
        head, tail = raw[: starts.size], raw[starts.size :]
        # Candidates in the order of their rows (head, nodes left to right, tail): argmin
        # and argmax take the first of equal values, so ties go left.
        candidates = np.concatenate(
            (head[:, None], self._cover(first_leaf, end_leaf, inner), tail[:, None]), axis=1
        )
        at_min, at_max = candidates[:, :, _MIN], candidates[:, :, _MAX]
        rows = np.arange(starts.size)
        lows = np.where(at_min >= 0, values[at_min], np.inf)
        highs = np.where(at_max >= 0, values[at_max], -np.inf)
        at_first = candidates[:, :, _FIRST]
        chosen = np.concatenate(
            (
                at_min[rows, np.argmin(lows, axis=1)],
                at_max[rows, np.argmax(highs, axis=1)],
                np.where(at_first >= 0, at_first, _NONE).min(axis=1),
                candidates[:, :, _LAST].max(axis=1),
            )
        )
        # A range without a finite value chose -1 (or _NONE) four times.
        return sorted_unique(chosen[(chosen >= 0) & (chosen != _NONE)])

    def _cover(self, low: IntArray, high: IntArray, active: npt.NDArray[np.bool_]) -> np.ndarray:
        """The rows of the nodes that cover leaves [low, high) of each range, one
        (ranges, 2 x levels, 4) array: those taken from the left (lowest level first), then
        from the right (highest first); node 0 (empty) where a level takes none. This is the
        bottom-up walk of a segment tree (take the odd end nodes, halve both ends) done for
        every level at once: on level k the ends are ceil(low / 2**k) and high // 2**k, and
        a range of s leaves takes nodes on its lowest s.bit_length() levels only."""
        if not active.any():
            return self._nodes[np.zeros((low.size, 0), dtype=np.int64)]
        low = np.where(active, low, 0)[:, None]
        high = np.where(active, high, 0)[:, None]
        # Level k takes nodes only while 2**k <= high - low.
        shifts = np.arange(int((high - low).max()).bit_length(), dtype=np.int64)
        ends_low = (low + (1 << shifts) - 1) >> shifts
        ends_high = high >> shifts
        within = ends_low < ends_high
        level = self._capacity >> shifts
        from_left = np.where(within & ((ends_low & 1) == 1), level + ends_low, 0)
        from_right = np.where(within & ((ends_high & 1) == 1), level + ends_high - 1, 0)
        return self._nodes[np.concatenate((from_left, from_right[:, ::-1]), axis=1)]

    def _reserve(self, leaves: int) -> None:
        """Room for `leaves` leaves: a heap twice as wide, each level moved to its new place
        (its root level computed again by `extend`)."""
        if leaves <= self._capacity:
            return
        capacity = self._capacity
        while capacity < leaves:
            capacity *= 2
        dtype = np.int32 if capacity * self.block <= np.iinfo(np.int32).max else np.int64
        # np.empty: the room not yet used is never written, so it takes no resident memory.
        nodes = np.empty((2 * capacity, 4), dtype=dtype)
        nodes[0] = -1
        old, old_level, new_level, count = self._nodes, self._capacity, capacity, self._leaves
        while count and old_level >= 1:
            nodes[new_level : new_level + count] = old[old_level : old_level + count]
            old_level, new_level, count = old_level // 2, new_level // 2, -(-count // 2)
        self._nodes, self._capacity = nodes, capacity


def sorted_unique(index: IntArray) -> IntArray:
    """np.unique of a few hundred indices, without its hashing: 3 µs instead of 25."""
    index = np.sort(index)
    if index.size < 2:
        return index
    keep = np.empty(index.size, dtype=bool)
    keep[0] = True
    np.not_equal(index[1:], index[:-1], out=keep[1:])
    return index[keep]


def _leaf_rows(
    values: FloatArray, offsets: IntArray, inside: npt.NDArray[np.bool_] | None = None
) -> IntArray:
    """Node rows of the rows of a 2-d gather: `values[i, j]` is the value at index
    `offsets[i] + j`, counted only where `inside[i, j]` (all when None) and finite."""
    counted = np.isfinite(values)
    if inside is not None:
        counted &= inside
    any_counted = counted.any(axis=1)
    width = values.shape[1]
    columns = (
        np.argmin(np.where(counted, values, np.inf), axis=1),
        np.argmax(np.where(counted, values, -np.inf), axis=1),
        np.argmax(counted, axis=1),
        width - 1 - np.argmax(counted[:, ::-1], axis=1),
    )
    return np.stack([np.where(any_counted, offsets + column, -1) for column in columns], axis=1)


def _merged(values: FloatArray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Node rows of `left` followed by `right` (ties to `left`; -1 rows are empty)."""
    merged = left.copy()
    take_min = (right[:, _MIN] >= 0) & (
        (left[:, _MIN] < 0) | (values[right[:, _MIN]] < values[left[:, _MIN]])
    )
    take_max = (right[:, _MAX] >= 0) & (
        (left[:, _MAX] < 0) | (values[right[:, _MAX]] > values[left[:, _MAX]])
    )
    merged[take_min, _MIN] = right[take_min, _MIN]
    merged[take_max, _MAX] = right[take_max, _MAX]
    no_first = left[:, _FIRST] < 0
    merged[no_first, _FIRST] = right[no_first, _FIRST]
    has_last = right[:, _LAST] >= 0
    merged[has_last, _LAST] = right[has_last, _LAST]
    return merged


def _merged_pair(values: FloatArray, left: list[int], right: list[int]) -> list[int]:
    """`_merged` of one pair of node rows, as lists."""
    low, high, first, last = left
    if right[_MIN] >= 0 and (low < 0 or values[right[_MIN]] < values[low]):
        low = right[_MIN]
    if right[_MAX] >= 0 and (high < 0 or values[right[_MAX]] > values[high]):
        high = right[_MAX]
    if first < 0:
        first = right[_FIRST]
    if right[_LAST] >= 0:
        last = right[_LAST]
    return [low, high, first, last]


def _raw_rows(values: FloatArray, starts: IntArray, stops: IntArray) -> IntArray:
    """Node rows of short ranges, read straight from the values (one gather for all)."""
    lengths = stops - starts
    width = int(lengths.max()) if lengths.size else 0
    if width <= 0:
        return np.full((starts.size, 4), -1, dtype=np.int64)
    columns = np.arange(width, dtype=np.int64)
    inside = columns < lengths[:, None]
    # mode="clip": the padding past a range's end may run past the series' end.
    gathered = values.take(starts[:, None] + columns, mode="clip")
    return _leaf_rows(gathered, starts, inside)
