"""ChartPlot: a textual-plotext plot that rebuilds only when something it shows changed.

textual-plotext's PlotextPlot rebuilds the whole plotext figure on every render. Here the
built text is cached under (size, theme, generation): the owner bumps the generation with
`invalidate()` when data or view settings changed, and decides how often to do so.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from ocms_tui.plotting import ChartCanvas, PlotRequest, Series

SeriesSource = Callable[[], tuple[list[Series], bool, tuple[float, float] | None]]
"""Returns (series, log_y, x_range) when the plot is built, so unseen plots cost nothing."""


class ChartPlot(PlotextPlot):
    DEFAULT_CSS = """
    ChartPlot {
        height: 1fr;
        min-height: 3;
        content-align: center middle;
    }
    """

    def __init__(self, source: SeriesSource, empty_text: str = "no rows yet") -> None:
        super().__init__()
        self._source = source
        self._canvas = ChartCanvas(self.plt)
        self.empty_text = empty_text
        self._generation = 0
        self._built_key: tuple[int, int, str, int] | None = None
        self._rendered: Text = Text()
        self.build_seconds = 0.0
        """How long the last build took (prepare, M4, plotext, ANSI parsing)."""
        self.built_at = float("-inf")
        """time.monotonic() of the last build."""
        self.builds = 0

    def invalidate(self) -> None:
        """The data or the view changed: build again at the next render."""
        self._generation += 1
        self.refresh()

    @property
    def drawn_through(self) -> float | None:
        """The last step on the x axis of the picture on screen (None: no picture)."""
        return self._canvas.extent[1] if self._canvas.extent else None

    @property
    def is_stale(self) -> bool:
        return self._built_key is None or self._built_key[3] != self._generation

    def render(self) -> RenderResult:
        width, height = self.size
        theme = self._get_plotext_theme_name(self.app.theme)
        key = (width, height, theme, self._generation)
        if key != self._built_key:
            started = time.perf_counter()
            self._rendered = self._build(width, height, theme)
            self.build_seconds = time.perf_counter() - started
            self.built_at = time.monotonic()
            self.builds += 1
            self._built_key = key
        return self._rendered

    def _build(self, width: int, height: int, theme: str) -> Text:
        series, log_y, x_range = self._source()
        request = PlotRequest(width, height, log_y=log_y, x_range=x_range, theme=theme)
        built = self._canvas.build(series, request) if series else None
        if built is None:
            return Text(self.empty_text, style="dim")
        return Text.from_ansi(built, no_wrap=True)
