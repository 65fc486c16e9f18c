"""`ocms-tui scan` and `init` on hostile projects: trees that once made them print a
traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
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


# -- init never changes what the training does -------------------------------------------


def _run_script(project: Path, metrics: Path, script: str = "train.py") -> str:
    """The script's output, run as a training image runs it (no ocms-tui importable)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment, "METRICS": str(metrics)},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def _recorded(metrics: Path) -> dict[str, dict[int, float]]:
    """Series name -> {step: value}, read from the chart CSVs."""
    layout = json.loads((metrics / "metrics.json").read_text())
    series: dict[str, dict[int, float]] = {}
    for chart in layout["charts"]:
        for row in (metrics / chart["file"]).read_text().splitlines():
            cells = row.split(",")
            for name, cell in zip(chart["y_axis"], cells[1:], strict=True):
                if cell:
                    series.setdefault(name, {})[int(cells[0])] = float(cell)
    return series


def _wire_and_compare(tmp_path: Path, source: str) -> tuple[str, dict[str, dict[int, float]]]:
    """Run `source` as written and after `init --write`: the output must be the same
    (the training did not change). Returns the output and what was recorded."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(source)
    original = _run_script(project, tmp_path / "unused")
    init = run_cli("init", str(project), "--write", "--force")
    assert init.returncode == 0, init.stdout + init.stderr
    assert "from ocms_loop import" in (project / "train.py").read_text(), init.stdout
    wired = _run_script(project, tmp_path / "metrics")
    assert wired == original, (project / "train.py").read_text()
    check = run_cli("--check", str(tmp_path / "metrics"), "--strict")
    assert check.returncode == 0, check.stdout + check.stderr
    return original, _recorded(tmp_path / "metrics")


def test_init_import_comes_before_a_module_level_loop_and_a_later_import(tmp_path: Path) -> None:
    """The import went after the module's LAST top-level import, below the loop: NameError."""
    output, recorded = _wire_and_compare(
        tmp_path,
        "import random\n"
        "random.seed(3)\n"
        "for step in range(4):\n"
        "    loss = random.random()\n"
        "    loss_value = loss * 2  # .backward() stands for training\n"
        "    print(f'step {step} loss={loss:.6f}')\n"
        "import json\n"
        "print(json.dumps('done'))\n",
    )
    printed = [float(line.split("=")[1]) for line in output.splitlines() if "loss=" in line]
    assert recorded["loss"] == {step: pytest.approx(v, abs=1e-6) for step, v in enumerate(printed)}


def test_init_never_consumes_an_iterator_twice(tmp_path: Path) -> None:
    """`next(batches)` in the logged expression: the added call ran it again."""
    output, recorded = _wire_and_compare(
        tmp_path,
        "batches = iter([0.5, 0.25, 0.125, 0.0625])\n"
        "for step in range(2):\n"
        "    print(f'step {step} loss={next(batches):.4f}')\n"
        "print('left', list(batches))\n",
    )
    assert "left [0.125, 0.0625]" in output
    assert recorded["loss"] == {0: 0.5, 1: 0.25}


def test_init_never_pops_or_awaits_twice(tmp_path: Path) -> None:
    output, recorded = _wire_and_compare(
        tmp_path,
        "import asyncio\n"
        "calls = []\n"
        "async def compute():\n"
        "    calls.append(1)\n"
        "    return len(calls) / 10\n"
        "async def main():\n"
        "    meter = [0.9, 0.8, 0.7]\n"
        "    for step in range(2):\n"
        "        print(f'step {step} loss={meter.pop():.2f} eval_loss={await compute():.2f}')\n"
        "    print('meter', meter, 'calls', len(calls))\n"
        "asyncio.run(main())\n",
    )
    assert "meter [0.9] calls 2" in output
    assert recorded["loss"] == {0: 0.7, 1: 0.8}
    assert recorded["eval_loss"] == {0: 0.1, 1: 0.2}


def test_init_records_a_value_before_the_same_line_resets_it(tmp_path: Path) -> None:
    """`print(...); running_loss = 0.0`: the call went after the whole line, recording 0."""
    _, recorded = _wire_and_compare(
        tmp_path,
        "running_loss = 0.0\n"
        "for step in range(1, 7):\n"
        "    running_loss += step\n"
        "    if step % 2 == 0:\n"
        "        print(f'step {step} loss {running_loss / 2:.3f}'); running_loss = 0.0\n",
    )
    assert recorded["loss"] == {2: 1.5, 4: 3.5, 6: 5.5}


def test_init_leaves_a_value_whose_binding_would_reorder_calls(tmp_path: Path) -> None:
    """Binding `next(it)` first would run it before `tick()`: not recorded, and said so."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(
        "it = iter([1.0, 2.0])\n"
        "def tick():\n"
        "    return 'x'\n"
        "for step in range(2):\n"
        "    print(f'{tick()} step {step} loss={next(it)} lr={0.1}')\n"
    )
    init = run_cli("init", str(project), "--write", "--force")
    assert init.returncode == 0, init.stdout + init.stderr
    assert "not recorded: loss: `next(it)` comes after a call on the same statement" in init.stdout
    text = (project / "train.py").read_text()
    assert "    print(f'{tick()} step {step} loss={next(it)} lr={0.1}')\n" in text
    assert "    ocms_log(step, {'lr': 0.1})\n" in text


def test_init_records_under_an_optional_logger_that_is_off(tmp_path: Path) -> None:
    """nanoGPT's `if wandb_log: wandb.log({...})`, off by default: the call went inside
    the guard, so a default run recorded nothing; the step became a call counter."""
    _, recorded = _wire_and_compare(
        tmp_path,
        "wandb_log = False\n"
        "if wandb_log:\n"
        "    import wandb\n"
        "iter_num = 0\n"
        "while iter_num < 30:\n"
        "    loss = 1.0 / (iter_num + 1)\n"
        "    if iter_num % 10 == 0:\n"
        "        if wandb_log:\n"
        "            wandb.log({'iter': iter_num, 'train/loss': loss, 'lr': 0.1})\n"
        "    iter_num += 1\n",
    )
    assert recorded["train_loss"] == {0: 1.0, 10: 1 / 11, 20: 1 / 21}
    assert "iter" not in recorded  # the x axis, not a metric


def test_init_tutorial_loop_steps_never_restart_and_test_values_stay_apart(
    tmp_path: Path,
) -> None:
    """The PyTorch tutorial loop: the step was `batch_idx` (restarting each epoch), the
    test loss went into the training `loss` series, `accuracy` recorded the count 108."""
    output, recorded = _wire_and_compare(
        tmp_path,
        "import random\n"
        "random.seed(1)\n"
        "loader = [0] * 6\n"
        "def test():\n"
        "    test_loss, correct = random.random(), 108\n"
        "    print('Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)'.format(\n"
        "        test_loss, correct, 200, 100. * correct / 200))\n"
        "for epoch in range(2):\n"
        "    running_loss = 0.0\n"
        "    for batch_idx, data in enumerate(loader, 0):\n"
        "        running_loss += random.random()\n"
        "        if batch_idx % 2 == 1:\n"
        "            print(f'[{epoch + 1}, {batch_idx + 1:5d}] loss: {running_loss / 2:.3f}')\n"
        "            running_loss = 0.0\n"
        "    test()\n",
    )
    printed = [float(v) for v in re.findall(r"loss: ([\d.]+)$", output, re.MULTILINE)]
    assert sorted(recorded["loss"]) == [1, 3, 5, 7, 9, 11]  # epoch * len(loader) + batch_idx
    assert [round(v, 3) for v in recorded["loss"].values()] == printed
    # The printed percentage as the fraction it is (an accuracy above 1 is a --check
    # warning), at the last step.
    assert recorded["test_accuracy"] == {5: 0.54, 11: 0.54}
    assert set(recorded["test_loss"]) == {5, 11} and "accuracy" not in recorded


def test_init_records_after_an_elif_chain_of_optional_loggers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`if use_tb: writer... elif wandb_log: wandb.log(...)`: the call went after the
    `elif` inside the first guard's else, so a run with TensorBoard on recorded nothing."""
    source = (
        "import os\n"
        "use_tb = os.environ.get('USE_TB') == '1'\n"
        "wandb_log = False\n"
        "class Writer:\n"
        "    def add_scalar(self, tag, value, step):\n"
        "        print('tb', tag, value, step)\n"
        "writer = Writer()\n"
        "global_step = 0\n"
        "for epoch in range(2):\n"
        "    for batch in range(3):\n"
        "        global_step += 1\n"
        "        loss = 1.0 / global_step\n"
        "        if use_tb:\n"
        "            writer.add_scalar('train/loss', loss, global_step)\n"
        "        elif wandb_log:\n"
        "            import wandb\n"
        "            wandb.log({'train/loss': loss}, step=global_step)\n"
    )
    _, recorded = _wire_and_compare(tmp_path, source)
    assert recorded["train_loss"] == {step: 1.0 / step for step in range(1, 7)}
    edited = (tmp_path / "project" / "train.py").read_text()
    # after the whole chain, at the loop's indentation: recorded whichever logger is on
    assert "\n        ocms_log(global_step, {'train/loss': loss})\n" in edited
    monkeypatch.setenv("USE_TB", "1")
    with_tb = _run_script(tmp_path / "project", tmp_path / "tb_metrics")
    assert with_tb.count("tb train/loss") == 6
    assert _recorded(tmp_path / "tb_metrics")["train_loss"] == recorded["train_loss"]


def test_init_records_out_of_a_with_writer_block_under_a_none_check(tmp_path: Path) -> None:
    """`if writer is not None: with writer: writer.add_scalar(...)`: the call stayed inside
    the `with`, under the guard: a default run (no writer) recorded nothing."""
    source = (
        "import contextlib\n"
        "writer = None  # a TensorBoard writer when asked for\n"
        "step = 0\n"
        "while step < 5:\n"
        "    loss = 0.5 ** step\n"
        "    if writer is not None:\n"
        "        with writer:\n"
        "            writer.add_scalar('loss', loss, step)\n"
        "    step += 1\n"
        "print('done')\n"
    )
    _, recorded = _wire_and_compare(tmp_path, source)
    assert recorded["loss"] == {step: 0.5**step for step in range(5)}
    edited = (tmp_path / "project" / "train.py").read_text()
    assert (
        "            writer.add_scalar('loss', loss, step)\n    ocms_log(step, {'loss': loss})\n"
        in edited
    )


BENCHMARK = (
    "import time\n"
    "loss = 4.0\n"
    "for k in range(3):\n"
    "    loss = loss / 2  # a forward pass, timed; nothing trains\n"
    "    print(f'{k}/3 loss: {loss:.4f}')\n"
)


def test_init_wires_a_script_that_does_not_train_only_when_asked(tmp_path: Path) -> None:
    """A benchmark is left alone (init says how to ask); `--include bench.py` wires it,
    and its run records what it prints at its own iteration `k`."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "bench.py").write_text(BENCHMARK)
    alone = run_cli("init", str(project))
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "bench.py: left alone: its name says it does not train" in alone.stdout
    assert "to record it anyway: init --include bench.py" in alone.stdout
    for named in ("bench.py", str(project / "bench.py")):  # relative to PROJECT_DIR, or a path
        plan = run_cli("init", str(project), "--include", named)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert "bench.py:5  print\n    step: k" in plan.stdout
    original = _run_script(project, tmp_path / "unused", "bench.py")
    wired = run_cli("init", str(project), "--write", "--force", "--include", "bench.py")
    assert wired.returncode == 0, wired.stdout + wired.stderr
    assert _run_script(project, tmp_path / "metrics", "bench.py") == original
    check = run_cli("--check", str(tmp_path / "metrics"), "--strict")
    assert check.returncode == 0, check.stdout + check.stderr
    assert _recorded(tmp_path / "metrics")["loss"] == {0: 2.0, 1: 1.0, 2: 0.5}


@pytest.mark.parametrize(
    "named", ["missing.py", "../outside.py", "sub", "link.py"], ids=lambda n: n.replace(".", "_")
)
def test_init_include_names_a_file_of_the_project_or_is_a_usage_error(
    tmp_path: Path, named: str
) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "bench.py").write_text(BENCHMARK)
    (tmp_path / "outside.py").write_text(BENCHMARK)
    (project / "link.py").symlink_to(tmp_path / "outside.py")
    completed = run_cli("init", str(project), "--write", "--force", "--include", named)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert f"--include {named!r} is not a file inside" in completed.stderr
    assert not (project / "migrate_to_cloudrobo").exists()
    assert (project / "bench.py").read_text() == BENCHMARK


def test_init_include_of_a_file_without_a_logging_site_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "bench.py").write_text(BENCHMARK)
    (project / "sample.py").write_text("print('no loss here')\n")
    completed = run_cli("init", str(project), "--include", "bench.py", "--include", "sample.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "sample.py: --include, but scan found no logging site in it" in completed.stdout


def test_init_include_wires_nanogpts_benchmark_and_leaves_its_sampler(tmp_path: Path) -> None:
    """karpathy/nanoGPT's bench.py prints `{k}/{num_steps} loss: {lossf:.4f}` and trains
    nothing: left alone by default, wired when asked; sample.py stays alone."""
    project = tmp_path / "nanogpt"
    shutil.copytree(Path(__file__).parent / "real_scripts" / "nanogpt", project)
    completed = run_cli("init", str(project), "--include", "bench.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # `k` restarts for each of its two stages (burn-in, benchmark): a counter is added
    assert "bench.py:111  print\n    step: _ocms_step  (no global step" in completed.stdout
    assert "bench.py: left alone" not in completed.stdout
    assert "+++ b/bench.py" in completed.stdout and "+++ b/sample.py" not in completed.stdout


def test_init_neighbouring_sites_share_one_call_and_lose_nothing_when_it_cannot_be_added(
    tmp_path: Path,
) -> None:
    """Three `writer.add_scalar` lines at one step become one `ocms_log` after the last
    (one row a step); when that call would read a name the code there does not define,
    none of the three claims to be recorded by it."""
    source = (
        "class Writer:\n"
        "    def add_scalar(self, tag, value, step):\n"
        "        print(tag, value, step)\n"
        "writer = Writer()\n"
        "for global_step in range(3):\n"
        "    loss = 1.0 / (global_step + 1)\n"
        "    writer.add_scalar('losses/value', loss, global_step)\n"
        "    print('SPS:', 100)\n"
        "    writer.add_scalar('losses/policy', loss / 2, global_step)\n"
        "    writer.add_scalar('charts/lr', 0.1, global_step)\n"
    )
    _, recorded = _wire_and_compare(tmp_path, source)
    edited = (tmp_path / "project" / "train.py").read_text()
    assert edited.count("ocms_log(global_step") == 1
    assert recorded["losses_value"] == {0: 1.0, 1: 0.5, 2: 1 / 3}
    assert recorded["losses_policy"] == {0: 0.5, 1: 0.25, 2: 1 / 6}
    rows = (tmp_path / "metrics" / "loss.csv").read_text().splitlines()
    assert len(rows) == 3  # one row a step, not one per add_scalar
    # The last line reads a comprehension's own variable: the shared call after it
    # cannot read `lr`, so each line gets its own call and the first two stay recorded.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "train.py").write_text(
        source.replace(
            "writer.add_scalar('charts/lr', 0.1, global_step)",
            "[writer.add_scalar('charts/lr', lr, global_step) for lr in [0.1]]",
        )
    )
    plan = run_cli("init", str(broken))
    assert "recorded by the call after line" not in plan.stdout
    assert "+    ocms_log(global_step, {'losses/value': loss})" in plan.stdout
    assert "+    ocms_log(global_step, {'losses/policy': loss / 2})" in plan.stdout
    assert "train.py:10: not wired: the call would read lr" in plan.stdout


def test_init_says_what_a_trl_trainer_logs_beyond_the_hooks_charts(tmp_path: Path) -> None:
    """A TRL trainer gets the HF callback like any Trainer; the plan also says that it
    logs keys of its own at run time that the hook's default charts may drop."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train_dpo.py").write_text(
        "from transformers import Trainer\n"
        "from trl import DPOConfig, DPOTrainer\n"
        "def main(model, data):\n"
        "    trainer = DPOTrainer(model=model, args=DPOConfig('out'), train_dataset=data)\n"
        "    trainer.train()\n"
        "    plain = Trainer(model=model, train_dataset=data)\n"
        "    plain.train()\n"
    )
    completed = run_cli("init", str(project))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "train_dpo.py:4: DPOTrainer gets OcmsCallback()" in completed.stdout
    assert "train_dpo.py:4: DPOTrainer also logs keys of its own at run time" in completed.stdout
    assert "train_dpo.py:6: Trainer also logs" not in completed.stdout
