"""Real training runs for the health corpus, one per framework hook:
`python bench/health_corpus_runs.py [hf] [lightning] [plain]` trains a tiny model on CPU
(about a minute each) with the project's own hook, and stores each series of the ocms
directory it wrote as a curve of tests/data/health_corpus/curves/ (steps and values only),
listed in SOURCES.tsv as made by this script.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from health_corpus import CORPUS, CURVES

STEPS = 400


def plain(output_dir: Path) -> Path:
    """A plain PyTorch loop with OcmsRecorder: regression with SGD and a step decay."""
    import torch
    from ocms_recorder import OcmsRecorder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=150, gamma=0.3)
    inputs = torch.randn(4096, 8)
    targets = inputs @ torch.randn(8, 1) + 0.3 * torch.randn(4096, 1)
    recorder = OcmsRecorder.from_output_dir(str(output_dir))
    for step in range(1, STEPS + 1):
        batch = torch.randint(0, len(inputs), (32,))
        loss = torch.nn.functional.mse_loss(model(inputs[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        schedule.step()
        metrics = {"loss": loss.item(), "grad_norm": grad_norm.item()}
        metrics["learning_rate"] = optimizer.param_groups[0]["lr"]
        recorder.log(step=step, metrics=metrics)
    recorder.finish()
    return output_dir / "ocms_metrics"


def hf(output_dir: Path) -> Path:
    """A transformers Trainer with OcmsCallback: a tiny BERT classifier, warm-up + linear."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    from ocms_integrations.hf import OcmsCallback

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 32, (2048, 8), generator=generator)
    rows = [
        {"input_ids": row, "attention_mask": torch.ones_like(row), "labels": int(row[0] >= 16)}
        for row in ids
    ]
    config = BertConfig(
        vocab_size=32,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
        num_labels=2,
    )
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=STEPS,
        per_device_train_batch_size=16,
        learning_rate=1e-3,
        warmup_steps=40,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
    )
    trainer = Trainer(
        model=BertForSequenceClassification(config),
        args=args,
        train_dataset=rows,
        callbacks=[OcmsCallback()],
    )
    trainer.train()
    return output_dir / "ocms_metrics"


def lightning(output_dir: Path) -> Path:
    """A Lightning module with OcmsCallback, logging every step."""
    import lightning as pl
    import torch

    from ocms_integrations.lightning import OcmsCallback

    class Regression(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)
            )

        def training_step(self, batch, _index):  # type: ignore[no-untyped-def]
            inputs, targets = batch
            loss = torch.nn.functional.mse_loss(self.net(inputs), targets)
            self.log("loss", loss)
            return loss

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.Adam(self.parameters(), lr=3e-3)

    torch.manual_seed(0)
    inputs = torch.randn(STEPS * 16, 8)
    targets = torch.sin(inputs.sum(dim=1, keepdim=True)) + 0.1 * torch.randn(STEPS * 16, 1)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(inputs, targets), batch_size=16, shuffle=True
    )
    trainer = pl.Trainer(
        max_epochs=1,
        log_every_n_steps=1,
        default_root_dir=str(output_dir),
        callbacks=[OcmsCallback()],
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=pl.pytorch.loggers.CSVLogger(str(output_dir)),
        accelerator="cpu",
    )
    trainer.fit(Regression(), data)
    return output_dir / "ocms_metrics"


def store(framework: str, directory: Path) -> list[str]:
    from ocms_tui.follow.model import RunModel

    model = RunModel(directory, settle_seconds=0.0, health=False)
    model.load_settled()
    written = []
    for chart in model.charts:
        for index, name in enumerate(chart.y_axis):
            values = chart.values(index)
            keep = np.isfinite(values)
            if keep.sum() < 20 or name == "epoch":
                continue
            target = CURVES / f"ocms_{framework}_hook__{name}.csv"
            rows = zip(chart.steps()[keep].tolist(), values[keep].tolist(), strict=True)
            target.write_text("".join(f"{step},{value!r}\n" for step, value in rows))
            written.append(target.name)
    with (CORPUS / "SOURCES.tsv").open("a") as handle:
        for name in written:
            handle.write(f"{name}\t(this project)\tbench/health_corpus_runs.py {framework}\n")
    return written


RUNS = {"plain": plain, "hf": hf, "lightning": lightning}


def main(names: list[str]) -> int:
    for name in names or list(RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            for written in store(name, RUNS[name](Path(scratch))):
                print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
