"""MMEngine Runner with OcmsHook, configured the way OpenMMLab configs do it (by type name)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BATCHES_PER_EPOCH = 6
EPOCHS = 3


def build_runner(
    work_dir: Path,
    hook_config: dict[str, Any],
    epochs: int = EPOCHS,
    logger_hook: dict[str, Any] | None = None,
    log_processor: dict[str, Any] | None = None,
    checkpoint: dict[str, Any] | None = None,
    resume: bool = False,
) -> Any:
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
        train_cfg={"by_epoch": True, "max_epochs": epochs, "val_interval": 1},
        val_cfg={},
        default_hooks={
            "checkpoint": checkpoint,
            "logger": logger_hook or {"type": "LoggerHook", "interval": 100},
        },
        log_processor=log_processor or {},
        custom_hooks=[hook_config],
        resume=resume,
        randomness={"seed": 0},
        default_scope="mmengine",
        # MMEngine names its logger and visualizer after the experiment, by default the
        # second it started: two runners in one second would share one visualizer, which
        # writes into the first runner's work_dir.
        experiment_name=f"ocms-test-{uuid.uuid4().hex}",
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


def test_every_value_sits_at_the_step_of_mmengines_scalars_file(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    import json

    import ocms_integrations.mmengine  # noqa: F401

    runner = build_runner(
        tmp_path,
        {"type": "OcmsHook", "interval": 2},
        # MMEngine's logger every 2 iterations like the hook, validation at the iteration
        # (not the epoch number), and no smoothing: then its scalars are each iteration's.
        logger_hook={"type": "LoggerHook", "interval": 2, "log_metric_by_epoch": False},
        log_processor={"window_size": 1},
    )
    with caplog.at_level("WARNING", logger="ocms_recorder"):
        runner.train()
    assert caplog.records == []  # every scalar has a chart: none reported as not written

    run = recorded_run(tmp_path / "ocms_metrics")
    (scalars_file,) = tmp_path.glob("*/vis_data/scalars.json")
    # Validation logs its own time/data_time too: compare the training iterations' ones.
    theirs: dict[str, dict[int, float]] = {}
    for line in scalars_file.read_text().splitlines():
        entry = json.loads(line)
        stage = "train" if "lr" in entry else "val"
        for name, value in entry.items():
            if name != "step":
                theirs.setdefault(f"{stage}/{name}", {})[entry["step"]] = value
    # MMEngine's name -> where the hook records it.
    columns = {
        "train/loss": ("loss", "loss"),
        "train/loss_cls": ("loss", "loss_cls"),
        "train/loss_reg": ("loss", "loss_reg"),
        "train/lr": ("learning_rate", "learning_rate"),
        "train/grad_norm": ("grad_norm", "grad_norm"),
        "train/data_time": ("timing", "data"),
        "train/time": ("timing", "iter"),
        "val/accuracy/top1": ("eval_score", "accuracy_top1"),
    }
    assert sorted(theirs["train/loss"]) == list(range(2, BATCHES_PER_EPOCH * EPOCHS + 1, 2))
    validation_steps = [BATCHES_PER_EPOCH * epoch for epoch in range(1, EPOCHS + 1)]
    assert sorted(theirs["val/accuracy/top1"]) == validation_steps
    for name, (chart, column) in columns.items():
        assert run.series(chart, column) == pytest.approx(theirs[name], rel=1e-12), name
    # The epoch is recorded fractional, within the 1-based epoch MMEngine logs.
    for step, epoch in run.series("epoch", "epoch").items():
        assert theirs["train/epoch"][step] - 1 < epoch <= theirs["train/epoch"][step]
    for name, chart in run.charts.items():
        assert len(chart.steps()) == len(set(chart.steps())), name


def test_fresh_run_into_an_old_work_dir_warns_and_resume_does_not(
    tmp_path: Path,
    recorded_run: Callable[[Path], Any],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import logging

    import ocms_integrations.mmengine  # noqa: F401

    # MMEngine 0.10 checkpoints hold its HistoryBuffer objects, which torch >= 2.6 no
    # longer unpickles by default; MMEngine's own resume needs this (its known issue).
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

    def train(epochs: int, resume: bool) -> list[logging.LogRecord]:
        runner = build_runner(
            tmp_path,
            {"type": "OcmsHook", "interval": 3},
            epochs=epochs,
            checkpoint={"type": "CheckpointHook", "interval": 1},
            resume=resume,
        )
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ocms_integrations"):
            runner.train()
        return [r for r in caplog.records if r.name == "ocms_integrations"]

    assert train(epochs=1, resume=False) == []
    assert [r.levelname for r in train(epochs=2, resume=True)] == ["INFO"]
    assert recorded_run(tmp_path / "ocms_metrics").charts["loss"].steps() == [3, 6, 9, 12]

    fresh = train(epochs=1, resume=False)
    assert [r.levelname for r in fresh] == ["WARNING"]
    assert "earlier run (up to step 12)" in fresh[0].getMessage()
    again = recorded_run(tmp_path / "ocms_metrics", frozenset({"step-regression"}))
    assert again.charts["loss"].steps() == [3, 6, 9, 12, 3, 6]
