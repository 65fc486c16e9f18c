"""RunModel on real directories: structure changes, widening, late directories, stats."""

from __future__ import annotations

import math
import os
from pathlib import Path

from app_support import write_layout

from ocms_tui.follow.model import RunModel
from ocms_tui.format.problems import Rule


def _replace(path: Path, data: bytes) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def test_loads_then_follows_and_keeps_stats(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss", "eval_loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9,\n2,0.5,0.7\n3,nan,\n")
    model = RunModel(tmp_path)
    change = model.refresh()
    assert change.structure and change.charts == {"loss"}
    (loss,) = model.charts
    assert loss.rows == 3 and loss.last_step == 3 and loss.version == 1
    train = loss.stats(0)
    # A logged nan is stored like a gap: the latest *value* is still step 2's.
    assert (train.latest_step, train.minimum, train.maximum, train.count) == (2, 0.5, 0.9, 2)
    assert math.isnan(loss.values(0)[-1])
    with (tmp_path / "loss.csv").open("ab") as handle:
        handle.write(b"4,0.25,\n")
    change = model.refresh()
    assert not change.structure and change.charts == {"loss"}
    assert loss.stats(0).latest == 0.25 and loss.stats(0).minimum == 0.25
    assert loss.stats(1).latest == 0.7 and loss.stats(1).latest_step == 2
    assert not model.refresh().any


def test_views_handed_out_stay_valid_while_the_chart_grows(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,1.0\n")
    model = RunModel(tmp_path)
    model.refresh()
    steps_before = model.charts[0].steps()
    with (tmp_path / "loss.csv").open("ab") as handle:
        handle.write(b"".join(b"%d,2.0\n" % i for i in range(2, 5000)))
    model.refresh()
    assert steps_before.tolist() == [1]
    assert len(model.charts[0].steps()) == 4999


def test_widening_between_the_two_renames_never_shows_a_problem(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9\n2,0.8\n")
    model = RunModel(tmp_path, settle_seconds=5.0)
    model.refresh()
    # The recorder widens: CSV replaced first, metrics.json a moment later.
    _replace(tmp_path / "loss.csv", b"1,0.9,\n2,0.8,\n3,0.7,0.75\n")
    between = model.refresh()
    assert model.problems == () and model.settling
    assert model.charts[0].rows == 2, "the old rows stay on screen while it settles"
    assert not between.problems
    write_layout(tmp_path, {"loss": ["loss", "eval_loss"]})
    after = model.refresh()
    assert after.structure and model.problems == () and not model.settling
    assert model.charts[0].y_axis == ("loss", "eval_loss")
    assert model.charts[0].rows == 3 and model.charts[0].stats(1).latest == 0.75


def test_a_real_width_mismatch_is_reported_after_settling(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9,0.1\n")
    model = RunModel(tmp_path, settle_seconds=0.2)
    model.load_settled()
    assert [(p.rule, p.line) for p in model.problems] == [(Rule.ROW_WIDTH, 1)]


def test_metrics_json_replaced_with_a_new_chart(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9\n")
    model = RunModel(tmp_path)
    model.refresh()
    loss_before = model.charts[0]
    write_layout(tmp_path, {"loss": ["loss"], "grad_norm": ["grad_norm"]})
    (tmp_path / "grad_norm.csv").write_bytes(b"1,3.5\n")
    change = model.refresh()
    assert change.structure and [c.name for c in model.charts] == ["loss", "grad_norm"]
    assert model.charts[0] is loss_before, "an unchanged chart is not re-read"
    assert model.charts[1].stats(0).latest == 3.5


def test_directory_created_late_and_run_restarted(tmp_path: Path) -> None:
    directory = tmp_path / "ocms_metrics"
    model = RunModel(directory)
    model.refresh()
    assert not model.exists and [p.rule for p in model.problems] == [Rule.MISSING_DIR]
    directory.mkdir()
    model.refresh()
    assert [p.rule for p in model.problems] == [Rule.MISSING_METRICS_JSON]
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_bytes(b"1,0.9\n2,0.8\n")
    model.refresh()
    assert model.total_rows == 2 and model.problems == ()
    # The run restarts: files are deleted and written again from step 0.
    for name in ("loss.csv", "metrics.json"):
        (directory / name).unlink()
    model.refresh()
    assert model.charts == ()
    write_layout(directory, {"loss": ["loss"]})
    (directory / "loss.csv").write_bytes(b"0,1.5\n")
    model.refresh()
    assert model.charts[0].steps().tolist() == [0]
    assert model.charts[0].stats(0).maximum == 1.5


def test_reload_reads_everything_again(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9\n")
    model = RunModel(tmp_path)
    model.refresh()
    first = model.charts[0]
    change = model.reload()
    assert change.structure and model.charts[0] is not first and model.total_rows == 1


def test_budget_shows_a_sample_then_reads_in_steps(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"".join(b"%d,0.5\n" % i for i in range(200_000)))
    model = RunModel(tmp_path)
    change = model.refresh(budget_bytes=64 * 1024)
    # The first read samples the whole file (see test_preview.py) and reads no row yet.
    assert change.more and model.loading and model.charts[0].sampled
    assert model.charts[0].last_step == 199_999 and model.total_rows == 0
    change = model.refresh(budget_bytes=64 * 1024)
    assert change.more and model.loading and 0 < model.total_rows < 200_000
    while model.refresh(budget_bytes=512 * 1024).more:
        pass
    assert model.total_rows == 200_000 and not model.loading


def test_problems_come_and_go(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"1,0.9\n2,0.")
    model = RunModel(tmp_path)
    model.refresh()
    assert [p.rule for p in model.problems] == [Rule.PARTIAL_LINE]
    with (tmp_path / "loss.csv").open("ab") as handle:
        handle.write(b"8\n")
    assert model.refresh().problems and model.problems == ()


def test_a_check_model_counts_rows_without_keeping_them(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"]})
    (tmp_path / "loss.csv").write_bytes(b"".join(b"%d,%d.5\n" % (i, i) for i in range(50_000)))
    model = RunModel(tmp_path, keep_values=False)
    model.refresh()
    (loss,) = model.charts
    assert (loss.rows, loss.last_step, loss.nbytes) == (50_000, 49_999, 0)
    assert (loss.stats(0).latest, loss.stats(0).maximum) == (49_999.5, 49_999.5)
    assert len(loss.steps()) == 0


def test_refresh_with_changed_files_reads_only_their_charts(tmp_path: Path) -> None:
    write_layout(tmp_path, {"loss": ["loss"], "lr": ["lr"]})
    (tmp_path / "loss.csv").write_text("0,1.0\n", encoding="utf-8")
    (tmp_path / "lr.csv").write_text("0,0.1\n", encoding="utf-8")
    model = RunModel(tmp_path)
    model.refresh()
    with open(tmp_path / "loss.csv", "a", encoding="utf-8") as csv:
        csv.write("1,0.5\n")
    with open(tmp_path / "lr.csv", "a", encoding="utf-8") as csv:
        csv.write("1,0.2\n")
    change = model.refresh(files=frozenset({"lr.csv"}))
    assert change.charts == {"lr"}
    assert [chart.rows for chart in model.charts] == [1, 2]  # loss.csv was not looked at
    # Without a list (the safety refresh), every chart is read.
    assert model.refresh().charts == {"loss"}
    assert [chart.rows for chart in model.charts] == [2, 2]
