"""PyTorch Lightning integration, for both `import lightning` and `import pytorch_lightning`.

    from ocms_integrations.lightning import OcmsCallback
    trainer = Trainer(..., callbacks=[OcmsCallback()])

What Lightning hands its own loggers (CSVLogger, TensorBoard) is recorded at the step they
get: training metrics every `log_every_n_steps` batches, epoch-level training metrics at
the end of each epoch, validation and test results when they end, and
`LearningRateMonitor`'s `lr-*` values, plus the epoch (fractional) and the learning rate.
Lightning's names are mapped onto the usual charts (`LIGHTNING_CHART_GROUPS`). Everything
of one step becomes one row per chart. Global rank zero only; the directory is `$METRICS`
or `<trainer.default_root_dir>/ocms_metrics`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ocms_recorder import ChartGroup

from ocms_integrations.base import OcmsMixin, learning_rates, require_framework
from ocms_integrations.lightning_mapping import (
    EPOCH_SUFFIX,
    LIGHTNING_CHART_GROUPS,
    MONITOR_PREFIX,
    STEP_SUFFIX,
)

logger = logging.getLogger("ocms_integrations")


def _framework_modules() -> list[Any]:
    """`lightning.pytorch` and/or `pytorch_lightning`, whichever are installed.

    The two packages ship separate (identical) Callback classes and each Trainer checks
    isinstance against its own; subclassing every installed one lets one callback object
    work with whichever Trainer the user imports.
    """
    modules: list[Any] = []
    first_error: ImportError | None = None
    for module_name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            modules.append(require_framework(module_name, "lightning"))
        except ImportError as error:
            first_error = first_error or error
    if not modules:
        assert first_error is not None
        raise first_error
    return modules


_FRAMEWORKS = _framework_modules()
_LEARNING_RATE_MONITORS = tuple(module.callbacks.LearningRateMonitor for module in _FRAMEWORKS)


def _batches_that_stepped(trainer: Any) -> int:
    """The step Lightning's loggers get for what is logged now: the number of batches
    that made an optimizer step before the current one (Lightning's
    `fit_loop.epoch_loop._batches_that_stepped`, which every logger callback uses)."""
    step = getattr(getattr(trainer.fit_loop, "epoch_loop", None), "_batches_that_stepped", None)
    return step if isinstance(step, int) else trainer.global_step


def _step_value_names(metrics: Mapping[str, Any], callback_metrics: Mapping[str, Any]) -> dict:
    """`name_step` (the step value of `self.log(name, on_step=True, on_epoch=True)`) under
    its own `name`, as the module logged it; other names unchanged."""
    renamed: dict[str, Any] = {}
    for key, value in metrics.items():
        base = key[: -len(STEP_SUFFIX)] if key.endswith(STEP_SUFFIX) else None
        if base and base in callback_metrics and base + EPOCH_SUFFIX not in metrics:
            key = base
        renamed[key] = value
    return renamed


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of many values
        return math.nan


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


class OcmsCallback(*(module.Callback for module in _FRAMEWORKS), OcmsMixin):  # type: ignore[misc]
    """Records Lightning metrics as ocms charts (see the module docstring).

    `chart_groups` defaults to `LIGHTNING_CHART_GROUPS`; `log_learning_rate=False` leaves
    out the first optimizer's `learning_rate` (also left out when a LearningRateMonitor
    logs the rates).
    """

    def __init__(
        self,
        output_dir: str | None = None,
        chart_groups: Iterable[ChartGroup] | None = None,
        log_learning_rate: bool = True,
    ) -> None:
        self._output_dir = output_dir
        self._chart_groups = (
            list(chart_groups) if chart_groups is not None else LIGHTNING_CHART_GROUPS
        )
        self._log_learning_rate = log_learning_rate
        self._seen_global_step = -1
        self._evaluation_keys: set[str] = set()
        self._before_evaluation: dict[str, float] = {}
        self._warned_no_metrics = False
        self._monitor_values: dict[str, Any] = {}  # lr-* name -> the last tensor recorded

    # -- where and when -------------------------------------------------------------------

    def _ready(self, trainer: Any) -> bool:
        """True on global rank zero, with the recorder started."""
        if not trainer.is_global_zero:
            return False
        if self._ocms_recorder is None:
            self._init_ocms(self._output_dir or trainer.default_root_dir, self._chart_groups)
        return True

    @staticmethod
    def _logs_this_batch(trainer: Any, step: int) -> bool:
        """Lightning's own rule (`should_update_logs`) for training-step logging."""
        every = trainer.log_every_n_steps
        return bool(every) and ((step + 1) % every == 0 or trainer.should_stop)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero and self._ocms_recorder is None:
            # Lightning has restored a checkpoint (`ckpt_path`) before this hook.
            self._ocms_check_earlier_run(
                self._output_dir or trainer.default_root_dir,
                resuming=trainer.ckpt_path is not None or trainer.global_step > 0,
                how_to_resume="trainer.fit(..., ckpt_path=...)",
            )

    # -- training -------------------------------------------------------------------------

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        if not trainer.is_global_zero:
            return
        self._ocms_flush()  # every value of the previous step has arrived
        step = _batches_that_stepped(trainer)
        monitored = any(isinstance(cb, _LEARNING_RATE_MONITORS) for cb in trainer.callbacks)
        if (
            self._log_learning_rate
            and trainer.optimizers
            and not monitored  # LearningRateMonitor logs the rates itself, as lr-*
            and self._logs_this_batch(trainer, step)
            and self._ready(trainer)
        ):
            # Read before the step, as LearningRateMonitor does: the rate this step uses.
            self._ocms_log_merged(step, learning_rates(trainer.optimizers[0].param_groups))

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if not trainer.is_global_zero:
            return
        step = _batches_that_stepped(trainer)
        rates = self._new_monitor_rates(trainer)
        if rates and self._ready(trainer):
            self._ocms_log_merged(step, rates)
        # With gradient accumulation this hook runs once per micro-batch; Lightning logs
        # only after the micro-batch that stepped (global_step then moved on).
        stepped = trainer.global_step != self._seen_global_step
        self._seen_global_step = trainer.global_step
        if pl_module.automatic_optimization and not stepped:
            return
        if not self._logs_this_batch(trainer, step) or not self._ready(trainer):
            return
        metrics = _step_value_names(self._logged_now(trainer), trainer.callback_metrics)
        metrics["epoch"] = self._fractional_epoch(trainer, batch_idx)
        self._ocms_log_merged(step, metrics)

    def _new_monitor_rates(self, trainer: Any) -> dict[str, Any]:
        """The `lr-*` values LearningRateMonitor logged since the last batch ended (at
        this batch's start, or the epoch's: both at the step this batch logs at). It
        puts a new tensor into callback_metrics each time it logs one."""
        new = {
            key: value
            for key, value in trainer.callback_metrics.items()
            if key.startswith(MONITOR_PREFIX) and self._monitor_values.get(key) is not value
        }
        self._monitor_values.update(new)
        return new

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        # Lightning logs epoch-level training metrics (`name_epoch`, on_epoch-only names)
        # at the step of the epoch's last batch.
        if not self._ready(trainer):
            return
        metrics = self._logged_now(trainer)
        if metrics:
            self._ocms_log_merged(max(_batches_that_stepped(trainer) - 1, 0), metrics)

    def _logged_now(self, trainer: Any) -> dict[str, Any]:
        """What Lightning's logger connector hands its loggers at this moment."""
        try:
            return dict(trainer._logger_connector.metrics["log"])
        except Exception as error:  # a Lightning version without it: say so once
            if not self._warned_no_metrics:
                self._warned_no_metrics = True
                logger.warning("cannot read Lightning's logged metrics (%r)", error)
            return {}

    @staticmethod
    def _fractional_epoch(trainer: Any, batch_idx: int) -> float:
        batches = trainer.num_training_batches
        if isinstance(batches, int) and batches > 0:
            return trainer.current_epoch + (batch_idx + 1) / batches
        return float(trainer.current_epoch)

    # -- validation and test --------------------------------------------------------------

    def _evaluation_starts(self, trainer: Any) -> None:
        # Lightning updates callback_metrics' tensors in place, so compare plain floats.
        self._before_evaluation = {
            key: _as_float(value) for key, value in trainer.callback_metrics.items()
        }

    def _evaluation_ends(self, trainer: Any, keep_open: bool) -> None:
        # Training results do not change while an evaluation runs: what is new or changed
        # now was logged by it. Learned during the sanity check too, but only real runs
        # are recorded.
        before = self._before_evaluation
        for key, value in trainer.callback_metrics.items():
            old = before.get(key)
            if not key.startswith(MONITOR_PREFIX) and (
                old is None or not _same_float(old, _as_float(value))
            ):
                self._evaluation_keys.add(key)
        if trainer.sanity_checking or not self._ready(trainer):
            return
        metrics = {
            key: value
            for key, value in trainer.callback_metrics.items()
            if key in self._evaluation_keys
        }
        if metrics:
            self._ocms_log_merged(_batches_that_stepped(trainer), metrics)
        if not keep_open:
            self._ocms_flush()

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._evaluation_starts(trainer)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        # Inside fit() the epoch-end row of this step may follow: keep the row open.
        self._evaluation_ends(trainer, keep_open=trainer.state.fn == "fit")

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        self._evaluation_starts(trainer)

    def on_test_end(self, trainer: Any, pl_module: Any) -> None:
        self._evaluation_ends(trainer, keep_open=False)

    # -- the end --------------------------------------------------------------------------

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._ocms_flush()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._ocms_flush()
        self._ocms_finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._ocms_flush()
        self._ocms_finish()
