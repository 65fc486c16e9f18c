"""Importing and opening other tools' logs when the disk or the user is hostile: an event
file damaged mid-file, more event files than are read, paths that cannot be examined,
signals mid-import, a huge MLflow metric file, a Lightning CSV with a BOM."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ocms_tui.sources import read_source
from tests.sources_support import REPO, run_cli

tensorboardX = pytest.importorskip("tensorboardX")


def write_run(directory: Path, steps: int = 40) -> Path:
    writer = tensorboardX.SummaryWriter(str(directory))
    for step in range(steps):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.close()
    (found,) = [path for path in directory.iterdir() if "tfevents" in path.name]
    return found


def record_offsets(data: bytes) -> list[int]:
    offsets, position = [], 0
    while position + 12 <= len(data):
        offsets.append(position)
        (length,) = struct.unpack_from("<Q", data, position)
        position += 16 + length
    return offsets


def test_a_length_checksum_error_mid_file_keeps_what_came_before_file_or_directory(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    path = write_run(run)
    data = bytearray(path.read_bytes())
    damaged_at = record_offsets(bytes(data))[21]  # record 0 is the file version event
    data[damaged_at] ^= 0x01  # its length no longer matches its checksum
    path.write_bytes(bytes(data))

    from_file, from_directory = read_source(path), read_source(run)
    for source in (from_file, from_directory):
        (loss,) = source.series
        assert loss.steps.tolist() == list(range(20))  # every point before the damage
        assert source.damaged
    out = tmp_path / "out"
    result = run_cli("import", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"{path}: offset {damaged_at}: length checksum mismatch" in result.stdout

    check = run_cli("--check", str(run))
    assert check.returncode == 0
    lines = check.stdout.splitlines()
    assert f"{path}: warning source-problem offset {damaged_at}: length checksum" in lines[0]
    assert "ok: 0 error(s), 1 warning(s)" in lines[-1]  # never a plain ok
    assert "ocms-tui-import" not in check.stdout  # never the temp conversion's path
    github = run_cli("--check", str(run), "--format", "github")
    assert f"::warning file={path},title=source-problem::offset {damaged_at}" in github.stdout


def test_the_dashboard_of_a_damaged_source_shows_its_problem_by_the_sources_own_file(
    tmp_path: Path,
) -> None:
    """Opened directly, a damaged event file's warning reaches the problems pane (rendered
    through `--snapshot`, the real command), naming the source's file, never the temp
    conversion."""
    run = tmp_path / "run"
    path = write_run(run)
    data = bytearray(path.read_bytes())
    damaged_at = record_offsets(bytes(data))[21]
    data[damaged_at] ^= 0x01
    path.write_bytes(bytes(data))
    svg = tmp_path / "dashboard.svg"
    result = run_cli(str(run), "--snapshot", str(svg), "--size", "200x50")
    assert result.returncode == 0, result.stderr
    text = " ".join(svg_text(svg.read_text(encoding="utf-8")).split())
    assert "source-problem" in text
    assert f"offset {damaged_at}" in text
    assert "ocms-tui-import" not in text


def svg_text(svg: str) -> str:
    import html
    import re

    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg)))


def test_more_event_files_than_are_read_says_what_was_left_out(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = write_run(run, steps=3)
    first.rename(run / "events.out.tfevents.0000000000.host")
    for index in range(10_002):  # empty files named like event files, after the real one
        (run / f"events.out.tfevents.{index + 1:010d}.host").touch()
    out = tmp_path / "out"
    result = run_cli("import", str(run), "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "10003 event files; the first 10000 are read" in result.stdout
    assert "3 more are left out" in result.stdout


def test_paths_that_cannot_be_examined_exit_2_with_a_message(tmp_path: Path) -> None:
    too_long = tmp_path / ("x" * 300)
    result = run_cli("import", str(too_long), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "cannot examine (File name too long)" in result.stderr
    assert "Traceback" not in result.stderr

    locked = tmp_path / "locked"
    write_run(locked / "run", steps=3)
    locked.chmod(0)
    try:
        # root reads through permissions: drop that capability so the lock holds.
        prefix = (
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
            if os.geteuid() == 0
            else []
        )
        if prefix and not Path("/usr/bin/setpriv").exists():
            pytest.skip("running as root without setpriv: permissions cannot hold")
        environment = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'recorder'}"}
        for command in (["import", str(locked / "run"), "--out", str(tmp_path / "o")],):
            blocked = subprocess.run(
                [*prefix, sys.executable, "-m", "ocms_tui", *command],
                capture_output=True,
                text=True,
                env=environment,
                timeout=120,
            )
            assert blocked.returncode == 2, blocked.stderr
            assert "cannot examine (Permission denied)" in blocked.stderr
            assert "Traceback" not in blocked.stderr
    finally:
        locked.chmod(0o755)
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


def write_mlflow_metric(run: Path, rows: int) -> Path:
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: big\n")
    metric = run / "metrics" / "loss"
    line_chunk = 100_000
    with metric.open("w") as handle:
        for start in range(0, rows, line_chunk):
            handle.write(
                "".join(
                    f"1700000000000 {0.5 + (step % 1000) * 1e-6!r} {step}\n"
                    for step in range(start, min(start + line_chunk, rows))
                )
            )
    return metric


def start(arguments: list[str], **extra: object) -> subprocess.Popen:
    environment = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'recorder'}",
        **extra.pop("env", {}),  # type: ignore[dict-item]
    }
    return subprocess.Popen(
        [sys.executable, "-m", "ocms_tui", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        **extra,  # type: ignore[arg-type]
    )


def wait_for(condition: object, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "never reached"
        time.sleep(0.005)


@pytest.fixture(scope="module")
def big_mlflow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mlruns")
    write_mlflow_metric(root / "0" / "big", rows=400_000)
    return root / "0" / "big"


def writing_under(scratch: Path) -> bool:
    """A `.importing` directory below `scratch` (os.walk: files come and go meanwhile)."""
    return any(
        ".importing" in name for _, directories, _ in os.walk(scratch) for name in directories
    )


def interrupt_while_writing(arguments: list[str], scratch: Path, signal_number: int) -> None:
    """Start `ocms-tui ARGUMENTS`, signal it once a `.importing` directory is under
    `scratch` (mid-write), and check it ends quietly with nothing left in `scratch`."""
    process = start(arguments, env={"TMPDIR": str(scratch)})
    wait_for(lambda: writing_under(scratch), process)
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal_number, stderr
    assert "Traceback" not in stderr
    assert os.listdir(scratch) == []


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_import_leaves_nothing_behind(
    big_mlflow_run: Path, tmp_path: Path, signal_number: int
) -> None:
    arguments = ["import", str(big_mlflow_run), "--out", str(tmp_path / "out")]
    interrupt_while_writing(arguments, tmp_path, signal_number)


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_check_of_a_source_leaves_no_conversion(
    big_mlflow_run: Path, tmp_path: Path, signal_number: int
) -> None:
    interrupt_while_writing(["--check", str(big_mlflow_run)], tmp_path, signal_number)


@pytest.mark.slow
def test_a_64_mb_mlflow_metric_file_is_streamed(tmp_path: Path) -> None:
    run = tmp_path / "mlruns" / "0" / "big"
    metric = write_mlflow_metric(run, rows=2_300_000)
    assert metric.stat().st_size >= 64 << 20
    measure = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:]).returncode\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(code, peak)\n"
    )
    environment = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'recorder'}"}
    command = ["-m", "ocms_tui", "import", str(run), "--out", str(tmp_path / "out")]
    result = subprocess.run(
        [sys.executable, "-c", measure, sys.executable, *command],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    code, peak_kib = result.stdout.split()[-2:]
    assert code == "0", result.stderr
    assert int(peak_kib) / 1024 <= 300, f"peak {int(peak_kib) / 1024:.0f} MB"
    assert (tmp_path / "out" / "loss.csv").stat().st_size > 0


def test_a_lightning_csv_with_a_bom_reads_its_first_column(tmp_path: Path) -> None:
    metrics = tmp_path / "version_0" / "metrics.csv"
    metrics.parent.mkdir()
    metrics.write_bytes(
        "epoch,step,train_loss\n0,3,0.5\n0,7,0.4\n".encode("utf-8-sig")  # BOM first
    )
    source = read_source(metrics)
    assert sorted(each.name for each in source.series) == ["epoch", "train_loss"]
    result = run_cli("import", str(metrics), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "\ufeff" not in result.stdout and "_epoch" not in result.stdout
    assert "'epoch' -> epoch" in result.stdout
