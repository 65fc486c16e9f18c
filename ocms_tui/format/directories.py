"""Whether a path the user gave is a directory this program can read, and if not, why.

Standard library only: the command line checks its arguments with it before it imports the
reader (and polars).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ocms_recorder import METRICS_JSON


@dataclass(frozen=True)
class DirectoryProblem:
    message: str  # what is wrong and what to pass instead
    may_appear: bool  # the directory just does not exist yet (a run may still create it)


def directory_problem(directory: Path) -> DirectoryProblem | None:
    """None when `directory` is a directory; otherwise why it cannot be read as one, said
    so that the user knows what to pass instead. Never raises (a 300-character name, a
    parent without permission, a file in the path)."""
    try:
        mode = os.stat(directory).st_mode
    except FileNotFoundError:
        return DirectoryProblem(f"the directory {directory} does not exist", may_appear=True)
    except NotADirectoryError:
        return DirectoryProblem(
            f"the directory {directory} does not exist (a part of its path is a file)",
            may_appear=False,
        )
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the name
        reason = error.strerror if isinstance(error, OSError) else None
        return DirectoryProblem(
            f"the directory {directory} cannot be opened: {reason or error}", may_appear=False
        )
    if stat.S_ISDIR(mode):
        if not os.access(directory, os.R_OK | os.X_OK):
            return DirectoryProblem(
                f"the directory {directory} cannot be read: Permission denied (it needs read "
                "and search permission for this user)",
                may_appear=False,
            )
        return None
    if stat.S_ISREG(mode):
        parent = os.path.dirname(os.path.abspath(directory))
        return DirectoryProblem(
            f"{directory} is a file, not a directory: pass the metrics directory that holds "
            f"{METRICS_JSON} and the chart CSVs (for a file of a run, that is {parent})",
            may_appear=False,
        )
    return DirectoryProblem(
        f"{directory} is not a directory: pass the metrics directory that holds {METRICS_JSON}",
        may_appear=False,
    )
