"""`ocms-tui init` as a command: the plan shown, then written (each file replaced
atomically, never over an edit made meanwhile, never with uncommitted git changes unless
forced). No Textual.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import libcst as cst

from ocms_tui.follow.report import ExitCode, encodable, printable
from ocms_tui.onboard.init_plan import InitPlan, _read, plan_init
from ocms_tui.onboard.init_report import render_diff, render_plan
from ocms_tui.onboard.scan import drop_lines


def uncommitted_changes(project: Path) -> list[str] | None:
    """The `git status` lines of tracked files changed in the project's work tree; None
    when it is not in one (or git is not installed)."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        completed = subprocess.run(
            [
                git,
                "-C",
                str(project),
                *_no_project_commands(git, project),
                "status",
                "--porcelain",
                "--untracked-files=no",
                ".",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.splitlines()


def _no_project_commands(git: str, project: Path) -> list[str]:
    """`-c` options that keep `git status` from running commands the project's own git
    config names (a downloaded project is not trusted): `core.fsmonitor`, run on every
    status, and the clean/process filter drivers, run on files whose index stat is stale
    (every file of a just-unpacked project). Reading the config runs nothing."""
    options = ["-c", "core.fsmonitor=false"]
    try:
        listed = subprocess.run(
            [
                git,
                "-C",
                str(project),
                "config",
                "-z",
                "--get-regexp",
                r"^filter\..*\.(clean|process)$",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return options
    for entry in listed.stdout.split("\0"):
        key = entry.split("\n", 1)[0]
        if key:
            options += ["-c", f"{key}="]
    return options


def apply(plan: InitPlan) -> None:
    """Write every pending change: each file replaced atomically, keeping its mode.
    Nothing is written when a file changed since the plan read it (an edit is never lost)."""
    for change in plan.pending:
        try:
            unchanged = _read(change.path) == change.before
        except (OSError, ValueError):
            unchanged = False
        if not unchanged:
            raise OSError(
                0, "changed while init ran; nothing written, run init again", str(change.path)
            )
    for change in plan.pending:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        mode = change.path.stat().st_mode & 0o7777 if change.before is not None else 0o644
        # A fresh name made with O_EXCL: a fixed name could be a symlink the project
        # already holds, and writing through it would replace a file outside the project.
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{change.path.name}.", suffix=".ocms-init.tmp", dir=change.path.parent
        )
        temp = Path(temp_name)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(change.after)
            os.chmod(temp, mode)
            os.replace(temp, change.path)
        finally:
            temp.unlink(missing_ok=True)


def included_files(project: Path, paths: Sequence[str]) -> list[str] | str:
    """`--include` paths as the project-relative names scan gives its files (`bench.py`
    or `my_project/bench.py` alike), or why one is not a file of the project."""
    root = project.resolve()
    names: list[str] = []
    for path in paths:
        for candidate in (project / path, Path(path)):
            try:
                resolved = candidate.resolve()
                if candidate.is_file() and not candidate.is_symlink():
                    names.append(resolved.relative_to(root).as_posix())
                    break
            except (OSError, ValueError, RuntimeError):
                continue
        else:
            return f"--include {path!r} is not a file inside {project}"
    return names


def run_init(
    project: Path,
    write: bool = False,
    output_dir_expr: str | None = None,
    force: bool = False,
    include: Sequence[str] = (),
) -> int:
    def say(text: str, stream: TextIO = sys.stdout) -> None:
        stream.write(encodable(text, stream))

    try:
        is_directory = project.is_dir()
    except OSError:
        is_directory = False
    if not is_directory:
        say(printable(f"ocms-tui init: {project} is not a directory") + "\n", sys.stderr)
        return ExitCode.USAGE
    if output_dir_expr is not None:
        try:
            cst.parse_expression(output_dir_expr)
        except cst.ParserSyntaxError:
            say(
                printable(
                    f"ocms-tui init: --output-dir-expr {output_dir_expr!r} is not a Python expression"
                )
                + "\n",
                sys.stderr,
            )
            return ExitCode.USAGE
    included = included_files(project, include)
    if isinstance(included, str):
        say(printable(f"ocms-tui init: {included}") + "\n", sys.stderr)
        return ExitCode.USAGE
    plan = plan_init(project, output_dir_expr, included)
    if plan.scan.framework is None:
        say(
            "ocms-tui init: no metric-logging site found; nothing to integrate (see ocms-tui scan)\n"
        )
        return ExitCode.PROBLEMS
    if plan.refusal is not None:
        say(printable(f"ocms-tui init: {plan.refusal}; nothing written") + "\n", sys.stderr)
        return ExitCode.PROBLEMS
    say(f"framework: {plan.scan.framework}\n")
    for line in drop_lines(plan.scan):
        say(printable(line.replace("below", "init writes")) + "\n")
    for note in plan.notes:
        say(printable(note) + "\n")
    report = render_plan(plan)
    if plan.wired_nothing:
        say(report)
        say(
            "ocms-tui init: wired nothing for the training script(s) "
            f"{', '.join(plan.training_files)}; nothing written\n",
            sys.stderr,
        )
        return ExitCode.PROBLEMS
    if not plan.pending:
        if any(note.endswith(": already set up") for note in plan.notes):
            say("nothing to change: the project is already set up\n")
            return ExitCode.OK
        say(report)
        say("ocms-tui init: nothing wired; nothing written\n", sys.stderr)
        return ExitCode.PROBLEMS
    say(render_diff(plan))
    say(report)
    if not write:
        say("(dry run: apply with --write)\n")
        return ExitCode.OK
    if not force:
        dirty = uncommitted_changes(project)
        if dirty:
            say(
                "ocms-tui init: refusing to --write: uncommitted changes in git "
                "(commit or stash them, or pass --force):\n"
                + "".join(printable(line) + "\n" for line in dirty[:10]),
                sys.stderr,
            )
            return ExitCode.PROBLEMS
    try:
        apply(plan)
    except OSError as error:
        say(
            printable(f"ocms-tui init: cannot write {error.filename}: {error.strerror}") + "\n",
            sys.stderr,
        )
        return ExitCode.PROBLEMS
    say(f"wrote {len(plan.pending)} files\n")
    return ExitCode.OK
