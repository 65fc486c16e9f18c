"""The MLflow, Lightning and trainer_state.json readers on real and broken files; fitting
series into charts; --groups; the sources package stays free of Textual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ocms_recorder import DEFAULT_CHART_GROUPS, MAX_CHARTS, MAX_SERIES_PER_CHART

from ocms_tui.follow.checker import check_directory
from ocms_tui.follow.model import RunModel
from ocms_tui.sources import SourceKind, detect_kind, read_source
from ocms_tui.sources.common import Series, SourceError
from ocms_tui.sources.fitting import GroupsSpecError, fit_series, parse_groups_spec
from tests.sources_support import REPO, run_cli, tree_state


def points(path: Path) -> dict[str, list[tuple[int, float]]]:
    return {
        each.name: list(zip(each.steps.tolist(), each.values.tolist(), strict=True))
        for each in read_source(path).series
    }


def imported(source: Path, out: Path, *extra: str) -> tuple[str, dict[str, dict[str, list]]]:
    """Run `ocms-tui import`, check the output, and read it back: chart -> y -> [(s, v)]."""
    result = run_cli("import", str(source), "--out", str(out), *extra)
    assert result.returncode == 0, result.stderr
    assert check_directory(out).errors == 0
    model = RunModel(out)
    model.load_settled()
    charts = {}
    for chart in model.charts:
        steps = chart.steps().tolist()
        charts[chart.name] = {
            name: [
                (s, v)
                for s, v in zip(steps, chart.values(index).tolist(), strict=True)
                if not np.isnan(v)
            ]
            for index, name in enumerate(chart.y_axis)
        }
    return result.stdout, charts


# -- MLflow ---------------------------------------------------------------------------


def write_mlflow_run(store: Path) -> Path:
    code = f"""
import mlflow
mlflow.set_tracking_uri({store.as_uri()!r})
with mlflow.start_run() as run:
    for step in range(4):
        mlflow.log_metric("loss", 1 / (step + 1), step=step)
        mlflow.log_metric("val/accuracy", 0.5 + step / 10, step=step)
    mlflow.log_metric("loss", 9.0, step=2)  # logged twice at one step: both kept
print(run.info.experiment_id, run.info.run_id)
"""
    environment = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment,
        timeout=180,
        check=True,
    )
    experiment, run = result.stdout.split()
    return store / experiment / run


def test_mlflow_file_store_written_by_mlflow(tmp_path: Path) -> None:
    pytest.importorskip("mlflow")
    store = tmp_path / "mlruns"
    run = write_mlflow_run(store)
    assert detect_kind(store) is SourceKind.MLFLOW
    found = points(store)  # the store holds one run: that one
    assert found["loss"] == [(0, 1.0), (1, 0.5), (2, 1 / 3), (3, 0.25), (2, 9.0)]
    assert found["val/accuracy"] == [(step, 0.5 + step / 10) for step in range(4)]
    before = tree_state(store)
    stdout, charts = imported(run, tmp_path / "out")
    assert tree_state(store) == before
    assert charts["loss"]["loss"][2:4] == [(2, 1 / 3), (2, 9.0)]  # both rows of step 2
    assert charts["val"]["val_accuracy"] == found["val/accuracy"]
    assert "'val/accuracy' -> val_accuracy  (grouped by name as 'val')" in stdout


def test_mlflow_broken_lines_and_several_runs(tmp_path: Path) -> None:
    run = tmp_path / "mlruns" / "1" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: abc\n")
    (run / "metrics" / "loss").write_text("1 0.5 0\nnot a line\n2 0.25 1\n3 0.1")  # last: live
    name = os.fsdecode(b"acc\xff")
    (run / "metrics" / name).write_text("1 0.9 0\n")
    source = read_source(run)
    assert points(run)["loss"] == [(0, 0.5), (1, 0.25)]
    assert points(run)[name] == [(0, 0.9)]
    assert source.incomplete_tail
    assert any("not 'timestamp value step'" in problem for problem in source.problems)
    second = tmp_path / "mlruns" / "1" / "def"
    (second / "metrics").mkdir(parents=True)
    (second / "meta.yaml").write_text("run_id: def\n")
    with pytest.raises(SourceError, match="2 MLflow runs"):
        read_source(tmp_path / "mlruns")


# -- Lightning CSVLogger ---------------------------------------------------------------


def test_lightning_sparse_csv_and_broken_rows(tmp_path: Path) -> None:
    csv_path = tmp_path / "version_0" / "metrics.csv"
    csv_path.parent.mkdir()
    csv_path.write_text(
        "epoch,step,train_loss,val_loss,val_acc\n"
        "0,9,0.9,,\n"
        "0,9,,0.8,0.5\n"
        "0,oops,0.1,,\n"
        "1,19,0.7,,\n"
        "1,19,,0.6,abc\n"
        "1,29,0.5"  # still being written
    )
    assert detect_kind(tmp_path) is SourceKind.LIGHTNING
    source = read_source(tmp_path)
    found = points(tmp_path)
    assert found["train_loss"] == [(9, 0.9), (19, 0.7)]
    assert found["val_loss"] == [(9, 0.8), (19, 0.6)]
    assert found["val_acc"] == [(9, 0.5)]
    assert found["epoch"] == [(9, 0.0), (9, 0.0), (19, 1.0), (19, 1.0)]
    assert source.incomplete_tail
    assert any("no integer step" in problem for problem in source.problems)
    assert any("'abc' is not a number" in problem for problem in source.problems)


def test_csv_without_step_column_is_foreign(tmp_path: Path) -> None:
    (tmp_path / "metrics.csv").write_text("a,b\n1,2\n")
    result = run_cli("import", str(tmp_path / "metrics.csv"), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "no 'step' column" in result.stderr
    assert not (tmp_path / "o").exists()


# -- trainer_state.json -----------------------------------------------------------------


def test_trainer_state_broken_json_and_missing_log_history(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text('{"log_history": [')
    result = run_cli("import", str(tmp_path), "--out", str(tmp_path.parent / "o1"))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    (tmp_path / "trainer_state.json").write_text('{"global_step": 3}')
    result = run_cli("import", str(tmp_path), "--out", str(tmp_path.parent / "o1"))
    assert result.returncode == 2 and "no log_history" in result.stderr
    assert not (tmp_path.parent / "o1").exists()


def test_trainer_state_of_the_latest_checkpoint(tmp_path: Path) -> None:
    for step in (5, 10):
        checkpoint = tmp_path / f"checkpoint-{step}"
        checkpoint.mkdir()
        history = [{"loss": 1.0 / s, "step": s} for s in range(1, step + 1)]
        (checkpoint / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    assert detect_kind(tmp_path) is SourceKind.HF
    assert [step for step, _ in points(tmp_path)["loss"]] == list(range(1, 11))


# -- fitting ---------------------------------------------------------------------------


def named(*names: str) -> list[Series]:
    return [Series(name, np.array([0]), np.array([1.0])) for name in names]


def test_default_groups_first_then_the_sources_own_structure() -> None:
    fit = fit_series(
        named(
            "loss/train",
            "grad_norm",
            "loss/eval",
            "acc/train",
            "acc/eval",
            "val_f1",
            "train_f1_epoch",
            "learning_rate",
        ),
        DEFAULT_CHART_GROUPS,
    )
    charts = {chart.name: chart.keys for chart in fit.charts}
    assert list(charts) == ["loss", "learning_rate", "grad_norm", "acc", "f1"]
    assert charts["loss"] == ("loss/train", "loss/eval")
    assert charts["f1"] == ("val_f1", "train_f1_epoch")
    assert not fit.left_out


def test_more_groups_than_charts_share_an_other_chart_nothing_silently_dropped() -> None:
    names = ["loss", *(f"metric{index}/x" for index in range(10))]
    fit = fit_series(named(*names), DEFAULT_CHART_GROUPS)
    assert len(fit.charts) == MAX_CHARTS
    assert fit.charts[-1].name == "other"
    assert fit.charts[-1].keys == tuple(f"metric{index}/x" for index in range(4, 10))
    assert {placement.series for placement in fit.placements} == set(names)


def test_a_chart_holds_at_most_the_series_limit_the_rest_is_reported() -> None:
    names = [f"layer{index}_loss" for index in range(MAX_SERIES_PER_CHART + 3)]
    fit = fit_series(named(*names), DEFAULT_CHART_GROUPS)
    assert len(fit.charts[0].keys) == MAX_SERIES_PER_CHART
    assert [placement.series for placement in fit.left_out] == names[-3:]
    assert "already has 1000 series" in fit.left_out[0].reason


def test_groups_spec() -> None:
    groups = parse_groups_spec("losses=*loss*; scores=acc*,f1")
    fit = fit_series(named("train_loss", "acc_top1", "f1", "lr"), groups, use_structure=False)
    assert {chart.name: chart.keys for chart in fit.charts} == {
        "losses": ("train_loss",),
        "scores": ("acc_top1", "f1"),
    }
    assert [(each.series, each.reason) for each in fit.left_out] == [
        ("lr", "matches no chart group")
    ]
    for bad in ("", "a b=x", "a=x;a=y", "noequals", ";".join(f"c{i}=x" for i in range(7))):
        with pytest.raises(GroupsSpecError):
            parse_groups_spec(bad)


def test_groups_option_end_to_end(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("step,train_loss,val_acc,lr\n1,0.5,0.1,0.01\n2,0.4,,0.01\n")
    stdout, charts = imported(run, tmp_path / "out", "--groups", "all=*")
    assert charts == {
        "all": {
            "train_loss": [(1, 0.5), (2, 0.4)],
            "val_acc": [(1, 0.1)],
            "lr": [(1, 0.01), (2, 0.01)],
        }
    }
    assert "'lr' -> lr  (group 'all')" in stdout
    result = run_cli("import", str(run), "--out", str(tmp_path / "o2"), "--groups", "bad name=x")
    assert result.returncode == 2 and "chart name" in result.stderr


def test_sources_do_not_import_textual() -> None:
    code = (
        "import sys, ocms_tui.sources, ocms_tui.sources.fitting, ocms_tui.sources.writer, "
        "ocms_tui.sources.import_command; "
        "assert 'textual' not in sys.modules and 'rich' not in sys.modules"
    )
    environment = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'recorder'}"}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env=environment)
