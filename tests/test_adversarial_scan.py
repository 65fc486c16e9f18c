"""`ocms-tui scan` and `init` on hostile projects: trees that once made them print a
traceback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.sources_support import run_cli
from tests.test_adversarial_import import nested


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
