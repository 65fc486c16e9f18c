"""`ocms-tui import` on hostile sources: each test is a file or tree that once made the
command print a traceback (exit 1) instead of a one-line error (exit 2) or a clean import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ocms_tui import cli
from tests.adversarial_support import as_nobody, nested
from tests.sources_support import run_cli


def make_source(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    return source


def assert_clean_failure(source: Path, out: Path, message: str) -> None:
    result = run_cli("import", str(source), "--out", str(out))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not out.exists()


def test_trainer_state_nested_deeper_than_the_json_parser_recurses(tmp_path: Path) -> None:
    source = make_source(tmp_path)
    depth = 200_000
    (source / "trainer_state.json").write_text('{"log_history": ' + "[" * depth + "]" * depth + "}")
    assert_clean_failure(source, tmp_path / "out", "nested too deeply")


def test_trainer_state_with_odd_log_history_entries(tmp_path: Path) -> None:
    """Non-dict entries, string/float/bool/negative/huge steps, NaN, strings and nested
    values: the good points are written, every other one is reported, nothing crashes."""
    source = make_source(tmp_path)
    history = (
        '[1, "x", null, {"step": "3", "loss": 1}, {"step": 1.0, "loss": 2},'
        ' {"step": 2, "loss": NaN, "lr": "abc"}, {"step": 3, "loss": Infinity},'
        ' {"loss": 4}, {"step": -1, "loss": 5}, {"step": 99999999999999999999999, "loss": 1},'
        ' {"step": true, "loss": 1}, {"step": 4, "loss": {"a": 1}, "x": [1]},'
        ' {"step": 5, "loss": 0.25}]'
    )
    (source / "trainer_state.json").write_text('{"log_history": ' + history + "}")
    out = tmp_path / "out"
    result = run_cli("import", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = (out / "loss.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows] == ["2", "3", "5"]
    assert "step not an integer" in result.stdout
    assert "'lr': 1 value(s), none a number" in result.stdout
    assert json.loads((out / "metrics.json").read_text())["charts"][0]["y_axis"] == ["loss"]


def test_lightning_csv_field_beyond_the_csv_modules_limit(tmp_path: Path) -> None:
    """A 200 kB quoted field (the csv module refuses fields over 128 KiB): that row is
    reported, the rows around it are imported; in the header it is a foreign file."""
    source = make_source(tmp_path)
    huge = '"' + "x" * 200_000 + '"'
    (source / "metrics.csv").write_text(f"step,loss\n1,0.5\n2,{huge}\n3,0.25\n")
    out = tmp_path / "out"
    result = run_cli("import", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "loss.csv").read_text().splitlines() == ["1,0.5", "3,0.25"]
    assert "metrics.csv:3: no integer step; row left out" in result.stdout
    (source / "metrics.csv").write_text(f"step,{huge}\n1,0.5\n")
    assert_clean_failure(source, tmp_path / "out2", "no 'step' column")


def test_mlflow_metrics_nested_deeper_than_os_walk_recurses(tmp_path: Path) -> None:
    run = tmp_path / "mlruns" / "0" / "run"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("name: hostile\n")
    (run / "metrics" / "loss").write_text("1 0.5 0\n2 0.25 1\n")
    out = tmp_path / "out"
    with nested(run / "metrics", 1100) as deepest:
        (deepest / "deep").write_text("1 0.5 0\n")
        result = run_cli("import", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "loss.csv").read_text().splitlines() == ["0,0.5", "1,0.25"]
    assert "nested over 64 deep; not read" in result.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_out_that_another_user_cannot_list_or_write() -> None:
    """--out an existing directory nobody may list: `import` as nobody printed a
    PermissionError traceback; an --out in a directory it may not write fails cleanly."""
    with tempfile.TemporaryDirectory() as name:  # pytest's temp root is private to root
        root = Path(name)
        root.chmod(0o755)
        source = root / "source"
        source.mkdir(mode=0o755)
        (source / "trainer_state.json").write_text('{"log_history": [{"loss": 1, "step": 1}]}')
        (source / "trainer_state.json").chmod(0o644)
        locked = root / "locked"
        locked.mkdir(mode=0o000)
        for out in (locked, locked / "run", root / "run"):
            code, errors = as_nobody(
                lambda out=out: cli.main(["import", str(source), "--out", str(out)])
            )
            assert "Traceback" not in errors and code == 2, errors
            assert "Permission denied" in errors
        assert list(locked.iterdir()) == [] and not (root / "run").exists()


MEASURED_IMPORT = """
import resource, sys
from ocms_tui.cli import main
import ocms_tui.sources, ocms_tui.sources.writer, ocms_tui.sources.import_command
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = main(["import", sys.argv[1], "--out", sys.argv[2]])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.slow  # 1M rows through a measured subprocess: 7 s of CPU
def test_a_large_lightning_csv_is_streamed_not_held(tmp_path: Path) -> None:
    """1M rows (29 MB): every line was held as a string and every point as Python objects
    at once (+135 MiB peak, 1.1 GiB for a 130 MB file); now a line and a block at a time."""
    source = make_source(tmp_path)
    rows = 1_000_000
    with open(source / "metrics.csv", "w") as handle:
        handle.write("step,train_loss\n")
        handle.writelines(f"{step},{1 / (step + 1)}\n" for step in range(rows))
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-c", MEASURED_IMPORT, str(source), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    growth_mib = int(result.stderr.split()[-1])
    assert growth_mib < 70, f"peak memory grew by {growth_mib} MiB"
    with open(out / "loss.csv", "rb") as handle:
        assert sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b"")) == rows


def test_an_overlong_line_costs_its_row_and_a_last_line_being_written_waits(
    tmp_path: Path,
) -> None:
    source = make_source(tmp_path)
    (source / "metrics.csv").write_text(
        "step,loss\n1,0.5\n2," + "9" * (3 << 20) + "\n3,0.25\n4,0.1"
    )
    out = tmp_path / "out"
    result = run_cli("import", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "loss.csv").read_text().splitlines() == ["1,0.5", "3,0.25"]
    assert "metrics.csv:3: no integer step; row left out" in result.stdout
    assert "still being written" in result.stdout


def test_one_bad_file_among_a_runs_event_files_costs_that_file(tmp_path: Path) -> None:
    """A FIFO and a stray non-TFRecord file named *tfevents* beside a real run: the whole
    import failed on either; now each is a note and the real run is imported."""
    from tests.test_sources_tensorboard import write_tbx

    run = tmp_path / "run"
    write_tbx(run)
    os.mkfifo(run / "events.out.tfevents.0.fifo")
    (run / "eval").mkdir()
    (run / "eval" / "events.out.tfevents.1.stray").write_text("not a record, longer than 12\n")
    out = tmp_path / "out"
    result = run_cli("import", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    # The FIFO is not an event file: passed over (the run's files are regular files).
    assert "tfevents.1.stray: not a TensorBoard event file" in result.stdout
    assert (out / "learning_rate.csv").read_text().count("\n") == 5
    fifo_alone = run_cli(
        "import", str(run / "events.out.tfevents.0.fifo"), "--out", str(tmp_path / "o2")
    )
    assert fifo_alone.returncode == 2 and "not a regular file" in fifo_alone.stderr
