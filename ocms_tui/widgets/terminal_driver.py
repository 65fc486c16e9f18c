"""The terminal driver: Textual's own, with a lone escape key reported on time.

A terminal sends the escape key as the byte that also starts every escape sequence (arrows,
mouse, function keys), so a lone ESC is only known to be the key once no byte has followed
it for a moment (ESCDELAY, Textual's default 100 ms; the dashboard's 25 ms, as vim's). Textual's
input thread looks at that deadline only when its `select` returns, which it does every
100 ms when no input comes: `escape` (restore the grid, leave the help) reached the app 100
to 200 ms after the key, more than the whole redraw it asked for. Here the thread sleeps
until the deadline instead. Terminals with the kitty keyboard protocol send no lone ESC and
never wait.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

IDLE_WAKE_SECONDS = 0.1  # Textual's own: how often the thread looks at its exit flag
ESCAPE_DELAY_MS = "25"  # the default ESCDELAY of the dashboard (a user's own is kept)


class PromptEscapeDriver(LinuxDriver):
    """LinuxDriver whose input thread wakes when the parser's escape deadline passes."""

    def run_input_thread(self) -> None:
        """Textual's loop (LinuxDriver.run_input_thread), the select timeout aside."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def timeout() -> float:
            # The parser's only deadline is that of a lone ESC; a Textual without it (a
            # private attribute) polls as Textual does.
            deadline: float | None = getattr(parser, "_timeout_time", None)
            if deadline is None:
                return IDLE_WAKE_SECONDS
            return min(IDLE_WAKE_SECONDS, max(0.0, deadline - get_time()))

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            for number, (_, mask) in enumerate(events):
                if mask & selectors.EVENT_READ:
                    last = number == len(events) - 1
                    data = decode(os.read(self.fileno, 4096), final=final and last)
                    if not data:
                        break  # stdin is a pipe at its end
                    for event in parser.feed(data):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(timeout()))
            selector.unregister(self.fileno)
            process(selector.select(IDLE_WAKE_SECONDS), final=True)
        finally:
            selector.close()
            try:
                for _ in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
