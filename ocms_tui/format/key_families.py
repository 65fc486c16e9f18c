"""The chart a metric key that no chart group accepts most likely belongs on.

Shared by `scan` (the chart groups it suggests before a run) and the checker (the group a
`dropped-metric` warning suggests after one): one guess, said the same way before and after.
Standard library only.
"""

from __future__ import annotations

import re

from ocms_recorder import MAX_CHART_NAME_LENGTH, sanitize_key

# A dropped key joins the first default chart whose family it belongs to.
FAMILIES = (
    ("loss", re.compile(r"loss", re.IGNORECASE)),
    ("learning_rate", re.compile(r"(^|[/_.])(lr|learning_rate)($|[/_.])", re.IGNORECASE)),
    ("epoch", re.compile(r"epoch", re.IGNORECASE)),
    ("timing", re.compile(r"time|timing|throughput|per_second", re.IGNORECASE)),
    ("eval_score", re.compile(r"acc|score|f1|map|iou|eval|val|top\d", re.IGNORECASE)),
    ("grad_norm", re.compile(r"grad", re.IGNORECASE)),
)
OTHER_CHART = "other"


def family_of(key: str) -> str | None:
    """The default chart of the key's family (`lr` -> learning_rate), None for none."""
    return next((name for name, pattern in FAMILIES if pattern.search(key)), None)


def chart_name_for(key: str) -> str:
    """A chart named after the key's prefix (`reward/mean` -> `reward`)."""
    prefix = key.split("/", 1)[0] if "/" in key else key
    return sanitize_key(prefix)[:MAX_CHART_NAME_LENGTH]


def suggested_chart(key: str) -> str:
    """The chart to put a dropped key on: its family's, else one named after its prefix."""
    return family_of(key) or chart_name_for(key)
