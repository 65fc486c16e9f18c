"""An Accelerate loop that logs through accelerator.log."""

import argparse

import torch
from accelerate import Accelerator


def main(output_dir: str, steps: int) -> None:
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)
    inputs, targets = torch.randn(32, 4), torch.randn(32, 1)
    for step in range(steps):
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.log({"train_loss": loss.item(), "learning_rate": 0.05}, step=step)  # scan-site
    accelerator.end_training()
    print("wrote", output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    parser.add_argument("--steps", type=int, default=5)
    options = parser.parse_args()
    main(options.output_dir, options.steps)
