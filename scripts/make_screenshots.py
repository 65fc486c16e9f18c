"""Regenerate screenshots/*.svg from the deterministic demo data: `python scripts/make_screenshots.py`.

The same bytes every time for the same code: the runs are written by ocms_tui.demo with a
fixed seed, file times and the clock are pinned, and the directory is shown as
`ocms_metrics`, never as the temporary path it really is in.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ocms_tui.app import save_snapshot
from ocms_tui.demo import write_demo_run, write_problem_run

PINNED_TIME = 1_700_000_000.0
SHOTS = (
    # file name, which run, terminal size
    ("demo.svg", "demo", (160, 48)),
    ("demo-80x24.svg", "demo", (80, 24)),
    ("problems.svg", "problems", (160, 48)),
)


def write_run(kind: str, directory: Path) -> None:
    if kind == "demo":
        write_demo_run(directory, steps=3000, seed=0)
    else:
        write_problem_run(directory)
    for path in directory.iterdir():
        os.utime(path, (PINNED_TIME, PINNED_TIME))


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
            directory = Path(temporary) / kind / "ocms_metrics"
            if not directory.exists():
                write_run(kind, directory)
            save_snapshot(
                directory,
                options.out / name,
                size=size,
                directory_label="ocms_metrics",
                clock=lambda: PINNED_TIME + 3,
            )
            print(f"wrote {options.out / name} ({size[0]}x{size[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
