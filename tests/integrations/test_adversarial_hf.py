"""OcmsCallback in a real Trainer fed what `trainer.log()` accepts but a metric name is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations.test_hf_trainer import train_tiny_bert

pytestmark = pytest.mark.integration


def test_trainer_log_with_keys_that_are_not_strings_does_not_stop_training(
    tmp_path: Path,
) -> None:
    """trainer.log({7: ...}) (the Trainer and its printer take it) raised AttributeError
    out of the callback's eval-name test, into the user's training."""
    from ocms_integrations.hf import OcmsCallback

    trainer = train_tiny_bert(
        tmp_path, [OcmsCallback(output_dir=str(tmp_path / "ocms"))], max_steps=2
    )
    trainer.log({7: 1.0, None: 2.0, "eval_custom": 0.5})
    trainer.evaluate()  # an evaluation outside training writes the held row
    assert trainer.state.log_history[-2][7] == 1.0
    rows = (tmp_path / "ocms" / "ocms_metrics" / "eval_score.csv").read_text().splitlines()
    assert rows[-1].split(",")[0] == str(trainer.state.global_step)
    assert "0.5" in rows[-1].split(",")


def test_custom_log_then_evaluate_after_train_gives_no_second_identical_row(
    tmp_path: Path,
) -> None:
    from ocms_integrations.hf import OcmsCallback

    trainer = train_tiny_bert(tmp_path, [OcmsCallback(output_dir=str(tmp_path))], max_steps=2)
    directory = tmp_path / "ocms_metrics"
    before = {path.name: path.read_text() for path in directory.glob("*.csv")}
    trainer.log({"eval_custom": 0.5})
    trainer.evaluate()  # the same model: the same eval_loss, eval_accuracy and epoch
    after = {path.name: path.read_text() for path in directory.glob("*.csv")}
    assert {name: text for name, text in after.items() if name != "eval_score.csv"} == {
        name: text for name, text in before.items() if name != "eval_score.csv"
    }
    added = after["eval_score.csv"].splitlines()[len(before["eval_score.csv"].splitlines()) :]
    assert added == [f"{trainer.state.global_step},,0.5"]
