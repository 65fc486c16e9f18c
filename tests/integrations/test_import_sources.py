"""`ocms-tui import` of logs written by a real HF Trainer and a real Lightning run: the
imported directory holds what the live integration recorded, value for value."""

from __future__ import annotations

import csv
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ocms_integrations.lightning_mapping import hook_names
from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from tests.integrations.test_hf_trainer import token_classification_data, train_tiny_bert
from tests.integrations.test_lightning_trainer import build_module, loaders
from tests.sources_support import run_cli, tree_state

pytestmark = pytest.mark.integration


def last_values(directory: Path) -> dict[tuple[str, str], dict[int, float]]:
    """(chart, y-axis name) -> step -> value, as a reader sees it (the last non-empty value
    at a step wins)."""
    model = RunModel(directory)
    model.load_settled()
    assert not [problem for problem in model.problems if problem.is_error]
    found: dict[tuple[str, str], dict[int, float]] = {}
    for chart in model.charts:
        steps = chart.steps().tolist()
        for index, name in enumerate(chart.y_axis):
            series = found.setdefault((chart.name, name), {})
            for step, value in zip(steps, chart.values(index).tolist(), strict=True):
                if not math.isnan(value):
                    series[step] = value
    return found


def test_trainer_state_imports_as_the_hf_callback_recorded_it_live(
    hf_run: Path, tmp_path: Path
) -> None:
    state = tmp_path / "checkpoint" / "trainer_state.json"
    state.parent.mkdir()
    shutil.copy(hf_run / "trainer_state.json", state)  # a checkpoint folder holds it alone

    out = tmp_path / "imported"
    result = run_cli("import", str(state.parent), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert check_directory(out).errors == 0
    live = last_values(hf_run / "ocms_metrics")
    imported = last_values(out)
    assert ("loss", "eval_b_loss") in imported and ("eval_score", "eval_b_accuracy") in imported
    assert imported.keys() == live.keys()
    for key, values in live.items():
        assert imported[key] == values, key  # exactly: JSON keeps every float's digits
    assert "left out" not in result.stdout  # summary and eval timing: not metrics by design


def test_lightning_csvlogger_run_imports_every_logged_value(tmp_path: Path) -> None:
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import CSVLogger

    trainer = pl.Trainer(
        default_root_dir=str(tmp_path),
        max_epochs=2,
        log_every_n_steps=2,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(str(tmp_path / "logs")),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    train_loader, val_loader = loaders()
    trainer.fit(build_module("lightning.pytorch"), train_loader, val_loader)
    run = tmp_path / "logs" / "lightning_logs"
    metrics_csv = run / "version_0" / "metrics.csv"
    with open(metrics_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    before = tree_state(tmp_path / "logs")

    out = tmp_path / "imported"
    result = run_cli("import", str(run), "--out", str(out))  # finds version_0/ itself
    assert result.returncode == 0, result.stderr
    assert tree_state(tmp_path / "logs") == before
    imported = last_values(out)
    charts = {chart for chart, _ in imported}
    assert {"loss", "epoch", "eval_score"} <= charts
    names = {name: chart for chart, name in imported}
    # Under the live callback's names (`train_loss_step` as `train_loss`); `epoch` becomes
    # its fractional epoch (compared with the hook's own in the tests below).
    hook_name = hook_names(rows[0])
    for column in rows[0]:
        if column in ("step", "epoch"):
            continue
        expected = {int(row["step"]): float(row[column]) for row in rows if row[column]}
        name = hook_name[column]
        assert imported[names[name], name] == expected, column
    # Lightning's stage names land where the live callback puts them (one mapping).
    accuracy = imported["eval_score", "val_acc"]
    assert len(accuracy) == 2  # one validation per epoch
    assert np.isclose(accuracy[max(accuracy)], float(trainer.callback_metrics["val_acc"]))


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")


# -- the same run, three ways: the live hook, the framework's TensorBoard, its own file ----


def assert_same_as_live(imported: Path, live: Path) -> None:
    """Same charts, same series, same steps; values equal up to float32 rounding (what a
    TensorBoard event keeps of a double)."""
    imported_values, live_values = last_values(imported), last_values(live)
    assert sorted(imported_values) == sorted(live_values)
    for key, values in live_values.items():
        assert sorted(imported_values[key]) == sorted(values), key
        for step, value in values.items():
            assert np.float32(imported_values[key][step]) == np.float32(value), (key, step)


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny HF Trainer run with the HF callback, TensorBoard (what report_to=
    "tensorboard" adds) and its trainer_state.json, written by the Trainer's own writer after
    a second eval set evaluated at the last step (same-step train, eval and eval_b entries).
    Trained once for the tests of this module that read it."""
    from transformers.integrations import TensorBoardCallback

    from ocms_integrations.hf import OcmsCallback

    root = tmp_path_factory.mktemp("hf")
    trainer = train_tiny_bert(root / "output", [OcmsCallback(), TensorBoardCallback()])
    trainer.evaluate(eval_dataset=token_classification_data(16, seed=3), metric_key_prefix="eval_b")
    trainer.state.save_to_json(str(root / "output" / "trainer_state.json"))
    return root / "output"


def test_hf_trainer_tensorboard_imports_as_the_hook_recorded_it(
    hf_run: Path, tmp_path: Path
) -> None:
    runs = hf_run / "runs"  # what one gives `tensorboard --logdir`
    (run_name,) = os.listdir(runs)
    out = tmp_path / "preview"
    result = run_cli("import", str(runs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert_same_as_live(out, hf_run / "ocms_metrics")
    assert run_name not in (out / "metrics.json").read_text()  # a label, not a series name
    assert "'train/total_flos': run summary logged once by train()" in result.stdout
    state = tmp_path / "from_state"
    assert (
        run_cli("import", str(hf_run / "trainer_state.json"), "--out", str(state)).returncode == 0
    )
    assert_same_as_live(state, hf_run / "ocms_metrics")
    # Opened directly: the same charts, named by the source, never the temp path.
    check = run_cli("--check", str(runs))
    assert check.returncode == 0
    assert check.stdout.startswith(f"{runs / run_name} (tensorboard): Octopus will show")
    assert f"{runs / run_name} (tensorboard): ok: 0 error(s), 0 warning" in check.stdout
    assert "ocms-tui-import" not in check.stdout + check.stderr


@pytest.fixture(scope="module")
def lightning_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny Lightning run with the Lightning callback, TensorBoardLogger, CSVLogger and
    a LearningRateMonitor."""
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    from ocms_integrations.lightning import OcmsCallback
    from tests.integrations.test_lightning_trainer import make_trainer

    root = tmp_path_factory.mktemp("lightning")
    trainer = make_trainer(
        "lightning.pytorch",
        root,
        [LearningRateMonitor(), OcmsCallback(output_dir=str(root / "hook"))],
        logger=[TensorBoardLogger(str(root / "tb")), CSVLogger(str(root / "csv"))],
    )
    train_loader, val_loader = loaders()
    trainer.fit(build_module("lightning.pytorch"), train_loader, val_loader)
    return root


@pytest.mark.parametrize("logs", ["tb", "tb/lightning_logs", "csv/lightning_logs"])
def test_lightning_logs_import_as_the_hook_recorded_them(
    lightning_run: Path, tmp_path: Path, logs: str
) -> None:
    out = tmp_path / "preview"
    result = run_cli("import", str(lightning_run / logs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "_version_0" not in (out / "metrics.json").read_text()
    assert_same_as_live(out, lightning_run / "hook" / "ocms_metrics")
    check = run_cli("--check", str(lightning_run / logs))
    assert check.returncode == 0 and "ocms-tui-import" not in check.stdout
    assert "version_0 (" in check.stdout and ": ok: 0 error(s), 0 warning(s)" in check.stdout
