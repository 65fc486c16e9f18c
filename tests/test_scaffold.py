"""`ocms-tui init`: the copied files, the edit as a diff, --write, idempotency, and the
refusals (uncommitted changes, unparsable files, read-only projects). The real training
runs of the edited projects are in tests/integrations/test_init_projects.py."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from difflib import SequenceMatcher
from pathlib import Path

import ocms_recorder
import pytest

from ocms_tui.onboard import scaffold
from ocms_tui.onboard.scan import scan_project

PROJECTS = Path(__file__).parent / "projects"
# What init adds: lines about ocms, and the two imports its sys.path line needs.
OCMS_LINE = re.compile(r"ocms|Ocms|migrate_to_cloudrobo|^import (os|sys)$")
ALL_PROJECTS = sorted(path.name for path in PROJECTS.iterdir() if path.is_dir())


def run_init(*arguments: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ocms_tui", "init", *arguments]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def project_copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(PROJECTS / name, target)
    return target


def edited_text(plan: scaffold.InitPlan, name: str) -> str:
    """The new text of the one pending change to the file called `name`."""
    (change,) = [change for change in plan.pending if change.path.name == name]
    return change.after.decode()


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    project = project_copy(tmp_path, "plain_loop")
    before = snapshot(project)
    completed = run_init(str(project), "--output-dir-expr", "output_dir")
    assert completed.returncode == 0, completed.stderr
    assert snapshot(project) == before
    out = completed.stdout
    assert "--- a/train.py\n+++ b/train.py\n" in out
    assert "+        ocms_log(step, metrics, output_dir=output_dir)\n" in out
    assert "+from ocms_loop import ocms_log  # noqa: E402\n" in out
    assert f"copy {ocms_recorder.__file__} -> migrate_to_cloudrobo/ocms_recorder.py" in out
    assert out.rstrip().endswith("(dry run: apply with --write)")


# A process per project (0.9-1.8 s of CPU each): the quick suite inits the plain loop, the
# slow suite every project.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name == "plain_loop" else pytest.mark.slow)
        for name in ALL_PROJECTS
    ],
)
def test_write_then_a_second_init_changes_nothing(tmp_path: Path, name: str) -> None:
    project = project_copy(tmp_path, name)
    original = snapshot(project)
    first = run_init(str(project), "--write")
    assert first.returncode == 0, first.stderr
    written = snapshot(project)
    target = "migrate_to_cloudrobo/"
    assert written[target + "ocms_recorder.py"] == Path(ocms_recorder.__file__).read_bytes()
    edited = [name for name in original if written[name] != original[name]]
    assert edited, "init edited no file"
    site_lines = {(site.file, site.line) for site in scan_project(PROJECTS / name).sites}
    for file in edited:  # the rest of the file is kept byte for byte
        old, new = original[file].decode().splitlines(), written[file].decode().splitlines()
        for tag, start, end, _, _ in SequenceMatcher(None, old, new).get_opcodes():
            if tag in ("replace", "delete"):  # only a site's own line is rewritten
                assert {(file, line + 1) for line in range(start, end)} <= site_lines
        added = [line for line in new if line not in old]
        assert all(OCMS_LINE.search(line) for line in added), added
        ast.parse(written[file])
    for file, data in written.items():
        if file.startswith(target) and file.endswith(".py"):
            imported = _imported_modules(data)
            assert not imported & {"ocms_tui", "ocms_integrations"}, (file, imported)
    second = run_init(str(project), "--write")
    assert second.returncode == 0, second.stderr
    assert "nothing to change" in second.stdout
    assert snapshot(project) == written


def _imported_modules(source: bytes) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_trainer_callbacks_are_extended_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "from transformers import Trainer\n"
        "def main(extra):\n"
        "    a = Trainer(model=None, callbacks=[Early()])\n"
        "    b = Trainer(model=None, callbacks=extra)\n"
        "    c = Trainer()\n"
    )
    plan = scaffold.plan_init(tmp_path, output_dir_expr="'out'")
    text = edited_text(plan, "train.py")
    assert "a = Trainer(model=None, callbacks=[Early(), OcmsCallback(output_dir='out')])" in text
    assert (
        "b = Trainer(model=None, callbacks=[*(extra or []), OcmsCallback(output_dir='out')])"
        in text
    )
    assert "c = Trainer(callbacks=[OcmsCallback(output_dir='out')])" in text


def test_a_trainer_made_out_of_sight_gets_a_hand_edit_note(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import lightning as L\n"
        "class Net(L.LightningModule):\n"
        "    def training_step(self, batch, index):\n"
        "        self.log('train_loss', 1.0)\n"
    )
    plan = scaffold.plan_init(tmp_path)
    assert plan.scan.framework == "lightning"
    # Only the copies (the hook and what it imports), no edit of the project's own code.
    assert {change.path.parent.name for change in plan.pending} == {"migrate_to_cloudrobo"}
    assert {"__init__.py", "ocms_recorder.py", "ocms_lightning.py"} <= {
        change.path.name for change in plan.pending
    }
    assert plan.notes[-1].startswith("no Trainer(...) call found to edit: add callbacks=")


def test_a_script_in_a_subdirectory_finds_the_copied_files(tmp_path: Path) -> None:
    script = tmp_path / "tools" / "train.py"
    script.parent.mkdir()
    script.write_text(
        '"""Trains."""\n'
        "def fit(loss):\n"
        "    for global_step in range(3):\n"
        "        print(f'loss={loss * global_step}')\n"
        "    return loss\n"
        "if __name__ == '__main__':\n"
        "    import sys\n"
        "    fit(float(sys.argv[1]))\n"
    )
    assert run_init(str(tmp_path), "--write", "--output-dir-expr", "'out'").returncode == 0
    text = script.read_text()
    assert text.startswith('"""Trains."""\nimport os\nimport sys\n')
    assert "'..', 'migrate_to_cloudrobo'" in text
    assert "        ocms_log(global_step, {'loss': loss * global_step}, output_dir='out')\n" in text
    completed = subprocess.run(
        [sys.executable, "-I", str(script), "0.5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "out" / "ocms_metrics" / "loss.csv").read_text() == "0,0.0\n1,0.5\n2,1.0\n"


def test_line_endings_and_indentation_are_kept(tmp_path: Path) -> None:
    source = "import wandb\r\n\r\ndef fit(step):\r\n\tif step:\r\n\t\twandb.log({'loss': 1}, step=step)\r\n"
    (tmp_path / "train.py").write_bytes(source.encode())
    plan = scaffold.plan_init(tmp_path)
    text = edited_text(plan, "train.py")
    assert text.count("\n") == text.count("\r\n")
    assert "\t\twandb.log({'loss': 1}, step=step)\r\n\t\tocms_log(step, {'loss': 1})\r\n" in text


def test_a_site_inside_a_one_line_statement_is_reported_not_half_edited(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import wandb\n"
        "def fit(step, ok):\n"
        "    if ok: wandb.log({'loss': 1}, step=step)\n"
        "def evaluate(step):\n"
        "    wandb.log({'eval_loss': 1}, step=step)\n"
    )
    plan = scaffold.plan_init(tmp_path)
    assert "train.py:3: not wired: on the same line as its `if`/`for` (a one-line block)" in (
        plan.not_wired
    )
    assert "    ocms_log(step, {'eval_loss': 1})\n" in edited_text(plan, "train.py")
    (tmp_path / "train.py").write_text(
        "import wandb\ndef fit(step, ok):\n    if ok: wandb.log({'loss': 1}, step=step)\n"
    )
    plan = scaffold.plan_init(tmp_path)
    assert not [change for change in plan.pending if change.path.name == "train.py"]
    assert plan.wired_nothing and "train.py: nothing wired (see below)" in plan.notes


def test_links_are_never_written_through(tmp_path: Path) -> None:
    project = project_copy(tmp_path, "plain_loop")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "migrate_to_cloudrobo").symlink_to(elsewhere)
    refused = run_init(str(project), "--write")
    assert refused.returncode == 1
    assert "migrate_to_cloudrobo is a symbolic link" in refused.stderr
    assert list(elsewhere.iterdir()) == []
    (project / "migrate_to_cloudrobo").unlink()
    (project / "migrate_to_cloudrobo").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (project / "migrate_to_cloudrobo" / ".ocms_recorder.py.ocms-init.tmp").symlink_to(victim)
    assert run_init(str(project), "--write").returncode == 0
    assert victim.read_text() == "keep\n"
    assert not (project / "migrate_to_cloudrobo" / "ocms_recorder.py").is_symlink()


def test_files_that_do_not_parse_are_never_touched(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import wandb\ndef f(step):\n    wandb.log({'loss': 1}, step=step)\n"
    )
    broken = b"import wandb\nwandb.log({'loss': 1}\n"
    (tmp_path / "broken.py").write_bytes(broken)
    completed = run_init(str(tmp_path), "--write")
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "broken.py").read_bytes() == broken
    assert "ocms_log(step, {'loss': 1})" in (tmp_path / "train.py").read_text()


def test_a_changed_copy_is_kept(tmp_path: Path) -> None:
    project = project_copy(tmp_path, "accelerate_loop")
    assert run_init(str(project), "--write").returncode == 0
    copied = project / "migrate_to_cloudrobo" / "ocms_recorder.py"
    copied.write_bytes(copied.read_bytes() + b"# local change\n")
    completed = run_init(str(project), "--write")
    assert completed.returncode == 0
    assert (
        "migrate_to_cloudrobo/ocms_recorder.py: differs from what init writes" in completed.stdout
    )
    assert copied.read_bytes().endswith(b"# local change\n")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_write_refuses_uncommitted_changes_unless_forced(tmp_path: Path) -> None:
    project = project_copy(tmp_path, "plain_loop")

    def git(*arguments: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
            cwd=project,
            check=True,
            capture_output=True,
            timeout=30,
        )

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "start")
    train = project / "train.py"
    train.write_text(train.read_text() + "# work in progress\n")
    before = snapshot(project)
    refused = run_init(str(project), "--write")
    assert refused.returncode == 1
    assert "uncommitted changes" in refused.stderr and "train.py" in refused.stderr
    assert snapshot(project) == before
    assert run_init(str(project)).returncode == 0  # a dry run is always allowed
    forced = run_init(str(project), "--write", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "from ocms_loop import ocms_log" in train.read_text()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_read_only_project_fails_cleanly() -> None:
    project = Path(tempfile.mkdtemp(prefix="ocms-init-ro-"))
    try:
        shutil.copytree(PROJECTS / "plain_loop", project, dirs_exist_ok=True)
        project.chmod(0o555)
        (project / "train.py").chmod(0o444)
        before = snapshot(project)
        completed = run_init(str(project), "--write", user="65534" if os.geteuid() == 0 else None)
        assert completed.returncode == 1, completed.stdout + completed.stderr
        assert "cannot write" in completed.stderr and "Permission denied" in completed.stderr
        assert "Traceback" not in completed.stderr
        assert snapshot(project) == before
    finally:
        project.chmod(0o755)
        shutil.rmtree(project)


def test_usage_errors_and_nothing_found(tmp_path: Path) -> None:
    assert run_init(str(tmp_path / "missing")).returncode == 2
    assert run_init(str(PROJECTS / "plain_loop"), "--output-dir-expr", "a b").returncode == 2
    (tmp_path / "util.py").write_text("x = 1\n")
    nothing = run_init(str(tmp_path), "--write")
    assert nothing.returncode == 1
    assert "nothing to integrate" in nothing.stdout
    assert not (tmp_path / "migrate_to_cloudrobo").exists()


def test_names_in_the_diff_cannot_drive_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "t\x1b[2J.py").write_text(
        "def f(step, loss):\n    loss.backward()\n    print(f'loss={loss} \x1b[31m')\n"
    )
    completed = run_init(str(tmp_path))
    assert completed.returncode == 0, completed.stderr
    assert "\x1b" not in completed.stdout
    assert "+++ b/t\\x1b[2J.py" in completed.stdout


def test_help_and_version_do_not_load_scan_or_libcst() -> None:
    code = (
        "import sys, ocms_tui.cli\n"
        "try:\n    ocms_tui.cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
        "assert not {'libcst', 'ocms_tui.onboard.scan', 'ocms_tui.onboard.scaffold'} & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True)


# What Python 3.8 lacks and compile() cannot see: str methods of 3.9.
NEWER_THAN_3_8 = (b".removeprefix(", b".removesuffix(")


def python_3_8() -> str | None:
    """A working Python 3.8 interpreter (pyenv's, else on PATH), or None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = [
        *map(str, sorted(pyenv.glob("versions/3.8*/bin/python3.8"))),
        shutil.which("python3.8"),
    ]
    check = "import sys; assert sys.version_info[:2] == (3, 8)"
    return next(
        (
            path
            for path in found
            if path
            and subprocess.run([path, "-c", check], capture_output=True, timeout=60).returncode == 0
        ),
        None,
    )


@pytest.mark.slow  # a Python 3.8 check of the copied files
def test_the_copied_files_run_on_python_3_8(tmp_path: Path) -> None:
    interpreter = python_3_8()
    if interpreter is None:
        pytest.skip("no Python 3.8 interpreter here")
    for name in ("hf_trainer", "lightning_module", "mmengine_config"):
        project = project_copy(tmp_path, name)
        assert run_init(str(project), "--write").returncode == 0
        copied = sorted((project / "migrate_to_cloudrobo").glob("*.py"))
        compiled = subprocess.run(
            [
                interpreter,
                "-c",
                "import sys\nfor f in sys.argv[1:]: compile(open(f).read(), f, 'exec')",
                *map(str, copied),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert compiled.returncode == 0, compiled.stderr
        for path in copied:
            assert not any(method in path.read_bytes() for method in NEWER_THAN_3_8), path
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "train.py").write_text(
        "def fit(output_dir):\n"
        "    for step in range(3):\n"
        "        loss = 1.0 / (step + 1)\n"
        "        print(f'step {step} loss={loss:.3f}')\n"
        "if __name__ == '__main__':\n"
        "    fit('out')\n"
    )
    assert run_init(str(loop), "--write", "--output-dir-expr", "output_dir").returncode == 0
    ran = subprocess.run(
        [interpreter, "-I", "train.py"], cwd=loop, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert (
        loop / "out" / "ocms_metrics" / "loss.csv"
    ).read_text() == "0,1.0\n1,0.5\n2,0.3333333333333333\n"


def _run_edited_call(text: str, line_start: str, namespace: dict[str, object]) -> object:
    """Evaluate the edited statement that starts with `line_start`, with stand-ins."""
    statement = next(line for line in text.splitlines() if line.strip().startswith(line_start))
    exec(statement.strip(), namespace)
    return namespace


def test_trainer_kwargs_holding_callbacks_get_the_callback_merged_not_duplicated(
    tmp_path: Path,
) -> None:
    """`Trainer(**trainer_kwargs)` whose dict holds `callbacks` became
    `Trainer(**trainer_kwargs, callbacks=[...])`: TypeError, a keyword given twice."""
    (tmp_path / "train.py").write_text(
        "import lightning as L\n"
        "def main(mine):\n"
        "    trainer_kwargs = {'max_epochs': 1, 'callbacks': [mine]}\n"
        "    trainer = L.Trainer(**trainer_kwargs)\n"
        "    built = L.Trainer(**make_kwargs())\n"
    )
    plan = scaffold.plan_init(tmp_path)
    text = edited_text(plan, "train.py")
    made = []

    def trainer(**options: object) -> dict[str, object]:
        return options

    def make_kwargs() -> dict[str, object]:
        made.append(1)
        return {"callbacks": ["theirs"]}

    namespace = {
        "L": type("L", (), {"Trainer": staticmethod(trainer)}),
        "OcmsCallback": lambda: "ocms",
        "trainer_kwargs": {"max_epochs": 1, "callbacks": ["mine"]},
        "make_kwargs": make_kwargs,
    }
    _run_edited_call(text, "trainer =", namespace)
    assert namespace["trainer"] == {"max_epochs": 1, "callbacks": ["mine", "ocms"]}
    _run_edited_call(text, "built =", namespace)
    assert namespace["built"] == {"callbacks": ["theirs", "ocms"]} and made == [1]  # once


def test_lightning_cli_gets_trainer_defaults_callbacks(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "from lightning.pytorch.cli import LightningCLI\n"
        "def cli_main():\n"
        "    LightningCLI(Model, Data)\n"
        "    LightningCLI(Model, trainer_defaults={'max_epochs': 2})\n"
        "    LightningCLI(Model, trainer_defaults={'callbacks': [Mine()]})\n"
    )
    plan = scaffold.plan_init(tmp_path)
    text = edited_text(plan, "train.py")
    assert 'LightningCLI(Model, Data, trainer_defaults={"callbacks": [OcmsCallback()]})' in text
    assert "trainer_defaults={'max_epochs': 2, \"callbacks\": [OcmsCallback()]}" in text
    assert "trainer_defaults={'callbacks': [Mine(), OcmsCallback()]}" in text
    report = scaffold.render_plan(plan)
    assert "train.py:3: LightningCLI gets OcmsCallback()" in report


def test_the_plan_names_each_site_its_step_series_charts_and_what_is_left_out(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.py").write_text(
        "wandb_log = False\n"
        "iter_num = 0\n"
        "while iter_num < 3:\n"
        "    loss = 1.0 / (iter_num + 1)\n"
        "    print(f'iter {iter_num}: loss {loss:.4f}, mfu {0.5 * 100:.2f}%')\n"
        "    if wandb_log:\n"
        "        wandb.log({'iter': iter_num, 'train/loss': loss, 'extra': fetch()})\n"
        "    iter_num += 1\n"
    )
    report = scaffold.render_plan(scaffold.plan_init(tmp_path))
    assert report.splitlines() == [
        "plan:",
        "  train.py:7  wandb.log",
        "    step: iter_num  (its step key, `iter_num`)",
        "    series -> chart: train/loss -> loss",
        "    recorded after `if wandb_log:` (off by default), not inside it",
        "    not recorded: extra: `fetch()` runs only when `wandb_log`; init does not run it again",
        "not wired:",
        "  train.py:5: not wired: the wandb.log at line 7 records this block",
    ]
