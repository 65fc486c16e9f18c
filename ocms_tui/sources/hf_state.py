"""A Hugging Face Trainer's `trainer_state.json` (or a checkpoint directory holding one).

Its `log_history` goes through the HF callback's own mapping (which entries and keys are
recorded, same-step merging, the HF chart groups), so an import shows what the callback
would have recorded live.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ocms_recorder import ChartGroup

from ocms_tui.format.json_lines import json_int
from ocms_tui.sources.common import (
    SeriesBuilder,
    Source,
    SourceError,
    SourceKind,
    read_small_file,
)

STATE_FILE = "trainer_state.json"
MAX_STATE_BYTES = 256 << 20
_CHECKPOINT = re.compile(r"checkpoint-([0-9]+)")

RowsFromLogHistory = Callable[[Iterable[Mapping[str, Any]]], list[tuple[int, dict[str, Any]]]]


def hf_mapping() -> tuple[RowsFromLogHistory, list[ChartGroup]]:
    """The HF callback's mapping: `ocms_integrations.hf_mapping` (transformers-free) when
    it is there. ADAPTER, the one place that knows: until that module lands, the callback
    module's own filter and groups (which need transformers importable) are used."""
    try:
        from ocms_integrations.hf_mapping import HF_CHART_GROUPS, rows_from_log_history

        return rows_from_log_history, HF_CHART_GROUPS
    except ImportError:
        pass
    try:
        from ocms_integrations import hf
    except ImportError as error:
        raise SourceError(f"reading trainer_state.json needs the HF integration: {error}") from None

    def rows(log_history: Iterable[Mapping[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
        found = []
        for entry in log_history:
            step = entry.get("step") if isinstance(entry, Mapping) else None
            if type(step) is not int or step < 0 or hf._TRAIN_SUMMARY_KEY in entry:
                continue
            metrics = {
                key: value
                for key, value in entry.items()
                if key != "step" and not hf._is_eval_timing(key)
            }
            if metrics:
                found.append((step, metrics))
        return found

    return rows, hf.HF_CHART_GROUPS


def find_state_file(path: Path) -> Path | None:
    """`path` itself, `path/trainer_state.json`, or that of its latest `checkpoint-N`."""
    if path.is_file():
        return path if path.name == STATE_FILE else None
    direct = path / STATE_FILE
    if direct.is_file():
        return direct
    checkpoints = []
    try:
        for child in path.iterdir():
            match = _CHECKPOINT.fullmatch(child.name)
            if match and (child / STATE_FILE).is_file():
                checkpoints.append((int(match.group(1)), child / STATE_FILE))
    except OSError:
        return None
    return max(checkpoints)[1] if checkpoints else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an int beyond a double: JSON allows it
        return None


def read_hf_state(path: Path) -> Source:
    state_file = find_state_file(path)
    if state_file is None:
        raise SourceError(f"{path}: no {STATE_FILE} (nor a checkpoint-N/ holding one)")
    try:
        document = json.loads(
            read_small_file(state_file, MAX_STATE_BYTES).decode("utf-8"), parse_int=json_int
        )
    except (UnicodeDecodeError, ValueError) as error:
        raise SourceError(f"{state_file}: not valid JSON ({error})") from None
    except RecursionError:  # arrays or objects nested thousands deep: not a Trainer state
        raise SourceError(f"{state_file}: JSON nested too deeply; not a Trainer state") from None
    log_history = document.get("log_history") if isinstance(document, dict) else None
    if not isinstance(log_history, list):
        raise SourceError(f"{state_file}: no log_history list; not a Trainer state")
    rows_from_log_history, groups = hf_mapping()
    builder = SeriesBuilder()
    not_numbers: dict[str, int] = {}
    for step, metrics in rows_from_log_history(log_history):
        for key, value in metrics.items():
            number = _number(value)
            if number is None:
                not_numbers[key] = not_numbers.get(key, 0) + 1
            else:
                builder.add(key, step, number)
    problems = builder.problems()
    left_out = {
        key: f"{count} value(s), none a number"
        for key, count in not_numbers.items()
        if key not in builder.names()
    }
    problems += [
        f"{key!r}: {count} value(s) that are not numbers, left out"
        for key, count in not_numbers.items()
        if key not in left_out
    ]
    if state_file != path:
        problems.insert(0, f"read {state_file}")
    return Source(
        SourceKind.HF, path, builder.series(), problems, left_out, chart_groups=list(groups)
    )
