"""`ocms-tui init --write` on each sample project, then a real short CPU training run of the
edited project with ocms_tui and ocms_integrations made unimportable (a training image has
only the copied files): the run writes a directory that passes `--check` with the charts
the framework's metrics belong to."""

from __future__ import annotations

import os
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
