"""Regenerate screenshots/*.svg from the deterministic demo data: `python scripts/make_screenshots.py`.

The same bytes every time for the same code: the runs are written by ocms_tui.ui.demo with a
fixed seed, file times and the clock are pinned, and the directory is shown as
`ocms_metrics` (or `out` for the comparison of three runs, `sweep` for the sweep), never as the temporary path it
really is in.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ocms_tui.ui.demo import write_demo_run, write_problem_run
from ocms_tui.ui.launch import save_snapshot

PINNED_TIME = 1_700_000_000.0
SHOTS = (
    # file name, which run, terminal size
    ("demo.svg", "demo", (160, 48)),
    ("demo-80x24.svg", "demo", (80, 24)),
    ("problems.svg", "problems", (160, 48)),
    ("compare.svg", "compare", (160, 48)),
    ("sweep.svg", "sweep", (160, 48)),
)
# The comparison: three runs of different lengths and seeds under one parent, as
# `ocms-tui out` finds them in `out/run_{1,2,3}/ocms_metrics`.
COMPARED_RUNS = ((800, 0), (1000, 1), (1200, 2))
# The sweep: 4 learning rates x 15 seeds, as `ocms-tui sweep` finds them in
# `sweep/lr_<rate>_seed<n>` (lengths differ a little, as runs of a sweep stopped at a time do).
SWEEP_RATES = ("1e-4", "3e-4", "1e-3", "3e-3")
SWEEP_SEEDS = 15


def pin_times(directory: Path) -> None:
    for path in directory.iterdir():
        os.utime(path, (PINNED_TIME, PINNED_TIME))


def write_run(kind: str, directory: Path) -> None:
    """The run (or, for "compare", the parent of the runs) the screenshot shows."""
    if kind == "compare":
        for index, (steps, seed) in enumerate(COMPARED_RUNS):
            run = directory / f"run_{index + 1}" / "ocms_metrics"
            write_demo_run(run, steps=steps, seed=seed)
            pin_times(run)
        return
    if kind == "sweep":
        for index in range(len(SWEEP_RATES) * SWEEP_SEEDS):
            rate, seed = SWEEP_RATES[index % len(SWEEP_RATES)], index // len(SWEEP_RATES)
            run = directory / f"lr_{rate}_seed{seed}"
            write_demo_run(run, steps=300 + (index * 37) % 200, seed=100 + index)
            pin_times(run)
        return
    if kind == "demo":
        write_demo_run(directory, steps=3000, seed=0)
    else:
        write_problem_run(directory)
    pin_times(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "screenshots",
        help="where the SVGs go (default: screenshots/ of the repository)",
    )
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ocms-screenshots-") as temporary:
        for name, kind, size in SHOTS:
            leaf = {"compare": "out", "sweep": "sweep"}.get(kind, "ocms_metrics")
            directory = Path(temporary) / kind / leaf
            if not directory.exists():
                write_run(kind, directory)
            save_snapshot(
                directory,
                options.out / name,
                size=size,
                directory_label=leaf,
                clock=lambda: PINNED_TIME + 3,
            )
            print(f"wrote {options.out / name} ({size[0]}x{size[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
