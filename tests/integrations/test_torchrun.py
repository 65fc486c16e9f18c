"""Two processes under torchrun (gloo, CPU): only rank 0 writes, and what it writes is valid."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).with_name("ddp_hf_training.py")


# A run takes about 10 s here; a rank still running after this long is hung.
HANG_SECONDS = 110
# faulthandler's header above the stacks it dumps when that time runs out.
HANG_HEADER = re.compile(r"^Timeout \(\d+:\d\d:\d\d\)!", re.MULTILINE)
OUR_CODE = ("ocms_recorder", "ocms_integrations")


def run_under_torchrun(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",  # a free rendezvous port, so parallel runs never collide
            "--nproc_per_node=2",
            str(SCRIPT),
            str(directory),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS + 60,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OCMS_HANG_SECONDS": str(HANG_SECONDS)},
    )


def hung_outside_our_code(completed: subprocess.CompletedProcess[str]) -> bool:
    """A rank hung, and no thread of any rank was in the recorder or the hook: gloo on a
    loaded machine (seen once in CI, never in 20 runs under load here)."""
    stacks = completed.stderr
    return bool(HANG_HEADER.search(stacks)) and not any(name in stacks for name in OUR_CODE)


def test_only_rank_zero_writes_under_torchrun(
    tmp_path: Path, recorded_run: Callable[[Path], Any]
) -> None:
    completed = run_under_torchrun(tmp_path)
    if completed.returncode != 0 and hung_outside_our_code(completed):
        first_stacks = completed.stderr
        shutil.rmtree(tmp_path)
        tmp_path.mkdir()
        completed = run_under_torchrun(tmp_path)
        assert completed.returncode == 0, "hung twice outside ocms code:\n" + first_stacks[-6000:]
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]

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
