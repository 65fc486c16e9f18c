"""What a chart panel draws of its frames: the plot's series (passes, groups, health marks),
the legend's numbers, the x range.

Plain values, no Textual: the panel hands in its current frames (`follow.frames`), its lines
(`panel_lines`) and view settings; smoothed and log values and their M4 pyramids come from
the app's view cache (`follow.views.SeriesViews`), extended by the rows that arrived since
the last draw.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from ocms_tui.draw.plot_plan import Series
from ocms_tui.draw.series_style import EARLIER_PASS_MARKER
from ocms_tui.follow.frames import ChartFrame, OverlayFrame, SeriesStats, pass_bounds
from ocms_tui.follow.run_table import Band, band
from ocms_tui.follow.views import SeriesViews
from ocms_tui.widgets.panel_lines import Line

# Marks of the health checks: a triangle on the edge the value lies beyond, in red.
MARK_ABOVE = "▼"
MARK_BELOW = "▲"
MARK_COLOR = (230, 60, 60)


class PanelFrames:
    """One panel's chart in every run it overlays, as of the latest state."""

    def __init__(self, overlay: OverlayFrame, views: SeriesViews) -> None:
        self.views = views
        self.overlay = overlay
        self.by_key = {source.run.key: source.chart for source in overlay.sources}

    def show(self, overlay: OverlayFrame) -> None:
        """Newer frames of the same chart (the same structure: the lines stay valid)."""
        self.overlay = overlay
        self.by_key = {source.run.key: source.chart for source in overlay.sources}

    @property
    def charts(self) -> tuple[ChartFrame, ...]:
        return tuple(source.chart for source in self.overlay.sources)

    def stats(self, line: Line, smoothing: float, log_y: bool) -> SeriesStats:
        """The legend's numbers of a line: its series', or the mean's of a group."""
        if not line.group:
            return self.by_key[line.key].stats[line.index]
        found = self.band(line, smoothing, log_y)
        return SeriesStats() if found is None else SeriesStats().updated(found.steps, found.mean)

    def series(
        self,
        numbered: Sequence[tuple[int, Line]],
        hidden: Collection[int],
        smoothing: float,
        log_y: bool,
    ) -> list[Series]:
        """The plot's series of the lines, each with its number in the legend, drawn in the
        order given (later over earlier), but those `hidden`."""
        series: list[Series] = []
        for number, line in numbered:
            if number in hidden:
                continue
            if line.group:
                series.extend(self._group_series(line, smoothing, log_y))
                continue
            frame = self.by_key[line.key]
            shown = self.views.shown(frame, line.index, smoothing, log_y)
            shown_values = shown.values(frame.values[line.index])
            rows = len(frame.steps)
            passes = pass_bounds(rows, frame.restarts, frame.earlier_passes_dropped)
            # A run that started again: one line per pass (steps never go back within one),
            # the earlier passes in a lighter character.
            for start, stop in passes:
                latest = stop == rows
                series.append(
                    Series(
                        frame.steps,
                        shown_values,
                        line.color,
                        steps_sorted=True,
                        marker=line.marker if latest else EARLIER_PASS_MARKER,
                        pyramid=shown.pyramid,
                        rows=None if len(passes) == 1 else (start, stop),
                        layer=line.muted,
                    )
                )
            series.extend(self._marks(frame, line, log_y))
        return series

    def band(self, line: Line, smoothing: float, log_y: bool) -> Band | None:
        """The group's mean and min-max of the line's series, at the view's smoothing and
        axis (each member's own view of it)."""
        pairs = []
        for key in line.group:
            frame = self.by_key.get(key)
            if frame is None or line.label not in frame.y_axis:
                continue
            index = frame.y_axis.index(line.label)
            shown = self.views.shown(frame, index, smoothing, log_y)
            pairs.append((frame.steps, shown.values(frame.values[index])))
        return band(pairs)

    def _group_series(self, line: Line, smoothing: float, log_y: bool) -> list[Series]:
        found = self.band(line, smoothing, log_y)
        if found is None:
            return []
        ordered = bool(np.all(np.diff(found.steps) >= 0))
        mean = Series(found.steps, found.mean, line.color, ordered, line.marker, layer=line.muted)
        if line.muted or len(line.group) < 2:
            return [mean]
        edges = [
            Series(found.steps, edge, line.color, ordered, EARLIER_PASS_MARKER)
            for edge in (found.low, found.high)
        ]
        return [*edges, mean]

    @staticmethod
    def _marks(frame: ChartFrame, line: Line, log_y: bool) -> list[Series]:
        """The steps the health checks name, as marks on the chart's top (a nan, an inf, a
        spike, where a divergence began) or bottom (a -inf) edge: a value no line can draw
        is shown, not skipped."""
        marks = frame.series_marks(line.index)
        stats = frame.stats[line.index]
        if not marks or stats.maximum is None or stats.minimum is None:
            return []
        if log_y and stats.minimum <= 0:
            return []  # a mark at a non-positive level has no place on a log axis
        # One series per mark: plotext joins the points of one series with a line.
        return [
            Series(
                np.array([step], dtype=np.int64),
                np.array([stats.minimum if below else stats.maximum]),
                MARK_COLOR,
                steps_sorted=True,
                marker=MARK_BELOW if below else MARK_ABOVE,
            )
            for step, _, below in marks
        ]

    def x_range(self, zoom: int) -> tuple[float, float] | None:
        """The latest 1/2**zoom of the steps the charts span (None: all of them)."""
        present = [span for span in (chart.span() for chart in self.charts) if span is not None]
        if not zoom or not present:
            return None
        low = min(low for low, _ in present)
        high = max(high for _, high in present)
        return (high - (high - low) / 2**zoom, high)
