"""Lightning Trainer with OcmsCallback, through both `lightning` and `pytorch_lightning`:
every value at the step Lightning's own CSVLogger writes it, under the usual charts."""

from __future__ import annotations

import csv
import importlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BATCHES_PER_EPOCH = 8
EPOCHS = 3
LOG_EVERY = 4


def build_module(lightning_package: str) -> Any:
    """A logistic regression LightningModule subclassing the given package's class, logging
    with the names Lightning users usually pick."""
    import torch

    lightning_module_class = importlib.import_module(lightning_package).LightningModule

    class TinyClassifier(lightning_module_class):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def _loss_and_accuracy(self, batch: Any) -> tuple[Any, Any]:
            inputs, labels = batch
            logits = self.layer(inputs)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            return loss, (logits.argmax(1) == labels).float().mean()

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            loss, accuracy = self._loss_and_accuracy(batch)
            # on_step and on_epoch: Lightning forks train_loss_step and train_loss_epoch.
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            self.log("train_acc", accuracy, on_step=False, on_epoch=True)
            return loss

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            loss, accuracy = self._loss_and_accuracy(batch)
            self.log("val_loss", loss)
            self.log("val_acc", accuracy)

        def test_step(self, batch: Any, batch_idx: int) -> None:
            loss, accuracy = self._loss_and_accuracy(batch)
            self.log("test_loss", loss)
            self.log("test_acc", accuracy)

        def configure_optimizers(self) -> Any:
            optimizer = torch.optim.SGD(self.parameters(), lr=0.5)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]

    return TinyClassifier()


def loaders() -> tuple[Any, Any]:
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(BATCHES_PER_EPOCH * 8, 4, generator=generator)
    labels = (inputs[:, 0] > 0).long()
    dataset = TensorDataset(inputs, labels)
    return DataLoader(dataset, batch_size=8), DataLoader(dataset, batch_size=32)


def make_trainer(
    lightning_package: str,
    root: Path,
    callbacks: list[Any],
    epochs: int = EPOCHS,
    accumulate_grad_batches: int = 1,
    logger: Any = False,
    checkpointing: bool = False,
) -> Any:
    package = importlib.import_module(lightning_package)
    return package.Trainer(
        default_root_dir=str(root),
        max_epochs=epochs,
        log_every_n_steps=LOG_EVERY,
        accumulate_grad_batches=accumulate_grad_batches,
        accelerator="cpu",
        devices=1,
        logger=logger,
        enable_checkpointing=checkpointing,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    )


def csv_logger_values(metrics_csv: Path) -> dict[str, dict[int, float]]:
    """CSVLogger's metrics.csv as name -> {step: value}; a later row of a step wins."""
    values: dict[str, dict[int, float]] = {}
    with metrics_csv.open() as handle:
        for row in csv.DictReader(handle):
            for name, text in row.items():
                if name != "step" and text != "":
                    values.setdefault(name, {})[int(row["step"])] = float(text)
    return values


def test_every_value_sits_at_the_step_of_lightnings_csv_logger(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger

    from ocms_integrations.lightning import OcmsCallback

    csv_logger = CSVLogger(str(tmp_path / "csv"), name="run", version=0)
    trainer = make_trainer(
        "lightning.pytorch",
        tmp_path,
        [LearningRateMonitor(), OcmsCallback()],
        logger=csv_logger,
    )
    module = build_module("lightning.pytorch")
    train_loader, val_loader = loaders()
    with caplog.at_level(logging.WARNING):
        trainer.fit(module, train_loader, val_loader)
        trainer.test(module, val_loader)
    # Every name has a chart: no "not written" message (nor any other warning of ours).
    ours = [r for r in caplog.records if r.name.startswith(("ocms_recorder", "ocms_integr"))]
    assert ours == []

    run = recorded_run(tmp_path / "ocms_metrics")
    assert run.charts["loss"].y_axis == [
        "train_loss", "val_loss", "train_loss_epoch", "test_loss",
    ]  # fmt: skip
    assert run.charts["eval_score"].y_axis == ["val_acc", "train_acc", "test_acc"]
    assert run.charts["learning_rate"].y_axis == ["lr-SGD"]

    theirs = csv_logger_values(tmp_path / "csv" / "run" / "version_0" / "metrics.csv")
    # The step value of a forked name is recorded under the name the module logged.
    theirs["train_loss"] = theirs.pop("train_loss_step")
    total = BATCHES_PER_EPOCH * EPOCHS
    assert sorted(theirs["train_loss"]) == list(range(LOG_EVERY - 1, total, LOG_EVERY))
    assert sorted(theirs["val_loss"]) == [BATCHES_PER_EPOCH * e - 1 for e in (1, 2, 3)]
    compared = 0
    for chart in run.charts.values():
        for name in chart.y_axis:
            if name in theirs and name != "epoch":
                assert chart.series(name) == theirs[name], name  # the same doubles
                compared += 1
    assert compared == 8  # every metric Lightning logged but its integer epoch
    # The epoch is recorded fractional: within the integer epoch Lightning logs.
    recorded_epochs = run.series("epoch", "epoch")
    assert set(recorded_epochs) <= set(theirs["epoch"])
    for step, epoch in recorded_epochs.items():
        assert theirs["epoch"][step] < epoch <= theirs["epoch"][step] + 1
    # One row per step in every chart (train, validation and epoch end share a step).
    for name, chart in run.charts.items():
        assert len(chart.steps()) == len(set(chart.steps())), name


def test_same_callback_works_with_the_pytorch_lightning_package(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    import pytorch_lightning

    from ocms_integrations.lightning import OcmsCallback

    callback = OcmsCallback(output_dir=str(tmp_path / "elsewhere"))
    assert isinstance(callback, pytorch_lightning.Callback)
    # Two micro-batches per optimizer step: 4 steps per epoch, 8 in all.
    trainer = make_trainer(
        "pytorch_lightning", tmp_path / "root", [callback], epochs=2, accumulate_grad_batches=2
    )
    train_loader, val_loader = loaders()
    trainer.fit(build_module("pytorch_lightning"), train_loader, val_loader)
    assert trainer.global_step == BATCHES_PER_EPOCH

    run = recorded_run(tmp_path / "elsewhere" / "ocms_metrics")
    # Once per logged optimizer step, not once per micro-batch, at Lightning's logger step.
    assert sorted(run.series("loss", "train_loss")) == [LOG_EVERY - 1, 2 * LOG_EVERY - 1]
    assert sorted(run.series("loss", "val_loss")) == [LOG_EVERY - 1, 2 * LOG_EVERY - 1]
    # Without LearningRateMonitor the callback records the rate each logged step used:
    # StepLR halves it after every epoch.
    assert run.series("learning_rate", "learning_rate") == {3: 0.5, 7: 0.25}
    final_accuracy = run.series("eval_score", "val_acc")[2 * LOG_EVERY - 1]
    assert final_accuracy == pytest.approx(float(trainer.callback_metrics["val_acc"]))
    assert not (tmp_path / "root" / "ocms_metrics").exists()


def test_fresh_fit_into_an_old_directory_warns_and_ckpt_path_resume_does_not(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from ocms_integrations.lightning import OcmsCallback

    def fit(epochs: int, ckpt_path: str | None = None) -> list[logging.LogRecord]:
        trainer = make_trainer(
            "lightning.pytorch", tmp_path, [OcmsCallback()], epochs=epochs, checkpointing=True
        )
        train_loader, val_loader = loaders()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ocms_integrations"):
            trainer.fit(
                build_module("lightning.pytorch"), train_loader, val_loader, ckpt_path=ckpt_path
            )
        return [r for r in caplog.records if r.name == "ocms_integrations"]

    assert fit(epochs=1) == []
    checkpoint = next((tmp_path / "checkpoints").glob("*.ckpt"))
    resumed = fit(epochs=2, ckpt_path=str(checkpoint))
    assert [r.levelname for r in resumed] == ["INFO"]
    run = recorded_run(tmp_path / "ocms_metrics")
    assert run.charts["loss"].steps() == [3, 7, 11, 15]  # the second epoch follows on

    fresh = fit(epochs=1)
    assert [r.levelname for r in fresh] == ["WARNING"]
    assert "earlier run (up to step 15)" in fresh[0].getMessage()
    assert "ckpt_path" in fresh[0].getMessage()
    # Nothing deleted: the fresh run's steps follow the earlier ones.
    again = recorded_run(tmp_path / "ocms_metrics", frozenset({"step-regression"}))
    assert again.charts["loss"].steps() == [3, 7, 11, 15, 3, 7]


def test_lightning_names_go_to_the_charts_a_user_expects(tmp_path: Path) -> None:
    from ocms_recorder import OcmsRecorder

    from ocms_integrations.lightning import LIGHTNING_CHART_GROUPS

    names = {
        "train_loss": 0.5, "val_loss": 0.6, "test_loss": 0.7, "train_loss_epoch": 0.55,
        "val/loss": 0.61, "val_acc": 0.9, "val/mAP": 0.3, "test_f1": 0.8,
        "train_acc_epoch": 0.85, "valid_accuracy": 0.88, "accuracy": 0.87,
        "lr-SGD": 0.1, "lr-Adam/pg1": 0.01, "lr-SGD-momentum": 0.9, "epoch": 1.5,
    }  # fmt: skip
    recorder = OcmsRecorder(tmp_path, chart_groups=LIGHTNING_CHART_GROUPS, mirror_to_ocms=False)
    recorder.log(step=3, metrics=names)
    recorder.finish()

    layout = json.loads((tmp_path / "metrics.json").read_text())
    assert {chart["name"]: chart["y_axis"] for chart in layout["charts"]} == {
        "loss": ["train_loss", "val_loss", "test_loss", "train_loss_epoch", "val_loss_2"],
        "learning_rate": ["lr-SGD", "lr-Adam_pg1"],
        "epoch": ["epoch"],
        "eval_score": [
            "val_acc", "val_mAP", "test_f1", "train_acc_epoch", "valid_accuracy", "accuracy",
        ],
    }  # fmt: skip
