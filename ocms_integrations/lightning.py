"""PyTorch Lightning integration, for both `import lightning` and `import pytorch_lightning`.

    from ocms_integrations.lightning import OcmsCallback
    trainer = Trainer(..., callbacks=[OcmsCallback()])

Every `log_every_n_steps` optimizer steps, what the module logged with `self.log` in
training (`trainer.callback_metrics`), the epoch and the learning rate are recorded at
`trainer.global_step`; validation metrics are recorded when validation ends. Global rank
zero only; the directory is `$METRICS` or `<trainer.default_root_dir>/ocms_metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ocms_recorder import ChartGroup

from ocms_integrations.base import OcmsMixin, learning_rates, require_framework


def _callback_bases() -> tuple[type, ...]:
    """Lightning's Callback class from each installed flavour of the package.

    The two packages ship separate (identical) Callback classes and each Trainer checks
    isinstance against its own; subclassing every installed one lets one callback object
    work with whichever Trainer the user imports.
    """
    bases: list[type] = []
    first_error: ImportError | None = None
    for module_name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            bases.append(require_framework(module_name, "lightning").Callback)
        except ImportError as error:
            first_error = first_error or error
    if not bases:
        assert first_error is not None
        raise first_error
    return tuple(bases)


_FORK_SUFFIXES = ("_step", "_epoch")


def _training_step_metrics(
    callback_metrics: Mapping[str, Any], validation_keys: set[str]
) -> dict[str, Any]:
    """The metrics of this training step: no validation results (callback_metrics keeps
    the last ones) and, for `self.log(name, on_step=True, on_epoch=True)`, only `name`
    (Lightning adds `name_step`, equal to it, and `name_epoch`, the last epoch's mean)."""
    return {
        key: value
        for key, value in callback_metrics.items()
        if key not in validation_keys
        and not any(
            key.endswith(suffix) and key[: -len(suffix)] in callback_metrics
            for suffix in _FORK_SUFFIXES
        )
    }


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of many values
        return math.nan


class OcmsCallback(*_callback_bases(), OcmsMixin):  # type: ignore[misc]
    """Records Lightning metrics as ocms charts (see the module docstring)."""

    def __init__(
        self,
        output_dir: str | None = None,
        chart_groups: Iterable[ChartGroup] | None = None,
        log_learning_rate: bool = True,
    ) -> None:
        self._output_dir = output_dir
        self._chart_groups = list(chart_groups) if chart_groups is not None else None
        self._log_learning_rate = log_learning_rate
        self._last_logged_step = -1
        self._validation_keys: set[str] = set()
        self._before_validation: dict[str, float] = {}

    def _ready(self, trainer: Any) -> bool:
        """True on global rank zero, with the recorder started."""
        if not trainer.is_global_zero:
            return False
        if self._ocms_recorder is None:
            self._init_ocms(self._output_dir or trainer.default_root_dir, self._chart_groups)
        return True

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = trainer.global_step
        # With gradient accumulation this hook runs once per micro-batch; only the first
        # call after an optimizer step logs (step 0 means no step has been taken yet).
        if step == 0 or step == self._last_logged_step or step % trainer.log_every_n_steps:
            return
        if not self._ready(trainer):
            return
        self._last_logged_step = step
        metrics = _training_step_metrics(trainer.callback_metrics, self._validation_keys)
        metrics["epoch"] = self._fractional_epoch(trainer, batch_idx)
        if self._log_learning_rate and trainer.optimizers:
            metrics.update(learning_rates(trainer.optimizers[0].param_groups))
        self._ocms_log(step, metrics)

    @staticmethod
    def _fractional_epoch(trainer: Any, batch_idx: int) -> float:
        batches = trainer.num_training_batches
        if isinstance(batches, int) and batches > 0:
            return trainer.current_epoch + (batch_idx + 1) / batches
        return float(trainer.current_epoch)

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        # Lightning updates callback_metrics' tensors in place, so compare plain floats.
        self._before_validation = {
            key: _as_float(value) for key, value in trainer.callback_metrics.items()
        }

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        # Training results do not change while validation runs: what is new or changed
        # now was logged by validation. Learned during the sanity check too, but only
        # real validation runs are recorded.
        before = self._before_validation
        for key, value in trainer.callback_metrics.items():
            old = before.get(key)
            if old is None or not _same_float(old, _as_float(value)):
                self._validation_keys.add(key)
        if trainer.sanity_checking or not self._ready(trainer):
            return
        metrics = {
            key: value
            for key, value in trainer.callback_metrics.items()
            if key in self._validation_keys
        }
        if metrics:
            self._ocms_log(trainer.global_step, metrics)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._ocms_finish()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._ocms_finish()


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
