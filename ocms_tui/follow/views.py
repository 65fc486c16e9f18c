"""View caches: a chart's series as the UI draws them (smoothed, on a log axis, with the M4
pyramid over them), kept on the drawing side.

Pure numpy, no Textual. The reading thread publishes frames (`follow.frames`) and never sees
these; the UI thread alone keeps them, keyed by the frame's row generation and extended as
longer frames of it arrive, so a smoothing costs an EMA of the new rows only. A smoothing
the user will likely ask for next is made ahead on a worker thread from a frame's read-only
arrays (`SeriesViews.prepare`), and handed over on the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ocms_tui.draw.downsample import EmaState, ema_extend
from ocms_tui.draw.pyramid import MinMaxPyramid
from ocms_tui.follow.frames import ChartFrame
from ocms_tui.follow.series import GrowableArray

SeriesKey = tuple[int, int]  # generation, series
ViewSetting = tuple[float, bool]  # smoothing, log_y


class ShownSeries:
    """One series as a chart draws it at one view setting (smoothing weight, log axis), kept
    current as rows arrive: the smoothed values are extended, never recomputed, and the M4
    pyramid over them is extended at each draw. Kept by `SeriesViews` per generation of
    rows (a reset file starts afresh); only the thread that draws uses it.

    A log view is made from `base`, the same series at the same smoothing on a linear axis:
    a log axis only turns values <= 0 into gaps, so while the series has none (a loss, a
    learning rate) the log view *is* its base, values and pyramid alike, and toggling the
    axis copies nothing. The first value <= 0 makes it keep a copy of its own."""

    def __init__(
        self,
        smoothing: float,
        log_y: bool,
        base: ShownSeries | None = None,
        pyramid: MinMaxPyramid | None = None,
    ) -> None:
        """`base` (a log view only): the linear view it is made from, kept by the caller;
        one of its own when not given. `pyramid`: one made ahead over the raw values (the
        raw linear view only), extended from there."""
        if log_y and base is None:
            base = ShownSeries(smoothing, False)
        if base is not None and (not log_y or base.log_y or base.smoothing != smoothing):
            raise ValueError("a log view's base is its linear view at the same smoothing")
        self.smoothing = smoothing
        self.log_y = log_y
        self._base = base
        self._pyramid = pyramid if pyramid is not None else MinMaxPyramid()
        self._shown: GrowableArray | None = None  # own values, when they differ from base's
        self._ema = EmaState()
        self._positive_rows = 0  # a linear view: its first values known to be none <= 0

    @property
    def derived(self) -> bool:
        """The values differ from the stored ones (a smoothing of its own, or a log view of
        a series with values <= 0)."""
        return self.smoothing > 0 or self._shown is not None

    @property
    def holds_copy(self) -> bool:
        """This view keeps values of its own (8 bytes a row), not those of another."""
        return self._shown is not None

    @property
    def pyramid(self) -> MinMaxPyramid:
        """The pyramid over the values `values` returned last."""
        if self._base is not None and self._shown is None:
            return self._base.pyramid
        return self._pyramid

    def values(self, raw: np.ndarray) -> np.ndarray:
        """The shown values of the series whose stored values are `raw` (a longer prefix of
        the same series each time)."""
        if self._base is not None:
            return self._log_values(self._base.values(raw))
        if self.smoothing <= 0:
            return raw
        shown = self._own_values()
        done = len(shown)
        if len(raw) > done:
            new, self._ema = ema_extend(raw[done:], self.smoothing, self._ema)
            shown.extend(new)
        return shown.view(len(raw))

    def _own_values(self) -> GrowableArray:
        if self._shown is None:
            self._shown = GrowableArray(np.float64)
        return self._shown

    def positive_rows(self, values: np.ndarray) -> int:
        """How many of the first of `values` (this linear view's values so far) are none
        <= 0 (NaN, a gap, counts as positive). Known values are not looked at again: kept
        by the linear view, so that each log view made from it (`l` pressed again, or at a
        smoothing made ahead, where `SeriesViews.prepare` counts them) does not scan the
        whole series (at 1,000,000 rows a third of `l`)."""
        known = self._positive_rows
        if known < len(values):
            not_positive = values[known:] <= 0
            if not_positive.any():
                self._positive_rows = known + int(not_positive.argmax())
            else:
                self._positive_rows = len(values)
        return self._positive_rows

    def _log_values(self, linear: np.ndarray) -> np.ndarray:
        """`linear` with values <= 0 as gaps: a log axis has no place for them."""
        if self._shown is None:
            assert self._base is not None
            if self._base.positive_rows(linear) == len(linear):
                return linear
            self._pyramid = MinMaxPyramid()  # base's pyramid picked points now gaps
        shown = self._own_values()
        done = len(shown)
        if len(linear) > done:
            new = linear[done:]
            shown.extend(np.where(new > 0, new, np.nan))
        return shown.view(len(linear))


class SeriesViews:
    """The drawing states of every chart's series (`ShownSeries`), by (generation, series)
    and then by (smoothing, log axis). Per series it keeps the stored values' own view (no
    copy), the setting last asked for and, for a log view, its linear base; every other
    setting is dropped, since each smoothing is a copy of the series (8 bytes a value) and
    the view changes far less often than rows arrive. Only the UI thread uses it."""

    def __init__(self) -> None:
        # Per series first: a sweep draws thousands, and a new setting of one must not
        # look at the others'.
        self._shown: dict[SeriesKey, dict[ViewSetting, ShownSeries]] = {}
        self._prepared: dict[SeriesKey, ShownSeries] = {}  # a smoothing made ahead

    def shown(self, frame: ChartFrame, series: int, smoothing: float, log_y: bool) -> ShownSeries:
        """The drawing state of `series` of `frame`'s rows at a view setting, made at its
        first use (call `values(frame.values[series])` on it for the values drawn)."""
        key = (frame.generation, series)
        settings = self._shown.setdefault(key, {})
        found = settings.get((smoothing, log_y))
        if found is None:
            base = self.shown(frame, series, smoothing, False) if log_y else None
            kept = {(smoothing, log_y), (0.0, False), (smoothing, False)}
            for other in [setting for setting in settings if setting not in kept]:
                del settings[other]
            prepared = self._prepared.get(key)
            if not log_y and prepared is not None and prepared.smoothing == smoothing:
                found = self._prepared.pop(key)
            elif smoothing <= 0 and not log_y and series < len(frame.pyramids):
                found = ShownSeries(0.0, False, pyramid=frame.pyramids[series])
            else:
                found = ShownSeries(smoothing, log_y, base)
            settings[(smoothing, log_y)] = found
        return found

    def keep(self, generations: Iterable[int]) -> None:
        """Forget the views of rows no frame shows any more (a reset file, a run gone)."""
        wanted = set(generations)
        for key in [key for key in self._shown if key[0] not in wanted]:
            del self._shown[key]
        for key in [key for key in self._prepared if key[0] not in wanted]:
            del self._prepared[key]

    def prepare(self, frame: ChartFrame, series: int, smoothing: float) -> Callable[[], None]:
        """Smooth `series` of `frame` and build its pyramid now, off the books: safe on any
        thread (a frame's arrays never change), so that a smoothing the user is likely to
        ask for next costs the drawing thread nothing. Returns the call that hands the
        result over; make it on the drawing thread. The first `shown` of that smoothing then
        takes it (only rows that arrived meanwhile are left to smooth); another prepared
        smoothing of the series replaces it (one copy of the series at most)."""
        prepared = ShownSeries(smoothing, False)
        values = prepared.values(frame.values[series])
        prepared.pyramid.extend(values)
        prepared.positive_rows(values)
        key = (frame.generation, series)

        def hand_over() -> None:
            if (smoothing, False) not in self._shown.get(key, {}):
                self._prepared[key] = prepared

        return hand_over

    def prepared_smoothing(self, frame: ChartFrame, series: int) -> float | None:
        """The smoothing made ahead for `series` of `frame`'s rows and not yet taken by
        `shown`, if any."""
        prepared = self._prepared.get((frame.generation, series))
        return prepared.smoothing if prepared is not None else None
