"""The integrations' same-step merging with the values a diverged run logs."""

from __future__ import annotations

import numpy as np
import pytest

from ocms_integrations.base import SameStepMerger
from ocms_integrations.hf_mapping import rows_from_log_history

torch = pytest.importorskip("torch")


def test_a_nan_relogged_at_the_step_just_written_is_not_a_second_row() -> None:
    """evaluate() after train() re-logs the last step's eval metrics; a NaN eval_loss
    (a diverged run) compared unequal to itself and wrote the step a second time."""
    for nan in (float("nan"), np.float32("nan"), torch.tensor(float("nan"))):
        merger = SameStepMerger()
        merger.add(10, {"eval_loss": nan, "eval_accuracy": 0.5})
        assert [step for step, _ in merger.flush()] == [10]
        merger.add(10, {"eval_loss": nan, "eval_accuracy": 0.5})
        assert merger.flush() == []
        merger.add(10, {"eval_loss": 1.0})  # a real new value is still written
        assert merger.flush() == [(10, {"eval_loss": 1.0})]


def test_log_history_of_a_diverged_run() -> None:
    history = [
        {"loss": float("nan"), "step": 5},
        {"eval_loss": float("nan"), "step": 5},
        {"train_runtime": 1.0, "train_loss": float("nan"), "step": 5},
        {"eval_loss": float("nan"), "step": 5},
    ]
    rows = rows_from_log_history(history)
    assert [step for step, _ in rows] == [5]
    assert sorted(rows[0][1]) == ["eval_loss", "loss"]


def test_values_already_written_are_not_repeated_beside_new_keys_of_that_step() -> None:
    """train() ends (its row written), trainer.log({"custom": ...}), then evaluate()
    re-logs the same eval_loss and epoch: they joined the held custom row and every
    chart got a second, identical row at that step."""
    merger = SameStepMerger()
    merger.add(2, {"eval_loss": 0.69, "eval_accuracy": 0.625, "epoch": 0.17})
    assert len(merger.flush()) == 1
    merger.add(2, {"eval_custom": 0.5, "epoch": 0.17})
    merger.add(2, {"eval_loss": 0.69, "eval_accuracy": 0.625, "epoch": 0.17})
    assert merger.flush() == [(2, {"eval_custom": 0.5})]
    merger.add(2, {"eval_custom": 0.7})  # a key held, logged again: the later value wins
    merger.add(2, {"eval_custom": 0.5, "epoch": 0.17})
    assert merger.flush() == [(2, {"eval_custom": 0.5})]
