"""Run by test_torchrun.py under `torchrun --nproc_per_node=2`: the tiny BERT Trainer run
of test_hf_trainer.py, with OcmsCallback, each rank given its own output directory so
that anything a non-zero rank wrote would show up as its own `ocms_metrics`. Then every
rank logs through a bare OcmsRecorder too, which must find its rank by itself."""

from __future__ import annotations

import faulthandler
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ocms_recorder import OcmsRecorder
from test_hf_trainer import train_tiny_bert

from ocms_integrations.hf import OcmsCallback


def main() -> None:
    # A rank that hangs prints every thread's stack and exits, so the test can tell a hang
    # in the recorder or the hook from one inside gloo.
    faulthandler.dump_traceback_later(float(os.environ["OCMS_HANG_SECONDS"]), exit=True)
    base = Path(sys.argv[1])
    rank = int(os.environ["RANK"])
    trainer = train_tiny_bert(base / f"rank{rank}", [OcmsCallback()])
    import torch.distributed as dist

    with OcmsRecorder.from_output_dir(str(base / f"bare_rank{rank}")) as recorder:
        for step in range(1, 4):
            recorder.log(step=step, metrics={"loss": 1.0 / step})
    summary = {
        "rank": rank,
        "world_size": dist.get_world_size() if dist.is_initialized() else 1,
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "is_world_process_zero": trainer.is_world_process_zero(),
        "bare_recorder_active": recorder.active,
        "log_history": trainer.state.log_history,
    }
    (base / f"summary_rank{rank}.json").write_text(json.dumps(summary))
    if dist.is_initialized():
        # Left to interpreter exit, gloo's threads may be torn down mid-use and abort the
        # process ("terminate called without an active exception"): end the group first.
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
