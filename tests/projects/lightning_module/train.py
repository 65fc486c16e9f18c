"""A Lightning module that logs its loss with self.log."""

import argparse

import lightning as L
import torch


class TinyRegressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        inputs, targets = batch
        loss = torch.nn.functional.mse_loss(self.layer(inputs), targets)
        self.log("train_loss", loss)  # scan-site
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(output_dir: str, steps: int) -> None:
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    trainer = L.Trainer(  # scan-site
        default_root_dir=output_dir,
        max_steps=steps,
        log_every_n_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(TinyRegressor(), torch.utils.data.DataLoader(data, batch_size=8))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    parser.add_argument("--steps", type=int, default=6)
    options = parser.parse_args()
    main(options.output_dir, options.steps)
