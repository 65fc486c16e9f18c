"""Keeping the dashboard's long-lived objects out of the cyclic collector's sight (plain
Python: no Textual here).

The objects made so far (the app, its panels, the modules) live until the charts change: out
of the collector's sight, its full collections scan about 16,000 objects instead of 120,000
and pause the UI for at most 7 ms instead of 40 ms (one key press in ten at 6 x 1M met one;
measured in process). A new layout unfreezes them before it removes panels; the panels it
removed are collected before the next freeze (once per new layout, a pause of about 40 ms),
or they would be frozen with the rest; a moment after the layout, once the removal's last
messages and threads let go of them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Protocol

# From a layout shown to its objects frozen.
FREEZE_AFTER_SECONDS = 1.0


class Stoppable(Protocol):
    def stop(self) -> None: ...


class LayoutFreezer:
    """Freezes FREEZE_AFTER_SECONDS after the last layout. One timer at most: a second
    layout within that time stops the first's timer, which would otherwise freeze the panels
    the second just removed, before they are collected (they would stay in memory until the
    charts change again); whether panels were removed is carried over to the next freeze.

    `start_timer(seconds, callback)` starts a one-shot timer (the app's `set_timer`)."""

    def __init__(self, start_timer: Callable[[float, Callable[[], None]], Stoppable]) -> None:
        self._start_timer = start_timer
        self._timer: Stoppable | None = None
        self._panels_removed = False

    def layout_starting(self, removes_panels: bool) -> None:
        """Before a layout removes the panels on screen (if any): hand them back."""
        self._stop_timer()
        self._panels_removed = self._panels_removed or removes_panels
        gc.unfreeze()

    def layout_shown(self) -> None:
        self._stop_timer()
        self._timer = self._start_timer(FREEZE_AFTER_SECONDS, self._freeze)

    def release(self) -> None:
        """The app ends: an app run in a longer process (tests, a notebook) leaves its
        objects to the collector."""
        self._stop_timer()
        gc.unfreeze()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _freeze(self) -> None:
        self._timer = None
        if self._panels_removed:
            self._panels_removed = False
            gc.collect()
        gc.freeze()
