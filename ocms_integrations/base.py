"""What every framework integration shares: the recorder mixin and framework imports.

`OcmsMixin` is the guide's "shared base class" pattern: a training class (or a framework
callback) calls `_init_ocms(output_dir)` once and `_ocms_log(step, metrics)` wherever it
already logs. The framework integrations in this package are built on it too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from ocms_recorder import DEFAULT_CHART_GROUPS, ChartGroup, OcmsRecorder


def require_framework(module_name: str, extra: str) -> ModuleType:
    """Import a framework, or fail with an ImportError that says which extra installs it."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"ocms_integrations.{extra} needs the '{module_name}' package, which is not "
            f"importable ({error}). Install it with: pip install 'ocms-tui[{extra}]'"
        ) from error


def chart_groups_with(
    replacements: Mapping[str, Callable[[str], bool]],
    groups: Iterable[ChartGroup] = DEFAULT_CHART_GROUPS,
) -> list[ChartGroup]:
    """The default chart groups with some predicates swapped, keeping chart names and order.

    Frameworks name their metrics differently (MMEngine's `loss_cls`, the Trainer's
    `eval_accuracy`); swapping a predicate keeps the charts users know from the guide.
    """
    unknown = set(replacements) - {name for name, _ in groups}
    if unknown:
        raise ValueError(f"no chart group named {sorted(unknown)}")
    return [(name, replacements.get(name, predicate)) for name, predicate in groups]


def learning_rates(param_groups: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """`learning_rate` for one parameter group, `learning_rate/group<i>` for several
    (the recorder draws those as `lr_group<i>` on the learning_rate chart)."""
    rates = [group["lr"] for group in param_groups if "lr" in group]
    if len(rates) == 1:
        return {"learning_rate": rates[0]}
    return {f"learning_rate/group{index}": rate for index, rate in enumerate(rates)}


class OcmsMixin:
    """Adds an OcmsRecorder to any class: `_init_ocms`, `_ocms_log`, `_ocms_finish`.

    Logging before `_init_ocms` (or on a process that must not write) does nothing, so
    the calls can sit unguarded in code that every rank runs.
    """

    _ocms_recorder: OcmsRecorder | None = None

    def _init_ocms(
        self,
        output_dir: str | None,
        chart_groups: Iterable[ChartGroup] | None = None,
        enabled: bool = True,
    ) -> OcmsRecorder | None:
        """Start recording into `$METRICS`, else `<output_dir>/ocms_metrics`.

        `enabled=False` (a process other than the main one) records nothing and creates
        no directory.
        """
        self._ocms_finish()
        if not enabled:
            return None
        groups = list(chart_groups) if chart_groups is not None else None
        self._ocms_recorder = OcmsRecorder.from_output_dir(output_dir, chart_groups=groups)
        return self._ocms_recorder

    def _ocms_log(self, step: int, metrics: Mapping[str, Any]) -> None:
        if self._ocms_recorder is not None:
            self._ocms_recorder.log(step=step, metrics=dict(metrics))

    def _ocms_finish(self) -> None:
        if self._ocms_recorder is not None:
            recorder, self._ocms_recorder = self._ocms_recorder, None
            recorder.finish()
