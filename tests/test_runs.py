"""Several runs: discovery under a parent, names, status, and --check over all of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ocms_tui.cli import main
from ocms_tui.follow.model import RunModel
from ocms_tui.follow.runs import (
    RunStatus,
    find_metric_directories,
    find_runs,
    name_runs,
    run_status,
)

DATA = Path(__file__).parent / "data"


def _make_runs(parent: Path, cases: dict[str, str]) -> None:
    for run, case in cases.items():
        shutil.copytree(DATA / case, parent / run / "ocms_metrics")


def test_finds_every_run_under_a_parent_and_names_them_relative(tmp_path: Path) -> None:
    _make_runs(tmp_path, {"run_1": "clean", "run_2": "row-width", "deep/a/run_3": "clean"})
    (tmp_path / ".hidden" / "x").mkdir(parents=True)
    shutil.copytree(DATA / "clean", tmp_path / ".hidden" / "x" / "ocms_metrics")
    shutil.copytree(DATA / "clean", tmp_path / "node_modules" / "ocms_metrics")
    runs = find_runs([tmp_path])
    assert name_runs(runs) == ["deep/a/run_3", "run_1", "run_2"]
    assert all((directory / "metrics.json").exists() for directory in runs)


def test_search_depth_and_size_are_bounded(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d" / "e" / "f"
    shutil.copytree(DATA / "clean", deep)
    assert find_metric_directories(tmp_path) == []
    assert find_metric_directories(tmp_path, max_depth=6) == [deep]
    for index in range(50):
        (tmp_path / f"wide_{index:02d}").mkdir()
    assert find_metric_directories(tmp_path, max_depth=6, max_directories=20) == []


def test_symlinked_directories_are_not_entered(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path / "real" / "ocms_metrics")
    (tmp_path / "real" / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert find_runs([tmp_path]) == [tmp_path / "real" / "ocms_metrics"]


def test_a_run_directory_or_a_missing_one_is_taken_as_it_is(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path / "run_1" / "ocms_metrics")
    single = find_runs([tmp_path / "run_1" / "ocms_metrics"])
    assert name_runs(single) == ["run_1/ocms_metrics"]
    missing = find_runs([tmp_path / "later" / "ocms_metrics"])
    assert missing == [tmp_path / "later" / "ocms_metrics"]


def test_the_same_run_named_twice_is_one_run(tmp_path: Path) -> None:
    shutil.copytree(DATA / "clean", tmp_path / "r" / "ocms_metrics")
    assert find_runs([tmp_path, tmp_path / "r" / "ocms_metrics"]) == [
        tmp_path / "r" / "ocms_metrics"
    ]


def test_names_are_relative_to_the_common_parent_without_a_shared_last_part() -> None:
    assert name_runs([Path("/x/out/a/ocms_metrics"), Path("/x/out/b/ocms_metrics")]) == ["a", "b"]
    # The recorder's default directory name says nothing, shared or not.
    assert name_runs([Path("/x/a/ocms_metrics"), Path("/x/b/metrics")]) == ["a", "b/metrics"]
    assert name_runs([Path("/x/run_1/ocms_metrics")]) == ["run_1/ocms_metrics"]
    assert name_runs([Path("/x/a"), Path("/y/a")]) == ["x", "y"]
    assert name_runs([Path("/x"), Path("/x/y")]) == ["x", "y"]


def test_status_follows_the_last_write(tmp_path: Path) -> None:
    model = RunModel(tmp_path / "nothing")
    model.refresh()
    assert run_status(model) is RunStatus.WAITING
    shutil.copytree(DATA / "clean", tmp_path / "run")
    model = RunModel(tmp_path / "run")
    model.refresh()
    assert model.last_write is not None
    assert run_status(model, now=model.last_write + 1) is RunStatus.LIVE
    assert run_status(model, now=model.last_write + 60) is RunStatus.IDLE
    assert run_status(model, now=model.last_write + 3600) is RunStatus.FINISHED


def test_check_of_several_runs_reports_each_and_exits_with_the_worst(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _make_runs(tmp_path, {"run_1": "clean", "run_2": "row-width", "run_3": "orphan-csv"})
    assert main(["--check", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "run_2/ocms_metrics/loss.csv:2: error row-width" in text
    assert text.count(": ok:") == 2 and "3 run(s) checked, 1 failed" in text

    assert main(["--check", str(tmp_path), "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    assert [run["ok"] for run in document["runs"]] == [True, False, True]

    assert main(["--check", str(tmp_path / "run_1"), str(tmp_path / "run_3"), "--strict"]) == 1
    assert main(["--check", str(tmp_path / "run_1"), str(tmp_path / "missing")]) == 2
    capsys.readouterr()
