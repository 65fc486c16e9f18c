"""What every reader of another tool's logs produces: named series of (step, value) points.

Pure Python and numpy, no Textual. A reader turns its files into a `Source`; fitting.py
decides which chart each series lands on and writer.py writes the ocms directory.
"""

from __future__ import annotations

import math
import os
import stat
from array import array
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np
from ocms_recorder import DEFAULT_CHART_GROUPS, MAX_STEP, ChartGroup


class SourceKind(str, Enum):
    TENSORBOARD = "tensorboard"
    HF = "hf"
    LIGHTNING = "lightning"
    MLFLOW = "mlflow"


class SourceError(Exception):
    """A source that cannot be read at all: foreign, broken before its first value, not a
    regular file. The command line prints it and exits 2."""


@dataclass(frozen=True)
class Series:
    """One metric: every value at its step, in the order the source logged them."""

    name: str
    steps: np.ndarray  # int64, each 0 .. MAX_STEP
    values: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class Source:
    """What a reader found: its series, and notes on what it could not use and why.

    `chart_groups` are the groups the source's own live integration would have used (the
    HF callback's for a trainer_state.json); fitting places series by them first.
    """

    kind: SourceKind
    path: Path
    series: list[Series]
    problems: list[str] = field(default_factory=list)
    # Names the reader found but could not turn into series (a histogram tag), and why.
    left_out: dict[str, str] = field(default_factory=dict)
    chart_groups: list[ChartGroup] = field(default_factory=lambda: list(DEFAULT_CHART_GROUPS))
    # True when the last record or line was still being written (a live run).
    incomplete_tail: bool = False
    # True when a file was damaged (a bad checksum, a cut): what it held before is kept,
    # and the problems say where; a check of the source never calls it plainly "ok".
    damaged: bool = False
    # True when its names went through a framework hook's mapping (HF, Lightning): its
    # charts are the hook's, not regrouped by magnitude.
    hook_mapped: bool = False


class CappedProblems:
    """Problems of one kind that may repeat on every line or record: the first `cap` are
    listed, the rest counted in one closing line."""

    def __init__(self, what: str, cap: int = 20) -> None:
        self._what = what
        self._cap = cap
        self._listed: list[str] = []
        self.count = 0

    def add(self, message: str) -> None:
        self.count += 1
        if self.count <= self._cap:
            self._listed.append(message)

    def lines(self) -> list[str]:
        more = self.count - self._cap
        return self._listed + ([f"{more} more {self._what}"] if more > 0 else [])


class SeriesBuilder:
    """Collects points per series name, in first-seen order, and counts the points whose
    step the format cannot hold (negative, fractional, beyond 2^53 - 1)."""

    def __init__(self) -> None:
        self._steps: dict[str, array] = {}
        self._values: dict[str, array] = {}
        self.bad_steps: dict[str, int] = {}

    def add(self, name: str, step: object, value: float) -> None:
        step_number = _step_number(step)
        if step_number is None:
            self.bad_steps[name] = self.bad_steps.get(name, 0) + 1
            return
        steps = self._steps.get(name)
        if steps is None:
            steps = self._steps[name] = array("q")
            self._values[name] = array("d")
        steps.append(step_number)
        self._values[name].append(value)

    def extend(self, name: str, steps: np.ndarray, values: np.ndarray) -> None:
        """Many points of one series at once; steps outside 0..MAX_STEP are counted."""
        usable = (steps >= 0) & (steps <= MAX_STEP)
        if not usable.all():
            self.bad_steps[name] = self.bad_steps.get(name, 0) + int((~usable).sum())
            steps, values = steps[usable], values[usable]
        if not len(steps):
            return
        if name not in self._steps:
            self._steps[name] = array("q")
            self._values[name] = array("d")
        self._steps[name].frombytes(steps.astype(np.int64).tobytes())
        self._values[name].frombytes(values.astype(np.float64).tobytes())

    def names(self) -> set[str]:
        return set(self._steps)

    def series(self) -> list[Series]:
        return [
            Series(
                name,
                np.frombuffer(self._steps[name], dtype=np.int64).copy(),
                np.frombuffer(self._values[name], dtype=np.float64).copy(),
            )
            for name in self._steps
        ]

    def problems(self) -> list[str]:
        return [
            f"{name!r}: {count} point(s) left out: step not an integer in 0..{MAX_STEP}"
            for name, count in self.bad_steps.items()
        ]


def _step_number(step: object) -> int | None:
    if isinstance(step, bool):
        return None
    if isinstance(step, float):
        if not (math.isfinite(step) and step.is_integer()):
            return None
        step = int(step)
    if not isinstance(step, int) or not 0 <= step <= MAX_STEP:
        return None
    return step


def open_regular_file(path: Path) -> int:
    """A read-only descriptor of `path`, which must be a regular file: a FIFO or a device
    would block or never end. O_NONBLOCK so that opening a FIFO cannot hang either."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise SourceError(f"{path}: cannot open ({error.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SourceError(f"{path}: not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_small_file(path: Path, limit: int) -> bytes:
    """All of a regular file of at most `limit` bytes (a JSON or YAML file, not a log)."""
    fd = open_regular_file(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise SourceError(f"{path}: larger than {limit} bytes, not read")
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:
                raise SourceError(f"{path}: larger than {limit} bytes, not read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
