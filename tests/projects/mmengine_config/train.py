"""Builds an MMEngine Runner from configs/tiny.py and a tiny model."""

import argparse
import os

import torch
from mmengine.config import Config
from mmengine.model import BaseModel
from mmengine.runner import Runner

HERE = os.path.dirname(os.path.abspath(__file__))


class TinyClassifier(BaseModel):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def forward(self, inputs, labels, mode="tensor"):
        logits = self.layer(inputs)
        if mode == "loss":
            return {"loss_cls": torch.nn.functional.cross_entropy(logits, labels)}
        return logits.argmax(dim=1), labels


def main(work_dir: str) -> None:
    cfg = Config.fromfile(os.path.join(HERE, "configs", "tiny.py"))
    inputs = torch.randn(24, 4, generator=torch.Generator().manual_seed(0))
    samples = [{"inputs": x, "labels": int(x[0] > 0)} for x in inputs]
    runner = Runner(
        model=TinyClassifier(),
        work_dir=work_dir,
        train_dataloader=dict(
            dataset=samples,
            sampler=dict(type="DefaultSampler", shuffle=False),
            collate_fn=dict(type="default_collate"),
            batch_size=8,
        ),
        optim_wrapper=cfg.optim_wrapper,
        train_cfg=dict(by_epoch=True, max_epochs=cfg.train_cfg.max_epochs),
        default_hooks=cfg.default_hooks,
        custom_hooks=cfg.custom_hooks,
        randomness=cfg.randomness,
        default_scope="mmengine",
    )
    runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    main(parser.parse_args().output_dir)
