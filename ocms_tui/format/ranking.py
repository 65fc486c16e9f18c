"""Ranking runs by a series, and runs that differ only in their seed as one group.

Pure (the standard library): `ocms-tui runs` and the dashboard's run list rank with the
same `SortKey` and `rank_order`, and group with `group_name`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ocms_tui.format.direction import higher_is_better, says_direction


def direction(series_name: str) -> bool | None:
    """True: higher is better; False: lower; None: the name does not say (format.direction
    assumes lower then; a table says it does not know)."""
    return higher_is_better(series_name) if says_direction(series_name) else None


# A run's name part that tells seeds apart (`lr_1e-4_seed3` and `lr_1e-4_seed7` are one
# setting): taken out, what is left names the group.
DEFAULT_GROUP_PATTERN = r"seed\d+"
SERIES_SEPARATOR = "/"  # `chart/series`, when a series name alone is ambiguous


class SortError(ValueError):
    """A sort or group specification that cannot be used (the message says why)."""


@dataclass(frozen=True)
class SortKey:
    """Rank runs by the latest value of `series` (a series name, or `chart/series`).
    `higher_first` is the direction: forced with `-NAME` (highest first) or `+NAME` (lowest
    first), else taken from the name (`direction`); `known` is False when the name
    said nothing and lowest first was assumed."""

    series: str
    higher_first: bool
    known: bool = True
    forced: bool = False

    @classmethod
    def parse(cls, text: str) -> SortKey:
        sign, name = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
        if not name:
            raise SortError(f"{text!r}: name a series to sort by, like loss or -accuracy")
        if sign:
            return cls(name, higher_first=sign == "-", known=True, forced=True)
        better = direction(name.rsplit(SERIES_SEPARATOR, 1)[-1])
        return cls(name, higher_first=bool(better), known=better is not None)

    def describe(self) -> str:
        """`loss (lowest first)`, and why that way when the name did not say."""
        order = "highest first" if self.higher_first else "lowest first"
        if not self.known:
            order += f"; the name says nothing, so +{self.series} or -{self.series} to choose"
        return f"{self.series} ({order})"


def rank_order(values: Sequence[float | None], higher_first: bool) -> list[int]:
    """Positions of `values` best first: finite values by direction, then inf/nan (a run
    that blew up), then None (no such series); ties keep their order (stable)."""

    def key(position: int) -> tuple[int, float]:
        value = values[position]
        if value is None:
            return (2, 0.0)
        if not math.isfinite(value):
            return (1, 0.0)
        return (0, -value if higher_first else value)

    return sorted(range(len(values)), key=key)


def default_sort_series(series_names: Iterable[str]) -> str | None:
    """The series to rank by when none was asked for: `loss` if there is one, else the first
    series whose name says which way is better."""
    names = list(series_names)
    if "loss" in names:
        return "loss"
    return next((name for name in names if says_direction(name)), None)


def compile_group_pattern(pattern: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise SortError(f"--group {pattern!r} is not a regular expression: {error}") from None
    if compiled.search(""):
        raise SortError(f"--group {pattern!r} matches the empty string; name the seed part")
    return compiled


_SEPARATOR_RUNS = re.compile(r"([_\-./ ])[_\-./ ]+")


def group_name(run_name: str, pattern: re.Pattern[str]) -> str:
    """`run_name` without the part that `pattern` matches (the seed), tidied: separators
    left doubled or at an end go. A name without that part is a group of its own."""
    stripped = pattern.sub("", run_name)
    if stripped == run_name:
        return run_name
    tidied = _SEPARATOR_RUNS.sub(r"\1", stripped).strip("_-./ ")
    return tidied or run_name


def group_runs(names: Sequence[str], pattern: re.Pattern[str]) -> dict[str, list[int]]:
    """Positions of `names` by group, groups in the order their first run comes."""
    groups: dict[str, list[int]] = {}
    for position, name in enumerate(names):
        groups.setdefault(group_name(name, pattern), []).append(position)
    return groups
