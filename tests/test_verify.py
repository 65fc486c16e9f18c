"""`ocms-tui verify`: self-test, run check, and the ocms package report.

The proprietary `ocms` package is never installed here; the tests that need it importable
put a stand-in package on sys.path (the one fake these tests allow).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ocms_recorder import METRICS_ENV, RANK_ENV_VARS, OcmsRecorder

from ocms_tui.onboard.verify import run_verify


@pytest.fixture(autouse=True)
def no_platform_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (METRICS_ENV, *RANK_ENV_VARS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "ocms", raising=False)


def install_stand_in_ocms(root: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    package = root / "site" / "ocms"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    monkeypatch.syspath_prepend(str(root / "site"))


def record_run(metrics_dir: Path, steps: int = 3) -> None:
    with OcmsRecorder(log_dir=str(metrics_dir)) as recorder:
        for step in range(1, steps + 1):
            recorder.log(step=step, metrics={"loss": 1.0 / step, "learning_rate": 0.1})


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_self_test_without_ocms_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify(None, require_ocms=False) == 0
    ocms_line, self_test_line = lines(capsys)
    assert ocms_line.startswith("ocms: not importable (not installed)")
    assert self_test_line.startswith("self-test: OK: metrics.json and 6 chart CSVs")
    for chart in ("loss", "learning_rate", "epoch", "timing", "eval_score", "grad_norm"):
        assert chart in self_test_line


def test_empty_output_dir_means_the_self_test(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify("", require_ocms=False) == 0
    assert lines(capsys)[1].startswith("self-test: OK")


def test_require_ocms_fails_when_it_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify(None, require_ocms=True) == 1
    ocms_line, self_test_line = lines(capsys)
    assert ocms_line == "ocms: FAILED: not importable (not installed), and --require-ocms was given"
    assert self_test_line.startswith("self-test: OK")


def test_installed_ocms_is_reported_with_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_stand_in_ocms(tmp_path, monkeypatch, "__version__ = '3.1.4'\n")
    assert run_verify(None, require_ocms=True) == 0
    ocms_line, self_test_line = lines(capsys)
    assert ocms_line == "ocms: installed (version 3.1.4)"
    assert self_test_line.startswith("self-test: OK")


def test_an_ocms_that_fails_to_import_counts_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_stand_in_ocms(tmp_path, monkeypatch, "raise RuntimeError('licence expired')\n")
    assert run_verify(None, require_ocms=True) == 1
    ocms_line = lines(capsys)[0]
    assert ocms_line.startswith("ocms: FAILED: not importable (RuntimeError('licence expired')")


def test_self_test_fails_where_the_recorder_may_not_write(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Inside a launcher as rank 1 the recorder disables itself: nothing can be tested.
    monkeypatch.setenv("RANK", "1")
    assert run_verify(None, require_ocms=False) == 1
    assert lines(capsys)[1].startswith(
        "self-test: FAILED: the recorder is disabled in this process (rank 1)"
    )


def test_output_dir_with_recorded_metrics_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record_run(tmp_path / "run" / "ocms_metrics")
    assert run_verify(str(tmp_path / "run"), require_ocms=False) == 0
    result = lines(capsys)[1]
    assert result.startswith(
        f"metrics: OK: {tmp_path / 'run' / 'ocms_metrics'} (from --output-dir)"
    )
    assert "loss.csv (3 rows)" in result
    assert "learning_rate.csv (3 rows)" in result


def test_metrics_env_wins_over_output_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record_run(tmp_path / "platform", steps=2)
    monkeypatch.setenv("METRICS", str(tmp_path / "platform"))
    assert run_verify(str(tmp_path / "run_without_metrics"), require_ocms=False) == 0
    assert lines(capsys)[1].startswith(f"metrics: OK: {tmp_path / 'platform'} (from $METRICS)")


def test_output_dir_without_metrics_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run").mkdir()
    assert run_verify(str(tmp_path / "run"), require_ocms=False) == 1
    assert lines(capsys)[1] == (
        f"metrics: FAILED: {tmp_path / 'run' / 'ocms_metrics'} (from --output-dir) "
        "does not exist: no metrics were recorded"
    )


def test_metrics_json_without_any_chart_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics_dir = tmp_path / "ocms_metrics"
    metrics_dir.mkdir()
    (metrics_dir / "metrics.json").write_text(json.dumps({"version": 1, "charts": []}))
    assert run_verify(str(tmp_path), require_ocms=False) == 1
    assert lines(capsys)[-1].endswith("has metrics.json but no recorded rows")


def test_broken_metric_files_fail_with_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics_dir = tmp_path / "ocms_metrics"
    record_run(metrics_dir)
    with (metrics_dir / "loss.csv").open("a") as csv_file:
        csv_file.write("4,0.25,7\n")  # one field too many for the loss chart
    assert run_verify(str(tmp_path), require_ocms=False) == 1
    output = lines(capsys)
    problem_lines = [line for line in output if " error row-width " in line]
    assert len(problem_lines) == 1
    assert problem_lines[0].startswith(f"{metrics_dir / 'loss.csv'}:4: error row-width")
    assert output[-1] == f"metrics: FAILED: {metrics_dir} (from --output-dir) has 1 error(s)"


def test_command_line_verify_exit_codes(tmp_path: Path) -> None:
    record_run(tmp_path / "ocms_metrics")
    script = Path(sys.executable).with_name("ocms-tui")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ocms_tui"]
    passing = subprocess.run(
        [*command, "verify", "--output-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "metrics: OK:" in passing.stdout
    failing = subprocess.run(
        [*command, "verify", "--output-dir", str(tmp_path / "missing"), "--require-ocms"],
        capture_output=True,
        text=True,
    )
    assert failing.returncode == 1
    assert failing.stdout.count("FAILED") == 2


def test_output_dir_lists_the_keys_the_recorder_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    shutil.copytree(Path(__file__).parent / "data" / "dropped-metric", tmp_path / "ocms_metrics")
    assert run_verify(str(tmp_path), require_ocms=False) == 0
    printed = lines(capsys)
    assert any(" warning dropped-metric 'lr' was not written" in line for line in printed)
    assert "metrics: not written by the recorder (see the dropped-metric lines): 'lr'" in printed
    assert printed[-1].startswith("metrics: OK:") and printed[-1].endswith("; 1 warning(s)")
