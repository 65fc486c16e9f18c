"""The bulk writer of `import`: the bytes OcmsRecorder.log() leaves, written in one pass.

Every comparison runs the real recorder (record_rows: one log() call per merged row) and
the bulk writer (write_rows) on the same series into two fresh directories and compares
every file byte for byte. The command-line tests run `python -m ocms_tui import` in a
subprocess on real files.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ocms_recorder import DEFAULT_CHART_GROUPS, MAX_SERIES_PER_CHART, MAX_STEP

from ocms_tui.format.parse import ChunkContext, parse_chunk
from ocms_tui.format.problems import ProblemCollector
from ocms_tui.sources.common import Series
from ocms_tui.sources.fitting import ChartPlan, Fit, fit_series
from ocms_tui.sources.writer import Written, record_rows, write_rows
from tests.sources_support import REPO, run_cli


def _series(name: str, points: list[tuple[int, float]]) -> Series:
    return Series(
        name,
        np.array([step for step, _ in points], dtype=np.int64),
        np.array([value for _, value in points], dtype=np.float64),
    )


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the format the directory holds (metrics.json and the CSVs, not a
    dot-file such as a recorder's own notes): its bytes and permission bits."""
    return {
        entry.name: (Path(entry.path).read_bytes(), stat.S_IMODE(entry.stat().st_mode))
        for entry in os.scandir(directory)
        if not entry.name.startswith(".")
    }


def _both_ways(tmp_path: Path, fit: Fit, series: list[Series]) -> tuple[Written, Written]:
    """Write `series` through the recorder and through the bulk writer; assert the same
    files, byte for byte (and mode for mode), and the same names."""
    by_recorder, in_bulk = tmp_path / "recorder", tmp_path / "bulk"
    for directory in (by_recorder, in_bulk):
        directory.mkdir()
    recorded = record_rows(by_recorder, fit, series)
    written = write_rows(in_bulk, fit, series)
    expected, got = _files(by_recorder), _files(in_bulk)
    assert sorted(got) == sorted(expected)
    for name, (data, mode) in expected.items():
        assert got[name][0] == data, f"{name} differs:\n{data[:600]!r}\n{got[name][0][:600]!r}"
        assert got[name][1] == mode, name
    assert written.y_names == recorded.y_names
    assert written.rows == recorded.rows
    return recorded, written


def test_gaps_merged_rows_repeats_and_odd_values_are_written_as_the_recorder_writes(
    tmp_path: Path,
) -> None:
    series = [
        # Two keys of one chart at different steps: gaps (empty fields) in each other's rows.
        _series("loss", [(0, 1.0), (1, 0.5), (2, 0.25), (4, 0.125)]),
        _series("eval_loss", [(2, 0.75), (4, math.nan), (5, 0.5)]),
        # The same step twice in one series (a resumed run): two rows of that step, and a
        # key of the same chart logged once at it lands in the first of them.
        _series("aux_loss", [(3, 2.0), (3, 3.0), (1, -0.0)]),
        # Steps that go back: kept, in step order as merged_rows sorts them.
        _series("learning_rate", [(5, 1e-4), (0, math.inf), (2, -math.inf), (4, 5e-324)]),
        _series("epoch", [(0, 0.0), (5, 1.7976931348623157e308)]),
        # Sanitised names that collide: `a/b_loss`, `a b_loss` and `a_b_loss` are all a_b_loss.
        _series("a/b_loss", [(1, 1.5)]),
        _series("a b_loss", [(1, 2.5), (6, 3.5)]),
        _series("a_b_loss", [(6, 4.5)]),
        _series("learning_rate/decoder", [(0, 0.1), (1, 0.2)]),
        _series("timing/data", [(0, 0.01), (0, 0.02), (7, 0.03)]),
        _series("timing/data!", [(0, 0.04)]),
    ]
    fit = fit_series(series, DEFAULT_CHART_GROUPS)
    recorded, _ = _both_ways(tmp_path, fit, series)
    assert recorded.y_names["a b_loss"] == ("loss", "a_b_loss_2")
    assert recorded.y_names["timing/data!"] == ("timing", "data_")
    loss = (tmp_path / "bulk" / "loss.csv").read_text()
    # Columns in the order the keys are met; the repeated step is a row per value; two keys
    # at one step are one row, with empty fields for the rest.
    assert loss.startswith("0,1.0,,,,,\n1,0.5,-0.0,1.5,2.5,,\n2,0.25,,,,0.75,\n")
    assert "\n3,,2.0,,,,\n3,,3.0,,,,\n4,0.125,,,,nan,\n" in loss
    assert any(
        note.startswith("chart 'loss': metric 'a b_loss'") for note in recorded.recorder_notes
    )


def test_a_key_first_met_halfway_is_laid_out_from_the_first_row(tmp_path: Path) -> None:
    """The recorder widens the chart when the key comes (rewriting every row so far); the
    bulk writer knows the key from the start: the same bytes."""
    steps = np.arange(3000, dtype=np.int64)
    series = [
        Series("loss", steps, steps / 7.0),
        Series("val_loss", steps[1500:], steps[1500:] / 3.0),
    ]
    _both_ways(tmp_path, fit_series(series, DEFAULT_CHART_GROUPS), series)


def test_steps_beyond_2_53_are_skipped_as_the_recorder_skips_them(tmp_path: Path) -> None:
    series = [
        _series("loss", [(MAX_STEP, 1.0), (MAX_STEP + 1, 2.0), (2**63 - 1, 3.0), (7, 4.0)]),
        # A key met only at a step too large never gets a column.
        _series("eval_loss", [(MAX_STEP + 1, 5.0)]),
        _series("grad_norm", [(2**62, 5.0)]),
    ]
    fit = Fit(
        (ChartPlan("loss", ("loss", "eval_loss")), ChartPlan("grad_norm", ("grad_norm",))),
        (),
    )
    _, written = _both_ways(tmp_path, fit, series)
    assert (tmp_path / "bulk" / "loss.csv").read_text() == "7,4.0\n9007199254740991,1.0\n"
    assert written.y_names == {"loss": ("loss", "loss")}
    assert not (tmp_path / "bulk" / "grad_norm.csv").exists()


def test_the_series_cap_falls_on_the_same_keys(tmp_path: Path) -> None:
    """A chart handed more keys than a chart may hold: the recorder takes the first
    MAX_SERIES_PER_CHART it meets, colliding names included, and says so."""
    names = [f"k{index}_loss" for index in range(MAX_SERIES_PER_CHART + 5)]
    names[3] = "k1/loss"  # sanitises onto k1_loss: k1_loss_2
    series = [_series(name, [(0, float(i)), (2, i / 3)]) for i, name in enumerate(names)]
    series[7] = _series(names[7], [(1, 7.0)])
    fit = Fit((ChartPlan("loss", tuple(names)),), ())
    _, written = _both_ways(tmp_path, fit, series)
    assert len(written.y_names) == MAX_SERIES_PER_CHART
    assert any("already has 1000 series" in note for note in written.recorder_notes)


_NAMES = [
    *["loss", "eval_loss", "a/b_loss", "a_b_loss", "a b_loss", "a_b_loss_2", "é_loss"],
    *["learning_rate", "learning_rate/x", "learning_rate/x y", "lr_x"],
    *["timing/data", "timing/data!", "epoch", "grad_norm", "accuracy", "mIoU"],
    *["acc/train", "acc/eval", "x/y", "x_y", "val_acc_epoch", "z", "w", "v", "u"],
]
_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-5, 1e16, 5e-324, 0.1]),
)
_STEPS = st.one_of(st.integers(0, 12), st.sampled_from([MAX_STEP, MAX_STEP + 1, 2**63 - 1]))


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_NAMES), st.lists(st.tuples(_STEPS, _VALUES), min_size=1, max_size=8)
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda item: item[0],
    )
)
def test_any_series_are_written_byte_for_byte_as_the_recorder_writes_them(
    tmp_path_factory: pytest.TempPathFactory, drawn: list[tuple[str, list[tuple[int, float]]]]
) -> None:
    series = [_series(name, points) for name, points in drawn]
    fit = fit_series(series, DEFAULT_CHART_GROUPS)
    _both_ways(tmp_path_factory.mktemp("both"), fit, series)


# -- the command line --------------------------------------------------------------------


def _lightning_csv(path: Path, rows: int, late_from: int) -> None:
    """A CSVLogger metrics.csv: train_loss on every step, val_loss from `late_from` on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        handle.write("step,train_loss,val_loss\n")
        handle.writelines(
            f"{step},{1 / (step + 1)!r},{2 / (step + 1) if step >= late_from else ''!s}\n"
            for step in range(rows)
        )


@pytest.mark.slow
def test_a_series_first_logged_halfway_through_a_million_rows_is_imported_whole(
    tmp_path: Path,
) -> None:
    """The row-by-row path widened loss.csv when val_loss came at step 500,000 and dropped
    the rows that piled up meanwhile: exit 2, "996166 of 1000000 rows written"."""
    rows = 1_000_000
    _lightning_csv(tmp_path / "run" / "metrics.csv", rows, rows // 2)
    out = tmp_path / "out"
    result = run_cli("import", str(tmp_path / "run"), "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert f"({rows} rows)" in result.stdout
    context = ChunkContext("loss.csv", ("train_loss", "val_loss"), ProblemCollector("loss.csv"))
    loss = parse_chunk((out / "loss.csv").read_bytes(), context)
    steps = np.arange(rows)
    np.testing.assert_array_equal(loss.steps, steps)
    np.testing.assert_array_equal(loss.columns[0], 1 / (steps + 1))
    late = steps >= rows // 2
    np.testing.assert_array_equal(loss.columns[1][late], 2 / (steps[late] + 1))
    assert np.isnan(loss.columns[1][~late]).all()
    check = run_cli("--check", str(out))
    assert check.returncode == 0 and " 0 warning(s)" in check.stdout, check.stdout


def _leftovers(parent: Path) -> list[str]:
    return sorted(name for name in os.listdir(parent) if name != "run")


def test_a_full_disk_leaves_no_output_and_no_temp_files(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes every write past 64 KiB fail (EFBIG), as a full disk would."""
    _lightning_csv(tmp_path / "run" / "metrics.csv", 20_000, 10_000)
    out = tmp_path / "out"

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    result = run_cli("import", str(tmp_path / "run"), "--out", str(out), preexec_fn=limit_file_size)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "File too large" in result.stderr
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_an_import_interrupted_while_writing_leaves_nothing(
    tmp_path: Path, signal_number: int
) -> None:
    """The signal comes once the temp directory exists (the source is read, the write has
    begun): neither the output nor the temp directory is left."""
    _lightning_csv(tmp_path / "run" / "metrics.csv", 600_000, 1000)
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "ocms_tui", "import", str(tmp_path / "run"), "--out", str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "recorder")])},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(name.endswith(".importing") for name in os.listdir(tmp_path)):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.002)
        process.send_signal(signal_number)
        _, errors = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0, "the write ended before the signal came"
    assert _leftovers(tmp_path) == [], errors
