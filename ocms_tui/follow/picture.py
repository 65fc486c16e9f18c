"""Picture checks: what the format allows but a person looking at the charts sees is wrong.

- `mixed-scale`: series of one chart whose typical sizes differ so much that the small ones
  are flat lines at zero under the big one (a learning rate beside a loss).
- `epoch-index-step`: steps that go back to the same value again and again, each pass about
  as long as the others: a per-epoch batch index used as the step.
- `not-a-fraction`: a series named like an accuracy with values above 1.
- `counter-metric`: a series that is the step itself, or named `iter`, `step`,
  `global_step` and counting like one: a straight line that tells nothing.

Plain numpy, no Textual. A `PictureTally` per chart is fed each block of rows as it is read
(`--check` keeps no series in memory) and keeps only a bounded, evenly strided sample of the
rows, the exact maximum of the accuracy-like series and where the steps went back; the
checks read the tally. Cost: a strided slice per block, so a 1,000,000-row chart adds about
what reading one block costs, and a live run's row a few slices.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ocms_tui.format.problems import Problem, Rule

# -- thresholds (each says why it is where it is) --------------------------------------------

# Two series 1,000x apart on one linear axis: the smaller spans at most 1/1000 of the
# height, under a pixel of a terminal chart and a few pixels of a web one: a flat line at
# zero. A learning rate (1e-4) beside a loss (2) is 20,000x; a learning rate of 1e-4 beside
# one of 1e-6 (two parameter groups) is 100x and still readable.
MIXED_SCALE_RATIO = 1000.0
# A typical size needs a few values: one or two rows are not yet a curve.
MIN_SCALE_VALUES = 3
# The sample a chart keeps: at most this many values over all its series (and at least
# MIN_SAMPLE_ROWS rows); a median of thousands of evenly spread values is a robust
# "typical size" for every curve shape a training logs, at a fixed cost.
SAMPLE_VALUES = 65_536
MIN_SAMPLE_ROWS = 256
MAX_SAMPLE_ROWS = 8_192
# A per-epoch index restarts once per epoch: three restarts (four passes) to the same step
# are "again and again"; a resumed run goes back once or twice, and to different steps.
MIN_EPOCH_RESTARTS = 3
# Nearly every restart goes to the same step (a first epoch logged from 1 is allowed).
EPOCH_SAME_START_SHARE = 0.9
# Complete passes of one epoch index are about as long as each other (the last may be cut
# short): at most this ratio between the longest and the shortest.
EPOCH_PASS_SPREAD = 2.0
MAX_RESTARTS_KEPT = 10_000
# A fraction is at most 1; an accuracy of 108 is wrong as a fraction and as a percentage.
FRACTION_TOP = 1.0
PERCENT_TOP = 100.0
# A counter equal to the step (plus a constant) on at least this many distinct steps: fewer
# rows prove nothing (an epoch counter of a run with one step per epoch is left alone).
MIN_COUNTER_VALUES = 10

_PREFIX = r"(?:(?:train|training|val|valid|eval|test|trainer)[_/.-])?"
# Names of the step counter itself.
COUNTER_NAME = re.compile(
    _PREFIX + r"(?:global[_-]?)?(?:step|steps|iter|iters|iteration|iterations)", re.IGNORECASE
)
# Names of a fraction: accuracy, acc, top1, top5_acc, eval_accuracy, val-acc, accuracy_top1.
FRACTION_NAME = re.compile(r"(?:^|[_/.-])(?:acc|accuracy|top\d+(?:[_-]?acc)?)(?:$|[_/.-])", re.I)
# An epoch counter equals the step when each epoch is one step: not a wrong picture.
EPOCH_NAME = re.compile(r"epoch", re.IGNORECASE)


class PictureTally:
    """What the picture checks need of one chart, kept up to date block by block."""

    def __init__(self, y_axis: Sequence[str]) -> None:
        self.y_axis = tuple(y_axis)
        width = max(1, len(self.y_axis))
        self.capacity = min(MAX_SAMPLE_ROWS, max(MIN_SAMPLE_ROWS, SAMPLE_VALUES // width))
        self.rows = 0
        self.stride = 1
        self._steps: list[np.ndarray] = []
        self._values: list[np.ndarray] = []  # blocks of (rows, series)
        self._sampled = 0
        self.fraction_series = tuple(
            index for index, name in enumerate(self.y_axis) if FRACTION_NAME.search(name)
        )
        self.maximum: dict[int, float] = {}
        self.first_above: dict[int, int] = {}  # series -> first step with a value above 1
        self.restart_rows: list[int] = []  # rows where the steps went back ...
        self.restart_steps: list[int] = []  # ... and the step they went back to
        self.restarts = 0
        self.first_step: int | None = None
        self.sample_version = 0  # moves when the sample does (rarely, once it is strided)
        self._sampled_problems: tuple[int, str, list[Problem]] | None = None

    def add(self, steps: np.ndarray, columns: Sequence[np.ndarray], back: np.ndarray) -> None:
        """One block of rows: its steps, one value array per series (NaN: a gap), and the
        positions in it where the steps went back (`step_regressions`)."""
        count = len(steps)
        if not count:
            return
        if self.first_step is None:
            self.first_step = int(steps[0])
        self._sample(steps, columns, count)
        for index in self.fraction_series:
            self._track_fraction(index, steps, columns[index])
        if back.size:
            self.restarts += int(back.size)
            room = MAX_RESTARTS_KEPT - len(self.restart_rows)
            if room > 0:
                kept = back[:room]
                self.restart_rows.extend((kept + self.rows).tolist())
                self.restart_steps.extend(steps[kept].tolist())
        self.rows += count

    def _sample(self, steps: np.ndarray, columns: Sequence[np.ndarray], count: int) -> None:
        while (self.rows + count) // self.stride > self.capacity:
            self._thin()
        start = (-self.rows) % self.stride
        if start >= count:
            return
        taken = slice(start, None, self.stride)
        self._steps.append(steps[taken].copy())
        if columns:
            self._values.append(np.column_stack([column[taken] for column in columns]))
        else:
            self._values.append(np.empty((len(self._steps[-1]), 0)))
        self._sampled += len(self._steps[-1])
        self.sample_version += 1

    def _thin(self) -> None:
        """Double the stride: keep every other sampled row (those at multiples of it)."""
        steps, values = self.sample()
        self.stride *= 2
        self._steps, self._values = [steps[::2]], [values[::2]]
        self._sampled = len(self._steps[0])
        self.sample_version += 1

    def _track_fraction(self, index: int, steps: np.ndarray, values: np.ndarray) -> None:
        top = float(np.fmax.reduce(values)) if len(values) else float("nan")
        if top != top:  # only gaps
            return
        self.maximum[index] = max(self.maximum.get(index, top), top)
        if index not in self.first_above and top > FRACTION_TOP:
            above = np.isfinite(values) & (values > FRACTION_TOP)
            if above.any():
                self.first_above[index] = int(steps[int(above.argmax())])

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values of shape (rows, series)) of the rows sampled so far."""
        if len(self._steps) > 1:
            self._steps = [np.concatenate(self._steps)]
            self._values = [np.concatenate(self._values)]
        if not self._steps:
            return np.zeros(0, dtype=np.int64), np.zeros((0, len(self.y_axis)))
        return self._steps[0], self._values[0]


def typical_size(values: np.ndarray) -> float | None:
    """The median of |value| over finite, non-zero values: a loss falling from 10 to 0.01
    has one typical size, and a few spikes or zeros do not move it. None: fewer than
    MIN_SCALE_VALUES such values."""
    sizes = np.abs(values[np.isfinite(values) & (values != 0)])
    return float(np.median(sizes)) if sizes.size >= MIN_SCALE_VALUES else None


def _number(value: float) -> str:
    return f"{value:.3g}"


def mixed_scale(chart: str, path: str, tally: PictureTally) -> list[Problem]:
    _, values = tally.sample()
    sizes = {
        name: size
        for index, name in enumerate(tally.y_axis)
        if (size := typical_size(values[:, index])) is not None
    }
    if len(sizes) < 2:
        return []
    largest = max(sizes, key=sizes.__getitem__)
    top = sizes[largest]
    problems = []
    for name, size in sizes.items():
        if top / size > MIXED_SCALE_RATIO:
            problems.append(
                Problem(
                    Rule.MIXED_SCALE,
                    path,
                    f"chart {chart!r}: {name!r} (typically {_number(size)}) is "
                    f"{top / size:,.0f}x smaller than {largest!r} (typically {_number(top)}): "
                    f"Octopus draws {name!r} as a flat line at zero; give it a chart of its own",
                    chart=chart,
                    series=name,
                )
            )
    return problems


def epoch_index(chart: str, path: str, tally: PictureTally) -> list[Problem]:
    if tally.restarts < MIN_EPOCH_RESTARTS:
        return []
    start, times = Counter(tally.restart_steps).most_common(1)[0]
    if times < EPOCH_SAME_START_SHARE * len(tally.restart_steps):
        return []
    bounds = [0, *tally.restart_rows]
    lengths = [later - earlier for earlier, later in itertools.pairwise(bounds)]  # complete
    if min(lengths) <= 0 or max(lengths) > EPOCH_PASS_SPREAD * min(lengths):
        return []
    typical = int(np.median(lengths))
    return [
        Problem(
            Rule.EPOCH_INDEX_STEP,
            path,
            f"chart {chart!r}: the step goes back to {start} {tally.restarts:,} time(s), every "
            f"~{typical:,} rows: it looks like an index within each epoch (or several runs "
            "were written into one directory), and Octopus draws every pass over the last; "
            "log a global step (e.g. epoch * steps_per_epoch + index)",
            chart=chart,
            step=start,
        )
    ]


def not_a_fraction(chart: str, path: str, tally: PictureTally) -> list[Problem]:
    problems = []
    for index, top in tally.maximum.items():
        if not top > FRACTION_TOP:
            continue
        name = tally.y_axis[index]
        hint = (
            "as a percentage it cannot pass 100"
            if top > PERCENT_TOP
            else "if it is a percentage, log it / 100 (Octopus draws it as written)"
        )
        problems.append(
            Problem(
                Rule.NOT_A_FRACTION,
                path,
                f"chart {chart!r}: {name!r} reaches {_number(top)}, but an accuracy is a "
                f"fraction (at most {FRACTION_TOP:g}); {hint}",
                chart=chart,
                series=name,
                step=tally.first_above.get(index),
            )
        )
    return problems


def counter_metric(chart: str, path: str, tally: PictureTally) -> list[Problem]:
    steps, values = tally.sample()
    problems = []
    for index, name in enumerate(tally.y_axis):
        column = values[:, index]
        if COUNTER_NAME.fullmatch(name) and _counts(column):
            why = "is named like the step counter and counts like it"
        elif not EPOCH_NAME.search(name) and _follows_step(steps, column):
            why = "is the step itself (it rises by exactly one per step)"
        else:
            continue
        problems.append(
            Problem(
                Rule.COUNTER_METRIC,
                path,
                f"chart {chart!r}: {name!r} {why}: the x axis already is the step, so this "
                "is a straight line that tells nothing; leave it out of the metrics",
                chart=chart,
                series=name,
            )
        )
    return problems


def _counts(values: np.ndarray) -> bool:
    """Whole numbers that never go down: a counter. MMEngine's `timing/iter` (seconds per
    iteration, sanitized to `iter`) is named like one but is not."""
    present = values[np.isfinite(values)]
    return bool(
        present.size
        and np.all(present == np.floor(present))
        and np.all(present[1:] >= present[:-1])
    )


def _follows_step(steps: np.ndarray, values: np.ndarray) -> bool:
    present = np.isfinite(values)
    offsets = values[present] - steps[present]
    # The cheap test first: almost every series fails it at its first rows.
    if not offsets.size or not np.all(offsets == offsets[0]):
        return False
    return np.unique(steps[present]).size >= MIN_COUNTER_VALUES


PICTURE_RULES = frozenset(
    {Rule.MIXED_SCALE, Rule.EPOCH_INDEX_STEP, Rule.NOT_A_FRACTION, Rule.COUNTER_METRIC}
)
# Checks of the sample run again only when the sample changed: once a live run's chart is
# strided, most new rows are not sampled, and these are the costly checks (medians).
SAMPLED_CHECKS = (mixed_scale, counter_metric)
EXACT_CHECKS = (epoch_index, not_a_fraction)


def picture_problems(chart: str, path: str, tally: PictureTally) -> list[Problem]:
    """Every picture problem of one chart (`path`: its CSV)."""
    known = tally._sampled_problems
    if known is None or known[:2] != (tally.sample_version, chart):
        sampled = [problem for check in SAMPLED_CHECKS for problem in check(chart, path, tally)]
        tally._sampled_problems = known = (tally.sample_version, chart, sampled)
    exact = [problem for check in EXACT_CHECKS for problem in check(chart, path, tally)]
    return known[2] + exact
