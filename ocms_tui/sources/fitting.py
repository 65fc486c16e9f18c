"""Fit a source's series into at most MAX_CHARTS charts, and say where each one went.

Order of precedence: the source's chart groups (the recorder's defaults, or the groups its
live integration uses) take every series they accept, exactly as the recorder routes a key;
then the source's own structure groups the rest: a tag `loss/train` goes with `loss/eval`
(into the default `loss` chart when that group accepts `loss`), Lightning's
`val_acc`/`train_acc_epoch` go together as `acc`. When more structure groups remain than
charts are left, the last chart is `other` and takes them all. Nothing is dropped without a
reason in the placements. Names are made legal by the recorder's own sanitize_key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ocms_recorder import (
    MAX_CHART_NAME_LENGTH,
    MAX_CHARTS,
    MAX_SERIES_PER_CHART,
    ChartGroup,
    is_valid_name,
    sanitize_key,
)

from ocms_tui.sources.common import Series

OTHER_CHART = "other"
# Prefixes and suffixes that say which split or which aggregation a flat key is
# (Lightning's `val_acc`, `train_acc_epoch`); the rest of the key names what is measured.
SPLIT_PREFIXES = ("train_", "training_", "val_", "valid_", "validation_", "eval_", "test_")
AGGREGATION_SUFFIXES = ("_step", "_epoch")


@dataclass(frozen=True)
class ChartPlan:
    name: str
    keys: tuple[str, ...]  # the series it draws, in source order


@dataclass(frozen=True)
class Placement:
    """Where one series went (`chart`), or None and why not (`reason`)."""

    series: str
    chart: str | None
    reason: str


@dataclass(frozen=True)
class Fit:
    charts: tuple[ChartPlan, ...]
    placements: tuple[Placement, ...]

    def chart_groups(self) -> list[ChartGroup]:
        """The recorder's chart groups that write exactly this fit."""
        return [(chart.name, frozenset(chart.keys).__contains__) for chart in self.charts]

    @property
    def left_out(self) -> tuple[Placement, ...]:
        return tuple(placement for placement in self.placements if placement.chart is None)


class GroupsSpecError(ValueError):
    pass


def parse_groups_spec(spec: str) -> list[ChartGroup]:
    """`--groups 'loss=*loss*;acc=*acc*,*accuracy*'`: charts in this order, each taking the
    series whose name matches one of its shell patterns (the first chart that matches wins)."""
    groups: list[ChartGroup] = []
    for part in filter(None, (piece.strip() for piece in spec.split(";"))):
        name, separator, patterns_text = part.partition("=")
        name = name.strip()
        patterns = [pattern.strip() for pattern in patterns_text.split(",") if pattern.strip()]
        if not separator or not patterns:
            raise GroupsSpecError(f"{part!r}: expected CHART=PATTERN[,PATTERN...]")
        if not is_valid_name(name) or len(name) > MAX_CHART_NAME_LENGTH:
            raise GroupsSpecError(
                f"chart name {name!r}: letters, digits, '_' and '-' only, at most "
                f"{MAX_CHART_NAME_LENGTH} characters"
            )
        if name in (existing for existing, _ in groups):
            raise GroupsSpecError(f"chart {name!r} is given twice")
        groups.append((name, _matcher(patterns)))
    if not groups:
        raise GroupsSpecError("no chart groups given")
    if len(groups) > MAX_CHARTS:
        raise GroupsSpecError(f"{len(groups)} charts given; ocms draws at most {MAX_CHARTS}")
    return groups


def _matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    return lambda key: any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


def _first_group(groups: Sequence[ChartGroup], key: str) -> str | None:
    """The first group accepting `key`, as the recorder routes it (a predicate that raises
    accepts nothing)."""
    for name, accepts in groups:
        try:
            if accepts(key):
                return name
        except Exception:
            continue
    return None


def structure_group(key: str) -> str:
    """What a key measures, by the source's own naming: `loss/train` -> `loss`,
    `val_acc_epoch` -> `acc`."""
    if "/" in key:
        return key.split("/", 1)[0] or key
    stem = key
    for prefix in SPLIT_PREFIXES:
        if stem.startswith(prefix) and len(stem) > len(prefix):
            stem = stem[len(prefix) :]
            break
    for suffix in AGGREGATION_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem


def _chart_name(text: str) -> str:
    return sanitize_key(text)[:MAX_CHART_NAME_LENGTH]


def fit_series(
    series: Sequence[Series], groups: Sequence[ChartGroup], use_structure: bool = True
) -> Fit:
    """Place each series on a chart. `use_structure=False` (a `--groups` spec): the groups
    alone decide, and what they do not accept is left out."""
    members: dict[str, list[str]] = {}  # chart name -> keys, charts in placement order
    reasons: dict[str, str] = {}
    left_out: dict[str, str] = {}
    structure: dict[str, list[str]] = {}
    group_order = [name for name, _ in groups]
    for each in series:
        key = each.name
        if len(each) == 0:
            left_out[key] = "no values"
            continue
        chart = _first_group(groups, key)
        if chart is not None:
            members.setdefault(chart, []).append(key)
            reasons[key] = f"group {chart!r}"
            continue
        if not use_structure:
            left_out[key] = "matches no chart group"
            continue
        stem = structure_group(key)
        chart = _first_group(groups, stem)
        if chart is not None:
            members.setdefault(chart, []).append(key)
            reasons[key] = f"{stem!r} belongs to group {chart!r}"
            continue
        structure.setdefault(_chart_name(stem), []).append(key)
    ordered = {name: members[name] for name in group_order if name in members}
    free = MAX_CHARTS - len(ordered)
    structure_charts = list(structure.items())
    overflow: list[str] = []
    if len(structure_charts) > free and free > 0:
        structure_charts, rest = structure_charts[: free - 1], structure_charts[free - 1 :]
        overflow = [key for _, keys in rest for key in keys]
    elif free <= 0:
        for _, keys in structure_charts:
            for key in keys:
                left_out[key] = f"no chart left ({MAX_CHARTS} taken by the chart groups)"
        structure_charts = []
    for name, keys in structure_charts:
        ordered.setdefault(name, []).extend(keys)  # a default chart's name: the same chart
        for key in keys:
            reasons[key] = f"grouped by name as {name!r}"
    if overflow:
        other = _unused_name(OTHER_CHART, ordered)
        ordered[other] = overflow
        for key in overflow:
            reasons[key] = f"more name groups than the {MAX_CHARTS} charts hold"
    charts = []
    for name, keys in ordered.items():
        kept = keys[:MAX_SERIES_PER_CHART]
        for key in keys[MAX_SERIES_PER_CHART:]:
            left_out[key] = f"chart {name!r} already has {MAX_SERIES_PER_CHART} series"
        charts.append(ChartPlan(name, tuple(kept)))
    chart_of = {key: chart.name for chart in charts for key in chart.keys}
    placements = tuple(
        Placement(each.name, chart_of[each.name], reasons[each.name])
        if each.name in chart_of
        else Placement(each.name, None, left_out[each.name])
        for each in series
    )
    return Fit(tuple(charts), placements)


def _unused_name(base: str, taken: dict[str, list[str]]) -> str:
    name, suffix = base, 1
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    return name
