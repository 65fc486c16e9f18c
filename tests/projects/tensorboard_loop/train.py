"""A loop that writes TensorBoard scalars under `train/` tags."""

import argparse
import logging

import torch
from torch.utils.tensorboard import SummaryWriter

logger = logging.getLogger(__name__)


class Runner:
    def __init__(self, output_dir: str) -> None:
        self.output_dir = output_dir
        self.writer = SummaryWriter(log_dir=output_dir + "/tb")

    def fit(self, steps: int) -> None:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        inputs, targets = torch.randn(32, 4), torch.randn(32, 1)
        for global_step in range(steps):
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            self.writer.add_scalar("train/loss", loss.item(), global_step)  # scan-site
            self.writer.add_scalar("train/lr", optimizer.param_groups[0]["lr"], global_step)  # scan-site
            logger.info("iter %d loss: %.4f", global_step, loss.item())  # scan-site
        self.writer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    Runner(args.output_dir).fit(args.steps)
