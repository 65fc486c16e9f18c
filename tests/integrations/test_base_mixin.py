"""OcmsMixin, the guide's shared-base-class pattern, in a training class of one's own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ocms_integrations.base import OcmsMixin, chart_groups_with, learning_rates


class BaseTrainer(OcmsMixin):
    """Stands for a project's own trainer base class: it already has a _log_metrics."""

    def __init__(self, output_dir: str, is_main_process: bool = True, **ocms: Any) -> None:
        self._init_ocms(output_dir, enabled=is_main_process, **ocms)

    def _log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        self._ocms_log(step, metrics)


def test_subclass_records_through_the_mixin(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    trainer = BaseTrainer(str(tmp_path))
    for step in range(1, 11):
        trainer._log_metrics(step, {"loss": 1 / step, "learning_rate/backbone": 1e-4})
    trainer._ocms_finish()
    trainer._ocms_finish()  # twice is harmless
    trainer._log_metrics(11, {"loss": 0.0})  # after finish: nothing, and no error

    run = recorded_run(tmp_path / "ocms_metrics")
    assert run.charts["loss"].steps() == list(range(1, 11))
    assert run.charts["learning_rate"].y_axis == ["lr_backbone"]


def test_processes_other_than_the_main_one_create_nothing(tmp_path: Path) -> None:
    trainer = BaseTrainer(str(tmp_path), is_main_process=False)
    trainer._log_metrics(1, {"loss": 1.0})
    trainer._ocms_finish()
    assert list(tmp_path.iterdir()) == []


def test_custom_chart_groups_reach_the_recorder(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    groups = [("reward", lambda key: "reward" in key), ("loss", lambda key: "loss" in key)]
    trainer = BaseTrainer(str(tmp_path), chart_groups=groups)
    trainer._log_metrics(5, {"episode_reward": 3.5, "policy_loss": 0.2, "ignored": 1.0})
    trainer._ocms_finish()
    # The key no group accepts is not written, and on record (.ocms-recorder.json).
    run = recorded_run(tmp_path / "ocms_metrics", frozenset({"dropped-metric"}))
    assert run.series("reward", "episode_reward") == {5: 3.5}
    assert run.series("loss", "policy_loss") == {5: 0.2}
    assert [p["series"] for p in run.check_report["problems"]] == ["ignored"]  # type: ignore[index,union-attr]


def test_chart_groups_with_swaps_predicates_and_keeps_order() -> None:
    groups = chart_groups_with({"eval_score": lambda key: key == "bleu"})
    names = [name for name, _ in groups]
    assert names == ["loss", "learning_rate", "epoch", "timing", "eval_score", "grad_norm"]
    eval_score = dict(groups)["eval_score"]
    assert eval_score("bleu") and not eval_score("accuracy")
    with pytest.raises(ValueError, match="no chart group named \\['reward'\\]"):
        chart_groups_with({"reward": lambda key: True})


def test_learning_rates_names_one_or_several_groups() -> None:
    assert learning_rates([{"lr": 0.1, "momentum": 0.9}]) == {"learning_rate": 0.1}
    assert learning_rates([{"lr": 0.1}, {"lr": 0.01}]) == {
        "learning_rate/group0": 0.1,
        "learning_rate/group1": 0.01,
    }
