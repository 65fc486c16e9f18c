"""`ocms-tui init --write` on each sample project, then a real short CPU training run of the
edited project with ocms_tui and ocms_integrations made unimportable (a training image has
only the copied files): the run writes a directory that passes `--check` with the charts
the framework's metrics belong to."""

from __future__ import annotations

import os
import pickle
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

PROJECTS = Path(__file__).parents[1] / "projects"

# Runs the script as `python train.py` would, but with ocms-tui's own packages blocked,
# then proves the recorder that ran is the copied one.
STANDALONE_RUNNER = """
import importlib.abc, os, runpy, sys

class NotInTrainingImages(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ocms_tui", "ocms_integrations"):
            raise ImportError(name + " is not installed in a training image")
        return None

sys.meta_path.insert(0, NotInTrainingImages())
script = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(script)
runpy.run_path(script, run_name="__main__")
recorder = sys.modules["ocms_recorder"].__file__
copied = os.path.join(os.getcwd(), "migrate_to_cloudrobo", "ocms_recorder.py")
assert os.path.samefile(recorder, copied), recorder
"""

# project -> (init arguments, metrics directory under the project, expected charts)
CASES: dict[str, tuple[list[str], str, dict[str, list[str]]]] = {
    "plain_loop": (
        ["--output-dir-expr", "output_dir"],
        "output/ocms_metrics",
        {
            "loss": ["loss"],
            "learning_rate": ["learning_rate"],
            "epoch": ["epoch"],
            "grad_norm": ["grad_norm"],
        },
    ),
    "tensorboard_loop": (
        ["--output-dir-expr", "self.output_dir"],
        "output/ocms_metrics",
        # Kept by the suggested chart groups: the defaults take no `train/` tag.
        {"loss": ["train_loss"], "learning_rate": ["train_lr"]},
    ),
    "accelerate_loop": (
        ["--output-dir-expr", "output_dir"],
        "output/ocms_metrics",
        {"loss": ["train_loss"], "learning_rate": ["learning_rate"]},
    ),
    "hf_trainer": (
        [],
        "output/ocms_metrics",
        {
            "loss": ["loss"],
            "learning_rate": ["learning_rate"],
            "epoch": ["epoch"],
            "grad_norm": ["grad_norm"],
        },
    ),
    "lightning_module": (
        [],
        "output/ocms_metrics",
        {"loss": ["train_loss"], "learning_rate": ["learning_rate"], "epoch": ["epoch"]},
    ),
    "mmengine_config": (
        [],
        "output/ocms_metrics",
        {
            "loss": ["loss", "loss_cls"],
            "learning_rate": ["learning_rate"],
            "epoch": ["epoch"],
            "timing": ["data", "iter"],
            "grad_norm": ["grad_norm"],
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_init_then_a_real_run_passes_the_check(
    tmp_path: Path, name: str, recorded_run: Callable[[Path], Any]
) -> None:
    arguments, metrics_dir, charts = CASES[name]
    project = tmp_path / name
    shutil.copytree(PROJECTS / name, project)
    init = subprocess.run(
        [sys.executable, "-m", "ocms_tui", "init", str(project), "--write", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, "-c", STANDALONE_RUNNER, "train.py", "--output-dir", "output"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        env=environment,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    run = recorded_run(project / metrics_dir)
    assert {chart: run.charts[chart].y_axis for chart in run.charts} == charts
    assert all(len(chart.rows) >= 2 for chart in run.charts.values())


def test_an_edited_loop_records_on_rank_zero_only(tmp_path: Path) -> None:
    project = tmp_path / "plain_loop"
    shutil.copytree(PROJECTS / "plain_loop", project)
    init = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocms_tui",
            "init",
            str(project),
            "--write",
            "--output-dir-expr",
            "output_dir",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    for rank in ("1", "0"):
        completed = subprocess.run(
            [sys.executable, "train.py", "--output-dir", f"rank{rank}"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            env={**environment, "RANK": rank},
        )
        assert completed.returncode == 0, completed.stderr
    assert not (project / "rank1").exists()
    assert (project / "rank0" / "ocms_metrics" / "loss.csv").read_text().count("\n") == 5


# -- real public training scripts --------------------------------------------------------

REAL_SCRIPTS = Path(__file__).parents[1] / "real_scripts"


def _pristine_pair(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """Two copies of a real script's folder: one stays as written, one gets `init --write`."""
    original, wired = tmp_path / "original", tmp_path / "wired"
    shutil.copytree(REAL_SCRIPTS / name, original)
    shutil.copytree(REAL_SCRIPTS / name, wired)
    return original, wired


def _init_write(project: Path) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "ocms_tui", "init", str(project), "--write", "--force"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def _train(project: Path, arguments: list[str], metrics: Path | None = None) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if metrics is not None:
        environment["METRICS"] = str(metrics)
    completed = subprocess.run(
        [sys.executable, *arguments],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return completed.stdout


def test_real_nanogpt_records_its_iteration_loss_at_iter_num(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """karpathy/nanoGPT train.py: wandb is off by default, the loss is printed every
    iteration (`iter {iter_num}: loss {lossf:.4f}`) and the evaluation every 10."""
    numpy = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    original, wired = _pristine_pair(tmp_path, "nanogpt")
    for project in (original, wired):
        data = project / "data" / "ocms_tiny"
        data.mkdir(parents=True)
        generator = numpy.random.default_rng(0)
        for split in ("train", "val"):
            generator.integers(0, 32, size=2000, dtype=numpy.uint16).tofile(data / f"{split}.bin")
        (data / "meta.pkl").write_bytes(pickle.dumps({"vocab_size": 32}))
    plan = _init_write(wired)
    assert "train.py:327  print\n    step: iter_num" in plan
    assert "recorded after `if wandb_log:` (off by default)" in plan
    assert "bench.py: left alone: its name says it does not train" in plan
    assert (wired / "bench.py").read_bytes() == (original / "bench.py").read_bytes()
    arguments = ["train.py", "config/ocms_tiny.py"]
    printed = _printed_losses(_train(original, arguments))
    assert _printed_losses(_train(wired, arguments, tmp_path / "metrics")) == printed
    run = recorded_run(tmp_path / "metrics")
    loss = run.series("loss", "loss")
    assert sorted(loss) == list(range(21))  # iter_num 0..20, not a call counter
    assert {step: round(value, 4) for step, value in loss.items()} == printed
    assert sorted(run.series("loss", "val_loss")) == [0, 10, 20]
    assert "iter" not in {name for chart in run.charts.values() for name in chart.y_axis}


def _printed_losses(output: str) -> dict[int, float]:
    found = re.findall(r"^iter (\d+): loss ([\d.]+),", output, re.MULTILINE)
    return {int(step): float(loss) for step, loss in found}


def test_real_pytorch_mnist_steps_grow_across_epochs_and_test_values_stay_apart(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """pytorch/examples mnist/main.py: `batch_idx` restarts each epoch, the test loss and
    the count of correct answers are printed by `test()`."""
    pytest.importorskip("torch")
    original, wired = _pristine_pair(tmp_path, "pytorch_mnist")
    plan = _init_write(wired)
    assert "step: epoch * len(train_loader) + batch_idx" in plan
    arguments = ["ocms_shim_run.py", "main.py", "--epochs", "2", "--batch-size", "32"]
    arguments += ["--test-batch-size", "64", "--log-interval", "2", "--no-accel"]
    output = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "metrics") == output  # the same training
    run = recorded_run(tmp_path / "metrics")
    batches = 256 // 32
    printed = {
        int(epoch) * batches + int(seen) // 32: float(loss)
        for epoch, seen, loss in re.findall(
            r"Train Epoch: (\d+) \[(\d+)/\d+ .*Loss: ([\d.]+)", output
        )
    }
    loss = run.series("loss", "loss")
    assert {step: round(value, 6) for step, value in loss.items()} == printed
    assert sorted(loss) == sorted(set(loss)) and len(loss) == 8  # never restarted
    tests = re.findall(r"Average loss: ([\d.]+), Accuracy: (\d+)/(\d+)", output)
    test_loss = run.series("loss", "test_loss")
    assert [round(value, 4) for value in test_loss.values()] == [float(t[0]) for t in tests]
    accuracy = run.series("eval_score", "test_accuracy")
    assert list(accuracy.values()) == pytest.approx([int(c) / int(n) for _, c, n in tests])


def test_real_lightning_cli_gets_the_callback_through_trainer_defaults(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """Lightning's LightningCLI example: init once copied the hook, edited nothing and
    exited 0. Now the CLI gets `trainer_defaults={"callbacks": [OcmsCallback()]}`; the
    saved config stays the user's (no callback object in it)."""
    pytest.importorskip("lightning")
    pytest.importorskip("jsonargparse")
    original, wired = _pristine_pair(tmp_path, "lightning_cli")
    plan = _init_write(wired)
    assert "LightningCLI gets OcmsCallback()" in plan
    arguments = ["ocms_shim_run.py", "backbone_image_classifier.py", "--trainer.max_epochs=2"]
    arguments += ["--trainer.limit_train_batches=4", "--trainer.limit_val_batches=2"]
    arguments += ["--trainer.limit_test_batches=2", "--trainer.limit_predict_batches=1"]
    arguments += ["--trainer.accelerator=cpu", "--trainer.enable_progress_bar=false"]
    arguments += ["--trainer.log_every_n_steps=1", "--trainer.logger=false"]
    predictions = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "metrics") == predictions  # same training
    run = recorded_run(tmp_path / "metrics")
    assert sorted(run.series("loss", "train_loss")) == list(range(8))  # trainer.global_step
    assert "test_loss" in run.charts["loss"].y_axis
    config = next(wired.rglob("config.yaml")).read_text()
    assert "callbacks: null" in config


def test_real_accelerate_example_records_with_and_without_tracking(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """Accelerate's complete_nlp_example: `accelerator.log` sits under `if
    args.with_tracking:` and logs at `step=epoch`. A default run now records accuracy and
    F1 at `overall_step`; with --with_tracking the train_loss only that branch computes is
    recorded too, and equals the tracker's."""
    pytest.importorskip("accelerate")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    )
    original, wired = _pristine_pair(tmp_path, "accelerate_nlp")
    plan = _init_write(wired)
    assert "step: overall_step" in plan
    assert "recorded inside `if args.with_tracking:`" in plan
    arguments = ["ocms_shim_run.py", "complete_nlp_example.py", "--cpu"]
    output = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "default") == output
    run = recorded_run(tmp_path / "default")
    printed = re.findall(r"epoch (\d+): \{'accuracy': ([\d.]+), 'f1': ([\d.]+)\}", output)
    steps_per_epoch = 64 // 16
    assert run.series("eval_score", "accuracy") == {
        (int(epoch) + 1) * steps_per_epoch: float(accuracy) for epoch, accuracy, _ in printed
    }
    assert "loss" not in run.charts  # the default run computes no train_loss
    tracking = [*arguments, "--with_tracking", "--project_dir", str(tmp_path / "trackers")]
    os.environ.update(
        MLFLOW_TRACKING_URI=f"file:{tmp_path / 'mlruns'}", MLFLOW_ALLOW_FILE_STORE="true"
    )
    try:
        _train(wired, tracking, tmp_path / "tracking")
    finally:
        for name in ("MLFLOW_TRACKING_URI", "MLFLOW_ALLOW_FILE_STORE"):
            os.environ.pop(name, None)
    run = recorded_run(tmp_path / "tracking")
    events = next((tmp_path / "trackers").rglob("events.out.tfevents.*")).parent
    accumulator = event_accumulator.EventAccumulator(str(events))
    accumulator.Reload()
    reported = {e.step: e.value for e in accumulator.Scalars("train_loss")}  # step = epoch
    recorded = run.series("loss", "train_loss")
    assert sorted(recorded) == [4, 8, 12]
    assert [round(recorded[(epoch + 1) * steps_per_epoch], 5) for epoch in sorted(reported)] == [
        round(value, 5) for _, value in sorted(reported.items())
    ]


def test_real_word_language_model_gets_a_counter_that_grows_across_epochs(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """pytorch/examples word_language_model: `train()` is called once an epoch and logs
    its restarting `batch` index; the epoch loop and the final test print at module level."""
    pytest.importorskip("torch")
    original, wired = _pristine_pair(tmp_path, "word_language_model")
    words = [
        "the",
        "cat",
        "sat",
        "on",
        "a",
        "mat",
        "while",
        "dogs",
        "ran",
        "far",
        "away",
        "from",
        "home",
    ]
    for project in (original, wired):
        (project / "tiny").mkdir()
        for name, lines in (("train.txt", 40), ("valid.txt", 10), ("test.txt", 10)):
            pick = random.Random(name)
            text = "".join(
                " ".join(pick.choice(words) for _ in range(8)) + "\n" for _ in range(lines)
            )
            (project / "tiny" / name).write_text(text)
    plan = _init_write(wired)
    assert "init adds a counter that grows by one each iteration of the loop at line 171" in plan
    arguments = ["main.py", "--data", "tiny", "--emsize", "8", "--nhid", "8", "--nlayers", "1"]
    arguments += ["--epochs", "2", "--bptt", "5", "--batch_size", "4", "--log-interval", "2"]

    def without_timing(output: str) -> str:
        return re.sub(r"ms/batch +[\d.]+|time: +[\d.]+s", "", output)

    output = _train(original, arguments)
    assert without_timing(_train(wired, arguments, tmp_path / "metrics")) == without_timing(output)
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"\| epoch +(\d+) \| +(\d+)/ *(\d+) batches .*\| loss +([\d.]+)", output)
    batches_per_epoch = int(printed[0][2])  # len(train_data) // bptt
    loss = run.series("loss", "loss")
    assert {step: round(value, 2) for step, value in loss.items()} == {
        (int(epoch) - 1) * batches_per_epoch + int(batch): float(value)
        for epoch, batch, _, value in printed
    }
    valid = re.findall(r"valid loss +([\d.]+)", output)
    assert [round(v, 2) for v in run.series("loss", "valid_loss").values()] == list(
        map(float, valid)
    )
    test = re.findall(r"test loss +([\d.]+)", output)
    assert [round(v, 2) for v in run.series("loss", "test_loss").values()] == list(map(float, test))


def test_real_vae_keeps_the_epoch_average_apart_from_the_batch_loss(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """pytorch/examples vae: `Loss` per logged batch, `Average loss` per epoch (both in
    `train(epoch)`), `Test set loss` in `test(epoch)`: three series, not one."""
    pytest.importorskip("torch")
    original, wired = _pristine_pair(tmp_path, "vae")
    for project in (original, wired):  # the MNIST stand-in, kept once with mnist/
        shutil.copy(REAL_SCRIPTS / "pytorch_mnist" / "ocms_shim_run.py", project)
    plan = _init_write(wired)
    assert "step: epoch * len(train_loader) + batch_idx" in plan
    arguments = ["ocms_shim_run.py", "main.py", "--epochs", "2", "--batch-size", "32"]
    arguments += ["--log-interval", "2", "--no-accel"]
    output = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "metrics") == output
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"Train Epoch: (\d+) \[(\d+)/\d+ .*Loss: ([\d.]+)", output)
    loss = run.series("loss", "loss")
    assert {step: round(value, 6) for step, value in loss.items()} == {
        int(epoch) * 8 + int(seen) // 32: float(value) for epoch, seen, value in printed
    }
    averages = [float(v) for v in re.findall(r"Average loss: ([\d.]+)", output)]
    assert [round(v, 4) for v in run.series("loss", "average_loss").values()] == averages
    tests = [float(v) for v in re.findall(r"Test set loss: ([\d.]+)", output)]
    assert [round(v, 4) for v in run.series("loss", "test_loss").values()] == tests


def test_real_mingpt_callback_records_at_the_trainers_iter_num(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """minGPT chargpt: the project's own Trainer, a `batch_end_callback` that prints
    `iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}` every 10 iterations."""
    pytest.importorskip("torch")
    original, wired = _pristine_pair(tmp_path, "mingpt_chargpt")
    pick = random.Random(0)
    words = ["to", "be", "or", "not", "that", "is", "the", "question", "O", "God,", "O", "God!"]
    text = " ".join(pick.choice(words) for _ in range(800))  # holds the sampling prompt
    for project in (original, wired):
        (project / "input.txt").write_text(text)
    plan = _init_write(wired)
    assert "step: trainer.iter_num" in plan
    arguments = ["chargpt.py", "--trainer.max_iters=30", "--model.model_type=None"]
    arguments += ["--model.n_layer=1", "--model.n_head=1", "--model.n_embd=16"]
    arguments += ["--data.block_size=8", "--trainer.batch_size=4", "--trainer.num_workers=0"]
    arguments += ["--trainer.device=cpu"]

    def without_timing(output: str) -> str:
        return re.sub(r"iter_dt [\d.]+ms", "", output)

    output = _train(original, arguments)
    assert without_timing(_train(wired, arguments, tmp_path / "metrics")) == without_timing(output)
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"iter (\d+): train loss ([\d.]+)", output)
    recorded = run.series("loss", "train_loss")
    assert {step: round(value, 5) for step, value in recorded.items()} == {
        int(step): float(value) for step, value in printed
    }
    assert sorted(recorded) == [0, 10, 20]


def test_real_accelerate_tracking_example_logs_at_its_epoch(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """Accelerate's by_feature/tracking.py counts no iterations and logs `step=epoch`
    under `if args.with_tracking:`: a default run records accuracy and F1 at the epoch."""
    pytest.importorskip("accelerate")
    original, wired = _pristine_pair(tmp_path, "accelerate_tracking")
    for project in (original, wired):  # the GLUE stand-in, kept once with accelerate_nlp/
        shutil.copy(REAL_SCRIPTS / "accelerate_nlp" / "ocms_shim_run.py", project)
    plan = _init_write(wired)
    assert "step: epoch  (the step the script logs with, `epoch`: nothing in the script" in plan
    arguments = ["ocms_shim_run.py", "tracking.py", "--cpu"]
    output = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "metrics") == output
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"epoch (\d+): \{'accuracy': ([\d.]+), 'f1': ([\d.]+)\}", output)
    assert run.series("eval_score", "f1") == {int(e): float(f1) for e, _, f1 in printed}
    assert "epoch" not in run.charts  # the x axis, not a metric


def test_real_pytorch_gan_records_both_losses_at_batches_done(
    tmp_path: Path, recorded_run: Callable[[Path], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """eriklindernoren/PyTorch-GAN gan.py: module-level loops, `[Batch %d/%d]` printed with
    an index that restarts each epoch, the script's own `batches_done = epoch *
    len(dataloader) + i` computed after the print."""
    pytest.importorskip("torch")
    monkeypatch.setenv("OCMS_SHIM_SEED", "0")  # the script seeds nothing
    original, wired = _pristine_pair(tmp_path, "pytorch_gan")
    for project in (original, wired):  # the MNIST stand-in, kept once with mnist/
        shutil.copy(
            REAL_SCRIPTS / "pytorch_mnist" / "ocms_shim_run.py", project / "implementations" / "gan"
        )
    plan = _init_write(wired)
    assert "implementations/gan/gan.py:163  print\n    step: epoch * len(dataloader) + i" in plan
    arguments = ["ocms_shim_run.py", "gan.py", "--n_epochs", "2", "--batch_size", "64"]
    here = Path("implementations") / "gan"
    output = _train(original / here, arguments)
    assert _train(wired / here, arguments, tmp_path / "metrics") == output
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(
        r"\[Epoch (\d+)/2\] \[Batch (\d+)/(\d+)\] \[D loss: ([\d.]+)\] \[G loss: ([\d.]+)\]", output
    )
    batches_done = {int(e) * int(n) + int(i): (float(d), float(g)) for e, i, n, d, g in printed}
    assert sorted(batches_done) == list(range(8))
    for name, column in (("d_loss", 0), ("g_loss", 1)):
        recorded = run.series("loss", name)
        assert {step: round(value, 6) for step, value in recorded.items()} == {
            step: values[column] for step, values in batches_done.items()
        }


def test_real_pytorch_tutorial_records_its_loss_at_a_step_that_grows_across_epochs(
    tmp_path: Path, recorded_run: Callable[[Path], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """yunjey/pytorch-tutorial feedforward_neural_network: constants for every
    hyper-parameter, a module-level loop printing `Step [{}/{}]` with `i+1` (restarts each
    epoch) every 100 batches, `.format(...)` over `loss.item()`."""
    pytest.importorskip("torch")
    monkeypatch.setenv("OCMS_SHIM_MNIST_TRAIN", "10000")  # 100 batches of 100 an epoch
    monkeypatch.setenv("OCMS_SHIM_SEED", "0")  # the script seeds nothing
    original, wired = _pristine_pair(tmp_path, "yunjey_feedforward")
    for project in (original, wired):
        shutil.copy(REAL_SCRIPTS / "pytorch_mnist" / "ocms_shim_run.py", project)
    plan = _init_write(wired)
    assert "step: epoch * len(train_loader) + i" in plan
    assert "`loss.item()` bound once to _ocms_loss" in plan
    arguments = ["ocms_shim_run.py", "main.py"]
    output = _train(original, arguments)
    assert _train(wired, arguments, tmp_path / "metrics") == output
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"Epoch \[(\d+)/5\], Step \[(\d+)/(\d+)\], Loss: ([\d.]+)", output)
    assert len(printed) == 5
    loss = run.series("loss", "loss")
    # The printed `Step [100/100]` of epoch 1 is batch index 99: step 99, then 199, ...
    assert {step: round(value, 4) for step, value in loss.items()} == {
        (int(epoch) - 1) * int(total) + int(batch) - 1: float(value)
        for epoch, batch, total, value in printed
    }


def test_real_nlp_tutorial_full_batch_epochs_are_its_steps_and_cost_is_a_loss(
    tmp_path: Path, recorded_run: Callable[[Path], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """graykode/nlp-tutorial NNLM.py: `print('Epoch:', '%04d' % (epoch + 1), 'cost =',
    '{:.6f}'.format(loss))` every 1000 of 5000 full-batch steps. Init once found no site
    (a `cost`, values wrapped in formatting) and would have recorded at one step."""
    pytest.importorskip("torch")
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # the vocabulary is built from a set
    original, wired = _pristine_pair(tmp_path, "nlp_tutorial_nnlm")
    plan = _init_write(wired)
    assert "NNLM.py:69  print\n    step: epoch  (the loop variable `epoch`" in plan
    seeded = (
        "import runpy, torch; torch.manual_seed(0); runpy.run_path('NNLM.py', run_name='__main__')"
    )
    output = _train(original, ["-c", seeded])
    assert _train(wired, ["-c", seeded], tmp_path / "metrics") == output
    run = recorded_run(tmp_path / "metrics")
    printed = re.findall(r"Epoch: (\d+) cost = ([\d.]+)", output)
    (chart,) = [name for name, chart in run.charts.items() if "cost" in chart.y_axis]
    cost = run.series(chart, "cost")
    assert {step + 1: round(value, 6) for step, value in cost.items()} == {
        int(epoch): float(value) for epoch, value in printed
    }
    assert sorted(cost) == [999, 1999, 2999, 3999, 4999]


def test_real_cleanrl_ppo_records_one_row_a_step_at_global_step(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """vwxyzjn/cleanrl ppo.py: its own SummaryWriter (always on; wandb only with --track),
    eight `writer.add_scalar(..., global_step)` lines after each update and a `print("SPS:")`
    among them. Init records them with one call after the last (one row a step, not eight)
    and every value equals the one TensorBoard got at the same global_step."""
    pytest.importorskip("torch")
    pytest.importorskip("gymnasium")
    pytest.importorskip("tyro")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    )
    original, wired = _pristine_pair(tmp_path, "cleanrl_ppo")
    plan = _init_write(wired)
    assert "ppo.py:301  writer.add_scalar\n    step: global_step" in plan
    assert "recorded by the call after line 309 (one row a step)" in plan
    arguments = ["ppo.py", "--total-timesteps", "256", "--num-envs", "1", "--num-steps", "64"]
    arguments += ["--no-cuda"]

    def without_speed(output: str) -> str:
        return re.sub(r"SPS: \d+", "SPS", output)

    output = _train(original, arguments)
    assert without_speed(_train(wired, arguments, tmp_path / "metrics")) == without_speed(output)
    # Value loss and KL terms share the script's `losses/` family: --check warns that
    # they differ by orders of magnitude on one chart.
    run = recorded_run(tmp_path / "metrics", frozenset({"mixed-scale"}))

    def scalars(project: Path, tag: str) -> dict[int, float]:
        events = next((project / "runs").rglob("events.out.tfevents.*")).parent
        accumulator = event_accumulator.EventAccumulator(str(events))
        accumulator.Reload()
        return {event.step: event.value for event in accumulator.Scalars(tag)}

    for tag in ("losses/value_loss", "losses/policy_loss", "losses/approx_kl"):
        written = scalars(wired, tag)
        assert written == scalars(original, tag)  # the same training
        recorded = run.series("loss", tag.replace("/", "_"))
        assert sorted(recorded) == sorted(written) == [64, 128, 192, 256]
        assert recorded == pytest.approx(written, rel=1e-6)
    assert len(run.charts["loss"].rows) == 4  # one row a step


def test_real_trl_sft_script_gets_the_callback_and_records_the_printed_losses(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """TRL's sft.py: `SFTTrainer(...)` built inside `main()` after a function-level `from
    trl import SFTTrainer`. Init adds `callbacks=[OcmsCallback()]`; the losses the Trainer
    prints (`{'loss': '2.835', ...}`, 4 significant digits) are recorded at global_step."""
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    original, wired = _pristine_pair(tmp_path, "trl_sft")
    plan = _init_write(wired)
    assert "sft.py:103: SFTTrainer gets OcmsCallback()" in plan
    assert "sft.py:103: SFTTrainer also logs keys of its own at run time" in plan
    arguments = ["ocms_shim_run.py", "sft.py", "--model_name_or_path", "tiny_model"]
    arguments += ["--dataset_name", "tiny_data", "--output_dir", "out", "--max_steps", "4"]
    arguments += ["--logging_steps", "1", "--per_device_train_batch_size", "4", "--seed", "0"]
    arguments += ["--report_to", "none", "--use_cpu", "--save_strategy", "no"]
    arguments += ["--disable_tqdm", "true"]

    def logged(output: str) -> list[str]:
        return re.findall(r"^\{'loss': '([^']+)'", output, re.MULTILINE)

    printed = logged(_train(original, arguments))
    assert logged(_train(wired, arguments, tmp_path / "metrics")) == printed
    # What init does not wire: the keys SFTTrainer adds at run time, which the HF hook's
    # default chart groups (six charts) leave out; --check names each with the fix.
    run = recorded_run(tmp_path / "metrics", frozenset({"dropped-metric"}))
    dropped = {
        problem["message"].split("'")[1]
        for problem in run.check_report["problems"]  # type: ignore[union-attr]
    }
    assert dropped == {"entropy", "mean_token_accuracy", "num_tokens"}
    loss = run.series("loss", "loss")
    assert sorted(loss) == [1, 2, 3, 4]  # the Trainer's global_step
    assert [format(loss[step], ".4g") for step in sorted(loss)] == printed


def test_real_transformers_no_trainer_records_the_tracked_loss_and_says_what_it_cannot(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    """transformers' run_glue_no_trainer.py: `accelerator.log({...}, step=completed_steps)`
    under `if args.with_tracking:`, logging a train_loss summed only under that guard and
    the evaluation dict under a key computed at run time. Init records the train_loss where
    it is computed and says a default run records nothing (and why)."""
    pytest.importorskip("accelerate")
    pytest.importorskip("datasets")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    )
    original, wired = _pristine_pair(tmp_path, "transformers_glue_no_trainer")
    plan = _init_write(wired)
    assert "run_glue_no_trainer.py:606  accelerator.log\n    step: completed_steps" in plan
    assert "recorded inside `if args.with_tracking:`" in plan
    assert "a default run records nothing here" in plan
    assert "a key computed at run time (init records literal keys)" in plan
    arguments = ["ocms_shim_run.py", "run_glue_no_trainer.py", "--model_name_or_path"]
    arguments += ["tiny_model", "--train_file", "tiny_data/train.csv", "--validation_file"]
    arguments += ["tiny_data/validation.csv", "--seed", "0", "--num_train_epochs", "2"]
    _train(wired, arguments, tmp_path / "default")
    assert not (tmp_path / "default").exists()  # as the plan said
    tracking = [*arguments, "--with_tracking", "--report_to", "tensorboard"]
    tracking += ["--output_dir", "out"]

    def train_losses(project: Path) -> dict[int, float]:
        events = next((project / "out").rglob("events.out.tfevents.*")).parent
        accumulator = event_accumulator.EventAccumulator(str(events))
        accumulator.Reload()
        return {event.step: event.value for event in accumulator.Scalars("train_loss")}

    _train(original, tracking)
    _train(wired, tracking, tmp_path / "tracking")
    assert train_losses(wired) == train_losses(original)  # the same training
    run = recorded_run(tmp_path / "tracking")
    recorded = run.series("loss", "train_loss")
    assert sorted(recorded) == [4, 8]  # completed_steps: 32 examples, batches of 8
    assert recorded == pytest.approx(train_losses(wired), rel=1e-6)
