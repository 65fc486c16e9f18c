"""Rich text lines made into Textual strips directly, a line at a time.

Textual paints a widget's Rich text by converting it whole to Content, wrapping it and
combining every span's style again on each render. A legend that gets new numbers twice a
second spent more on that than on laying out its numbers (a fifth of the dashboard's CPU
while following a run). Here the styles a line's spans combine to are worked out once per
combination and widget style, and a line that fits its width is cut into segments
directly: the same segments and styles Textual's own path gives it (a test holds the two
together).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from itertools import pairwise

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Span, Text
from textual.filter import ANSIToTruecolor
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

# Style combinations and (combination, x, y) placements come from a few colours and a few
# columns; bounds all the same.
_MAX_COMBINED = 1024
_MAX_PLACED = 1 << 14

StyleKey = tuple[Hashable, ...]
Run = tuple[int, int, StyleKey]  # start, end, the styles over it (in drawing order)


class TextStrips:
    """Strips for lines of Rich text on one widget, as `Visual.to_strips` makes them for a
    line that fits (no wrapping, no selection, left-aligned)."""

    def __init__(
        self,
        span_style: Callable[[str | RichStyle], Style],
        text_style: Callable[[str], Style],
    ) -> None:
        """`span_style`: a span's style as Content.from_rich_text converts it (parsed by the
        app's console, then made a Textual style); `text_style`: a text's own style given as
        a string, as the widget's `_get_style` parses it."""
        self._span_style = span_style
        self._text_style = text_style
        self._base: Style | None = None
        self._combined: dict[StyleKey, Style] = {}
        self._placed: dict[tuple[StyleKey, int, int], RichStyle] = {}
        # Per shape of a line (length, style, spans): its runs of one combination of styles.
        # The numbers of a followed run change while the shapes of its lines mostly do not.
        self._runs: dict[tuple[int, object, tuple[Span, ...]], list[Run]] = {}

    def strip(self, line: Text, y: int, base: Style) -> Strip:
        """The strip of `line` as row `y` of a widget whose style is `base`."""
        if base != self._base:
            self._base = base
            self._combined.clear()
            self._placed.clear()
        plain = line.plain
        shape = (len(plain), line.style, tuple(line.spans))
        runs = self._runs.get(shape)
        if runs is None:
            if len(self._runs) >= _MAX_COMBINED:
                self._runs.clear()
            runs = self._runs[shape] = _runs(*shape)
        placed = self._placed_style
        segments = [
            Segment(plain[start:end], placed(key, start, y, base)) for start, end, key in runs
        ]
        return Strip(segments, line.cell_len)

    def _placed_style(self, key: StyleKey, x: int, y: int, base: Style) -> RichStyle:
        placed = self._placed.get((key, x, y))
        if placed is None:
            combined = self._combined.get(key)
            if combined is None:
                if len(self._combined) >= _MAX_COMBINED:
                    self._combined.clear()
                # Content.render's combination (base under the spans, in span order), then
                # to_strip's base added once more.
                combined = base + Style.combine([base, *map(self._style_of, key)])
                self._combined[key] = combined
            if len(self._placed) >= _MAX_PLACED:
                self._placed.clear()
            placed = self._placed[(key, x, y)] = combined.rich_style_with_offset(x, y)
        return placed

    def _style_of(self, style: Hashable) -> Style:
        if isinstance(style, tuple):  # the text's own style
            own = style[1]
            return self._text_style(own) if isinstance(own, str) else self._span_style(own)
        assert isinstance(style, str | RichStyle)
        return self._span_style(style)


def _runs(length: int, style: object, spans: tuple[Span, ...]) -> list[Run]:
    """The runs of a line between its spans' edges, each with the styles over it, as
    Content.render cuts them."""
    over: list[tuple[int, int, Hashable]] = []
    if style:
        # Content puts a text's own style before its spans: they are drawn over it.
        over.append((0, length, ("text", style)))
    over.extend(spans)
    cuts = sorted({0, length, *(point for span in over for point in span[:2])})
    return [
        (start, end, tuple(over_it for low, high, over_it in over if low <= start < high))
        for start, end in pairwise(cuts)
        if start < end and start < length
    ]


def refresh_lines(widget: Widget, lines: Collection[int]) -> None:
    """Repaint only these lines of `widget`, each across its content (Textual places a
    repaint region from the content's corner: tests/test_terminal.py reads a padded legend's
    last column back from a real terminal after a repaint of its line alone)."""
    width = widget.size.width
    widget.refresh(*(Region(0, y, width, 1) for y in lines))


def needs_no_ansi_filter(style: RichStyle) -> bool:
    """Whether Textual's ANSI-to-truecolor line filter leaves `style` as it is: its colours
    are truecolor already and it is not dim (see ANSIToTruecolor.truecolor_style)."""
    return (
        (style.color is None or style.color.triplet is not None)
        and (style.bgcolor is None or style.bgcolor.triplet is not None)
        and not style.dim
    )


def plain_lines(
    widget: Widget, crop: Region, line: Callable[[int], Strip], truecolor: bool
) -> list[Strip] | None:
    """The lines `crop` asks of a widget with nothing around or over its content (no border,
    padding, outline, tint, opacity, hatch or links): its own strips, with the app's line
    filters, as Textual's styles cache would give them, without that cache's per-line work
    (a new strip made twice per line: a tenth of the dashboard's CPU while following a fast
    run). `truecolor`: the strips' styles are all ones the ANSI filter keeps (it is then
    skipped). None: not such a widget; let Textual render it."""
    styles = widget.styles
    if (
        any(styles.gutter)
        or any(edge for edge, _ in styles.outline)
        or widget.opacity != 1.0
        or styles.text_opacity != 1.0
        or styles.tint.a
        or (styles.has_rule("hatch") and styles.hatch != "none")
        or widget.hover_style.link_id
    ):
        return None
    width = widget.size.width
    filters = [
        line_filter
        for line_filter in widget.get_line_filters()
        if not (truecolor and isinstance(line_filter, ANSIToTruecolor))
    ]
    background = widget.background_colors[1]
    blank_style = widget.visual_style.rich_style
    lines = []
    for y in crop.line_range:
        strip = line(y).adjust_cell_length(width, blank_style)
        for line_filter in filters:
            strip = strip.apply_filter(line_filter, background)
        lines.append(strip)
    start, end = crop.column_span
    if (start, end) != (0, width):
        lines = [strip.crop(start, end) for strip in lines]
    return lines
