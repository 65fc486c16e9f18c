"""The recorder's sidecar `.ocms-recorder.json`: the keys it did not write, and why.

Not part of the Octopus format (a dot-file the platform ignores; a directory without it is
still valid). The recorder writes it atomically; this module reads it as untrusted input:
a missing sidecar is nothing, and an unreadable, oversized, non-regular (a FIFO), symlinked,
malformed or hostile one is one warning at most, never an exception or a hang.
The sidecar's name, format and version are the recorder's own constants.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ocms_recorder import SIDECAR as SIDECAR_NAME
from ocms_recorder import SIDECAR_FORMAT

from ocms_tui.format.key_families import suggested_chart
from ocms_tui.format.problems import Problem, Rule

# A thousand dropped keys with their messages fit in well under this; more is not a sidecar.
MAX_SIDECAR_BYTES = 1 << 20
# A sidecar naming more dropped keys than this is summed up after the first ones.
MAX_DROPPED_LISTED = 200
# Names, messages and group texts from the file are cut to this many characters for display.
MAX_TEXT = 200

# A suggested group names this many keys, then "..." (the warnings name every key).
KEYS_PER_GROUP = 20

REASONS = {
    "no-chart-group": "no chart group accepts it",
    "not-a-number": "its values are not numbers",
    "y-axis-cap": "the directory already holds the most y-axis names the recorder writes",
    "step-too-large": "the step is above 2^53 - 1, the largest a web UI holds exactly",
}

# (dev, inode, size, mtime_ns): a sidecar with the same identity is not read again.
Identity = tuple[int, int, int, int]


@dataclass(frozen=True)
class DroppedKey:
    key: str | None  # None for rows skipped whole (a step too large)
    reason: str  # one of REASONS, or "unknown"
    first_step: int | None
    last_step: int | None
    count: int | None


@dataclass(frozen=True)
class Sidecar:
    recorder: str | None
    chart_groups: tuple[tuple[str, str], ...]  # (chart, what it accepts, as text)
    dropped: tuple[DroppedKey, ...]
    more_dropped: int = 0  # entries past MAX_DROPPED_LISTED


@dataclass(frozen=True)
class SidecarRead:
    """What one look at the sidecar found: its identity (None: no file to compare), the
    sidecar if it could be read, and the problems it gives."""

    identity: Identity | None
    sidecar: Sidecar | None
    problems: tuple[Problem, ...]


class SidecarReader:
    """Reads a directory's sidecar again only when it changed (a new identity)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.last = SidecarRead(None, None, ())

    def refresh(self) -> bool:
        """Look at the sidecar; True when what it says changed."""
        found = read_sidecar(self.directory, self.last.identity)
        if found is None:  # the same file as last time
            return False
        changed = found.problems != self.last.problems
        self.last = found
        return changed

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.last.problems


def _unreadable(message: str, identity: Identity | None = None) -> SidecarRead:
    problem = Problem(
        Rule.DROPPED_METRIC,
        SIDECAR_NAME,
        f"the recorder's record of dropped keys {message}; which keys it did not write is unknown",
    )
    return SidecarRead(identity, None, (problem,))


def read_sidecar(directory: Path, known: Identity | None = None) -> SidecarRead | None:
    """The sidecar of `directory`; None when its identity is still `known`. Never raises;
    never blocks on a FIFO; never follows a symlink (the recorder writes a plain file)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(directory / SIDECAR_NAME, flags)
    except FileNotFoundError:
        return None if known is None else SidecarRead(None, None, ())
    except OSError as error:
        if error.errno == errno.ELOOP:
            return _unreadable("is a symbolic link (not followed)")
        return _unreadable(f"cannot be read: {error.strerror or error}")
    try:
        info = os.fstat(descriptor)
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if identity == known:
            return None
        if not stat.S_ISREG(info.st_mode):
            return _unreadable("is not a regular file", identity)
        if info.st_size > MAX_SIDECAR_BYTES:
            return _unreadable(f"is larger than {MAX_SIDECAR_BYTES:,} bytes", identity)
        data = os.read(descriptor, MAX_SIDECAR_BYTES + 1)
    except OSError as error:
        return _unreadable(f"cannot be read: {error.strerror or error}")
    finally:
        os.close(descriptor)
    if len(data) > MAX_SIDECAR_BYTES:  # it grew between the stat and the read
        return _unreadable(f"is larger than {MAX_SIDECAR_BYTES:,} bytes", identity)
    sidecar, why = parse_sidecar(data)
    if sidecar is None:
        return _unreadable(f"is not valid ({why})", identity)
    return SidecarRead(identity, sidecar, dropped_problems(sidecar))


def _reject_constant(literal: str) -> None:
    raise ValueError(f"{literal} is not a JSON value")


def _int_or_none(value: object) -> int | None:
    return value if type(value) is int else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_sidecar(data: bytes) -> tuple[Sidecar | None, str]:
    """(the sidecar, "") or (None, why it is not one)."""
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return None, f"not JSON: {str(error)[:MAX_TEXT]}"
    if not isinstance(document, dict):
        return None, "not a JSON object"
    if document.get("format") != SIDECAR_FORMAT:
        return None, f'"format" is not "{SIDECAR_FORMAT}"'
    version = document.get("version")
    if type(version) is not int or version < 1:
        return None, '"version" is not a positive integer'
    # A later version may add fields; what version 1 names is read the same way.
    entries = document.get("dropped", [])
    if not isinstance(entries, list):
        return None, '"dropped" is not a list'
    groups = document.get("chart_groups", [])
    chart_groups = tuple(
        (group["chart"], group["accepts"])
        for group in (groups if isinstance(groups, list) else [])
        if isinstance(group, dict)
        and isinstance(group.get("chart"), str)
        and isinstance(group.get("accepts"), str)
    )
    dropped = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        key = _text(entry.get("key"))
        reason = entry.get("reason")
        if reason not in REASONS:
            reason = "unknown"
        if key is None and reason != "step-too-large":
            continue  # a key the file does not name: nothing to say about it
        dropped.append(
            DroppedKey(
                key,
                reason,
                _int_or_none(entry.get("first_step")),
                _int_or_none(entry.get("last_step")),
                _int_or_none(entry.get("count")),
            )
        )
    return (
        Sidecar(
            recorder=_text(document.get("recorder")),
            chart_groups=chart_groups,
            dropped=tuple(dropped[:MAX_DROPPED_LISTED]),
            more_dropped=max(0, len(dropped) - MAX_DROPPED_LISTED),
        ),
        "",
    )


def shown(text: str) -> str:
    """A name from the file as a message quotes it: repr() escapes controls, and a huge
    name is cut."""
    quoted = repr(text)
    return quoted if len(quoted) <= MAX_TEXT else quoted[: MAX_TEXT - 1] + "…"


def suggested_group(chart: str, keys: Sequence[str], groups: Sequence[tuple[str, str]]) -> str:
    """A chart group that also takes `keys`, as code to paste into chart_groups: the group
    in force for `chart` widened, or a new group of exactly these keys."""
    accepts = dict(groups).get(chart)
    names = [shown(key) for key in keys[:KEYS_PER_GROUP]]
    if len(keys) > KEYS_PER_GROUP:
        names.append("...")
    taken = f"k in ({', '.join(names)}{',' if len(names) == 1 else ''})"
    if accepts is not None and len(accepts) <= MAX_TEXT:
        if "lambda" in accepts or " if " in accepts:  # binds looser than `or`
            accepts = f"({accepts})"
        return f"({chart!r}, lambda k: {accepts} or {taken})"
    return f"({chart!r}, lambda k: {taken})"


def _steps(entry: DroppedKey) -> str:
    if entry.first_step is None:
        return ""
    if entry.last_step is None or entry.last_step == entry.first_step:
        return f" at step {entry.first_step}"
    return f" at steps {entry.first_step}-{entry.last_step}"


def _times(entry: DroppedKey) -> str:
    return "" if entry.count is None else f" {entry.count:,} time(s)"


def dropped_problems(sidecar: Sidecar) -> tuple[Problem, ...]:
    """One `dropped-metric` warning per key the recorder did not write; a key no group
    accepts comes with the group to add it to (every such key of one chart in one group)."""
    unplaced = [
        entry.key for entry in sidecar.dropped if entry.reason == "no-chart-group" and entry.key
    ]
    by_chart: dict[str, list[str]] = {}
    for key in unplaced:
        by_chart.setdefault(suggested_chart(key), []).append(key)
    chart_of = {key: chart for chart, keys in by_chart.items() for key in keys}
    problems = []
    for entry in sidecar.dropped:
        if entry.key is None:
            rows = "rows were" if entry.count is None else f"{entry.count:,} row(s) were"
            message = f"{rows} not written{_steps(entry)}: {REASONS['step-too-large']}"
        elif entry.reason == "no-chart-group":
            chart = chart_of[entry.key]
            group = suggested_group(chart, by_chart[chart], sidecar.chart_groups)
            message = (
                f"{shown(entry.key)} was not written ({REASONS[entry.reason]}; logged"
                f"{_times(entry)}{_steps(entry)}); to chart it, add to chart_groups: {group}"
            )
        else:
            why = REASONS.get(entry.reason, "the recorder gave no reason it knows")
            message = (
                f"{shown(entry.key)} was not written ({why}; logged{_times(entry)}{_steps(entry)})"
            )
        problems.append(
            Problem(
                Rule.DROPPED_METRIC,
                SIDECAR_NAME,
                message,
                series=None if entry.key is None else entry.key[:MAX_TEXT],
                step=entry.first_step,
            )
        )
    if sidecar.more_dropped:
        problems.append(
            Problem(
                Rule.DROPPED_METRIC,
                SIDECAR_NAME,
                f"{sidecar.more_dropped} more dropped key(s) not listed",
                overflow=True,
            )
        )
    return tuple(problems)
