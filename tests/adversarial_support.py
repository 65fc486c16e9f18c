"""Helpers of the adversarial tests: trees deeper than os.walk recurses, running a function
as another user."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def nested(root: Path, depth: int) -> Iterator[Path]:
    """`root/a/a/.../a`, `depth` levels; removed deepest first afterwards (shutil.rmtree,
    also pytest's cleanup of old temp dirs, recurses per level and would fail on it)."""
    made: list[Path] = []
    directory = root
    try:
        for _ in range(depth):
            directory = directory / "a"
            os.mkdir(directory)
            made.append(directory)
        yield directory
    finally:
        for each in reversed(made):
            for entry in os.scandir(each):
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.path)
            os.rmdir(each)


def as_nobody(function: Callable[[], int]) -> tuple[int, str]:
    """Run `function` in a forked child as uid/gid 65534 (the modules it needs imported
    before: this Python's own files are not readable by nobody); its exit code and stderr."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 97
        try:
            os.dup2(write_end, 2)
            sys.stderr = os.fdopen(2, "w", closefd=False)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            code = function()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 98
        except BaseException:
            traceback.print_exc()
            code = 99
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as stream:
        errors = stream.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), errors
