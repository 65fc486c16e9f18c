"""Regenerate screenshots/*.svg from the deterministic demo data: `python scripts/make_screenshots.py`.

The same bytes every time for the same code: the runs are written by ocms_tui.ui.demo with a
fixed seed, file times and the clock are pinned, and the directory is shown as
`ocms_metrics` (or `out` for the comparison of three runs), never as the temporary path it
really is in.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ocms_tui.ui.app import save_snapshot
from ocms_tui.ui.demo import write_demo_run, write_problem_run

PINNED_TIME = 1_700_000_000.0
SHOTS = (
    # file name, which run, terminal size
    ("demo.svg", "demo", (160, 48)),
    ("demo-80x24.svg", "demo", (80, 24)),
    ("problems.svg", "problems", (160, 48)),
    ("compare.svg", "compare", (160, 48)),
)
# The comparison: three runs of different lengths and seeds under one parent, as
# `ocms-tui out` finds them in `out/run_{1,2,3}/ocms_metrics`.
COMPARED_RUNS = ((800, 0), (1000, 1), (1200, 2))


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
            leaf = "out" if kind == "compare" else "ocms_metrics"
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
