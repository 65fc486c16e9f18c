"""`ocms-tui scan` and `init` on hostile projects: trees that once made them print a
traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.sources_support import run_cli
from tests.test_adversarial_import import nested

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
