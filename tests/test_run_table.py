"""`ocms-tui runs DIR`: one row per run, ranked by a series; the real CLI as a subprocess on
real sweeps written by the recorder, with broken runs among them."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from ocms_recorder import OcmsRecorder, write_layout
from test_cli_paths import run_cli

from ocms_tui.follow.model import RunModel
from ocms_tui.follow.report import ExitCode
from ocms_tui.follow.run_table import (
    band,
    find_series,
    load_run,
    rank_table,
    series_labels,
    summarize_run,
)
from ocms_tui.follow.runs import find_runs
from ocms_tui.format.ranking import SortKey

# The quick suite runs the command for sorting, grouping and hostile names; the ranking
# itself is tested in-process here and in test_ranking.py. The command's other cases run in
# the slow suite (marked below).


def write_run(directory: Path, losses: list[float], accuracy: list[float] | None = None) -> None:
    """A run whose loss (and accuracy, when given) takes these values at steps 0, 10, 20..."""
    recorder = OcmsRecorder(log_dir=str(directory))
    for index, loss in enumerate(losses):
        metrics = {"loss": loss}
        if accuracy is not None:
            metrics["accuracy"] = accuracy[index]
        recorder.log(step=index * 10, metrics=metrics)
    recorder.finish()


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """Four runs: final losses 0.5, 0.2, 0.9, 0.3 (best 0.2 is b); accuracies the other way."""
    finals = {"a": 0.5, "b": 0.2, "c": 0.9, "d": 0.3}
    for name, final in finals.items():
        losses = [2.0, 1.0, final + 0.05, final]
        write_run(tmp_path / "sweep" / f"run_{name}", losses, [0.1, 0.5, 0.9, 1 - final])
    return tmp_path / "sweep"


def names_in_json(output: str) -> list[str]:
    return [run["name"] for run in json.loads(output)["runs"]]


def test_sort_by_loss_puts_the_lowest_first_and_accuracy_the_highest(sweep: Path) -> None:
    by_loss = run_cli("runs", str(sweep), "--sort", "loss", "--format", "json")
    assert by_loss.returncode == ExitCode.OK, by_loss.stderr
    assert names_in_json(by_loss.stdout) == ["run_b", "run_d", "run_a", "run_c"]
    by_accuracy = run_cli("runs", str(sweep), "--sort", "accuracy", "--format", "json")
    assert names_in_json(by_accuracy.stdout) == ["run_b", "run_d", "run_a", "run_c"]
    document = json.loads(by_loss.stdout)
    assert document["sort"] == {
        "series": "loss",
        "order": "lowest first",
        "direction_known": True,
    }
    first = document["runs"][0]
    assert first["rows"] == 8 and first["last_step"] == 30 and first["status"] in ("live", "idle")
    loss = next(series for series in first["series"] if series["name"] == "loss")
    assert loss == {
        "chart": "loss",
        "name": "loss",
        "latest": 0.2,
        "latest_step": 30,
        "min": 0.2,
        "max": 2.0,
        "better": "lower",
        "best": 0.2,
        "best_step": 30,
    }
    accuracy = next(series for series in first["series"] if series["name"] == "accuracy")
    assert (
        accuracy["better"] == "higher" and accuracy["best"] == 0.9 and accuracy["best_step"] == 20
    )


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_a_sign_forces_the_order_and_top_keeps_the_first(sweep: Path) -> None:
    highest = run_cli("runs", str(sweep), "--sort=-loss", "--top", "2", "--format", "json")
    assert names_in_json(highest.stdout) == ["run_c", "run_a"]
    lowest = run_cli("runs", str(sweep), "--sort=+accuracy", "--format", "json")
    assert names_in_json(lowest.stdout) == ["run_c", "run_a", "run_d", "run_b"]
    assert json.loads(highest.stdout)["total_runs"] == 4


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_text_is_a_table_with_the_sort_series_columns(sweep: Path) -> None:
    result = run_cli("runs", str(sweep), "--sort", "loss", "--top", "3")
    lines = result.stdout.splitlines()
    assert lines[0] == f"4 runs under {sweep} · by loss (lowest first) · top 3"
    assert lines[1].split() == [
        "#", "run", "status", "rows", "step", "loss", "latest", "min", "max", "best", "@step",
        "problems",
    ]  # fmt: skip
    assert [line.split()[1] for line in lines[2:]] == ["run_b", "run_d", "run_a"]
    assert lines[2].split()[3:] == ["8", "30", "0.2", "0.2", "2", "0.2", "@30"]


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_csv_has_every_series_of_every_run(sweep: Path) -> None:
    result = run_cli("runs", str(sweep), "--sort", "loss", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["name"] for row in rows] == ["run_b", "run_d", "run_a", "run_c"]
    assert rows[0]["loss:latest"] == "0.2" and rows[0]["loss:best_step"] == "30"
    assert rows[0]["accuracy:max"] == "0.9" and rows[0]["rank"] == "1"


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_an_unknown_direction_sorts_lowest_first_and_says_how_to_choose(tmp_path: Path) -> None:
    for name, rate in (("x", 3e-4), ("y", 1e-4)):
        recorder = OcmsRecorder(log_dir=str(tmp_path / name))
        recorder.log(step=1, metrics={"learning_rate": rate})
        recorder.finish()
    result = run_cli("runs", str(tmp_path), "--sort", "learning_rate")
    assert "learning_rate (lowest first; the name says nothing, so +learning_rate" in result.stdout
    assert [line.split()[1] for line in result.stdout.splitlines()[2:]] == ["y", "x"]


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_broken_runs_show_their_problem_and_the_others_stay_ranked(sweep: Path) -> None:
    bad_json = sweep / "run_badjson"
    bad_json.mkdir()
    (bad_json / "metrics.json").write_text("{not json", encoding="utf-8")
    truncated = sweep / "run_truncated"
    write_run(truncated, [0.4, 0.1])
    with open(truncated / "loss.csv", "ab") as file:
        file.write(b"20,0.0")  # a row cut off mid-write: not read, said
    unreadable = sweep / "run_unreadable"
    write_run(unreadable, [0.05])
    os.chmod(unreadable / "loss.csv", 0)
    try:
        result = run_cli("runs", str(sweep), "--sort", "loss", "--format", "json")
    finally:
        os.chmod(unreadable / "loss.csv", 0o644)
    runs = json.loads(result.stdout)["runs"]
    names = [run["name"] for run in runs]
    readable_as_root = os.geteuid() == 0
    expected = ["run_truncated", "run_b", "run_d", "run_a", "run_c"]
    if readable_as_root:
        expected.insert(0, "run_unreadable")
    assert names[: len(expected)] == expected
    by_name = {run["name"]: run for run in runs}
    assert by_name["run_truncated"]["rows"] == 2  # the rows before the cut are kept
    assert {p["rule"] for p in by_name["run_truncated"]["problems"]} == {"partial-line"}
    assert by_name["run_badjson"]["problems"][0]["rule"] == "invalid-json"
    assert by_name["run_badjson"]["sort_value"] is None
    assert by_name["run_badjson"]["sort_note"] == "no series loss: sorted last"
    text = run_cli("runs", str(sweep), "--sort", "loss").stdout
    badjson_line = next(line for line in text.splitlines() if "run_badjson" in line)
    assert "— (no loss)" in badjson_line and "1 error: metrics.json: not valid JSON" in badjson_line
    assert text.splitlines()[-1].split()[1] in ("run_badjson", "run_unreadable")


def test_a_run_that_vanishes_between_search_and_read_is_a_row_with_its_problem(
    sweep: Path,
) -> None:
    directories = find_runs([sweep])
    shutil.rmtree(directories[1])
    summaries = [load_run(directory, directory.name) for directory in directories]
    gone = summaries[1]
    assert gone.rows == 0 and gone.series == () and gone.status == "waiting"
    assert [problem.rule.value for problem in gone.problems] == ["missing-dir"]
    ranked = rank_table(summaries, SortKey.parse("loss"))
    assert [run.name for run in ranked.runs] == ["run_d", "run_a", "run_c", "run_b"]


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_runs_with_different_charts_rank_by_the_series_they_share(tmp_path: Path) -> None:
    write_run(tmp_path / "with_accuracy", [1.0, 0.7], [0.3, 0.6])
    recorder = OcmsRecorder(log_dir=str(tmp_path / "grad_only"))
    recorder.log(step=0, metrics={"grad_norm": 3.0, "loss": 0.4})
    recorder.finish()
    result = run_cli("runs", str(tmp_path), "--sort", "accuracy", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["name"] for row in rows] == ["with_accuracy", "grad_only"]
    assert rows[1]["accuracy:latest"] == "" and rows[1]["grad_norm:latest"] == "3.0"
    by_loss = run_cli("runs", str(tmp_path), "--sort", "loss", "--format", "json")
    assert names_in_json(by_loss.stdout) == ["grad_only", "with_accuracy"]


def test_a_series_name_two_charts_share_is_labelled_with_its_chart(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    directory.mkdir()
    write_layout(directory, [("train", ["loss", "accuracy"]), ("eval", ["loss"])])
    (directory / "train.csv").write_text("0,1.0,0.5\n", encoding="utf-8")
    (directory / "eval.csv").write_text("0,2.0\n", encoding="utf-8")
    model = RunModel(directory)
    model.load_settled()
    summary = summarize_run("run", model)
    labels = [label for label, _, _ in series_labels([summary])]
    assert labels == ["train/loss", "accuracy", "eval/loss"]
    found = find_series(model.charts, "eval/loss")
    assert found is not None and found[0].name == "eval"
    assert summary.find("loss") is not None and summary.find("loss").latest == 1.0
    assert summary.find("eval/loss") is not None and summary.find("eval/loss").latest == 2.0


def test_best_step_is_of_the_latest_pass_after_a_restart(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    write_run(directory, [3.0, 0.1, 2.0])  # steps 0, 10, 20
    with open(directory / "loss.csv", "a", encoding="utf-8") as file:
        file.write("5,1.5\n15,0.9\n25,1.2\n")  # started again at step 5
    model = RunModel(directory)
    model.load_settled()
    loss = summarize_run("run", model).find("loss")
    assert loss is not None
    assert (loss.best, loss.best_step, loss.latest, loss.minimum) == (0.9, 15, 1.2, 0.9)


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_a_blown_up_run_sorts_after_finite_ones_and_json_stays_strict(tmp_path: Path) -> None:
    write_run(tmp_path / "fine", [1.0, 0.5])
    write_run(tmp_path / "exploded", [1.0, math.inf])
    result = run_cli("runs", str(tmp_path), "--sort", "loss", "--format", "json")
    document = json.loads(result.stdout, parse_constant=lambda name: pytest.fail(name))
    assert [run["name"] for run in document["runs"]] == ["fine", "exploded"]
    assert document["runs"][1]["sort_value"] == "inf"


def test_names_cannot_act_on_a_terminal_or_a_spreadsheet(tmp_path: Path) -> None:
    write_run(tmp_path / "=HYPERLINK(x)", [1.0])
    write_run(tmp_path / "evil\x1b[31mred", [2.0])
    text = run_cli("runs", str(tmp_path), "--sort", "loss")
    assert "\x1b" not in text.stdout and "evil\\x1b[31mred" in text.stdout
    table = run_cli("runs", str(tmp_path), "--sort", "loss", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert rows[0]["name"] == "'=HYPERLINK(x)"
    assert "\x1b" not in table.stdout


@pytest.mark.slow  # `ocms-tui runs` processes (0.5 s of CPU each)
def test_usage_errors_and_an_empty_directory(tmp_path: Path) -> None:
    missing = run_cli("runs", str(tmp_path / "nope"))
    assert missing.returncode == ExitCode.USAGE and "not a directory" in missing.stderr
    empty = run_cli("runs", str(tmp_path))
    assert empty.returncode == ExitCode.PROBLEMS and "no run" in empty.stderr
    for arguments in (["--sort="], ["--top", "0"], ["--group", "("], ["--group", "x*"]):
        bad = run_cli("runs", str(tmp_path), *arguments)
        assert bad.returncode == ExitCode.USAGE, arguments
        assert bad.stderr.strip(), arguments


def test_groups_of_seeds_are_one_row_with_mean_min_and_max(tmp_path: Path) -> None:
    finals = {"lr_1e-4_seed0": 0.2, "lr_1e-4_seed1": 0.4, "lr_3e-4_seed0": 0.1}
    finals |= {"lr_3e-4_seed1": 0.2, "lr_3e-4_seed2": 0.3}
    for name, final in finals.items():
        write_run(tmp_path / name, [1.0, final])
    result = run_cli("runs", str(tmp_path), "--group", "--sort", "loss", "--format", "json")
    groups = json.loads(result.stdout)["groups"]
    assert [group["name"] for group in groups] == ["lr_3e-4", "lr_1e-4"]
    assert groups[0]["runs"] == ["lr_3e-4_seed0", "lr_3e-4_seed1", "lr_3e-4_seed2"]
    assert groups[0]["mean"] == pytest.approx(0.2) and groups[0]["max"] == 0.3
    assert groups[1]["min"] == 0.2 and groups[1]["missing"] == 0
    by_lr = run_cli("runs", str(tmp_path), "--group", r"_lr_\de-4", "--format", "csv")
    assert by_lr.returncode == ExitCode.OK, by_lr.stderr
    text = run_cli("runs", str(tmp_path), "--group", "--sort", "loss")
    assert text.stdout.splitlines()[0].startswith("5 runs in 2 groups under")


def test_band_is_mean_and_range_where_runs_have_values() -> None:
    steps = np.arange(5, dtype=np.int64)
    first = (steps, np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    second = (steps[:3], np.array([3.0, np.nan, 5.0]))  # shorter, with a gap
    result = band([first, second])
    assert result is not None
    assert result.steps.tolist() == [0, 1, 2, 3, 4]
    assert result.mean.tolist() == [2.0, 2.5, 4.0, 4.0, 5.0]  # the gap carries 3.0 forward
    assert result.low.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert result.high.tolist() == [3.0, 3.0, 5.0, 4.0, 5.0]
    assert band([]) is None and band([(steps[:0], steps[:0].astype(float))]) is None
