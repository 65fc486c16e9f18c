"""Lightning Trainer with OcmsCallback, through both `lightning` and `pytorch_lightning`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BATCHES_PER_EPOCH = 8
EPOCHS = 3
LOG_EVERY = 4


def build_module(lightning_package: str) -> Any:
    """A logistic regression LightningModule subclassing the given package's class."""
    import torch

    lightning_module_class = importlib.import_module(lightning_package).LightningModule

    class TinyClassifier(lightning_module_class):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            inputs, labels = batch
            loss = torch.nn.functional.cross_entropy(self.layer(inputs), labels)
            # on_step and on_epoch: Lightning adds train_loss_step and train_loss_epoch.
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            inputs, labels = batch
            logits = self.layer(inputs)
            self.log("val_loss", torch.nn.functional.cross_entropy(logits, labels))
            self.log("accuracy", (logits.argmax(1) == labels).float().mean())

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


def fit(
    lightning_package: str,
    root: Path,
    callback: Any,
    epochs: int = EPOCHS,
    accumulate_grad_batches: int = 1,
) -> Any:
    package = importlib.import_module(lightning_package)
    trainer = package.Trainer(
        default_root_dir=str(root),
        max_epochs=epochs,
        log_every_n_steps=LOG_EVERY,
        accumulate_grad_batches=accumulate_grad_batches,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )
    train_loader, val_loader = loaders()
    trainer.fit(build_module(lightning_package), train_loader, val_loader)
    return trainer


def test_training_and_validation_metrics_are_recorded(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    from ocms_integrations.lightning import OcmsCallback

    trainer = fit("lightning.pytorch", tmp_path, OcmsCallback())
    run = recorded_run(tmp_path / "ocms_metrics")

    total_steps = BATCHES_PER_EPOCH * EPOCHS
    assert trainer.global_step == total_steps
    logged_steps = list(range(LOG_EVERY, total_steps + 1, LOG_EVERY))
    validation_steps = [BATCHES_PER_EPOCH * epoch for epoch in range(1, EPOCHS + 1)]

    assert set(run.charts) == {"loss", "learning_rate", "epoch", "eval_score"}
    # Only the step value of train_loss: its _step/_epoch forks are not separate series.
    assert run.charts["loss"].y_axis == ["train_loss", "val_loss"]
    assert sorted(run.series("loss", "train_loss")) == logged_steps
    # The sanity check's validation is not recorded; each real validation once, at the
    # step it ran after, and never repeated at later training steps.
    assert sorted(run.series("loss", "val_loss")) == validation_steps
    assert sorted(run.series("eval_score", "accuracy")) == validation_steps
    final_accuracy = run.series("eval_score", "accuracy")[total_steps]
    assert final_accuracy == pytest.approx(float(trainer.callback_metrics["accuracy"]))
    assert final_accuracy > 0.7  # the classifier learned the sign of the first input
    # StepLR halves the rate each epoch: mid-epoch, the recorder saw the optimizer's
    # live value (at an epoch's last batch Lightning has already stepped the scheduler).
    rates = run.series("learning_rate", "learning_rate")
    mid_epoch_steps = [LOG_EVERY + BATCHES_PER_EPOCH * epoch for epoch in range(EPOCHS)]
    assert [rates[step] for step in mid_epoch_steps] == [0.5 / 2**epoch for epoch in range(EPOCHS)]
    epochs = run.series("epoch", "epoch")
    assert epochs[LOG_EVERY] == pytest.approx(LOG_EVERY / BATCHES_PER_EPOCH)
    assert epochs[total_steps] == pytest.approx(EPOCHS)


def test_same_callback_works_with_the_pytorch_lightning_package(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    import pytorch_lightning

    from ocms_integrations.lightning import OcmsCallback

    callback = OcmsCallback(output_dir=str(tmp_path / "elsewhere"))
    assert isinstance(callback, pytorch_lightning.Callback)
    # Two micro-batches per optimizer step: 4 steps per epoch, 8 in all.
    trainer = fit(
        "pytorch_lightning", tmp_path / "root", callback, epochs=2, accumulate_grad_batches=2
    )
    assert trainer.global_step == BATCHES_PER_EPOCH

    run = recorded_run(tmp_path / "elsewhere" / "ocms_metrics")
    # Once per logged optimizer step, not once per micro-batch that sees the same step.
    train_rows = [row for row in run.charts["loss"].rows if row[1] != ""]
    assert [int(row[0]) for row in train_rows] == [LOG_EVERY, 2 * LOG_EVERY]
    assert sorted(run.series("loss", "val_loss")) == [LOG_EVERY, 2 * LOG_EVERY]
    assert not (tmp_path / "root" / "ocms_metrics").exists()
