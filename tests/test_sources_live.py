"""Opening other tools' logs directly: `ocms-tui SRC`, `--snapshot`, `--check`, and the
converted directory following a source that grows."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from ocms_tui.follow.model import RunModel
from ocms_tui.follow.runs import find_runs
from ocms_tui.sources import SourceKind, SourceRun
from ocms_tui.sources import live as live_module
from ocms_tui.sources.live import ConvertedSource, ConvertedSources, foreign_kind
from tests.sources_support import run_cli

tensorboardX = pytest.importorskip("tensorboardX")


def rows_of(directory: Path) -> dict[str, int]:
    model = RunModel(directory)
    model.load_settled()
    return {chart.name: chart.rows for chart in model.charts}


def test_snapshot_of_tensorboard_and_lightning_sources_names_their_kinds(tmp_path: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(tmp_path / "exp" / "tb_run"))
    for step in range(1, 20):
        writer.add_scalar("loss/train", 1.0 / step, step)
    writer.close()
    csv_run = tmp_path / "exp" / "pl_run"
    csv_run.mkdir()
    (csv_run / "metrics.csv").write_text("step,val_loss\n1,0.5\n2,0.25\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    svg = tmp_path / "out.svg"
    result = run_cli(
        "--snapshot",
        str(svg),
        str(tmp_path / "exp" / "tb_run"),
        str(csv_run),
        env_extra={"TMPDIR": str(scratch)},
    )
    assert result.returncode == 0, result.stderr
    text = svg.read_text().replace("&#160;", " ")
    assert "tb_run (tensorboard)" in text and "pl_run (lightning)" in text
    assert "loss_train" in text and "val_loss" in text
    assert os.listdir(scratch) == []  # the converted directories are gone at exit


def test_check_of_a_source_and_a_foreign_file(tmp_path: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(tmp_path / "tb"))
    writer.add_scalar("loss", 0.5, 1)
    writer.close()
    result = run_cli("--check", str(tmp_path / "tb"), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True
    bogus = tmp_path / "events.out.tfevents.1.x"
    bogus.write_bytes(b"garbage that is not a TFRecord stream at all, really")
    result = run_cli("--check", str(bogus))
    assert result.returncode == 2 and "not a TensorBoard event file" in result.stderr


def test_an_output_dir_with_ocms_metrics_stays_an_ocms_run(tmp_path: Path) -> None:
    """HF output dirs hold ocms_metrics/ beside checkpoint-N/ and runs/ (TensorBoard)."""
    (tmp_path / "ocms_metrics").mkdir()
    (tmp_path / "ocms_metrics" / "metrics.json").write_text('{"version": 1, "charts": []}')
    (tmp_path / "checkpoint-5").mkdir()
    (tmp_path / "checkpoint-5" / "trainer_state.json").write_text('{"log_history": []}')
    assert foreign_kind(tmp_path) is None
    assert foreign_kind(tmp_path / "checkpoint-5") is SourceKind.HF


def test_a_growing_event_file_is_converted_again(tmp_path: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    writer = tensorboardX.SummaryWriter(str(tmp_path / "tb"))
    for step in range(1, 11):
        writer.add_scalar("loss", 1.0 / step, step)
    writer.close()
    converted = ConvertedSource(
        SourceRun("", tmp_path / "tb", SourceKind.TENSORBOARD), tmp_path / "out"
    )
    (tmp_path / "out").mkdir()
    assert converted.update()
    assert rows_of(tmp_path / "out") == {"loss": 10}
    assert not converted.update()  # nothing new: not rewritten
    (event_file,) = (tmp_path / "tb").iterdir()
    loss_file = (tmp_path / "out" / "loss.csv").stat().st_ino

    def append(steps: range, tags: tuple[str, ...]) -> None:
        with open(event_file, "ab") as handle:  # the run goes on: records appended
            records = RecordWriter(handle)
            for step in steps:
                for tag in tags:
                    value = summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / step)
                    summary = summary_pb2.Summary(value=[value])
                    records.write(event_pb2.Event(step=step, summary=summary).SerializeToString())

    append(range(11, 21), ("loss",))
    assert converted.update()
    assert rows_of(tmp_path / "out") == {"loss": 20}
    # Only grown: the new rows were appended to the same file, not a rewrite.
    assert (tmp_path / "out" / "loss.csv").stat().st_ino == loss_file
    step, value = (tmp_path / "out" / "loss.csv").read_text().splitlines()[-1].split(",")
    assert (int(step), float(value)) == (20, float(np.float32(1 / 20)))
    append(range(21, 31), ("loss", "learning_rate"))
    assert converted.update()  # a new tag: a new chart, so converted again whole
    assert rows_of(tmp_path / "out") == {"loss": 30, "learning_rate": 10}
    assert (tmp_path / "out" / "loss.csv").stat().st_ino != loss_file
    converted.close()


@pytest.fixture
def csvlogger_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CSVLogger run with one row, followed every 50 ms."""
    monkeypatch.setattr(live_module, "FOLLOW_SECONDS", 0.05)
    run = tmp_path / "version_0"
    run.mkdir()
    (run / "metrics.csv").write_text("step,train_loss\n1,0.5\n")
    return run


def test_the_follow_thread_picks_up_appended_rows(csvlogger_run: Path) -> None:
    run = csvlogger_run
    with ConvertedSources([run]) as (directory,):
        assert directory.name == "version_0 (lightning)"
        assert rows_of(directory) == {"loss": 1}
        with open(run / "metrics.csv", "a") as handle:
            handle.write("2,0.4\n3,0.3\n")
        deadline = time.monotonic() + 30
        while rows_of(directory) != {"loss": 3} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows_of(directory) == {"loss": 3}
    assert not directory.exists()


async def test_the_dashboard_follows_a_growing_csvlogger_file(csvlogger_run: Path) -> None:
    """The real app on a converted source: rows appended to metrics.csv reach the screen."""
    from app_support import wait_for_text

    from ocms_tui.ui.app import OcmsApp

    run = csvlogger_run
    with ConvertedSources([run]) as (directory,):
        app = OcmsApp(directory)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_text(pilot, "version_0 (lightning)", "step 1 · 1 rows")
            with open(run / "metrics.csv", "a") as handle:
                handle.write("2,0.4\n3,0.123456\n")
            await wait_for_text(pilot, "step 3 · 3 rows", "0.123456", timeout=30)


def test_a_source_written_hours_ago_is_named_by_its_path_and_not_live(tmp_path: Path) -> None:
    run = tmp_path / "output" / "runs" / "Dec05_05-07-44_host"
    writer = tensorboardX.SummaryWriter(str(run))
    for step in range(1, 20):
        writer.add_scalar("train/loss", 1.0 / step, step)
        writer.add_scalar("train/learning_rate", 1e-3, step)
    writer.close()
    hours_ago = time.time() - 3 * 3600
    for file in run.iterdir():
        os.utime(file, (hours_ago, hours_ago))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    svg = tmp_path / "out.svg"
    runs = tmp_path / "output" / "runs"
    result = run_cli("--snapshot", str(svg), str(runs), env_extra={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr
    text = svg.read_text().replace("&#160;", " ")
    assert f"{runs} (tensorboard)" in text  # the status line: the source's path and kind
    assert "finished" in text and "live" not in text
    assert str(scratch) not in text and "ocms-tui-import" not in text

    with ConvertedSources([runs], follow=False) as paths:
        (directory,) = find_runs(paths)
        assert directory.name == "Dec05_05-07-44_host"  # the run list's name for it
        converted = RunModel(directory)
        converted.load_settled()
        assert converted.last_write == pytest.approx(hours_ago, abs=1)


def test_a_run_started_under_an_opened_parent_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_module, "FOLLOW_SECONDS", 0.05)
    runs = tmp_path / "runs"

    def start_run(name: str) -> None:
        writer = tensorboardX.SummaryWriter(str(runs / name))
        for step in range(1, 6):
            writer.add_scalar("loss", 1.0 / step, step)
        writer.close()

    start_run("first")
    with ConvertedSources([runs]) as paths:
        assert [directory.name for directory in find_runs(paths)] == ["first"]
        start_run("second")
        deadline = time.monotonic() + 30
        while len(find_runs(paths)) < 2:
            assert time.monotonic() < deadline, "the new run never appeared"
            time.sleep(0.05)
        (second,) = [directory for directory in find_runs(paths) if directory.name == "second"]
        assert rows_of(second) == {"loss": 5}
