"""MMEngine Runner with OcmsHook, configured the way OpenMMLab configs do it (by type name)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BATCHES_PER_EPOCH = 6
EPOCHS = 3


def build_runner(work_dir: Path, hook_config: dict[str, Any]) -> Any:
    import torch
    from mmengine.evaluator import BaseMetric
    from mmengine.model import BaseModel
    from mmengine.runner import Runner

    class TinyClassifier(BaseModel):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def forward(self, inputs: Any, labels: Any, mode: str = "tensor") -> Any:
            logits = self.layer(inputs)
            if mode == "loss":
                loss = torch.nn.functional.cross_entropy(logits, labels)
                # OpenMMLab models return named loss parts: loss_<part>.
                return {"loss_cls": loss, "loss_reg": 0.01 * self.layer.weight.pow(2).sum()}
            return logits.argmax(dim=1), labels

    class Accuracy(BaseMetric):
        def process(self, data_batch: Any, data_samples: Any) -> None:
            predictions, labels = data_samples
            self.results.append(((predictions == labels).sum().item(), len(labels)))

        def compute_metrics(self, results: list[Any]) -> dict[str, float]:
            return {"top1": sum(c for c, _ in results) / sum(n for _, n in results)}

    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(BATCHES_PER_EPOCH * 8, 4, generator=generator)
    samples = [{"inputs": x, "labels": int(x[0] > 0)} for x in inputs]

    def loader(batch_size: int) -> dict[str, Any]:
        return {
            "dataset": samples,
            "sampler": {"type": "DefaultSampler", "shuffle": False},
            "collate_fn": {"type": "default_collate"},
            "batch_size": batch_size,
        }

    return Runner(
        model=TinyClassifier(),
        work_dir=str(work_dir),
        train_dataloader=loader(8),
        val_dataloader=loader(16),
        val_evaluator=[Accuracy(prefix="accuracy")],
        optim_wrapper={
            "optimizer": {"type": "SGD", "lr": 0.5},
            "clip_grad": {"max_norm": 10.0},  # makes MMEngine log grad_norm
        },
        param_scheduler={"type": "MultiStepLR", "milestones": [1, 2], "gamma": 0.5},
        train_cfg={"by_epoch": True, "max_epochs": EPOCHS, "val_interval": 1},
        val_cfg={},
        default_hooks={"checkpoint": None, "logger": {"type": "LoggerHook", "interval": 100}},
        custom_hooks=[hook_config],
        randomness={"seed": 0},
        default_scope="mmengine",
    )


def test_train_iterations_and_validation_are_recorded(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    import ocms_integrations.mmengine  # noqa: F401  registers OcmsHook, as custom_imports does

    runner = build_runner(tmp_path, {"type": "OcmsHook", "interval": 2})
    runner.train()

    run = recorded_run(tmp_path / "ocms_metrics")
    total = BATCHES_PER_EPOCH * EPOCHS
    logged_steps = list(range(2, total + 1, 2))
    validation_steps = [BATCHES_PER_EPOCH * epoch for epoch in range(1, EPOCHS + 1)]

    assert set(run.charts) == {
        "loss",
        "learning_rate",
        "epoch",
        "timing",
        "eval_score",
        "grad_norm",
    }
    assert run.charts["loss"].y_axis == ["loss", "loss_cls", "loss_reg"]
    assert run.charts["timing"].y_axis == ["data", "iter"]
    assert run.charts["eval_score"].y_axis == ["accuracy_top1"]
    assert run.charts["loss"].steps() == logged_steps
    losses = run.series("loss", "loss")
    parts = zip(
        run.series("loss", "loss_cls").values(),
        run.series("loss", "loss_reg").values(),
        strict=True,
    )
    assert list(losses.values()) == pytest.approx([cls + reg for cls, reg in parts])
    # MultiStepLR halves the rate after epochs 1 and 2.
    rates = run.series("learning_rate", "learning_rate")
    assert [rates[2], rates[8], rates[14]] == [0.5, 0.25, 0.125]
    epochs = run.series("epoch", "epoch")
    assert epochs[2] == pytest.approx(2 / BATCHES_PER_EPOCH)
    assert epochs[total] == pytest.approx(EPOCHS)
    assert sorted(run.series("grad_norm", "grad_norm")) == logged_steps
    accuracy = run.series("eval_score", "accuracy_top1")
    assert sorted(accuracy) == validation_steps
    assert accuracy[total] == runner.message_hub.get_scalar("val/accuracy/top1").current()
    assert accuracy[total] > 0.7
