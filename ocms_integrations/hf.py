"""Hugging Face `transformers.Trainer` integration.

    from ocms_integrations.hf import OcmsCallback
    trainer = Trainer(..., callbacks=[OcmsCallback()])

Everything the Trainer logs (`loss`, `learning_rate`, `grad_norm`, `epoch`, `eval_*`) is
recorded at `state.global_step` (the `step` of `trainer.state.log_history`), one row per
step, on the main process only, into `$METRICS` or `<args.output_dir>/ocms_metrics`. The
mapping itself is `ocms_integrations.hf_mapping`, shared with the import of
`trainer_state.json`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ocms_recorder import ChartGroup

from ocms_integrations.base import OcmsMixin, require_framework
from ocms_integrations.hf_mapping import (
    HF_CHART_GROUPS,
    entry_metrics,
    is_eval_score,
)

require_framework("transformers", "hf")
from transformers import TrainerCallback  # noqa: E402

__all__ = ["HF_CHART_GROUPS", "OcmsCallback", "is_eval_score"]

logger = logging.getLogger(__name__)


class OcmsCallback(TrainerCallback, OcmsMixin):
    """Records the Trainer's logs as ocms charts.

    `output_dir` defaults to the Trainer's `args.output_dir`; `chart_groups` defaults to
    `HF_CHART_GROUPS` (the guide's groups, with `eval_*` scores on the eval_score chart),
    which leave out `train()`'s end summary and eval runtime/throughput. Your own
    `chart_groups` see every key the Trainer logs.

    What the Trainer logs at one step (the training log, one evaluation per eval set) is
    written as one row per chart when the next step begins, when training ends or when an
    evaluation outside training ends.
    """

    def __init__(
        self, output_dir: str | None = None, chart_groups: Iterable[ChartGroup] | None = None
    ) -> None:
        self._output_dir = output_dir
        self._every_key = chart_groups is not None
        self._chart_groups = list(chart_groups) if chart_groups is not None else HF_CHART_GROUPS
        self._training = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = True
        if state.is_world_process_zero and self._ocms_recorder is None:
            # A resumed Trainer has loaded its state (global_step > 0) before this hook.
            self._ocms_check_earlier_run(
                self._output_dir or args.output_dir,
                resuming=state.global_step > 0,
                how_to_resume="trainer.train(resume_from_checkpoint=...)",
            )

    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        metrics = entry_metrics(logs, self._every_key)
        if not metrics:
            return
        if self._ocms_recorder is None:
            # Started here rather than at train begin, so that trainer.evaluate() alone,
            # or after train() has finished the recorder, is recorded too.
            self._init_ocms(self._output_dir or args.output_dir, self._chart_groups)
        self._ocms_log_merged(state.global_step, metrics)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # Every log of the previous step has arrived: its row is complete.
        self._ocms_flush()

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._training:  # trainer.evaluate() on its own: no step follows
            self._ocms_flush()
            self._ocms_finish()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = False
        self._ocms_flush()
        self._ocms_finish()
