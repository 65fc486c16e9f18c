"""Lightning's metric names on the usual charts: `val_*`, `test_*`, `train_*`, `lr-*` and
the `_step`/`_epoch` forks. Plain Python without Lightning, so that the live callback and
`ocms-tui import` of a CSVLogger directory place every name alike.
"""

from __future__ import annotations

from ocms_recorder import DEFAULT_CHART_GROUPS, ChartGroup

from ocms_integrations.base import chart_groups_with

# What `self.log(name, on_step=True, on_epoch=True)` forks a name into.
STEP_SUFFIX, EPOCH_SUFFIX = "_step", "_epoch"
# How Lightning users name the metrics of each stage: `val_acc`, `val/acc`, `test_f1`.
_STAGE_PREFIXES = tuple(
    stage + separator
    for stage in ("train", "val", "valid", "validation", "test")
    for separator in ("_", "/")
)
# LearningRateMonitor's names: `lr-SGD`, `lr-Adam/pg1`, `lr-SGD-momentum`, ...
MONITOR_PREFIX = "lr-"
_MONITOR_NON_RATES = ("-momentum", "-weight_decay")
_DEFAULTS = dict(DEFAULT_CHART_GROUPS)


def _without_fork_suffix(key: str) -> str:
    for suffix in (STEP_SUFFIX, EPOCH_SUFFIX):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def is_lightning_loss(key: str) -> bool:
    """`loss`, `*_loss`, `val/loss`, and their `_step`/`_epoch` forks."""
    base = _without_fork_suffix(key)
    return _DEFAULTS["loss"](base) or base.endswith("/loss")


def is_lightning_learning_rate(key: str) -> bool:
    """The guide's learning rates and LearningRateMonitor's `lr-<optimizer>[/pg<i>]`
    (not its `-momentum` and `-weight_decay`, which are no rates)."""
    if _DEFAULTS["learning_rate"](key):
        return True
    return key.startswith(MONITOR_PREFIX) and not key.endswith(_MONITOR_NON_RATES)


def is_lightning_score(key: str) -> bool:
    """The guide's scores and every stage metric that is no loss (`val_acc`, `test_f1`,
    `train_acc_epoch`, `val/mAP`)."""
    base = _without_fork_suffix(key)
    return _DEFAULTS["eval_score"](base) or base.startswith(_STAGE_PREFIXES)


LIGHTNING_CHART_GROUPS: list[ChartGroup] = chart_groups_with(
    {
        "loss": is_lightning_loss,
        "learning_rate": is_lightning_learning_rate,
        "eval_score": is_lightning_score,
    }
)
