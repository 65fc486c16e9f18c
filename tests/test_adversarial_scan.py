"""`ocms-tui scan` and `init` on hostile projects: trees that once made them print a
traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from ocms_tui import cli
from ocms_tui.onboard import scaffold
from ocms_tui.onboard.scan import scan_project
from tests.adversarial_support import as_nobody, nested
from tests.sources_support import run_cli

PROJECTS = Path(__file__).parent / "projects"


def test_project_nested_deeper_than_os_walk_recurses(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import wandb\nwandb.log({'loss': 1.0})\n")
    with nested(tmp_path, 1100) as deepest:
        (deepest / "x.py").write_text("import wandb\nwandb.log({'deep': 1.0})\n")
        result = run_cli("scan", str(tmp_path), "--format", "json")
        init = run_cli("init", str(tmp_path))
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [site["file"] for site in report["sites"]] == ["train.py"]
    assert {"file": "/".join(["a"] * 64), "reason": "nested too deeply"} in report["skipped"]
    assert "Traceback" not in init.stderr and init.returncode == 0, init.stderr


def test_init_write_never_writes_through_a_symlink_planted_in_the_project(tmp_path: Path) -> None:
    """A project holding a symlink where init once put its temp file (`.train.py.ocms-init.tmp`
    -> a file outside): init overwrote that file and left train.py a symlink to it."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (project / ".train.py.ocms-init.tmp").symlink_to(victim)
    (project / "migrate_to_cloudrobo").mkdir()
    (project / "migrate_to_cloudrobo" / ".ocms_recorder.py.ocms-init.tmp").symlink_to(victim)
    result = run_cli("init", str(project), "--write", "--force")
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert not (project / "train.py").is_symlink()
    assert "ocms_log(step, metrics)" in (project / "train.py").read_text()
    recorder = project / "migrate_to_cloudrobo" / "ocms_recorder.py"
    assert not recorder.is_symlink() and "class OcmsRecorder" in recorder.read_text()
    assert [path.name for path in project.glob(".*.ocms-init.tmp")] == [".train.py.ocms-init.tmp"]


def test_init_refuses_a_migrate_dir_that_is_a_symlink_or_a_file(tmp_path: Path) -> None:
    """migrate_to_cloudrobo -> a directory outside: init wrote the recorder and hooks there."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "migrate_to_cloudrobo").symlink_to(outside)
    before = (project / "train.py").read_bytes()
    for arguments in ((), ("--write", "--force")):
        result = run_cli("init", str(project), *arguments)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert "migrate_to_cloudrobo is a symbolic link or not a directory" in result.stderr
    assert list(outside.iterdir()) == []
    assert (project / "train.py").read_bytes() == before
    (project / "migrate_to_cloudrobo").unlink()
    (project / "migrate_to_cloudrobo").write_text("mine\n")
    result = run_cli("init", str(project), "--write", "--force")
    assert result.returncode == 1 and "not a directory" in result.stderr
    assert (project / "migrate_to_cloudrobo").read_text() == "mine\n"
    assert (project / "train.py").read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_init_as_non_root_with_an_unreadable_copy_in_the_migrate_dir() -> None:
    """migrate_to_cloudrobo/ocms_recorder.py unreadable (mode 000, owned by root): init as
    another user printed a PermissionError traceback."""
    with tempfile.TemporaryDirectory() as name:  # pytest's temp root is private to root
        project = Path(name) / "project"
        shutil.copytree(PROJECTS / "plain_loop", project)
        copy = project / "migrate_to_cloudrobo" / "ocms_recorder.py"
        copy.parent.mkdir()
        copy.write_text("# the user's own recorder\n")
        for path in (Path(name), project, copy.parent):
            path.chmod(0o755)
        copy.chmod(0o000)
        code, errors = as_nobody(lambda: cli.main(["init", str(project)]))
        assert "Traceback" not in errors and code == 0, errors
        copy.chmod(0o644)
        assert copy.read_text() == "# the user's own recorder\n"


def test_init_loses_no_edit_made_while_it_runs(tmp_path: Path) -> None:
    """The plan reads train.py, the user saves it, then init writes: it wrote the edit of
    the old text over the user's new one."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    plan = scaffold.plan_init(project)
    assert plan.pending
    train = project / "train.py"
    train.write_text(train.read_text() + "# saved while init ran\n")
    with pytest.raises(OSError, match="changed while init ran"):
        scaffold.apply(plan)
    assert train.read_text().endswith("# saved while init ran\n")
    assert "ocms" not in train.read_text()
    assert not (project / "migrate_to_cloudrobo").exists()


def test_init_does_not_block_on_a_script_replaced_by_a_fifo(tmp_path: Path) -> None:
    """scan read train.py, then it became a FIFO: the edit re-read it with a blocking read."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    result = scan_project(project)
    (project / "train.py").unlink()
    os.mkfifo(project / "train.py")
    outcomes: list[object] = []
    editor = threading.Thread(
        target=lambda: outcomes.append(
            scaffold.edit_script(
                project,
                "train.py",
                result.sites,
                "custom",
                None,
                scaffold.InitPlan(project, result),
            )
        ),
        daemon=True,
    )
    editor.start()
    editor.join(timeout=60)
    if editor.is_alive():  # release the blocked read so the thread can end
        os.close(os.open(project / "train.py", os.O_WRONLY | os.O_NONBLOCK))
    assert outcomes == ["not edited: not a regular file"]


def test_init_does_not_write_an_output_dir_expression_the_script_cannot_evaluate(
    tmp_path: Path,
) -> None:
    """The README's walkthrough passes `--output-dir-expr self.output_dir`; on a plain
    function (no `self`) init wrote it in and the training script died with NameError."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    before = (project / "train.py").read_bytes()
    result = run_cli(
        "init", str(project), "--write", "--force", "--output-dir-expr", "self.output_dir"
    )
    assert "would read self, not defined there" in result.stdout, result.stdout
    assert (project / "train.py").read_bytes() == before
    for expression in ("output_dir", "args.output_dir"):  # a parameter; a module global
        assert (
            scaffold.edit_script(
                project,
                "train.py",
                scan_project(project).sites,
                "custom",
                expression,
                scaffold.InitPlan(project, scan_project(project)),
            )[1].count(f"output_dir={expression}".encode())
            == 1
        )


def test_init_on_nesting_python_accepts_but_libcst_recurses_over(tmp_path: Path) -> None:
    """190 nested brackets parse in Python (so scan finds the site) but made libcst raise
    RecursionError: init printed a traceback."""
    nested_list = "[" * 190 + "]" * 190
    (tmp_path / "train.py").write_text(
        f"import wandb\nx = {nested_list}\nfor step in range(3):\n"
        "    wandb.log({'loss': 1.0}, step=step)\n"
    )
    before = (tmp_path / "train.py").read_bytes()
    result = run_cli("init", str(tmp_path), "--write", "--force")
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    assert "train.py: not edited: nested too deeply for libcst" in result.stdout
    assert "wired nothing for the training script(s) train.py" in result.stderr
    assert (tmp_path / "train.py").read_bytes() == before


def test_init_adds_no_call_that_reads_a_lambdas_or_comprehensions_own_variables(
    tmp_path: Path,
) -> None:
    """wandb.log inside a lambda or a comprehension: init added `ocms_log(step, {'loss':
    value})` after the statement, where `value` (the lambda's parameter) is not defined,
    and the script died with NameError at import."""
    scripts = {
        "lambda": "log = lambda value, step: wandb.log({'loss': value}, step=step)\n"
        "for step in range(3):\n    log(1.0, step)\n",
        "comprehension": "done = [wandb.log({'loss': v}, step=i) for i, v in enumerate([1.0])]\n",
    }
    for name, body in scripts.items():
        project = tmp_path / name
        project.mkdir()
        (project / "train.py").write_text("import wandb\n" + body)
        result = run_cli("init", str(project), "--write", "--force")
        assert result.returncode == 1, result.stderr  # it wired nothing, and says so
        assert "train.py:2: not wired: the call would read" in result.stdout
        assert (project / "train.py").read_text() == "import wandb\n" + body
    plain = tmp_path / "plain"  # the same call in a plain loop is still edited
    plain.mkdir()
    (plain / "train.py").write_text(
        "import wandb\nfor i, v in enumerate([1.0]):\n    wandb.log({'loss': v}, step=i)\n"
    )
    assert run_cli("init", str(plain), "--write", "--force").returncode == 0
    assert "ocms_log(i, {'loss': v})" in (plain / "train.py").read_text()


def git(project: Path, *arguments: str) -> None:
    subprocess.run(
        [
            "git",
            "-C",
            str(project),
            "-c",
            "core.fsmonitor=false",
            "-c",
            "filter.evil.clean=",
            *arguments,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_init_write_runs_no_command_from_the_projects_git_config(tmp_path: Path) -> None:
    """A downloaded project's .git/config names core.fsmonitor and a clean filter for
    *.py: the `git status` of init --write ran both (a file appeared)."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "plain_loop", project)
    (project / ".gitattributes").write_text("*.py filter=evil\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "project")
    fsmonitor_ran, filter_ran = tmp_path / "fsmonitor-ran", tmp_path / "filter-ran"
    git(project, "config", "core.fsmonitor", f"touch {fsmonitor_ran}; false")
    git(project, "config", "filter.evil.clean", f"touch {filter_ran}; cat")
    with open(project / ".gitattributes", "a") as attributes:
        attributes.write("# a change not committed\n")
    refused = run_cli("init", str(project), "--write")  # the check itself still works
    assert refused.returncode == 1 and "uncommitted changes" in refused.stderr
    git(project, "checkout", "--", ".gitattributes")
    os.utime(project / "train.py", (1_000_000_000, 1_000_000_000))  # index stat stale
    result = run_cli("init", str(project), "--write")
    assert result.returncode == 0, result.stderr
    assert "wrote 4 files" in result.stdout
    assert not fsmonitor_ran.exists() and not filter_ran.exists()
