"""Ending the dashboard on signals the way `q` does (plain Python: no Textual here).

SIGTERM, SIGHUP (the terminal closed, the tmux pane killed) and SIGINT end the app through
its own exit: Textual's driver then leaves the alternate screen and turns mouse reporting
off, and the callers' `with` blocks (the demo's temporary directory) clean up.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def exit_on_signals(exit_with: Callable[[int], None], noted_before: list[int]) -> None:
    """From now on (on the running event loop) an exit signal calls `exit_with(code)`, with
    the shell's "killed by" code, 128 + the signal; a second signal while exiting takes the
    default way out. A signal `noted_before` (see `signals_noted`) is answered at once."""
    loop = asyncio.get_running_loop()

    def exit_on(signal_number: int) -> None:
        for number in EXIT_SIGNALS:
            loop.remove_signal_handler(number)
        exit_with(128 + signal_number)

    for number in EXIT_SIGNALS:
        loop.add_signal_handler(number, exit_on, number)
    if noted_before:
        exit_on(noted_before[0])


@contextmanager
def signals_noted() -> Iterator[list[int]]:
    """The exit signals that arrive meanwhile, noted instead of killing the process.

    Textual switches the terminal to the alternate screen and mouse reporting before the app
    is mounted and answers signals: a SIGTERM meanwhile killed the process with the terminal
    left so (seen at 0.64 s into a 6x1M start). Noted here; the app then exits the way q
    does (`exit_on_signals`)."""
    noted: list[int] = []

    def note(number: int, _frame: object) -> None:
        noted.append(number)

    previous = {number: signal.signal(number, note) for number in EXIT_SIGNALS}
    try:
        yield noted
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
