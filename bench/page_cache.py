"""Dropping files from the page cache, to measure (and test) reads of a run written long ago.

Standard library only: the tests load this file by its path.
"""

from __future__ import annotations

import os
from pathlib import Path

# Without it (macOS) nothing can be dropped: callers say their files were cached.
CAN_EVICT = hasattr(os, "posix_fadvise")


def evict(path: Path) -> None:
    """Drop `path` (every file in it, for a directory) from the page cache; written to disk
    first, since only clean pages can go."""
    if not CAN_EVICT:
        return
    for file in sorted(path.iterdir()) if path.is_dir() else [path]:
        descriptor = os.open(file, os.O_RDONLY)
        try:
            os.fsync(descriptor)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)


def read_into_cache(path: Path) -> None:
    """Read every file under `path` once, so that its pages are cached as a run just
    written is: a benchmark whose data was made hours ago times the product, not the disk."""
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    for file in files:
        if file.is_file():
            with open(file, "rb") as handle:
                while handle.read(1 << 20):
                    pass
