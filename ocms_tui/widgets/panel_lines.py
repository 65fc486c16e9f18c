"""Which lines a chart panel draws: a colour per series of one run, a colour per run of
runs overlaid (the leading ones; the rest muted grey), one line per group of seeds.

Plain values, no Textual: a `Line` names its run by key; the panel finds the run's current
frame of the chart by that key at each draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ocms_tui.draw.series_style import EARLIER_PASS_MARKER, MARKER, RGB, series_color, series_marker
from ocms_tui.follow.frames import OverlayFrame, RunChartFrame


@dataclass(frozen=True)
class Line:
    """One series of one run as this panel draws it."""

    key: str  # the run's key (see `RunFrame.key`)
    index: int  # the series' position in the chart's y axis
    label: str  # the series' name; untrusted text (from files): rendered plain
    color: RGB
    marker: str
    run: str = ""  # runs overlaid: the run's name (untrusted)
    muted: bool = False  # drawn behind, in MUTED_COLOR, and not listed in the legend
    # Runs grouped: the key of every member run whose chart holds the series; the line is
    # their mean, with the min-max band around it (`key` is the first of them).
    group: tuple[str, ...] = ()


# Runs overlaid: the leading few are drawn in colour and listed; every other run is drawn
# behind them in this grey (it reads on dark and light themes), summed up in one legend line.
MUTED_COLOR: RGB = (118, 118, 118)
DEFAULT_TOP_RUNS = 5


@dataclass(frozen=True)
class RunView:
    """How runs overlaid are shown, the same in every panel (the app owns it). `featured`:
    the run keys in colour and in the legend, best first (a colour per place); every other
    run is drawn muted. `highlighted`: a run brought to the front (the run list's highlighted
    run), in the next colour if it is not featured."""

    featured: tuple[str, ...] = ()
    highlighted: str | None = None
    ranked_by: str = ""  # the series the runs are ranked by ("": in the order found)
    # Runs grouped (seeds as one line): (group name, member run keys), best first; the
    # first `top` in colour with their band, the others' means grey.
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    top: int = DEFAULT_TOP_RUNS

    def color_of(self, key: str) -> RGB | None:
        """The run's colour, None when it is drawn muted."""
        if key in self.featured:
            return series_color(self.featured.index(key))
        if key == self.highlighted:
            return series_color(len(self.featured))
        return None


def panel_lines(
    overlay: OverlayFrame,
    overlaid: bool,
    runs: RunView | None = None,
    baseline: Path | None = None,
) -> tuple[Line, ...]:
    """One run: a colour per series, every series. A run and its baseline (`--baseline`):
    the run drawn as alone, the baseline in the same colours, dotted. Runs overlaid: the
    featured runs first, in their order, a colour per run and a marker per series, labels
    naming run and series; then the highlighted run, then every other run's series, muted;
    a baseline among them dotted."""

    def is_baseline(source: RunChartFrame) -> bool:
        return baseline is not None and _same_directory(source.run.directory, baseline)

    if not overlaid or (baseline is not None and len(overlay.sources) <= 2):
        alone: list[Line] = []
        for source in overlay.sources:
            key = source.run.key
            for index, name in enumerate(source.chart.y_axis):
                color = series_color(index)
                if is_baseline(source):
                    run = f"baseline {source.run.name}"
                    alone.append(Line(key, index, name, color, EARLIER_PASS_MARKER, run))
                else:
                    alone.append(Line(key, index, name, color, MARKER))
        return tuple(alone)
    runs = runs or RunView()
    if runs.groups:
        return group_lines(overlay, runs)
    places = {key: place for place, key in enumerate(runs.featured)}
    if runs.highlighted is not None and runs.highlighted not in places:
        places[runs.highlighted] = len(places)
    listed: list[Line] = []
    muted: list[Line] = []
    for source in sorted(overlay.sources, key=lambda s: places.get(s.run.key, len(places))):
        key = source.run.key
        color = runs.color_of(key)
        for index, name in enumerate(source.chart.y_axis):
            if color is None:
                muted.append(Line(key, index, name, MUTED_COLOR, MARKER, source.run.name, True))
            elif is_baseline(source):
                run = f"baseline {source.run.name}"
                listed.append(Line(key, index, name, color, EARLIER_PASS_MARKER, run))
            else:
                marker = series_marker(index)
                listed.append(Line(key, index, name, color, marker, source.run.name))
    return (*listed, *muted)


def group_lines(overlay: OverlayFrame, runs: RunView) -> tuple[Line, ...]:
    """One line per group and series: the leading `runs.top` groups in colour, the others
    muted (their means only)."""
    by_key = {source.run.key: source for source in overlay.sources}
    listed: list[Line] = []
    muted: list[Line] = []
    for place, (name, keys) in enumerate(runs.groups):
        members = [by_key[key] for key in keys if key in by_key]
        if not members:
            continue
        featured = place < runs.top
        color = series_color(place) if featured else MUTED_COLOR
        label = f"{name} ({len(keys)} run{'s' if len(keys) > 1 else ''})"
        series_names = dict.fromkeys(n for member in members for n in member.chart.y_axis)
        for number, series_name in enumerate(series_names):
            carriers = tuple(m.run.key for m in members if series_name in m.chart.y_axis)
            first = by_key[carriers[0]]
            index = first.chart.y_axis.index(series_name)
            marker = series_marker(number) if featured else MARKER
            line = Line(
                first.run.key, index, series_name, color, marker, label, not featured, carriers
            )
            (listed if featured else muted).append(line)
    return (*listed, *muted)


def _same_directory(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return first == second
