"""A parent of runs is several runs; framework-aware names; a generic log grouped so every
chart can be read (ocms_tui.sources.discover, frameworks, fitting's magnitude bands)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ocms_tui.follow.checker import check_directory
from ocms_tui.sources import Framework, SourceKind, read_run, source_runs
from ocms_tui.sources.common import Series
from ocms_tui.sources.fitting import MAX_MAGNITUDE_RATIO, fit_series, typical_magnitude
from ocms_tui.sources.frameworks import detect_framework
from ocms_tui.sources.tensorboard import read_tensorboard
from tests.sources_support import run_cli

tensorboardX = pytest.importorskip("tensorboardX")

# What transformers' TensorBoardCallback writes for a Trainer run (its rewrite_logs names).
HF_STEP_TAGS = {"train/loss": 0.7, "train/learning_rate": 1e-3, "train/grad_norm": 0.3}
HF_SUMMARY = {
    "train/train_runtime": 12.5,
    "train/train_samples_per_second": 900.0,
    "train/total_flos": 1.7e9,
    "train/train_loss": 0.65,
}


def write_hf_like_run(directory: Path, steps: int = 6) -> None:
    writer = tensorboardX.SummaryWriter(str(directory))
    for step in range(1, steps + 1):
        for tag, base in HF_STEP_TAGS.items():
            writer.add_scalar(tag, base / step, step)
        writer.add_scalar("train/epoch", step / steps, step)
        if step % 2 == 0:
            writer.add_scalar("eval/loss", 0.8 / step, step)
            writer.add_scalar("eval/accuracy", step / steps, step)
            writer.add_scalar("eval/runtime", 0.01, step)
            writer.add_scalar("train/epoch", step / steps, step)  # the eval log repeats it
    for tag, value in HF_SUMMARY.items():
        writer.add_scalar(tag, value, steps)
    writer.close()


def layout(out: Path) -> dict[str, list[str]]:
    document = json.loads((out / "metrics.json").read_text())
    return {chart["name"]: chart["y_axis"] for chart in document["charts"]}


def test_a_parent_of_tensorboard_runs_is_one_run_each_named_by_its_directory(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "output" / "runs"
    write_hf_like_run(runs / "Dec05_05-07-44_host")
    write_hf_like_run(runs / "Dec06_09-00-00_host", steps=4)
    found = source_runs(runs)
    assert [run.label for run in found.runs] == ["Dec05_05-07-44_host", "Dec06_09-00-00_host"]

    out = tmp_path / "preview"
    result = run_cli("import", str(runs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["Dec05_05-07-44_host", "Dec06_09-00-00_host"]
    for name in os.listdir(out):
        charts = layout(out / name)
        # The Trainer's names, as the HF callback records them; no run name in any series.
        assert charts["loss"] == ["loss", "eval_loss"]
        assert charts["learning_rate"] == ["learning_rate"]
        assert charts["eval_score"] == ["eval_accuracy"]
        assert not any("host" in y for names in charts.values() for y in names)
        assert check_directory(out / name).errors == 0
    # Summary and eval timing are said, not charted.
    assert "'train/total_flos': run summary logged once by train()" in result.stdout
    assert "'eval/runtime': evaluation runtime/throughput" in result.stdout
    assert not list(tmp_path.glob("output/.*")) and not list(tmp_path.glob(".preview*"))


def test_opening_a_parent_of_runs_overlays_them_named_by_the_source(tmp_path: Path) -> None:
    runs = tmp_path / "output" / "runs"
    write_hf_like_run(runs / "a")
    write_hf_like_run(runs / "b")
    result = run_cli("--check", str(runs))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # Each run: what Octopus will show (its charts), then its verdict.
    assert lines[0] == f"{runs}/a (tensorboard): Octopus will show 5 chart(s):"
    verdicts = [line for line in lines if ": ok: " in line]
    assert f"{runs}/a (tensorboard): ok: 0 error(s), 0 warning(s), 5 chart(s)" in verdicts[0]
    assert f"{runs}/b (tensorboard): ok" in verdicts[1]
    assert "ocms-tui-import" not in result.stdout  # never the temp conversion's path


def test_lightning_logs_and_mlruns_parents_are_several_runs(tmp_path: Path) -> None:
    logs = tmp_path / "lightning_logs"
    for version in (0, 1):
        (logs / f"version_{version}").mkdir(parents=True)
        (logs / f"version_{version}" / "metrics.csv").write_text(
            "epoch,step,train_loss\n0,3,0.5\n0,7,0.4\n"
        )
    assert [run.label for run in source_runs(logs).runs] == ["version_0", "version_1"]
    assert [run.label for run in source_runs(tmp_path).runs] == [
        "lightning_logs/version_0",
        "lightning_logs/version_1",
    ]
    store = tmp_path / "mlruns"
    for run_id in ("r1", "r2"):
        (store / "0" / run_id / "metrics").mkdir(parents=True)
        (store / "0" / run_id / "meta.yaml").write_text(f"run_id: {run_id}\n")
        (store / "0" / run_id / "metrics" / "loss").write_text("1 0.5 0\n2 0.4 1\n")
    assert [run.label for run in source_runs(store).runs] == ["0/r1", "0/r2"]
    out = tmp_path / "out"
    result = run_cli("import", str(store), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.glob("*/*")) == ["0/r1", "0/r2"]


def test_hf_tags_are_recognised_and_framework_overrides(tmp_path: Path) -> None:
    write_hf_like_run(tmp_path / "run")
    source = read_tensorboard(tmp_path / "run")
    assert detect_framework(source) is Framework.HF
    (run,) = source_runs(tmp_path / "run").runs
    mapped = read_run(run)
    names = {each.name for each in mapped.series}
    assert names == {"loss", "learning_rate", "grad_norm", "epoch", "eval_loss", "eval_accuracy"}
    epoch = next(each for each in mapped.series if each.name == "epoch")
    assert epoch.steps.tolist() == [1, 2, 3, 4, 5, 6]  # one point per step, as the hook merges
    generic = read_run(run, Framework.GENERIC)
    assert "train/loss" in {each.name for each in generic.series}


def test_lightning_names_from_tags_layout_and_override(tmp_path: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(tmp_path / "tb"))
    for step in range(8):  # 4 batches per epoch, a training log every 2
        epoch = step // 4
        if step % 2 == 1:
            writer.add_scalar("train_loss_step", 1.0 / (step + 1), step)
            writer.add_scalar("epoch", epoch, step)
        if step % 4 == 3:
            writer.add_scalar("val_loss", 0.5 / (step + 1), step)
            writer.add_scalar("epoch", epoch, step)
            writer.add_scalar("train_loss_epoch", 0.9 / (step + 1), step)
            writer.add_scalar("epoch", epoch, step)
    writer.close()
    (run,) = source_runs(tmp_path / "tb").runs
    mapped = {each.name: each for each in read_run(run).series}
    assert set(mapped) == {"train_loss", "epoch", "val_loss", "train_loss_epoch"}
    # The callback's fractional epoch at each training log: epoch + (batch + 1) / batches.
    assert mapped["epoch"].steps.tolist() == [1, 3, 5, 7]
    assert mapped["epoch"].values.tolist() == [0.5, 1.0, 1.5, 2.0]
    out = tmp_path / "out"
    assert run_cli("import", str(tmp_path / "tb"), "--out", str(out)).returncode == 0
    assert layout(out)["loss"] == ["train_loss", "val_loss", "train_loss_epoch"]
    generic = tmp_path / "generic"
    result = run_cli(
        "import", str(tmp_path / "tb"), "--out", str(generic), "--framework", "generic"
    )
    assert result.returncode == 0, result.stderr
    assert "train_loss_step" in {y for names in layout(generic).values() for y in names}


def named(name: str, values: list[float], steps: list[int] | None = None) -> Series:
    steps = steps if steps is not None else list(range(len(values)))
    return Series(name, np.array(steps, dtype=np.int64), np.array(values, dtype=np.float64))


def test_a_generic_chart_never_mixes_magnitudes_over_the_ratio() -> None:
    series = [
        named("train/loss", [0.9, 0.7, 0.5]),
        named("train/learning_rate", [1e-4, 9e-5, 8e-5]),
        named("train/tokens", [1e6, 2e6, 3e6]),
        named("train/flos_total", [1.7e9], [2]),  # logged once: a summary
        named("train/zero", [0.0, 0.0, 0.0]),
    ]
    fit = fit_series(series, [], by_magnitude=True)
    charts = {chart.name: chart.keys for chart in fit.charts}
    for keys in charts.values():
        sizes = [typical_magnitude(each.values) for each in series if each.name in keys]
        sizes = [size for size in sizes if size]
        assert max(sizes) <= min(sizes) * MAX_MAGNITUDE_RATIO, keys
    assert charts["train"] == ("train/loss", "train/zero")
    assert charts["train_learning_rate"] == ("train/learning_rate",)
    assert charts["train_tokens"] == ("train/tokens",)
    (summary,) = fit.left_out
    assert summary.series == "train/flos_total"
    assert "logged once (1.7e+09 at step 2): a run summary" in summary.reason


def test_magnitude_bands_beyond_the_chart_limit_are_left_out_said() -> None:
    series = [named(f"g{index}/a", [1.0, 1.0]) for index in range(5)]
    series += [named("g0/huge", [1e12, 1e12]), named("g1/huge", [1e12, 1e12])]
    fit = fit_series(series, [], by_magnitude=True)
    assert len(fit.charts) == 6
    (left,) = fit.left_out
    assert "no chart is left for it" in left.reason


def test_check_of_a_generic_log_never_warns_mixed_scale(tmp_path: Path) -> None:
    writer = tensorboardX.SummaryWriter(str(tmp_path / "run"))
    for step in range(20):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
        writer.add_scalar("train/lr", 1e-4, step)
        writer.add_scalar("train/tokens", 1e6 * step + 1, step)
    writer.close()
    result = run_cli("--check", str(tmp_path / "run"))
    assert result.returncode == 0, result.stdout
    assert "mixed-scale" not in result.stdout, result.stdout
    assert result.returncode == 0


def test_the_kind_of_each_run_is_kept(tmp_path: Path) -> None:
    write_hf_like_run(tmp_path / "runs" / "x")
    (run,) = source_runs(tmp_path / "runs").runs
    assert run.kind is SourceKind.TENSORBOARD and run.path == tmp_path / "runs" / "x"


def test_lightning_epoch_without_step_forks_follows_the_training_logs(tmp_path: Path) -> None:
    version = tmp_path / "lightning_logs" / "version_0"
    writer = tensorboardX.SummaryWriter(str(version))
    for step in range(8):  # 4 batches per epoch; `self.log("loss", ...)` every 2 batches
        if step % 2 == 1:
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalar("epoch", step // 4, step)
        if step % 4 == 3:
            writer.add_scalar("val_loss", 0.5, step)
            writer.add_scalar("epoch", step // 4, step)
    writer.close()
    (version / "hparams.yaml").write_text("{}\n")  # Lightning's layout says which framework
    (run,) = source_runs(tmp_path / "lightning_logs").runs
    epoch = next(each for each in read_run(run).series if each.name == "epoch")
    assert list(zip(epoch.steps.tolist(), epoch.values.tolist(), strict=True)) == [
        (1, 0.5),
        (3, 1.0),
        (5, 1.5),
        (7, 2.0),
    ]


def test_several_runs_are_written_all_or_nothing(tmp_path: Path) -> None:
    store = tmp_path / "mlruns"
    for run_id, text in (("r1", "not a metric line\n"), ("r2", "also not\n")):
        (store / "0" / run_id / "metrics").mkdir(parents=True)
        (store / "0" / run_id / "meta.yaml").write_text(f"run_id: {run_id}\n")
        (store / "0" / run_id / "metrics" / "loss").write_text(text)
    out = tmp_path / "new" / "parent" / "out"
    result = run_cli("import", str(store), "--out", str(out))
    assert result.returncode == 2
    assert "no series to write in any of its 2 runs" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["mlruns"]  # nor its parents, nor a hidden one

    (store / "0" / "r2" / "metrics" / "loss").write_text("1 0.5 0\n2 0.4 1\n")
    result = run_cli("import", str(store), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.glob("*/*")) == ["0/r2"]
    assert "not 'timestamp value step'" in result.stdout  # what r1 held, said
