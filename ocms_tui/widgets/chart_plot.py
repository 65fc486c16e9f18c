"""ChartPlot: a textual-plotext plot that rebuilds only when something it shows changed.

textual-plotext's PlotextPlot rebuilds the whole plotext figure on every render. Here the
built picture is cached under (size, theme, generation): the owner bumps the generation with
`invalidate()` when data or view settings changed. New data that lights no other pixel
(most new rows of a long run) costs neither a plotext build nor a repaint: `invalidate()`
plans the picture at once and compares its pixels with those on screen. A new picture is
painted from strips made straight from plotext's matrix; while rows arrive under the same
axes only its lines that changed are painted again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from functools import partial

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.content import Content
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual_plotext import PlotextPlot

from ocms_tui.draw.plot_plan import Plan, PlotRequest, Series
from ocms_tui.draw.plot_render import Picture
from ocms_tui.draw.plotting import ChartCanvas
from ocms_tui.widgets.text_strips import needs_no_ansi_filter, plain_lines, refresh_lines

SeriesSource = Callable[[], tuple[list[Series], bool, tuple[float, float] | None]]
"""Returns (series, log_y, x_range) when the plot is built, so unseen plots cost nothing."""

BuildKey = tuple[int, int, str, int]  # width, height, theme, generation

# Rich styles of plotext's ANSI codes, made by Rich's own ANSI decoder: the same styles
# `Text.from_ansi` gives plotext's text, without building and parsing that text.
_STYLES: dict[str, Style | None] = {}
_MAX_STYLES = 1024  # codes come from a small palette and a theme; a bound all the same
_MAX_PLACED_STYLES = 1 << 15  # (code, offset) pairs: a big plot's runs, a bound all the same


def _style(code: str) -> Style | None:
    if code not in _STYLES:
        if len(_STYLES) >= _MAX_STYLES:
            _STYLES.clear()
        spans = Text.from_ansi(f"{code}x").spans
        style = spans[0].style if spans else None
        _STYLES[code] = Style.parse(style) if isinstance(style, str) else style
    return _STYLES[code]


def picture_text(picture: Picture) -> Text:
    """The Rich text of a built chart: equal to `Text.from_ansi(picture.ansi())`."""
    text = Text(no_wrap=True)
    for row in picture.rows:
        for chars, code in row:
            text.append(chars, _style(code) if code else None)
        text.append("\n")  # every row ends with one, the last too, as plotext's text does
    return text


class _CellStyles:
    """The Rich style of every run of a picture as Textual's own text path gives it: the
    widget's style plus the run's colours (found once per plotext colour code by rendering
    one such cell the way Textual renders the picture's text), tagged with the run's offset
    as Textual tags text for selection. Kept per code and offset: most runs of a new picture
    sit where the last one had them."""

    def __init__(self) -> None:
        self._combined: dict[str, VisualStyle] = {}
        self._placed: dict[tuple[str, int, int], Style] = {}
        self._base: VisualStyle | None = None
        self.truecolor = True
        """Every style made since the widget style last changed is one Textual's ANSI
        filter would leave as it is (see `plain_lines`)."""

    def _style(self, code: str, x: int, y: int) -> Style:
        key = (code, x, y)
        found = self._placed.get(key)
        if found is None:
            combined = self._combined.get(code)
            if combined is None:
                cell = Content.from_rich_text(Text("x", _style(code) if code else None))
                base = self._base or VisualStyle.null()
                ((_, text_style),) = cell.render(base, end="")
                combined = self._combined[code] = base + text_style
            if len(self._placed) >= _MAX_PLACED_STYLES:
                self._placed.clear()
            found = self._placed[key] = combined.rich_style_with_offset(x, y)
            self.truecolor = self.truecolor and needs_no_ansi_filter(found)
        return found

    def strips(
        self,
        widget: ChartPlot,
        picture: Picture,
        kept: tuple[list[Strip], Collection[int]] | None = None,
    ) -> list[Strip]:
        """The picture's lines as Textual strips: the segments Textual makes of the
        picture's text (one per run of one colour), without going through that text.
        `kept`: the strips of the last picture, made for these colours and size, and the
        rows that differ from it: only those are made again."""
        base = widget.visual_style
        if base != self._base:  # new colours (a theme, focus): styles found again
            self._base = base
            self._combined.clear()
            self._placed.clear()
            self.truecolor = needs_no_ansi_filter(base.rich_style)
            kept = None
        width, height = widget.size
        lines = []
        for y, row in enumerate(picture.rows[:height]):
            if kept is not None and y < len(kept[0]) and y not in kept[1]:
                lines.append(kept[0][y])
                continue
            segments = []
            x = 0
            for chars, code in row:
                segments.append(Segment(chars, self._style(code, x, y)))
                x += len(chars)
            lines.append(Strip(segments, x).crop(0, width))
        return lines


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
        self._built_key: BuildKey | None = None
        self._planned: tuple[BuildKey, Plan, list[Series]] | None = None
        self._rendered: Text = Text()
        self._picture: Picture | None = None
        # The picture's lines, made when painted, and the widget style they were made for.
        self._strips: tuple[VisualStyle, list[Strip]] | None = None
        self._cell_styles = _CellStyles()
        self.build_seconds = 0.0
        """How long the last build took (plan, M4, plotext, its matrix read as runs)."""
        self.built_at = float("-inf")
        """time.monotonic() of the last build."""
        self.builds = 0
        self.unchanged = 0
        """Invalidations whose picture was the one on screen: no build, no repaint."""
        self.lines_repainted = 0
        """Lines painted again alone (the rest of a new picture was the one on screen)."""

    def invalidate(self, view_changed: bool = False) -> None:
        """The data or the view changed: build again at the next render, unless the picture
        would be the one on screen. A new view (a key) is always planned at the render: a
        held key (50 presses handed over in one read) then costs one build, for the last
        view, where planning each press (a smoothing at 1,000,000 rows: an EMA and a
        pyramid per series) took 8 s before the screen answered."""
        self._generation += 1
        if not self.region or view_changed:  # not on screen: built when shown
            self._planned = None
            self.refresh()
            return
        if not self._still_shown():
            changed = self._changed_rows()
            if changed is None:
                self.refresh()
            elif changed:
                refresh_lines(self, changed)
                self.lines_repainted += len(changed)

    def _changed_rows(self) -> list[int] | None:
        """New rows under the same axes (a followed run): build the new picture now and tell
        which of its lines differ from those on screen, so that only they are painted again
        (at 1,000 rows most reads change the last columns only). None: build at the next
        render and paint it all (a first picture, new axes, size, theme or colours)."""
        if self._planned is None or self._picture is None or self._strips is None:
            return None
        _, plan, _ = self._planned
        drawn = self._canvas.drawn
        if drawn is None or (plan.extent, plan.x_ticks, plan.y_ticks) != (
            drawn.extent,
            drawn.x_ticks,
            drawn.y_ticks,
        ):
            return None
        before, strips = self._picture, self._strips
        self._ensure_built()
        after = self._picture
        if after is None or len(after.rows) != len(before.rows) or strips[0] != self.visual_style:
            return None
        changed = [
            y
            for y, (old, new) in enumerate(zip(before.rows, after.rows, strict=True))
            if old != new
        ]
        self._strips = (strips[0], self._cell_styles.strips(self, after, (strips[1], set(changed))))
        return changed

    def _still_shown(self) -> bool:
        """Plan the new picture now (when one is on screen at this size and theme) and tell
        whether it is the one on screen; if not, keep the plan for the render."""
        self._planned = None
        if self._built_key is None or self._canvas.drawn is None:
            return False
        width, height, theme, _ = self._built_key
        if (width, height) != tuple(self.size) or theme != self._theme():
            return False
        key = (width, height, theme, self._generation)
        series, plan = self._plan(width, height, theme)
        if plan is None:
            return False
        if self._canvas.shows(plan):
            self._built_key = key
            self.unchanged += 1
            return True
        self._planned = (key, plan, series)
        return False

    def prepare(self, x_range: tuple[float, float] | None, size: Size | None = None) -> None:
        """Reduce the series for the x range (and the size: this one unless given) a key
        will likely ask for next (see ChartCanvas.prepare); nothing when not on screen."""
        if not self.region:
            return
        series, log_y, _ = self._source()
        if series:
            width, height = size or self.size
            request = PlotRequest(width, height, log_y=log_y, x_range=x_range, theme=self._theme())
            self._canvas.prepare(series, request)

    @property
    def drawn_through(self) -> float | None:
        """The last step of the data in the picture on screen (None: no picture)."""
        return self._canvas.drawn.data_through if self._canvas.drawn else None

    @property
    def plotext_builds(self) -> int:
        """plotext builds so far: one per build of this plot (see ChartCanvas.draw)."""
        return self._canvas.plotext_builds

    @property
    def is_stale(self) -> bool:
        return self._built_key is None or self._built_key[3] != self._generation

    def _theme(self) -> str:
        return self._get_plotext_theme_name(self.app.theme)

    def on_unmount(self) -> None:
        # PlotextPlot subscribes to theme changes with a callback that holds the plot, and
        # never unsubscribes: every plot removed (a new layout, a restarted run) stayed in
        # memory with its canvas and the series it drew until the next theme change.
        self.app.theme_changed_signal.unsubscribe(self)

    def render(self) -> RenderResult:
        """The empty-text case (and any caller asking for the text): the picture as text."""
        self._ensure_built()
        if self._picture is not None:
            return picture_text(self._picture)
        return self._rendered

    def render_lines(self, crop: Region) -> list[Strip]:
        """A picture's lines go to the screen as they are made (see `plain_lines`); the
        empty text, or a plot given a border or padding, goes Textual's own way."""
        self._ensure_built()
        if self._picture is not None:
            strips = self._picture_strips()  # made first: they decide `truecolor`
            line = partial(self._line_of, strips)
            lines = plain_lines(self, crop, line, self._cell_styles.truecolor)
            if lines is not None:
                return lines
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        """A picture is painted from strips made straight from plotext's matrix; the empty
        text goes Textual's own way."""
        self._ensure_built()
        if self._picture is None:
            return super().render_line(y)
        return self._line_of(self._picture_strips(), y)

    def _line_of(self, strips: list[Strip], y: int) -> Strip:
        """Line `y` of a picture's strips; a blank line below the picture."""
        if y < len(strips):
            return strips[y]
        return Strip.blank(self.size.width, self.visual_style.rich_style)

    def _picture_strips(self) -> list[Strip]:
        assert self._picture is not None
        style = self.visual_style
        if self._strips is None or self._strips[0] != style:  # new colours: made again
            self._strips = (style, self._cell_styles.strips(self, self._picture))
        return self._strips[1]

    def _ensure_built(self) -> None:
        width, height = self.size
        theme = self._theme()
        key = (width, height, theme, self._generation)
        if key != self._built_key:
            started = time.perf_counter()
            self._picture = self._build(key)
            self._strips = None
            self.build_seconds = time.perf_counter() - started
            self.built_at = time.monotonic()
            self.builds += 1
            self._built_key = key

    def _plan(self, width: int, height: int, theme: str) -> tuple[list[Series], Plan | None]:
        series, log_y, x_range = self._source()
        request = PlotRequest(width, height, log_y=log_y, x_range=x_range, theme=theme)
        return series, self._canvas.plan(series, request) if series else None

    def _build(self, key: BuildKey) -> Picture | None:
        """The picture for `key`, or None (and the empty text) when nothing is drawable."""
        if self._planned is not None and self._planned[0] == key:
            _, plan, series = self._planned
        else:
            series, plan = self._plan(*key[:3])
        self._planned = None
        if plan is None:
            self._canvas.forget()
        picture = self._canvas.draw(plan, series) if plan is not None else None
        self._rendered = Text(self.empty_text, style="dim") if picture is None else Text()
        return picture
