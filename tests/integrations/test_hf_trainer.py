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


def train_tiny_bert(
    output_dir: Path,
    callbacks: list[Any],
    two_eval_sets: bool = False,
    max_steps: int = TRAIN_STEPS,
    save_steps: int | None = None,
    resume_from_checkpoint: str | None = None,
    evaluate_first: bool = False,
) -> Any:
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
        max_steps=max_steps,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        learning_rate=1e-3,
        logging_steps=LOGGING_STEPS,
        eval_strategy="steps",
        eval_steps=EVAL_STEPS,
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    eval_data = token_classification_data(32, seed=2)
    trainer = Trainer(
        model=BertForSequenceClassification(config),
        args=args,
        train_dataset=token_classification_data(96, seed=1),
        eval_dataset={"first": eval_data, "second": eval_data[:16]} if two_eval_sets else eval_data,
        compute_metrics=accuracy,
        callbacks=callbacks,
    )
    # train() starts a new log_history: keep the baseline evaluation's entry beside it.
    trainer.baseline_log = [{**trainer.evaluate(), "step": 0}] if evaluate_first else []
    trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    return trainer


def assert_recorded_as_log_history_shows(run: Any, log_history: list[dict[str, Any]]) -> None:
    """Every value of every log_history entry sits in the chart at the entry's step (the
    later entry of a step wins for a key logged twice), and each step is one row."""
    expected: dict[str, dict[int, float]] = {}
    for entry in log_history:
        for key, value in entry.items():
            if key != "step":
                expected.setdefault(key, {})[entry["step"]] = value
    for chart_name, chart in run.charts.items():
        steps = chart.steps()
        assert len(steps) == len(set(steps)), f"{chart_name}: a step has two rows: {steps}"
        for name in chart.y_axis:
            assert run.series(chart_name, name) == pytest.approx(expected[name], rel=1e-12), name


def test_trainer_logs_are_recorded_at_their_global_steps(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from ocms_integrations.hf import OcmsCallback

    with caplog.at_level("WARNING", logger="ocms_recorder"):
        trainer = train_tiny_bert(tmp_path / "run", [OcmsCallback()])
    # The default charts leave runtimes out silently: no "not written" message.
    assert caplog.records == []
    run = recorded_run(tmp_path / "run" / "ocms_metrics")

    assert set(run.charts) == {"loss", "learning_rate", "grad_norm", "epoch", "eval_score"}
    assert run.charts["loss"].y_axis == ["loss", "eval_loss"]
    assert run.charts["eval_score"].y_axis == ["eval_accuracy"]
    # The default charts leave out the end-of-training summary (mean train_loss, runtime).
    assert all("train" not in name for chart in run.charts.values() for name in chart.y_axis)

    logging_steps = list(range(LOGGING_STEPS, TRAIN_STEPS + 1, LOGGING_STEPS))
    eval_steps = list(range(EVAL_STEPS, TRAIN_STEPS + 1, EVAL_STEPS))
    history = trainer.state.log_history
    assert sorted(run.series("loss", "loss")) == logging_steps
    assert sorted(run.series("loss", "eval_loss")) == eval_steps
    # One row per step: the eval entry of a step is merged into its training row.
    assert run.charts["loss"].steps() == logging_steps
    assert run.charts["epoch"].steps() == logging_steps
    assert_recorded_as_log_history_shows(run, history)
    # Linear decay from 1e-3: the last logged rate is below the first.
    rates = run.series("learning_rate", "learning_rate")
    assert rates[LOGGING_STEPS] > rates[TRAIN_STEPS] >= 0
    epochs = run.series("epoch", "epoch")
    assert list(epochs.values()) == sorted(epochs.values())


def test_two_eval_sets_and_evaluate_after_train_give_one_row_per_step(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    from ocms_integrations.hf import OcmsCallback

    elsewhere = tmp_path / "elsewhere"
    trainer = train_tiny_bert(
        tmp_path / "run", [OcmsCallback(output_dir=str(elsewhere))], two_eval_sets=True
    )
    # on_train_end finished the recorder; a later evaluate() must still be recorded, and
    # it re-logs the last step with the values that step already holds.
    final = trainer.evaluate()

    assert not (tmp_path / "run" / "ocms_metrics").exists()
    run = recorded_run(elsewhere / "ocms_metrics")
    logging_steps = list(range(LOGGING_STEPS, TRAIN_STEPS + 1, LOGGING_STEPS))
    assert run.charts["loss"].y_axis == ["loss", "eval_first_loss", "eval_second_loss"]
    assert run.charts["eval_score"].y_axis == ["eval_first_accuracy", "eval_second_accuracy"]
    for chart in ("loss", "epoch", "eval_score"):
        steps = run.charts[chart].steps()
        assert steps == sorted(set(steps)), (chart, steps)
    assert run.charts["loss"].steps() == logging_steps
    assert sorted(run.series("loss", "eval_second_loss")) == [10, 20, 30]
    assert run.series("eval_score", "eval_first_accuracy")[TRAIN_STEPS] == pytest.approx(
        final["eval_first_accuracy"], rel=1e-12
    )
    assert_recorded_as_log_history_shows(run, trainer.state.log_history)


def test_user_chart_groups_see_runtimes_and_the_train_summary(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from ocms_integrations.hf import OcmsCallback

    groups = [
        ("loss", lambda key: key.endswith("loss")),
        ("timing", lambda key: key.endswith(("_runtime", "_per_second"))),
        ("eval_score", lambda key: key == "eval_accuracy"),
        ("flos", lambda key: key == "total_flos"),
    ]
    with caplog.at_level("WARNING", logger="ocms_recorder"):
        trainer = train_tiny_bert(tmp_path, [OcmsCallback(chart_groups=groups)])
    # These groups put runtimes (seconds) beside throughputs (samples per second) on one
    # chart: on a fast machine they are over 1,000x apart and the check says so; the keys
    # no group takes are on the recorder's record of dropped keys.
    run = recorded_run(
        tmp_path / "ocms_metrics", allowed_warnings=frozenset({"mixed-scale", "dropped-metric"})
    )
    problems = run.check_report["problems"]
    assert all(p["chart"] == "timing" for p in problems if p["rule"] == "mixed-scale")

    assert run.charts["loss"].y_axis == ["loss", "eval_loss", "train_loss"]
    assert run.charts["timing"].y_axis == [
        "eval_runtime",
        "eval_samples_per_second",
        "eval_steps_per_second",
        "train_runtime",
        "train_samples_per_second",
        "train_steps_per_second",
    ]
    eval_steps = list(range(EVAL_STEPS, TRAIN_STEPS + 1, EVAL_STEPS))
    assert sorted(run.series("timing", "eval_runtime")) == eval_steps
    assert sorted(run.series("timing", "train_runtime")) == [TRAIN_STEPS]
    assert sorted(run.series("flos", "total_flos")) == [TRAIN_STEPS]
    assert_recorded_as_log_history_shows(run, trainer.state.log_history)
    # Keys no user group takes (learning_rate, grad_norm, epoch) are reported once each.
    unplaced = [
        record.getMessage() for record in caplog.records if "no chart" in record.getMessage()
    ]
    assert len(unplaced) == 3, unplaced


def test_fresh_run_into_an_old_directory_warns_once_and_resume_does_not(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from ocms_integrations.hf import OcmsCallback

    train_tiny_bert(tmp_path, [OcmsCallback()], max_steps=20, save_steps=10)
    first_rows = (tmp_path / "ocms_metrics" / "loss.csv").read_text()

    with caplog.at_level("INFO", logger="ocms_integrations"):
        train_tiny_bert(
            tmp_path,
            [OcmsCallback()],
            max_steps=TRAIN_STEPS,
            resume_from_checkpoint=str(tmp_path / "checkpoint-10"),
        )
    messages = [r for r in caplog.records if r.name == "ocms_integrations"]
    assert [r.levelname for r in messages] == ["INFO"]
    assert "up to step 20" in messages[0].getMessage()
    # The resumed run re-logs steps 15 and 20 after the first run's rows, nothing deleted.
    resumed = recorded_run(tmp_path / "ocms_metrics", frozenset({"step-regression"}))
    assert (tmp_path / "ocms_metrics" / "loss.csv").read_text().startswith(first_rows)
    assert resumed.charts["loss"].steps() == [5, 10, 15, 20, 15, 20, 25, 30]

    caplog.clear()
    with caplog.at_level("INFO", logger="ocms_integrations"):
        train_tiny_bert(tmp_path, [OcmsCallback()], max_steps=10)
    messages = [r for r in caplog.records if r.name == "ocms_integrations"]
    assert [r.levelname for r in messages] == ["WARNING"]
    assert "earlier run (up to step 30)" in messages[0].getMessage()
    assert "resume_from_checkpoint" in messages[0].getMessage()
    again = recorded_run(tmp_path / "ocms_metrics", frozenset({"step-regression"}))
    assert again.charts["loss"].steps()[-2:] == [5, 10]


def test_a_baseline_evaluate_before_train_is_no_earlier_run(
    tmp_path: Path, recorded_run: Callable[[Path], Any], caplog: pytest.LogCaptureFixture
) -> None:
    from ocms_integrations.hf import OcmsCallback

    with caplog.at_level("INFO", logger="ocms_integrations"):
        trainer = train_tiny_bert(tmp_path, [OcmsCallback()], max_steps=10, evaluate_first=True)
    assert [r for r in caplog.records if r.name == "ocms_integrations"] == []
    run = recorded_run(tmp_path / "ocms_metrics")
    assert run.charts["loss"].steps() == [0, 5, 10]
    assert_recorded_as_log_history_shows(run, trainer.baseline_log + trainer.state.log_history)
