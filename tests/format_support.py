"""What a check says of the format alone: how the files are written, apart from what they
mean (the recorder's record of the keys it dropped, the picture checks, the curves' health),
which the writers' tests judge on their own terms."""

from __future__ import annotations

from collections.abc import Iterable

from ocms_tui.follow.picture import PICTURE_RULES
from ocms_tui.format.problems import Problem, Rule

NOT_FORMAT = PICTURE_RULES | {Rule.DROPPED_METRIC, Rule.SPIKE, Rule.DIVERGENCE, Rule.STALLED}


def format_problems(problems: Iterable[Problem]) -> tuple[Problem, ...]:
    return tuple(problem for problem in problems if problem.rule not in NOT_FORMAT)
