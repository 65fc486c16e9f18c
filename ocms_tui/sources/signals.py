"""SIGTERM as an exception while something is half written: the import's hidden output
directory, the dashboard's temporary conversions. A plain SIGTERM ends the process where
it stands and leaves them behind; raised as `Terminated` (as SIGINT raises
KeyboardInterrupt), it unwinds through the code that removes them."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Terminated(Exception):
    """SIGTERM arrived while a `terminate_cleanly()` block ran."""


def _raise_terminated(signal_number: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """SIGTERM raises Terminated in the main thread while the block runs (elsewhere a
    handler cannot be set: the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_exit_code(stop: BaseException) -> int:
    """128 + the signal's number, as a shell reports a process a signal ended."""
    return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)
