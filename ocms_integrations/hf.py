"""Hugging Face `transformers.Trainer` integration.

    from ocms_integrations.hf import OcmsCallback
    trainer = Trainer(..., callbacks=[OcmsCallback()])

Everything the Trainer logs (`loss`, `learning_rate`, `grad_norm`, `epoch`, `eval_*`) is
recorded at `state.global_step`, on the main process only, into `$METRICS` or
`<args.output_dir>/ocms_metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, ChartGroup

from ocms_integrations.base import OcmsMixin, chart_groups_with, require_framework

require_framework("transformers", "hf")
from transformers import TrainerCallback  # noqa: E402

# Only the one log that Trainer.train() emits when it ends holds this key. That log is a
# summary of the whole run (mean train_loss, runtime, flos), not a value at its last step.
_TRAIN_SUMMARY_KEY = "train_runtime"
# Eval throughput and runtime say how long evaluation took, not how good the model is;
# they are left out rather than reported as unplaceable metrics on every run.
_EVAL_TIMING_SUFFIXES = ("_runtime", "_per_second")
_DEFAULT_EVAL_SCORE = dict(DEFAULT_CHART_GROUPS)["eval_score"]


def _is_eval_timing(key: str) -> bool:
    return key.startswith("eval_") and key.endswith(_EVAL_TIMING_SUFFIXES)


def is_eval_score(key: str) -> bool:
    """The guide's eval scores, plus the Trainer's `eval_<metric>` (but not `eval_loss`,
    which the loss chart takes)."""
    if _DEFAULT_EVAL_SCORE(key):
        return True
    return key.startswith("eval_") and not key.endswith("_loss") and not _is_eval_timing(key)


HF_CHART_GROUPS: list[ChartGroup] = chart_groups_with({"eval_score": is_eval_score})


class OcmsCallback(TrainerCallback, OcmsMixin):
    """Records the Trainer's logs as ocms charts.

    `output_dir` defaults to the Trainer's `args.output_dir`; `chart_groups` defaults to
    `HF_CHART_GROUPS` (the guide's groups, with `eval_*` scores on the eval_score chart).
    """

    def __init__(
        self, output_dir: str | None = None, chart_groups: Iterable[ChartGroup] | None = None
    ) -> None:
        self._output_dir = output_dir
        self._chart_groups = list(chart_groups) if chart_groups is not None else HF_CHART_GROUPS

    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero or not logs or _TRAIN_SUMMARY_KEY in logs:
            return
        if self._ocms_recorder is None:
            # Started here rather than at train begin, so that trainer.evaluate() alone,
            # or after train() has finished the recorder, is recorded too.
            self._init_ocms(self._output_dir or args.output_dir, self._chart_groups)
        self._ocms_log(
            state.global_step,
            {key: value for key, value in logs.items() if not _is_eval_timing(key)},
        )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._ocms_finish()
