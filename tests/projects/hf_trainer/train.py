"""A transformers Trainer run: a tiny BERT classifier on random tokens."""

import argparse

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


def dataset(count: int) -> list:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 32, (count, 8), generator=generator)
    return [
        {"input_ids": row, "attention_mask": torch.ones_like(row), "labels": int(row[0] >= 16)}
        for row in ids
    ]


def main(output_dir: str, steps: int) -> None:
    config = BertConfig(
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    args = TrainingArguments(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=8,
        logging_steps=2,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
    )
    trainer = Trainer(  # scan-site
        model=BertForSequenceClassification(config),
        args=args,
        train_dataset=dataset(64),
    )
    result = trainer.train()
    trainer.log_metrics("train", result.metrics)  # scan-site


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="output")
    parser.add_argument("--steps", type=int, default=6)
    options = parser.parse_args()
    main(options.output_dir, options.steps)
