"""How long `ocms-tui scan` takes on large real code trees: the installed framework
packages (thousands of files) stand in for a big training repository.

    python bench/bench_scan.py [DIR ...]

Prints one row per tree: files read, sites found, seconds (CPU and
wall), files per CPU second. Run by hand; not part of bench/run.py's figures.
"""

from __future__ import annotations

import sys
import time
from importlib.util import find_spec
from pathlib import Path

from ocms_tui.onboard.scan import scan_project

DEFAULT_PACKAGES = ("transformers", "lightning", "mmengine", "accelerate", "torch")


def package_directories() -> list[Path]:
    found = []
    for name in DEFAULT_PACKAGES:
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            found.append(Path(next(iter(spec.submodule_search_locations))))
    return found


def main(arguments: list[str]) -> int:
    roots = [Path(argument) for argument in arguments] or package_directories()
    header = ("tree", "files", "sites", "cpu s", "wall s", "files/cpu s")
    print("  ".join(f"{cell:>12}" for cell in header))
    for root in roots:
        wall, cpu = time.perf_counter(), time.process_time()
        result = scan_project(root)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        row = (
            root.name,
            str(result.files_read),
            str(len(result.sites)),
            f"{cpu:.2f}",
            f"{wall:.2f}",
            f"{result.files_read / cpu:.0f}" if cpu else "-",
        )
        print("  ".join(f"{cell:>12}" for cell in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
