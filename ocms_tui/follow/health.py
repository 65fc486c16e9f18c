"""Health of a curve: spikes and divergence, found as rows arrive (pure numpy, no UI).

Every threshold is here, named, with why it has that value (docs/health.md tells users).
`non-finite` is found where the rows are parsed (`format/parse.py`, which alone knows a gap
from a `nan`); `stalled` needs a clock, so the live model decides it (`stalled_for`).

One streaming state per series, `SeriesHealth`, fed chunks of rows: a whole file at once
for `--check`, a few rows per refresh while following. Both paths run the same code, so a
finding does not depend on how the rows arrived. Work per row is O(1): the statistics come
from fixed-size blocks (a block is summarised once, when it fills), and only rows already
outside the range reach Python loops.

Spike: the reference for a row is the median of the medians of the last `SPIKE_BLOCKS`
blocks of `SPIKE_BLOCK` finite values before it, and its scale the median of their robust
spreads (the distance between a block's 4th-lowest and 4th-highest value, as a standard
deviation: read off the sorted block, which also gives its median, its lowest and highest
value, so that a block wholly inside the range costs one sort and nothing more).
A row is outside when it is farther from that median than both `SPIKE_SIGMAS` robust
standard deviations and `SPIKE_RELATIVE` times the median's own size, and as far from the
last block's own median and spread (in a fast rise, a warm-up, the older blocks lag). At most
`SPIKE_MAX_ROWS` consecutive outside rows followed by a row back inside are a spike; a longer
excursion is a change of level (a new learning-rate phase, a loss term switched on), not a
spike, and the blocks then follow the new level.

Divergence (loss-like names only, see `format/direction.py`): the series is summarised as
levels, the medians of blocks of `LEVEL_BLOCK` finite values. It diverges when
`DIVERGENCE_BLOCKS` consecutive levels each rise above the one before and above its best
level so far by both `DIVERGENCE_RISE` x |best| and `DIVERGENCE_SIGMAS` standard deviations
of the recent noise (the median spread within the last `NOISE_BLOCKS` blocks). The step
reported is where that rise began: the first of the rising levels clear of the noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ocms_tui.format.direction import is_loss_like

# Spike. Blocks of 16 keep the median of a block steady under 30 % noise; 3 blocks (48
# rows) of memory let the reference follow a schedule (warm-up, cosine, step decay) and the
# fast fall of a short fine-tune's loss (a 200-row run is judged against its last quarter).
SPIKE_BLOCK = 16
SPIKE_BLOCKS = 3
# 10 standard deviations is rare for any noise but heavy-tailed noise, which the relative
# bound covers: a healthy gradient norm jumps to a few times its median, a broken step to
# tens of times.
SPIKE_SIGMAS = 10.0
SPIKE_RELATIVE = 9.0  # beyond 10x the median (for a positive series)
SPIKE_MAX_ROWS = 3
# Below this distance nothing is outside: values this small are rounding, not training.
SPIKE_FLOOR = 1e-300

# Divergence. Blocks of 8 levels let a 100-row run of a short fine-tune be judged; 3 rising
# levels in a row (24 rows) are more than a noisy plateau produces.
LEVEL_BLOCK = 8
DIVERGENCE_BLOCKS = 3
DIVERGENCE_RISE = 0.5
# And by more than this many standard deviations of the noise within recent blocks (the
# median spread of the last NOISE_BLOCKS blocks): the best level of a long flat noisy loss is
# itself an outlier low, and its ordinary levels must not count as a rise from it.
DIVERGENCE_SIGMAS = 3.5
NOISE_BLOCKS = 16
# The rise began at the first of the rising levels above best + this many sigmas.
ONSET_SIGMAS = 2.0
# How many recent levels are kept to find where a rise began.
_LEVEL_MEMORY = 64

# Of a chunk of rows whose steps go back many times, the passes judged (the latest ones).
MAX_JUDGED_PASSES = 8

# Stalled: a live run silent for this many of its usual intervals between writes, and at
# least this long (a run that logs every second is not stalled after ten seconds of eval).
STALL_INTERVALS = 10.0
STALL_MIN_SECONDS = 120.0


@dataclass(frozen=True)
class Finding:
    """A health finding of one series: `rule` is a `Rule` value ("spike", "divergence")."""

    rule: str
    step: int
    value: float
    message: str


def _middle(values: np.ndarray) -> np.ndarray:
    """The element at position n // 2 along the last axis after sorting: the median as one
    element (the upper one for even n), the same whether rows arrive one by one or at once."""
    n = values.shape[-1]
    if n <= 16:  # numpy sorts many short rows several times faster than it partitions them
        return np.sort(values, axis=-1)[..., n // 2]
    return np.partition(values, n // 2, axis=-1)[..., n // 2]


def _spread_scale(block: int) -> float:
    """What the distance between the k-th lowest and k-th highest of `block` normal values
    (k = block // 4) is on average, in standard deviations (Blom's approximation)."""
    rank = block // 4
    low = NormalDist().inv_cdf((rank + 1 - 0.375) / (block + 0.25))
    return -2.0 * low


def _medians_and_spreads(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `ordered` (each row sorted): its median, and a robust standard deviation
    from its inner quantiles, both read off the sorted row (no second pass over the rows)."""
    block = ordered.shape[1]
    rank = block // 4
    with np.errstate(over="ignore", invalid="ignore"):
        spreads = (ordered[:, block - 1 - rank] - ordered[:, rank]) / _spread_scale(block)
    return ordered[:, block // 2], spreads


def _trailing_middle(history: np.ndarray, count: int, width: int) -> np.ndarray:
    """out[j] = the middle of the `width` entries of `history` before entry
    len(history) - count + 1 + j (fewer at the very start; NaN with none), j < count."""
    first = len(history) - count + 1
    out = np.full(count, math.nan)
    full = max(0, min(count, width - first))  # the first few see fewer than `width` entries
    for j in range(full):
        end = first + j
        if end > 0:
            out[j] = _middle(history[max(0, end - width) : end])
    if count > full:
        out[full:] = _middle(sliding_window_view(history[first + full - width :], width))
    return out


def _reference(
    medians: np.ndarray, spreads: np.ndarray, blocks: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each of the last `blocks` blocks: the median of the `width` block medians before
    it, and how far from it a row may lie (see the module's docstring)."""
    center = _trailing_middle(medians, blocks, width)
    spread = _trailing_middle(spreads, blocks, width)
    with np.errstate(over="ignore", invalid="ignore"):
        limit = np.maximum(
            np.maximum(SPIKE_SIGMAS * spread, SPIKE_FLOOR), SPIKE_RELATIVE * np.abs(center)
        )
    return center, limit


def _fmt(value: float) -> str:
    return f"{value:.4g}"


class SeriesHealth:
    """Streaming spike and divergence detection for one series."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loss_like = is_loss_like(name)
        self.findings: list[Finding] = []
        self._last_step: int | None = None
        self._new_pass()

    def _new_pass(self) -> None:
        """Forget the statistics: a run that starts its steps again (a re-run into the same
        directory, a resume that logs steps again) is judged afresh, never against the
        pass before it. The findings stay."""
        # Spike state.
        self._block_values = np.zeros(0)  # finite values of the block being filled
        self._medians = np.zeros(0)  # of the last SPIKE_BLOCKS complete blocks
        self._spreads = np.zeros(0)
        # Rows outside the range, not yet resolved: (step, value, the median they left).
        self._excursion: list[tuple[int, float, float]] = []
        self._level_change = False  # the open excursion is too long to be a spike
        # Divergence state.
        self._level_values = np.zeros(0)
        self._level_steps = np.zeros(0, dtype=np.int64)
        self._levels = np.zeros(0)  # recent levels and the first step of each block
        self._level_spreads = np.zeros(0)
        self._level_starts = np.zeros(0, dtype=np.int64)
        self._best = math.inf
        self._rising = 0  # consecutive levels that rose past the threshold
        self._diverged = False

    def pending(self) -> list[Finding]:
        """Findings that the rows so far suggest but the next row could still undo: an
        excursion the run ends in (or that the next rows may show to be a new level)."""
        return [self._spike(self._excursion)] if self._excursion else []

    def feed(self, steps: np.ndarray, values: np.ndarray) -> list[Finding]:
        """Take the next rows (steps as int64, values with NaN for gaps); return the findings
        they confirm (also appended to `self.findings`)."""
        if not len(steps):
            return []
        back = np.flatnonzero(steps[1:] < steps[:-1]) + 1
        if self._last_step is not None and steps[0] < self._last_step:
            back = np.concatenate(([0], back))
        self._last_step = int(steps[-1])
        if not len(back):
            return self._feed_pass(steps, values)
        found: list[Finding] = []
        if back[0] > 0 and len(back) <= MAX_JUDGED_PASSES:
            found.extend(self._feed_pass(steps[: back[0]], values[: back[0]]))
        # A file whose steps go back on every other row would cost a pass per row: only
        # the latest passes of a chunk are judged (as only the latest are drawn).
        back = back[-MAX_JUDGED_PASSES:]
        for start, stop in zip(back, [*back[1:], len(steps)], strict=True):
            self._new_pass()
            found.extend(self._feed_pass(steps[start:stop], values[start:stop]))
        return found

    def _feed_pass(self, steps: np.ndarray, values: np.ndarray) -> list[Finding]:
        finite = np.isfinite(values)
        if not finite.all():
            steps, values = steps[finite], values[finite]
        if not len(values):
            return []
        values = values.astype(np.float64, copy=False)
        steps = steps.astype(np.int64, copy=False)
        if self._diverged:  # a diverging series leaves its range every few rows: no spikes
            return []
        diverging, rows = self._feed_levels(steps, values) if self.loss_like else ([], None)
        found = self._feed_spikes(steps[:rows], values[:rows])
        self.findings.extend(found)
        for divergence in diverging:
            # Rows that left the range once the rise had begun belong to the divergence.
            kept = [f for f in self.findings if f.rule != "spike" or f.step < divergence.step]
            self.findings = [*kept, divergence]
            self._excursion = []
        return found + diverging

    # Spikes

    def _feed_spikes(self, steps: np.ndarray, values: np.ndarray) -> list[Finding]:
        carried = len(self._block_values)
        joined = np.concatenate((self._block_values, values))
        complete = len(joined) // SPIKE_BLOCK * SPIKE_BLOCK
        ordered = np.sort(joined[:complete].reshape(-1, SPIKE_BLOCK), axis=1)
        new_medians, new_spreads = _medians_and_spreads(ordered)
        medians = np.concatenate((self._medians, new_medians))
        spreads = np.concatenate((self._spreads, new_spreads))
        # Every joined value belongs to block b (0 = the one being filled before this call);
        # its reference is made of the SPIKE_BLOCKS blocks before b.
        blocks_here = complete // SPIKE_BLOCK + 1
        center, limit = _reference(medians, spreads, blocks_here, SPIKE_BLOCKS)
        # And the block just before alone: in a fast rise (a warm-up) the older blocks lag
        # behind, and a row is outside only when the latest level says so too.
        latest, latest_limit = _reference(medians, spreads, blocks_here, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            # A whole block lies inside when its lowest and highest values do: only the
            # others (and the block still filling) are looked at row by row. NaN: no
            # reference yet, nothing is outside.
            full = slice(0, len(ordered))
            low, high = ordered[:, 0], ordered[:, -1]
            looked_at = np.flatnonzero(
                ((center[full] - low > limit[full]) & (latest[full] - low > latest_limit[full]))
                | ((high - center[full] > limit[full]) & (high - latest[full] > latest_limit[full]))
            )
        rows = [np.arange(block * SPIKE_BLOCK, (block + 1) * SPIKE_BLOCK) for block in looked_at]
        rows.append(np.arange(complete, len(joined)))
        candidates = np.concatenate(rows)
        candidates = candidates[candidates >= carried]  # earlier rows were judged already
        block_of = candidates // SPIKE_BLOCK
        picked = joined[candidates]
        with np.errstate(over="ignore", invalid="ignore"):
            away = (np.abs(picked - center[block_of]) > limit[block_of]) & (
                np.abs(picked - latest[block_of]) > latest_limit[block_of]
            )
        outside = np.zeros(len(values), dtype=bool)
        outside[candidates[away] - carried] = True
        # A copy: a view of the last few values would keep all of `joined` alive (at 500
        # runs, 180 MB of rows already judged).
        self._block_values = joined[complete:].copy()
        self._medians = medians[-SPIKE_BLOCKS:].copy()
        self._spreads = spreads[-SPIKE_BLOCKS:].copy()
        return self._resolve_excursions(steps, values, center, carried, outside)

    def _resolve_excursions(
        self,
        steps: np.ndarray,
        values: np.ndarray,
        block_medians: np.ndarray,
        carried: int,
        outside: np.ndarray,
    ) -> list[Finding]:
        """Turn the rows outside into spikes. `block_medians[b]`: the reference of the rows
        of block b, counted from the `carried` rows of the block this call began in."""
        found: list[Finding] = []
        cursor = 0  # rows before it are accounted for
        for position in np.flatnonzero(outside).tolist():
            if position > cursor:  # a row back inside ends the open excursion
                found.extend(self._end_excursion())
            center = float(block_medians[(carried + position) // SPIKE_BLOCK])
            self._extend_excursion(int(steps[position]), float(values[position]), center)
            cursor = position + 1
        if cursor < len(values):
            found.extend(self._end_excursion())
        return found

    def _extend_excursion(self, step: int, value: float, center: float) -> None:
        if self._level_change:
            return
        self._excursion.append((step, value, center))
        if len(self._excursion) > SPIKE_MAX_ROWS:  # a new level, whatever follows
            self._excursion, self._level_change = [], True

    def _end_excursion(self) -> list[Finding]:
        excursion = self._excursion
        self._excursion, self._level_change = [], False
        return [self._spike(excursion)] if excursion else []

    def _spike(self, excursion: list[tuple[int, float, float]]) -> Finding:
        step, _, center = excursion[0]
        worst = max((value for _, value, _ in excursion), key=lambda value: abs(value - center))
        rows = f" ({len(excursion)} rows)" if len(excursion) > 1 else ""
        return Finding(
            "spike",
            step,
            worst,
            f"{self.name} spikes to {_fmt(worst)} at step {step}{rows}; "
            f"its recent median is {_fmt(center)}",
        )

    # Divergence

    def _feed_levels(
        self, steps: np.ndarray, values: np.ndarray
    ) -> tuple[list[Finding], int | None]:
        """The divergence these rows confirm, if any, and how many of the rows came before
        it was confirmed (None: all of them)."""
        carried = len(self._level_values)
        joined = np.concatenate((self._level_values, values))
        joined_steps = np.concatenate((self._level_steps, steps))
        complete = len(joined) // LEVEL_BLOCK * LEVEL_BLOCK
        self._level_values = joined[complete:].copy()  # not views: see _block_values
        self._level_steps = joined_steps[complete:].copy()
        if not complete:
            return [], None
        ordered = np.sort(joined[:complete].reshape(-1, LEVEL_BLOCK), axis=1)
        levels, spreads = _medians_and_spreads(ordered)
        starts = joined_steps[:complete:LEVEL_BLOCK]
        # The noise: the median spread within the last blocks before each level.
        spread_history = np.concatenate((self._level_spreads, spreads))
        noise = _trailing_middle(spread_history[:-1], len(levels), NOISE_BLOCKS)
        best = np.minimum.accumulate(np.concatenate(([self._best], levels)))[1:]
        previous = np.concatenate((self._levels[-1:], levels))[-len(levels) - 1 : -1]
        if not len(self._levels):
            previous = np.concatenate(([math.inf], levels[:-1]))
        with np.errstate(over="ignore", invalid="ignore"):
            threshold = best + np.maximum(DIVERGENCE_RISE * np.abs(best), DIVERGENCE_SIGMAS * noise)
            risen = (levels > threshold) & (levels > previous)
        history = np.concatenate((self._levels, levels))
        history_starts = np.concatenate((self._level_starts, starts))
        offset = len(self._levels)
        # Consecutive risen levels ending at each level (the count carries over calls).
        positions = np.arange(len(levels))
        last_not = np.maximum.accumulate(np.where(risen, -1, positions))
        run = np.where(last_not < 0, positions + 1 + self._rising, positions - last_not)
        found: list[Finding] = []
        rows: int | None = None
        rising = int(run[-1])
        if run.max() >= DIVERGENCE_BLOCKS:
            index = int(np.argmax(run >= DIVERGENCE_BLOCKS))
            found.append(
                self._divergence(
                    history,
                    history_starts,
                    offset + index,
                    float(best[index]),
                    float(best[index] + ONSET_SIGMAS * noise[index]),
                )
            )
            self._diverged = True
            rows = (index + 1) * LEVEL_BLOCK - carried
        self._rising = rising
        self._best = float(best[-1])
        self._levels = history[-_LEVEL_MEMORY:].copy()
        self._level_starts = history_starts[-_LEVEL_MEMORY:].copy()
        self._level_spreads = spread_history[-NOISE_BLOCKS:].copy()
        return found, rows

    def _divergence(
        self, levels: np.ndarray, starts: np.ndarray, last: int, best: float, floor: float
    ) -> Finding:
        # Walk back over the rising levels, clear of the noise, to where the rise began.
        first = last
        while first > 0 and levels[first - 1] < levels[first] and levels[first - 1] > floor:
            first -= 1
        step = int(starts[first])
        return Finding(
            "divergence",
            step,
            float(levels[last]),
            f"{self.name} rises from its best level {_fmt(best)} to {_fmt(float(levels[last]))}"
            f" since step {step}: a loss diverging?",
        )


def scan(name: str, steps: np.ndarray, values: np.ndarray) -> list[Finding]:
    """All findings of a whole series at once (confirmed and those the run ends in)."""
    health = SeriesHealth(name)
    health.feed(np.asarray(steps), np.asarray(values, dtype=np.float64))
    return health.findings + health.pending()


def stalled_for(intervals: list[float], silent_seconds: float) -> float | None:
    """The silence limit when `silent_seconds` without a row exceeds it, else None.
    `intervals`: recent seconds between writes (the usual pace of this run)."""
    if len(intervals) < 3:
        return None
    usual = sorted(intervals)[len(intervals) // 2]
    limit = max(STALL_INTERVALS * usual, STALL_MIN_SECONDS)
    return limit if silent_seconds > limit else None
