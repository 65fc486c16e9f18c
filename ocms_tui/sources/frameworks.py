"""Which framework wrote a log, and its series under the names that framework's live hook
records: an HF Trainer's TensorBoard tags (`train/loss`, `eval/loss`) become the Trainer's
log keys (`loss`, `eval_loss`) and go through the HF callback's mapping; Lightning's
(`train_loss_step`, the whole `epoch`) through the Lightning callback's. A log of neither
is `generic`: fitting then groups it by name and by magnitude.

Pure Python, no Textual. The mappings themselves live in `ocms_integrations` (one mapping
for the hook and the import); this module only recognises the framework and applies them.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path

import numpy as np

from ocms_integrations.hf_mapping import (
    HF_CHART_GROUPS,
    is_eval_timing,
    is_train_summary_key,
    key_from_tensorboard_tag,
)
from ocms_integrations.lightning_mapping import (
    EPOCH_SUFFIX,
    LIGHTNING_CHART_GROUPS,
    MONITOR_PREFIX,
    STEP_SUFFIX,
    fractional_epochs,
    hook_names,
    is_training_step_name,
)
from ocms_tui.sources.common import Series, Source, SourceKind


class Framework(str, Enum):
    HF = "hf"
    LIGHTNING = "lightning"
    GENERIC = "generic"


# Tags every HF Trainer run writes through its TensorBoardCallback (one of them suffices).
_HF_TRAINER_TAGS = ("train/loss", "train/learning_rate", "train/epoch", "train/grad_norm")
LIGHTNING_HPARAMS = "hparams.yaml"  # what Lightning's TensorBoardLogger writes per version
EPOCH = "epoch"


def detect_framework(source: Source) -> Framework:
    """The framework behind `source`, from its kind, its names and its layout."""
    if source.kind is SourceKind.HF:
        return Framework.HF
    if source.kind is SourceKind.LIGHTNING:
        return Framework.LIGHTNING
    names = [each.name for each in source.series]
    if not names:
        return Framework.GENERIC
    if any(name in _HF_TRAINER_TAGS for name in names) and all(
        key_from_tensorboard_tag(name) is not None for name in names
    ):
        return Framework.HF
    if _looks_like_lightning(source.path, names):
        return Framework.LIGHTNING
    return Framework.GENERIC


def _looks_like_lightning(path: Path, names: list[str]) -> bool:
    """Lightning's own layout (`version_N/` with its hparams.yaml) or its names: the
    `epoch` it logs with every metric, beside a `_step`/`_epoch` fork or a LearningRateMonitor
    rate."""
    directory = path if path.is_dir() else path.parent
    if directory.name.startswith("version_") and (directory / LIGHTNING_HPARAMS).is_file():
        return True
    if EPOCH not in names:
        return False
    return any(
        name.startswith(MONITOR_PREFIX)
        or (name.endswith(STEP_SUFFIX) and name[: -len(STEP_SUFFIX)] + EPOCH_SUFFIX in names)
        for name in names
    )


def as_framework(source: Source, framework: Framework) -> Source:
    """`source` with the names, points and chart groups `framework`'s live hook records."""
    if framework is Framework.HF:
        mapped = source if source.kind is SourceKind.HF else _as_hf(source)
    elif framework is Framework.LIGHTNING:
        mapped = _as_lightning(source)
    else:
        return source
    return dataclasses.replace(mapped, hook_mapped=True)


def _as_hf(source: Source) -> Source:
    """TensorBoardCallback's tags as the Trainer's keys. What the HF callback does not
    record is left out, said: train()'s end summary and eval runtime/throughput."""
    series: list[Series] = []
    left_out = dict(source.left_out)
    for each in source.series:
        key = key_from_tensorboard_tag(each.name) or each.name
        if is_train_summary_key(key):
            value = ", ".join(f"{value:.6g}" for value in each.values[-1:].tolist())
            left_out[each.name] = (
                f"run summary logged once by train() ({value} at step {int(each.steps[-1])}); "
                "not a curve, as the HF callback records it"
            )
        elif is_eval_timing(key):
            left_out[each.name] = "evaluation runtime/throughput, not recorded by the HF callback"
        else:
            series.append(_last_per_step(dataclasses.replace(each, name=key)))
    return dataclasses.replace(
        source, series=series, left_out=left_out, chart_groups=list(HF_CHART_GROUPS)
    )


def _last_per_step(each: Series) -> Series:
    """One point per step, the last: the Trainer's logs of one step (training, then each
    evaluation) repeat `epoch`, and the HF callback merges them into one row."""
    if len(each) < 2:
        return each
    last = np.append(each.steps[1:] != each.steps[:-1], True)
    return Series(each.name, each.steps[last], each.values[last])


def _as_lightning(source: Source) -> Source:
    """Lightning's names as its callback records them: a `name_step` fork under `name`,
    and `epoch` as the fractional epoch at each training log."""
    renamed = hook_names(each.name for each in source.series)
    series = [dataclasses.replace(each, name=renamed[each.name]) for each in source.series]
    forks = [each for each in series if renamed.get(each.name + STEP_SUFFIX) == each.name]
    logged_at_steps = forks or [each for each in series if is_training_step_name(each.name)]
    epoch = next((each for each in series if each.name == EPOCH), None)
    if epoch is not None and logged_at_steps:
        training_steps = np.unique(np.concatenate([each.steps for each in logged_at_steps]))
        points = fractional_epochs(
            epoch.steps.tolist(), epoch.values.tolist(), training_steps.tolist()
        )
        fractional = Series(
            EPOCH,
            np.array([step for step, _ in points], dtype=np.int64),
            np.array([value for _, value in points], dtype=np.float64),
        )
        series = [fractional if each is epoch else each for each in series]
    return dataclasses.replace(source, series=series, chart_groups=list(LIGHTNING_CHART_GROUPS))
