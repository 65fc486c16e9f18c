"""What every integration shares and needs no framework for: the message when a run meets
an earlier run's rows (on hostile directories too), and same-step rows held until the next
step, written even when the run dies in between."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from ocms_integrations.base import last_recorded_step, warn_if_earlier_run

ROOT = Path(__file__).resolve().parents[1]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "METRICS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "recorder")])
    return env


def test_last_recorded_step_reads_the_last_complete_row_of_every_csv(tmp_path: Path) -> None:
    assert last_recorded_step(str(tmp_path / "missing")) is None
    assert last_recorded_step(str(tmp_path)) is None
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "metrics.json").write_text("{}")
    assert last_recorded_step(str(tmp_path)) is None

    (tmp_path / "loss.csv").write_text("1,0.5\n2,0.4\n30,0.3\n")
    # A row still being written does not count; a temp file of the recorder neither.
    (tmp_path / "epoch.csv").write_text("10,0.1\n40,0.2\n5")
    (tmp_path / ".loss.csv.123.tmp").write_text("99,1\n")
    assert last_recorded_step(str(tmp_path)) == 40


def test_rows_without_a_readable_step_still_count_as_an_earlier_run(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("step,loss\nabc,1\n")
    assert last_recorded_step(str(tmp_path)) == -1
    # A step longer than the tail read: still no exception, still "rows are there".
    (tmp_path / "a.csv").write_text("9" * 10_000 + ",1\n")
    assert last_recorded_step(str(tmp_path)) == -1
    (tmp_path / "a.csv").write_bytes(b"\xff\xfe\x00,\x00\n")
    assert last_recorded_step(str(tmp_path)) == -1
    # Past the format's largest step (2^53 - 1): not a step the message names.
    (tmp_path / "a.csv").write_text(f"{2**53},1\n")
    assert last_recorded_step(str(tmp_path)) == -1


def test_fifos_symlinks_and_unreadable_files_neither_block_nor_raise(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.csv")
    os.symlink(tmp_path / "fifo.csv", tmp_path / "to_fifo.csv")
    os.symlink(tmp_path / "nowhere.csv", tmp_path / "dangling.csv")
    (tmp_path / "directory.csv").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "real.csv").write_text("7,1.0\n")
    os.symlink(elsewhere / "real.csv", tmp_path / "linked.csv")

    results: list[int | None] = []
    reader = threading.Thread(target=lambda: results.append(last_recorded_step(str(tmp_path))))
    reader.start()
    reader.join(timeout=30)  # a hang guard only: an open() of the FIFO would never return
    assert not reader.is_alive(), "last_recorded_step blocked on a FIFO"
    assert results == [7]


def test_an_unreadable_file_is_skipped_for_a_non_root_user() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user with setpriv")
    with tempfile.TemporaryDirectory() as name:  # pytest's own tmp dirs are root-only
        run_as_nobody_in(Path(name))


def run_as_nobody_in(tmp_path: Path) -> None:
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "secret.csv").write_text("50,1\n")
    (directory / "secret.csv").chmod(0o000)
    (directory / "open.csv").write_text("3,1\n")
    (directory / "open.csv").chmod(0o644)
    for path in (tmp_path, directory):
        path.chmod(0o755)
    code = f"from ocms_integrations.base import last_recorded_step; print(last_recorded_step({str(directory)!r}))"
    completed = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
        cwd="/",
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "3"


def test_a_fresh_run_meeting_old_rows_gets_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("METRICS", raising=False)
    with caplog.at_level(logging.INFO, logger="ocms_integrations"):
        warn_if_earlier_run(str(tmp_path), resuming=False, how_to_resume="resume=True")
    assert caplog.records == []  # nothing there yet

    (tmp_path / "ocms_metrics").mkdir()
    (tmp_path / "ocms_metrics" / "loss.csv").write_text("12,0.5\n")
    with caplog.at_level(logging.INFO, logger="ocms_integrations"):
        warn_if_earlier_run(str(tmp_path), resuming=False, how_to_resume="resume=True")
        warn_if_earlier_run(str(tmp_path), resuming=True, how_to_resume="resume=True")
    (fresh, resumed) = caplog.records
    assert fresh.levelname == "WARNING"
    assert "earlier run (up to step 12)" in fresh.getMessage()
    assert "resume=True" in fresh.getMessage()
    assert "Nothing is deleted" in fresh.getMessage()
    assert resumed.levelname == "INFO"
    assert (tmp_path / "ocms_metrics" / "loss.csv").read_text() == "12,0.5\n"

    # $METRICS wins over the output directory, as it does for the recorder.
    caplog.clear()
    monkeypatch.setenv("METRICS", str(tmp_path / "platform"))
    with caplog.at_level(logging.INFO, logger="ocms_integrations"):
        warn_if_earlier_run(str(tmp_path), resuming=False, how_to_resume="resume=True")
    assert caplog.records == []


def test_the_row_held_for_a_step_is_written_when_the_run_dies(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from ocms_integrations.base import OcmsMixin

        class Trainer(OcmsMixin):
            pass

        trainer = Trainer()
        trainer._init_ocms({str(tmp_path)!r})
        trainer._ocms_log_merged(1, {{"loss": 1.0}})
        trainer._ocms_log_merged(2, {{"loss": 0.5}})
        trainer._ocms_log_merged(2, {{"eval_loss": 0.7}})
        raise RuntimeError("the evaluation of step 2 failed")
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
    )
    assert completed.returncode == 1
    assert "the evaluation of step 2 failed" in completed.stderr
    assert (tmp_path / "ocms_metrics" / "loss.csv").read_text() == "1,1.0,\n2,0.5,0.7\n"
