"""Two processes under torchrun (gloo, CPU): only rank 0 writes, and what it writes is valid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).with_name("ddp_hf_training.py")


def test_only_rank_zero_writes_under_torchrun(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",  # a free rendezvous port, so parallel runs never collide
            "--nproc_per_node=2",
            str(SCRIPT),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]

    summaries = {
        rank: json.loads((tmp_path / f"summary_rank{rank}.json").read_text()) for rank in (0, 1)
    }
    for rank, summary in summaries.items():
        assert summary["world_size"] == 2
        assert summary["backend"] == "gloo"
        assert summary["is_world_process_zero"] is (rank == 0)
        assert summary["bare_recorder_active"] is (rank == 0)

    # Rank 1 trained with its own output directory; nothing of ocms appeared there.
    assert not (tmp_path / "rank1" / "ocms_metrics").exists()
    assert not (tmp_path / "bare_rank1").exists()

    run = recorded_run(tmp_path / "rank0" / "ocms_metrics")
    history = summaries[0]["log_history"]
    assert run.series("loss", "loss") == pytest.approx(
        {entry["step"]: entry["loss"] for entry in history if "loss" in entry}, rel=1e-12
    )
    assert sorted(run.series("loss", "eval_loss")) == [10, 20, 30]
    bare = recorded_run(tmp_path / "bare_rank0" / "ocms_metrics")
    assert bare.series("loss", "loss") == {1: 1.0, 2: 0.5, 3: pytest.approx(1 / 3)}
