"""A plain PyTorch loop that prints its loss and builds a metrics dict."""

import argparse

import torch


def train(output_dir: str, steps: int) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = torch.randn(32, 4), torch.randn(32, 1)
    for step in range(1, steps + 1):
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        metrics = {  # scan-site
            "loss": loss.item(),
            "learning_rate": optimizer.param_groups[0]["lr"],
            "grad_norm": grad_norm.item(),
            "epoch": step / steps,
        }
        print(f"step {step} loss={loss.item():.4f}")  # scan-site
    print("done", output_dir, len(metrics))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    train(args.output_dir, args.steps)
