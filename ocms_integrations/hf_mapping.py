"""How a Hugging Face `Trainer` log becomes ocms rows: one mapping for the live callback
(`ocms_integrations.hf.OcmsCallback`) and for importing a finished run's
`trainer_state.json`. Pure Python: no transformers, no torch.

    from ocms_integrations.hf_mapping import HF_CHART_GROUPS, rows_from_log_history

    rows = rows_from_log_history(json.load(open("trainer_state.json"))["log_history"])
    recorder = OcmsRecorder(log_dir, chart_groups=HF_CHART_GROUPS)
    for step, metrics in rows:
        recorder.log(step=step, metrics=metrics)

`rows_from_log_history(log_history, every_key=False) -> list[tuple[int, dict]]`
    `log_history` is the Trainer's list of log entries (`trainer.state.log_history`, or
    the `"log_history"` list of `trainer_state.json`): dicts of metric values plus the
    `"step"` (the `global_step`) each was logged at. Returns `(step, metrics)` rows, one per
    step: the entries the Trainer logs one after another at one step (the training log,
    then one evaluation per eval set, then `train()`'s end summary, then an `evaluate()`
    after `train()`) are merged into one row, a later value of a key replacing an earlier
    one (what readers do with same-step rows). Entries without an integer `"step"` are
    skipped. `every_key=False` (for `HF_CHART_GROUPS`) leaves out the keys that are not a
    step's value of a metric (`train()`'s summary, eval runtime and throughput), so that
    the recorder does not report them as unplaceable; pass `every_key=True` with your own
    chart groups, which then see every key.

`SameStepMerger` (from `ocms_integrations.base`) is the row merger both use: `add(step, metrics)` returns the rows it
completes, `flush()` the one it still holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, ChartGroup

from ocms_integrations.base import Row, SameStepMerger, chart_groups_with

__all__ = [
    "HF_CHART_GROUPS",
    "Row",
    "SameStepMerger",
    "entry_metrics",
    "is_eval_score",
    "is_eval_timing",
    "is_train_summary_key",
    "key_from_tensorboard_tag",
    "rows_from_log_history",
]

STEP_KEY = "step"  # what Trainer.log adds to each log_history entry: state.global_step
# Only the one log that Trainer.train() emits when it ends holds this key. That log is a
# summary of the whole run (mean train_loss, runtime, flos), not a value at its last step.
TRAIN_SUMMARY_KEY = "train_runtime"
# Every key of that summary log but `epoch` (which it repeats from the last training log).
TRAIN_SUMMARY_KEYS = frozenset(
    (
        TRAIN_SUMMARY_KEY,
        "train_samples_per_second",
        "train_steps_per_second",
        "total_flos",
        "train_loss",
    )
)
# transformers' TensorBoardCallback writes `eval_<x>` as `eval/<x>`, `test_<x>` as
# `test/<x>` and every other key `<x>` as `train/<x>` (its rewrite_logs).
_TENSORBOARD_PREFIXES = (("eval/", "eval_"), ("test/", "test_"), ("train/", ""))
# Eval throughput and runtime say how long evaluation took, not how good the model is.
_EVAL_TIMING_SUFFIXES = ("_runtime", "_per_second")
_DEFAULT_EVAL_SCORE = dict(DEFAULT_CHART_GROUPS)["eval_score"]


def is_eval_timing(key: str) -> bool:
    """`eval_runtime`, `eval_samples_per_second`, `eval_<set>_steps_per_second`, ...
    (`trainer.log()` takes any dict: a key that is not a string is none of these)."""
    return isinstance(key, str) and key.startswith("eval_") and key.endswith(_EVAL_TIMING_SUFFIXES)


def is_eval_score(key: str) -> bool:
    """The guide's eval scores, plus the Trainer's `eval_<metric>` (but not `eval_loss`,
    which the loss chart takes, nor eval runtime and throughput)."""
    if not isinstance(key, str):
        return False
    if _DEFAULT_EVAL_SCORE(key):
        return True
    return key.startswith("eval_") and not key.endswith("_loss") and not is_eval_timing(key)


def key_from_tensorboard_tag(tag: str) -> str | None:
    """The Trainer's log key behind a TensorBoard tag its TensorBoardCallback wrote
    (`train/loss` -> `loss`, `eval/loss` -> `eval_loss`); None for a tag it never writes."""
    for prefix, key_prefix in _TENSORBOARD_PREFIXES:
        if tag.startswith(prefix) and len(tag) > len(prefix):
            return key_prefix + tag[len(prefix) :]
    return None


def is_train_summary_key(key: str) -> bool:
    """A key of `train()`'s end summary (`train_runtime`, `total_flos`, the mean
    `train_loss`...): one value for the whole run, not a step's value."""
    return key in TRAIN_SUMMARY_KEYS


HF_CHART_GROUPS: list[ChartGroup] = chart_groups_with({"eval_score": is_eval_score})


def entry_metrics(entry: Mapping[str, Any], every_key: bool = False) -> dict[str, Any]:
    """The metrics of one Trainer log (an `on_log` dict, or a log_history entry without
    its step). Without `every_key`, `train()`'s end summary gives nothing and eval
    runtime/throughput are left out: the default charts have no place for them."""
    if not every_key and TRAIN_SUMMARY_KEY in entry:
        return {}
    return {
        key: value
        for key, value in entry.items()
        if key != STEP_KEY and (every_key or not is_eval_timing(key))
    }


def rows_from_log_history(
    log_history: Iterable[Mapping[str, Any]], every_key: bool = False
) -> list[Row]:
    """One `(step, metrics)` row per step of a Trainer's log_history (see the module
    docstring)."""
    merger = SameStepMerger()
    rows: list[Row] = []
    for entry in log_history:
        if not isinstance(entry, Mapping):
            continue
        step = entry.get(STEP_KEY)
        if type(step) is not int or step < 0:
            continue
        metrics = entry_metrics(entry, every_key)
        if metrics:
            rows.extend(merger.add(step, metrics))
    rows.extend(merger.flush())
    return rows
