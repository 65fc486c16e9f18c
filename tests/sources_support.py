"""Helpers for the import tests: run the CLI, snapshot a tree to prove it was only read."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *arguments: str,
    timeout: float = 120,
    env_extra: dict[str, str] | None = None,
    **options: object,
) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env_extra or {})}
    environment["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "recorder")])
    return subprocess.run(
        [sys.executable, "-m", "ocms_tui", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        **options,  # type: ignore[arg-type]
    )


def tree_state(root: Path) -> dict[str, tuple[str, float]]:
    """Every file under `root`: content hash and modification time."""
    state = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            state[str(path.relative_to(root))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                info.st_mtime,
            )
    return state
