"""Lightning's metric names on the usual charts: `val_*`, `test_*`, `train_*`, `lr-*` and
the `_step`/`_epoch` forks. Plain Python without Lightning, so that the live callback and
`ocms-tui import` of a CSVLogger directory place every name alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


def is_training_step_name(key: str) -> bool:
    """A name Lightning logs at training steps by default (`self.log` in `training_step`):
    not the epoch, a LearningRateMonitor rate, an `_epoch` fork, nor a validation or test
    metric. (An `on_epoch`-only training metric looks the same: the `_step` forks, when
    there are any, are the surer sign.)"""
    return (
        key != "epoch"
        and not key.startswith(MONITOR_PREFIX)
        and not key.endswith(EPOCH_SUFFIX)
        and not key.startswith(tuple(p for p in _STAGE_PREFIXES if not p.startswith("train")))
    )


def hook_names(names: Iterable[str]) -> dict[str, str]:
    """Each name Lightning handed its loggers -> the name the live callback records:
    `name_step` becomes `name` when `name_epoch` is logged too (both forks of one
    `self.log(name, on_step=True, on_epoch=True)`), as the callback writes the step value
    under the name the module logged; other names unchanged."""
    given = set(names)
    renamed = {}
    for name in given:
        base = name[: -len(STEP_SUFFIX)] if name.endswith(STEP_SUFFIX) else ""
        fork = base and base + EPOCH_SUFFIX in given and base not in given
        renamed[name] = base if fork else name
    return renamed


def fractional_epochs(
    steps: Sequence[int], epochs: Sequence[float], training_steps: Iterable[int]
) -> list[tuple[int, float]]:
    """The live callback's fractional epoch (`epoch + (batch + 1) / batches`) at each of
    `training_steps`, from the whole epochs Lightning logs: an epoch's batches are the
    steps from the end of the one before to the last step it logged at (its epoch-end
    metrics). A step that no logged epoch covers is left out."""
    last_step: dict[int, int] = {}
    for step, epoch in zip(steps, epochs, strict=True):
        if epoch == int(epoch) and epoch >= 0:
            last_step[int(epoch)] = max(step, last_step.get(int(epoch), step))
    bounds = []  # (epoch, first step, batches), in epoch order
    first, batches = 0, 0
    for epoch in sorted(last_step):
        first = last_step[epoch - 1] + 1 if epoch - 1 in last_step else first + batches
        batches = max(last_step[epoch] - first + 1, batches)
        bounds.append((epoch, first, batches))
    found = []
    for step in sorted(set(training_steps)):
        for epoch, start, batches in bounds:
            if start <= step < start + batches:
                found.append((step, epoch + (step - start + 1) / batches))
                break
    return found
