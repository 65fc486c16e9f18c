"""MMEngine integration: `OcmsHook`, registered in MMEngine's HOOKS registry.

In a config:

    custom_imports = dict(imports=["ocms_integrations.mmengine"], allow_failed_imports=False)
    custom_hooks = [dict(type="OcmsHook")]

or in code: `Runner(..., custom_hooks=[OcmsHook()])`.

After every `interval` training iterations, the runner's message hub scalars of that
iteration (`loss`, `loss_*`, `lr`, `grad_norm`, `time`, `data_time`, ...) are recorded at
step `runner.iter + 1` (the iteration number MMEngine prints), with the epoch; after each
validation epoch, the evaluator's metrics. Main process only, into `$METRICS` or
`<runner.work_dir>/ocms_metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, ChartGroup

from ocms_integrations.base import (
    OcmsMixin,
    chart_groups_with,
    require_framework,
)

require_framework("mmengine", "mmengine")
from mmengine.dist import is_main_process  # noqa: E402
from mmengine.hooks import Hook  # noqa: E402
from mmengine.registry import HOOKS  # noqa: E402
from mmengine.runner import EpochBasedTrainLoop  # noqa: E402

_TRAIN_PREFIX = "train/"
# MMEngine's names for what the guide's chart groups call learning_rate and timing/*.
_RENAMED = {"lr": "learning_rate", "time": "timing/iter", "data_time": "timing/data"}
_DEFAULTS = dict(DEFAULT_CHART_GROUPS)


def recorder_key(message_hub_name: str) -> str:
    """`train/lr` -> `learning_rate`, `train/<wrapper>.lr` -> `learning_rate/<wrapper>`
    (several optimizers), `train/time` -> `timing/iter`, `train/loss_cls` -> `loss_cls`."""
    # Not str.removeprefix: `ocms-tui init` copies this hook into training images that may
    # run Python 3.8.
    name = message_hub_name
    if name.startswith(_TRAIN_PREFIX):
        name = name[len(_TRAIN_PREFIX) :]
    if name.endswith(".lr"):
        return "learning_rate/" + name[: -len(".lr")]
    return _RENAMED.get(name, name)


def is_mmengine_loss(key: str) -> bool:
    """The guide's losses plus MMEngine's `loss_<part>` (OpenMMLab models name them so)."""
    return _DEFAULTS["loss"](key) or key.startswith("loss_")


@HOOKS.register_module()
class OcmsHook(Hook, OcmsMixin):
    """Records training scalars and validation metrics as ocms charts."""

    # After IterTimerHook (NORMAL) has put this iteration's time in the message hub.
    priority = "BELOW_NORMAL"

    def __init__(
        self,
        interval: int = 1,
        output_dir: str | None = None,
        chart_groups: Iterable[ChartGroup] | None = None,
    ) -> None:
        if interval < 1:
            raise ValueError(f"interval must be at least 1, not {interval}")
        self.interval = interval
        self._output_dir = output_dir
        self._validation_metric_names: set[str] = set()
        self._training = False
        self._chart_groups = (
            list(chart_groups)
            if chart_groups is not None
            else chart_groups_with({"loss": is_mmengine_loss, "eval_score": self._is_eval_score})
        )

    def _is_eval_score(self, key: str) -> bool:
        # Evaluator metrics have open-ended names (`accuracy/top1`, `coco/bbox_mAP`):
        # whatever arrived through after_val_epoch is an eval score.
        return _DEFAULTS["eval_score"](key) or key in self._validation_metric_names

    def before_run(self, runner: Any) -> None:
        if is_main_process() and self._ocms_recorder is None:
            self._init_ocms(self._output_dir or runner.work_dir, self._chart_groups)

    def before_train(self, runner: Any) -> None:
        self._training = True
        if self._ocms_recorder is not None:
            # The runner has loaded a checkpoint (`resume=True`) before this hook.
            self._ocms_check_earlier_run(
                self._output_dir or runner.work_dir,
                resuming=runner.iter > 0,
                how_to_resume="Runner(..., resume=True) (or resume = True in the config)",
            )

    def before_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None) -> None:
        self._ocms_flush()  # every value of the previous iteration has arrived

    def after_train_iter(
        self,
        runner: Any,
        batch_idx: int,
        data_batch: Any = None,
        outputs: Any = None,
    ) -> None:
        if self._ocms_recorder is None or not self.every_n_train_iters(runner, self.interval):
            return
        metrics: dict[str, Any] = {
            recorder_key(name): buffer.current()
            for name, buffer in runner.message_hub.log_scalars.items()
            if name.startswith(_TRAIN_PREFIX)
        }
        if isinstance(runner.train_loop, EpochBasedTrainLoop):
            metrics["epoch"] = runner.epoch + (batch_idx + 1) / len(runner.train_dataloader)
        # The iteration number MMEngine prints and its LoggerHook logs scalars at.
        self._ocms_log_merged(runner.iter + 1, metrics)

    def after_val_epoch(self, runner: Any, metrics: Mapping[str, Any] | None = None) -> None:
        if self._ocms_recorder is None or not metrics:
            return
        self._validation_metric_names.update(metrics)
        # At the iteration validation ran after: the step of that iteration's train row.
        self._ocms_log_merged(runner.iter, metrics)
        if not self._training:  # runner.val() on its own: no iteration follows
            self._ocms_flush()

    def after_train(self, runner: Any) -> None:
        self._training = False
        self._ocms_flush()

    def after_run(self, runner: Any) -> None:
        self._ocms_flush()
        self._ocms_finish()
