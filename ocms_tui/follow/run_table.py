"""A sweep as a table: one row per run, its numbers per series, ranked by one series.

Pure Python, no Textual. `ocms-tui runs DIR` prints it (run_table_output); the dashboard
ranks its run list with `latest_value` and format.ranking, and draws a group of seeds as
its `band`.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from ocms_tui.follow.model import ChartData, RunModel
from ocms_tui.follow.runs import run_status
from ocms_tui.format.problems import Problem, Rule
from ocms_tui.format.ranking import (
    SERIES_SEPARATOR,
    SortKey,
    default_sort_series,
    direction,
    group_runs,
    rank_order,
)


class NamedSeries(Protocol):
    """A chart as `find_series` needs it: a `ChartData` or its frame."""

    @property
    def name(self) -> str: ...

    @property
    def y_axis(self) -> tuple[str, ...]: ...


ChartT = TypeVar("ChartT", bound=NamedSeries)


def find_series(charts: Iterable[ChartT], series: str) -> tuple[ChartT, int] | None:
    """The chart and position of `series`: `chart/name` exactly, else the first chart (in
    metrics.json's order) with a series of that name."""
    charts = tuple(charts)
    chart_name, _, name = series.rpartition(SERIES_SEPARATOR)
    for chart in charts:
        if (not chart_name or chart.name == chart_name) and name in chart.y_axis:
            return chart, chart.y_axis.index(name)
    return None


def latest_value(model: RunModel, series: str) -> float | None:
    """The latest value of `series` in a run (None: the run has no such series, or no value
    of it yet). Cheap: from the running stats, no pass over the rows."""
    found = find_series(model.charts, series)
    if found is None:
        return None
    chart, index = found
    return chart.stats(index).latest


# -- seeds as one line --------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """Several runs' series on the steps they share: the mean and the min-max band."""

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def band(series: Sequence[tuple[np.ndarray, np.ndarray]]) -> Band | None:
    """Mean and min-max across `(steps, values)` of several runs, at the steps of the
    longest run, each run's value carried forward from its last step at or before (a gap,
    NaN, is not a value: each run counts where it has one). None with no values at all."""
    present = [(steps, values) for steps, values in series if len(steps) and len(values)]
    if not present:
        return None
    grid = max((steps for steps, _ in present), key=len)
    stacked = np.full((len(present), len(grid)), np.nan)
    for row, (steps, values) in enumerate(present):
        rows = min(len(steps), len(values))
        steps, values = steps[:rows], values[:rows]
        keep = ~np.isnan(values)
        steps, values = steps[keep], values[keep]
        if not len(steps):
            continue
        order = np.argsort(steps, kind="stable")
        steps, values = steps[order], values[order]
        at = np.searchsorted(steps, grid, side="right") - 1
        # Nothing before the run's first step, and nothing after its last: a shorter seed
        # leaves the band, it does not hold its last value for ever.
        inside = (at >= 0) & (grid <= steps[-1])
        stacked[row, inside] = values[at[inside]]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # A step where no run has a value warns (an all-NaN slice): that is a gap, not news.
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(stacked, axis=0)
        low = np.nanmin(stacked, axis=0)
        high = np.nanmax(stacked, axis=0)
    return Band(np.asarray(grid), mean, low, high)


# -- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesSummary:
    """One series of one run, over its latest pass (the numbers a restart starts again)."""

    chart: str
    name: str
    latest: float | None
    latest_step: int | None
    minimum: float | None
    maximum: float | None
    higher_is_better: bool | None
    best: float | None  # the lowest (or highest) value; None when the name says no way
    best_step: int | None

    def as_dict(self) -> dict[str, object]:
        return {
            "chart": self.chart,
            "name": self.name,
            "latest": json_number(self.latest),
            "latest_step": self.latest_step,
            "min": json_number(self.minimum),
            "max": json_number(self.maximum),
            "better": _better_word(self.higher_is_better),
            "best": json_number(self.best),
            "best_step": self.best_step,
        }


@dataclass(frozen=True)
class RunSummary:
    name: str  # untrusted (a path)
    directory: str  # untrusted
    status: str
    rows: int
    last_step: int | None
    series: tuple[SeriesSummary, ...]
    problems: tuple[Problem, ...]

    def find(self, series: str) -> SeriesSummary | None:
        chart_name, _, name = series.rpartition(SERIES_SEPARATOR)
        return next(
            (s for s in self.series if s.name == name and chart_name in ("", s.chart)), None
        )

    @property
    def errors(self) -> int:
        return sum(problem.is_error for problem in self.problems)


def json_number(value: float | None) -> float | str | None:
    """A number as strict JSON holds it: inf and nan (not JSON numbers) as strings."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _better_word(higher: bool | None) -> str | None:
    return None if higher is None else ("higher" if higher else "lower")


def _best(chart: ChartData, index: int, higher: bool | None) -> tuple[float | None, int | None]:
    """The best value of the chart's latest pass and its first step."""
    if higher is None:
        return None, None
    store = chart.drawn()
    steps, values = store.steps(), store.values(index)
    rows = min(len(steps), len(values))
    start = store.restarts[-1] if store.restarts and store.restarts[-1] < rows else 0
    values = values[start:rows]
    finite = np.isfinite(values)
    if not finite.any():
        return None, None
    candidates = np.where(finite, values, -np.inf if higher else np.inf)
    at = int(candidates.argmax() if higher else candidates.argmin())
    return float(values[at]), int(steps[start + at])


def summarize_run(name: str, model: RunModel, now: float | None = None) -> RunSummary:
    """The table row of a loaded run."""
    series = []
    for chart in model.charts:
        for index, series_name in enumerate(chart.y_axis):
            stats = chart.stats(index)
            higher = direction(series_name)
            best, best_step = _best(chart, index, higher)
            series.append(
                SeriesSummary(
                    chart=chart.name,
                    name=series_name,
                    latest=stats.latest,
                    latest_step=stats.latest_step,
                    minimum=stats.minimum,
                    maximum=stats.maximum,
                    higher_is_better=higher,
                    best=best,
                    best_step=best_step,
                )
            )
    steps = [chart.last_step for chart in model.charts if chart.last_step is not None]
    return RunSummary(
        name=name,
        directory=str(model.directory),
        status=run_status(model, now).value,
        rows=model.total_rows,
        last_step=max(steps, default=None),
        series=tuple(series),
        problems=model.problems,
    )


def load_run(directory: Path, name: str, now: float | None = None) -> RunSummary:
    """Read a run whole (waiting out a writer caught mid-widening), summarise it and let
    its rows go: a table of hundreds of runs holds one run's rows at a time."""
    model = RunModel(directory, settle_seconds=0.5)
    try:
        model.load_settled(timeout=2.0)
    except Exception as error:  # one unreadable run must not lose the others' rows
        return RunSummary(name, str(directory), "unreadable", 0, None, (), _read_failure(error))
    return summarize_run(name, model, time.time() if now is None else now)


def _read_failure(error: Exception) -> tuple[Problem, ...]:
    return (Problem(Rule.MISSING_DIR, ".", f"cannot be read: {type(error).__name__}: {error}"),)


@dataclass(frozen=True)
class RankedTable:
    """Runs in the order shown; `sort` is None when they are in name order."""

    runs: tuple[RunSummary, ...]
    sort: SortKey | None
    total: int  # runs before --top


def rank_table(
    runs: Sequence[RunSummary], sort: SortKey | None, top: int | None = None
) -> RankedTable:
    ordered = list(runs)
    if sort is not None:
        values = [
            found.latest if (found := run.find(sort.series)) is not None else None for run in runs
        ]
        ordered = [runs[position] for position in rank_order(values, sort.higher_first)]
    shown = ordered if top is None else ordered[:top]
    return RankedTable(tuple(shown), sort, len(runs))


def series_labels(runs: Sequence[RunSummary]) -> list[tuple[str, str, str]]:
    """(label, chart, series) of every series of the table, in first-seen order: the series'
    name, or `chart/name` where two charts have a series of that name."""
    seen: dict[tuple[str, str], None] = {}
    for run in runs:
        for series in run.series:
            seen.setdefault((series.chart, series.name), None)
    names: dict[str, int] = {}
    for _, name in seen:
        names[name] = names.get(name, 0) + 1
    return [
        (name if names[name] == 1 else f"{chart}{SERIES_SEPARATOR}{name}", chart, name)
        for chart, name in seen
    ]


# -- groups of runs (seeds) ----------------------------------------------------------------


@dataclass(frozen=True)
class GroupRow:
    """Runs that differ only in their seed: the sort series' latest value, across them."""

    name: str
    runs: tuple[RunSummary, ...]
    mean: float | None  # of the runs' finite latest values
    low: float | None
    high: float | None
    missing: int  # runs without a value of the series (no series, or inf/nan)


def group_table(
    runs: Sequence[RunSummary], pattern: re.Pattern[str], sort: SortKey | None
) -> list[GroupRow]:
    """One row per group, best mean first (with `sort`), else in name order."""
    rows = []
    for name, positions in group_runs([run.name for run in runs], pattern).items():
        members = tuple(runs[position] for position in positions)
        values: list[float] = []
        if sort is not None:
            for run in members:
                found = run.find(sort.series)
                if found is not None and found.latest is not None and math.isfinite(found.latest):
                    values.append(found.latest)
        mean = sum(values) / len(values) if values else None
        low, high = (min(values), max(values)) if values else (None, None)
        rows.append(GroupRow(name, members, mean, low, high, len(members) - len(values)))
    if sort is not None:
        order = rank_order([row.mean for row in rows], sort.higher_first)
        rows = [rows[position] for position in order]
    return rows


# -- the dashboard's ranking ---------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """The runs a dashboard follows, best first by `sort` (None: in the order found, as no
    series says which way is better). `values`: each run's latest value of the sort series
    (None: it has no such series, or no value yet), by run key. `series`: every series name
    of the runs, in first-seen order (what the sort key cycles through)."""

    sort: SortKey | None = None
    order: tuple[str, ...] = ()
    values: tuple[float | None, ...] = ()  # in `order`
    series: tuple[str, ...] = ()

    def value_of(self, key: str) -> float | None:
        try:
            return self.values[self.order.index(key)]
        except ValueError:
            return None

    def positions(self) -> dict[str, int]:
        return {key: position for position, key in enumerate(self.order)}


NOT_RANKED = Ranking()  # one run: nothing to rank


def series_names(models: Iterable[RunModel]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for model in models:
        for chart in model.charts:
            seen.update(dict.fromkeys(chart.y_axis))
    return tuple(seen)


def rank_runs(runs: Sequence[tuple[str, RunModel]], sort: SortKey | None) -> Ranking:
    """`runs` as (key, model), ranked by `sort`; with None, by the default series
    (`default_sort_series`: loss, else one whose name says which way is better), if any."""
    names = series_names(model for _, model in runs)
    if sort is None:
        default = default_sort_series(names)
        sort = None if default is None else SortKey.parse(default)
    if sort is None:
        return Ranking(None, tuple(key for key, _ in runs), (None,) * len(runs), names)
    values = [latest_value(model, sort.series) for _, model in runs]
    order = rank_order(values, sort.higher_first)
    return Ranking(
        sort,
        tuple(runs[position][0] for position in order),
        tuple(values[position] for position in order),
        names,
    )


def rank_groups(
    ranking: Ranking, names: dict[str, str], pattern: re.Pattern[str]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The runs of `ranking` (run keys, named by `names`) as groups of seeds: (group name,
    member keys in ranking order), best group first by the mean of its members' values
    (groups without any value last), in the order found without a sort."""
    keys = [key for key in ranking.order if key in names]
    members = group_runs([names[key] for key in keys], pattern)
    groups = [(name, tuple(keys[position] for position in at)) for name, at in members.items()]
    if ranking.sort is None:
        return tuple(groups)
    values = dict(zip(ranking.order, ranking.values, strict=True))
    means: list[float | None] = []
    for _, group in groups:
        present = [v for key in group if (v := values.get(key)) is not None and math.isfinite(v)]
        means.append(sum(present) / len(present) if present else None)
    order = rank_order(means, ranking.sort.higher_first)
    return tuple(groups[position] for position in order)
