"""The Trainer-log mapping shared by the HF callback and the import of trainer_state.json:
pure Python, tested on log histories shaped like the ones transformers writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ocms_recorder import OcmsRecorder

from ocms_integrations.hf_mapping import (
    HF_CHART_GROUPS,
    SameStepMerger,
    entry_metrics,
    is_eval_score,
    rows_from_log_history,
)

# What Trainer.train() with eval_steps == logging_steps == 10, two eval sets, 20 steps,
# then trainer.evaluate() writes to state.log_history.
LOG_HISTORY = [
    {"loss": 0.7, "grad_norm": 1.5, "learning_rate": 1e-3, "epoch": 0.5, "step": 10},
    {"eval_a_loss": 0.69, "eval_a_accuracy": 0.5, "eval_a_runtime": 0.1,
     "eval_a_samples_per_second": 320.0, "eval_a_steps_per_second": 20.0, "epoch": 0.5,
     "step": 10},
    {"eval_b_loss": 0.68, "eval_b_accuracy": 0.55, "eval_b_runtime": 0.1, "epoch": 0.5,
     "step": 10},
    {"loss": 0.6, "grad_norm": 1.1, "learning_rate": 5e-4, "epoch": 1.0, "step": 20},
    {"eval_a_loss": 0.6, "eval_a_accuracy": 0.75, "eval_a_runtime": 0.1, "epoch": 1.0,
     "step": 20},
    {"train_runtime": 3.2, "train_samples_per_second": 50.0, "train_steps_per_second": 6.2,
     "total_flos": 120.0, "train_loss": 0.65, "epoch": 1.0, "step": 20},
    {"eval_a_loss": 0.6, "eval_a_accuracy": 0.75, "eval_a_runtime": 0.2, "epoch": 1.0,
     "step": 20},
]  # fmt: skip


def test_every_step_is_one_row_with_the_train_and_all_eval_entries_merged() -> None:
    rows = rows_from_log_history(LOG_HISTORY)

    assert [step for step, _ in rows] == [10, 20]
    assert rows[0][1] == {
        "loss": 0.7, "grad_norm": 1.5, "learning_rate": 1e-3, "epoch": 0.5,
        "eval_a_loss": 0.69, "eval_a_accuracy": 0.5, "eval_b_loss": 0.68,
        "eval_b_accuracy": 0.55,
    }  # fmt: skip
    # The summary and the eval runtimes are left out for the default charts.
    assert rows[1][1] == {
        "loss": 0.6, "grad_norm": 1.1, "learning_rate": 5e-4, "epoch": 1.0,
        "eval_a_loss": 0.6, "eval_a_accuracy": 0.75,
    }  # fmt: skip


def test_every_key_keeps_the_summary_and_runtimes_and_the_last_value_wins() -> None:
    rows = dict(rows_from_log_history(LOG_HISTORY, every_key=True))

    assert rows[10]["eval_a_samples_per_second"] == 320.0
    assert rows[20]["train_loss"] == 0.65
    assert rows[20]["total_flos"] == 120.0
    # evaluate() after train() re-logged step 20: its runtime is the one kept.
    assert rows[20]["eval_a_runtime"] == 0.2
    assert "step" not in rows[20]


def test_entries_without_a_usable_step_are_skipped() -> None:
    history = [
        {"loss": 1.0},
        {"loss": 2.0, "step": "3"},
        {"loss": 3.0, "step": -1},
        {"loss": 4.0, "step": 2.5},
        "not an entry",
        {"loss": 5.0, "step": 4},
    ]
    assert rows_from_log_history(history) == [(4, {"loss": 5.0})]  # type: ignore[arg-type]
    assert rows_from_log_history([]) == []


def test_merger_returns_a_step_once_the_next_one_arrives() -> None:
    merger = SameStepMerger()
    assert merger.add(5, {"loss": 1.0}) == []
    assert merger.add(5, {"eval_loss": 2.0}) == []
    assert merger.pending_step == 5
    assert merger.add(6, {"loss": 0.5}) == [(5, {"loss": 1.0, "eval_loss": 2.0})]
    assert merger.flush() == [(6, {"loss": 0.5})]
    assert merger.flush() == []
    assert merger.pending_step is None


def test_after_a_flush_the_same_step_keeps_only_what_changed() -> None:
    merger = SameStepMerger()
    merger.add(40, {"loss": 0.3, "eval_loss": 0.4, "epoch": 1.0})
    assert merger.flush() == [(40, {"loss": 0.3, "eval_loss": 0.4, "epoch": 1.0})]
    # evaluate() after train(): the same model gives the same values, nothing to write.
    assert merger.add(40, {"eval_loss": 0.4, "epoch": 1.0}) == []
    assert merger.flush() == []
    # Another eval set at that step is new: only its keys are written.
    merger.add(40, {"eval_other_loss": 0.9, "epoch": 1.0})
    assert merger.flush() == [(40, {"eval_other_loss": 0.9})]
    assert merger.add(40, {"eval_other_loss": 0.9}) == []
    assert merger.flush() == []


def test_eval_scores_and_timing_names() -> None:
    assert is_eval_score("eval_accuracy")
    assert is_eval_score("eval_a_f1")
    assert is_eval_score("accuracy")
    assert not is_eval_score("eval_loss")
    assert not is_eval_score("eval_a_runtime")
    assert not is_eval_score("eval_steps_per_second")
    assert entry_metrics({"train_runtime": 1.0, "train_loss": 0.5}) == {}


def test_rows_recorded_with_the_default_groups_make_a_clean_directory(tmp_path: Path) -> None:
    recorder = OcmsRecorder(tmp_path, chart_groups=HF_CHART_GROUPS, mirror_to_ocms=False)
    for step, metrics in rows_from_log_history(LOG_HISTORY):
        recorder.log(step=step, metrics=metrics)
    recorder.finish()

    layout = json.loads((tmp_path / "metrics.json").read_text())
    y_axes = {chart["name"]: chart["y_axis"] for chart in layout["charts"]}
    assert y_axes["loss"] == ["loss", "eval_a_loss", "eval_b_loss"]
    assert y_axes["eval_score"] == ["eval_a_accuracy", "eval_b_accuracy"]
    # One row per step in every chart.
    assert (tmp_path / "loss.csv").read_text() == "10,0.7,0.69,0.68\n20,0.6,0.6,\n"
    assert (tmp_path / "epoch.csv").read_text() == "10,0.5\n20,1.0\n"


def test_the_mapping_imports_no_framework() -> None:
    code = (
        "import sys, ocms_integrations.hf_mapping; "
        "print(sorted(m for m in ('transformers', 'torch') if m in sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert completed.stdout.strip() == "[]"
