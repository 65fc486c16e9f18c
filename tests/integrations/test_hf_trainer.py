"""transformers.Trainer with OcmsCallback: a tiny BERT classifier trained from a config."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

TRAIN_STEPS = 30
LOGGING_STEPS = 5
EVAL_STEPS = 10


def token_classification_data(count: int, seed: int) -> list[dict[str, Any]]:
    """Random token sequences; the label is whether the first token is in the upper half
    of the vocabulary, so there is something to learn."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, 32, (count, 8), generator=generator)
    return [
        {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": torch.tensor(int(ids[0] >= 16)),
        }
        for ids in input_ids
    ]


def accuracy(prediction: Any) -> dict[str, float]:
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def train_tiny_bert(output_dir: Path, callbacks: list[Any]) -> Any:
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

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
        output_dir=str(output_dir),
        max_steps=TRAIN_STEPS,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        learning_rate=1e-3,
        logging_steps=LOGGING_STEPS,
        eval_strategy="steps",
        eval_steps=EVAL_STEPS,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(
        model=BertForSequenceClassification(config),
        args=args,
        train_dataset=token_classification_data(96, seed=1),
        eval_dataset=token_classification_data(32, seed=2),
        compute_metrics=accuracy,
        callbacks=callbacks,
    )
    trainer.train()
    return trainer


def test_trainer_logs_are_recorded_at_their_global_steps(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    from ocms_integrations.hf import OcmsCallback

    trainer = train_tiny_bert(tmp_path / "run", [OcmsCallback()])
    run = recorded_run(tmp_path / "run" / "ocms_metrics")

    assert set(run.charts) == {"loss", "learning_rate", "grad_norm", "epoch", "eval_score"}
    assert run.charts["loss"].y_axis == ["loss", "eval_loss"]
    assert run.charts["eval_score"].y_axis == ["eval_accuracy"]
    # The end-of-training summary (mean train_loss, runtime) is not a step's value.
    assert all("train" not in name for chart in run.charts.values() for name in chart.y_axis)

    logging_steps = list(range(LOGGING_STEPS, TRAIN_STEPS + 1, LOGGING_STEPS))
    eval_steps = list(range(EVAL_STEPS, TRAIN_STEPS + 1, EVAL_STEPS))
    history = trainer.state.log_history
    expected = {
        ("loss", "loss"): {e["step"]: e["loss"] for e in history if "loss" in e},
        ("loss", "eval_loss"): {e["step"]: e["eval_loss"] for e in history if "eval_loss" in e},
        ("learning_rate", "learning_rate"): {
            e["step"]: e["learning_rate"] for e in history if "learning_rate" in e
        },
        ("grad_norm", "grad_norm"): {
            e["step"]: e["grad_norm"] for e in history if "grad_norm" in e
        },
        ("eval_score", "eval_accuracy"): {
            e["step"]: e["eval_accuracy"] for e in history if "eval_accuracy" in e
        },
    }
    assert sorted(expected["loss", "loss"]) == logging_steps
    assert sorted(expected["loss", "eval_loss"]) == eval_steps
    for (chart, name), values in expected.items():
        assert run.series(chart, name) == pytest.approx(values, rel=1e-12), (chart, name)
    # Linear decay from 1e-3: the last logged rate is below the first.
    rates = run.series("learning_rate", "learning_rate")
    assert rates[LOGGING_STEPS] > rates[TRAIN_STEPS] >= 0
    epochs = run.series("epoch", "epoch")
    assert list(epochs.values()) == sorted(epochs.values())


def test_explicit_output_dir_and_evaluate_after_train_are_recorded(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    from ocms_integrations.hf import OcmsCallback

    elsewhere = tmp_path / "elsewhere"
    trainer = train_tiny_bert(tmp_path / "run", [OcmsCallback(output_dir=str(elsewhere))])
    # on_train_end finished the recorder; a later evaluate() must still be recorded.
    final = trainer.evaluate()

    assert not (tmp_path / "run" / "ocms_metrics").exists()
    run = recorded_run(elsewhere / "ocms_metrics")
    eval_loss = run.series("loss", "eval_loss")
    assert sorted(eval_loss) == [10, 20, 30]
    # evaluate() at the last step appends a second row for step 30: a re-logged step.
    assert run.charts["loss"].steps().count(TRAIN_STEPS) == 3
    assert run.charts["eval_score"].rows[-1] == [str(TRAIN_STEPS), repr(final["eval_accuracy"])]
