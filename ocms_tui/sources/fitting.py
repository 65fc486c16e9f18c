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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
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
# A generic log's chart never holds series whose typical sizes differ more than this: the
# smaller ones would be a flat line at zero.
MAX_MAGNITUDE_RATIO = 1000.0
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


def typical_magnitude(values: np.ndarray) -> float | None:
    """The median size of a series' finite, non-zero values; None when it has none."""
    sizes = np.abs(values[np.isfinite(values)])
    sizes = sizes[sizes > 0]
    return float(np.median(sizes)) if len(sizes) else None


def _logged_once(each: Series) -> bool:
    return len(each) > 0 and bool((each.steps == each.steps[0]).all())


def fit_series(
    series: Sequence[Series],
    groups: Sequence[ChartGroup],
    use_structure: bool = True,
    by_magnitude: bool = False,
) -> Fit:
    """Place each series on a chart. `use_structure=False` (a `--groups` spec): the groups
    alone decide, and what they do not accept is left out. `by_magnitude` (a generic log):
    a value logged once beside curves is a run summary, said and left out, and no chart
    holds series whose typical sizes differ more than MAX_MAGNITUDE_RATIO."""
    members: dict[str, list[str]] = {}  # chart name -> keys, charts in placement order
    reasons: dict[str, str] = {}
    left_out: dict[str, str] = {}
    structure: dict[str, list[str]] = {}
    group_order = [name for name, _ in groups]
    has_curves = any(len(each) and not _logged_once(each) for each in series)
    for each in series:
        key = each.name
        if len(each) == 0:
            left_out[key] = "no values"
            continue
        if by_magnitude and has_curves and _logged_once(each):
            left_out[key] = (
                f"logged once ({each.values[-1]:.6g} at step {int(each.steps[-1])}): a run "
                "summary, not a curve"
            )
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
    if by_magnitude:
        magnitudes = {each.name: typical_magnitude(each.values) for each in series}
        ordered = _split_by_magnitude(ordered, magnitudes, reasons, left_out)
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


def _split_by_magnitude(
    ordered: dict[str, list[str]],
    magnitudes: dict[str, float | None],
    reasons: dict[str, str],
    left_out: dict[str, str],
) -> dict[str, list[str]]:
    """Each chart's series in bands of at most MAX_MAGNITUDE_RATIO; a band after the first
    gets a chart of its own (`<chart>_<its first series>`) while the chart limit allows,
    and is left out, said, when it does not."""
    bands_of = {name: _bands(keys, magnitudes) for name, keys in ordered.items()}
    split: dict[str, list[str]] = {}
    budget = MAX_CHARTS - len(ordered)
    for name, bands in bands_of.items():
        split[name] = bands[0]
        for band in bands[1:]:
            if budget <= 0:
                for key in band:
                    left_out[key] = (
                        f"its size differs over {MAX_MAGNITUDE_RATIO:g}x from the rest of "
                        f"chart {name!r}, and no chart is left for it"
                    )
                continue
            budget -= 1
            stem = band[0].rsplit("/", 1)[-1]
            chart = _unused_name(_chart_name(f"{name}_{stem}"), split | ordered)
            split[chart] = band
            for key in band:
                reasons[key] = (
                    f"{reasons.get(key, name)}; own chart: its size differs over {MAX_MAGNITUDE_RATIO:g}x from {name!r}"
                )
    return split


def _bands(keys: list[str], magnitudes: dict[str, float | None]) -> list[list[str]]:
    """`keys` grouped so that within a group the largest typical size is at most
    MAX_MAGNITUDE_RATIO times the smallest; keys without a size join the first group."""
    sized = sorted((magnitudes[key], key) for key in keys if magnitudes.get(key))
    groups: list[list[str]] = []
    low = math.inf
    for size, key in sized:
        if not groups or size > low * MAX_MAGNITUDE_RATIO:
            groups.append([])
            low = size
        groups[-1].append(key)
    if not groups:
        return [list(keys)]
    # Each band keeps the source's order; the band of the chart's first series comes first.
    position = {key: index for index, key in enumerate(keys)}
    bands = [sorted(group, key=position.__getitem__) for group in groups]
    bands.sort(key=lambda band: position[band[0]])
    sizeless = [key for key in keys if not magnitudes.get(key)]
    bands[0] = sorted(bands[0] + sizeless, key=position.__getitem__)
    return bands
