"""Hugging Face Accelerate integration: a tracker for `Accelerator(log_with=...)`, or a
logger to call from a hand-written loop. Both record on the main process only.

As a tracker (metrics go wherever `accelerator.log` is already called):

    from ocms_integrations.accelerate import OcmsTracker
    accelerator = Accelerator(log_with=[OcmsTracker(output_dir)])
    accelerator.init_trackers("my_run")
    accelerator.log({"loss": loss.item()}, step=step)
    accelerator.end_training()

Directly:

    from ocms_integrations.accelerate import OcmsLogger
    ocms = OcmsLogger(accelerator, output_dir)
    ocms.log(step, {"loss": loss.item(), "learning_rate": scheduler.get_last_lr()[0]})
    ocms.finish()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ocms_recorder import ChartGroup, OcmsRecorder

from ocms_integrations.base import OcmsMixin, require_framework

require_framework("accelerate", "accelerate")
from accelerate.state import PartialState  # noqa: E402
from accelerate.tracking import GeneralTracker  # noqa: E402


class OcmsLogger(OcmsMixin):
    """Records metrics from an Accelerate loop; a no-op on every process but the main one."""

    def __init__(
        self,
        accelerator: Any,
        output_dir: str | None,
        chart_groups: Iterable[ChartGroup] | None = None,
    ) -> None:
        self._accelerator = accelerator
        self._init_ocms(output_dir, chart_groups, enabled=accelerator.is_main_process)

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        if self._accelerator.is_main_process:
            self._ocms_log(step, metrics)

    def finish(self) -> None:
        self._ocms_finish()


class OcmsTracker(GeneralTracker, OcmsMixin):
    """An Accelerate tracker writing ocms charts into `$METRICS` or `<output_dir>/ocms_metrics`.

    `accelerator.log(values)` without a step records at the step after the last one.
    """

    name = "ocms"
    requires_logging_directory = False
    main_process_only = True

    def __init__(
        self, output_dir: str | None = None, chart_groups: Iterable[ChartGroup] | None = None
    ) -> None:
        super().__init__()
        self._output_dir = output_dir
        self._chart_groups = list(chart_groups) if chart_groups is not None else None
        self._next_step = 0

    @property
    def tracker(self) -> OcmsRecorder | None:
        return self._ocms_recorder

    def start(self) -> None:
        # Accelerate calls start() from init_trackers, on the main process only; the
        # recorder is created here rather than in __init__, which every process runs.
        if self._ocms_recorder is None and PartialState().is_main_process:
            self._init_ocms(self._output_dir, self._chart_groups)

    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Hyperparameters have no place in ocms charts; nothing to store."""

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        # Accelerate versions before `start()` existed never call it: start lazily.
        self.start()
        if step is None:
            step = self._next_step
        self._next_step = step + 1
        self._ocms_log(step, values)

    def finish(self) -> None:
        self._ocms_finish()
