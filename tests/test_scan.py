"""`ocms-tui scan`: the sites of each sample project at their exact lines, the plan as the
recorder routes it, suggestions within the chart limit, and hostile projects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ocms_tui.onboard import scan
from ocms_tui.onboard.scan import PlanEntry, scan_project

PROJECTS = Path(__file__).parent / "projects"
MARKER = "# scan-site"


def marked_lines(project: Path) -> list[tuple[str, int]]:
    """(file, line) of every line the sample marks as a site."""
    found = []
    for path in sorted(project.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.rstrip().endswith(MARKER):
                found.append((path.relative_to(project).as_posix(), number))
    return found


def run_scan(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ocms_tui", "scan", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


EXPECTED = {
    "plain_loop": (
        "custom",
        [
            ("metrics dict", "train", ("loss", "learning_rate", "grad_norm", "epoch")),
            ("print", "train", ("loss",)),
        ],
    ),
    "tensorboard_loop": (
        "custom",
        [
            ("SummaryWriter.add_scalar", "Runner.fit", ("train/loss",)),
            ("SummaryWriter.add_scalar", "Runner.fit", ("train/lr",)),
            ("logger.info", "Runner.fit", ("loss",)),
        ],
    ),
    "hf_trainer": (
        "hf",
        [("transformers.Trainer(...)", "main", ()), ("trainer.log_metrics", "main", ())],
    ),
    "lightning_module": (
        "lightning",
        [
            ("self.log", "TinyRegressor.training_step", ("train_loss",)),
            ("lightning.Trainer(...)", "main", ()),
        ],
    ),
    "accelerate_loop": (
        "accelerate",
        [("accelerator.log", "main", ("train_loss", "learning_rate"))],
    ),
    "mmengine_config": (
        "mmengine",
        [("default_hooks", "<module>", ()), ("custom_hooks", "<module>", ())],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scan_finds_every_marked_site_at_its_line(name: str) -> None:
    framework, expected_sites = EXPECTED[name]
    result = scan_project(PROJECTS / name)
    assert result.framework == framework
    assert [(site.file, site.line) for site in result.sites] == marked_lines(PROJECTS / name)
    assert [(site.kind, site.function, site.keys) for site in result.sites] == expected_sites
    assert result.skipped == []


def test_json_output_has_the_promised_fields() -> None:
    completed = run_scan(str(PROJECTS / "plain_loop"), "--format", "json")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["framework"] == "custom"
    assert report["sites"][1] == {
        "file": "train.py",
        "line": marked_lines(PROJECTS / "plain_loop")[1][1],
        "call": "print",
        "kind": "print",
        "function": "train",
        "keys": ["loss"],
        "step": "step",
    }
    assert report["plan"] == [
        {"key": "loss", "chart": "loss", "y_axis": "loss"},
        {"key": "learning_rate", "chart": "learning_rate", "y_axis": "learning_rate"},
        {"key": "grad_norm", "chart": "grad_norm", "y_axis": "grad_norm"},
        {"key": "epoch", "chart": "epoch", "y_axis": "epoch"},
    ]
    assert report["suggested_chart_groups"] is None


def test_text_output_is_a_short_table() -> None:
    completed = run_scan(str(PROJECTS / "tensorboard_loop"))
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("framework: custom")
    line = marked_lines(PROJECTS / "tensorboard_loop")[0][1]
    assert any(
        row.split() == [f"train.py:{line}", "self.writer.add_scalar", "Runner.fit", "train/loss"]
        for row in lines
    )
    assert any(row.split() == ["train/loss", "-", "not", "written"] for row in lines)
    assert len(lines) < 30
    assert completed.stderr == ""  # the recorder's "matches no chart group" stays quiet


def test_exit_codes_found_nothing_usage(tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("def add(a, b):\n    return a + b\n")
    assert run_scan(str(PROJECTS / "accelerate_loop")).returncode == 0
    nothing = run_scan(str(tmp_path))
    assert nothing.returncode == 1
    assert "no metric-logging site found" in nothing.stdout
    assert run_scan(str(tmp_path / "missing")).returncode == 2
    assert run_scan(str(tmp_path / "util.py")).returncode == 2
    assert run_scan().returncode == 2
    assert run_scan(str(tmp_path), "--format", "yaml").returncode == 2


def write(project: Path, name: str, text: str) -> Path:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_plan_is_the_recorders_routing_with_collisions(tmp_path: Path) -> None:
    write(
        tmp_path,
        "train.py",
        "import wandb\n"
        "def log(step):\n"
        "    metrics = {'learning_rate/a.b': 1, 'learning_rate/a_b': 2, 'timing/data': 3,\n"
        "               'vlm_loss': 4, 'reward': 5}\n"
        "    wandb.log(metrics, step=step)\n",
    )
    result = scan_project(tmp_path)
    assert [site.kind for site in result.sites] == ["metrics dict", "wandb.log"]
    assert result.sites[1].step == "step"
    assert result.plan == [
        PlanEntry("learning_rate/a.b", "learning_rate", "lr_a_b"),
        PlanEntry("learning_rate/a_b", "learning_rate", "lr_a_b_2"),
        PlanEntry("timing/data", "timing", "data"),
        PlanEntry("vlm_loss", "loss", "vlm_loss"),
        PlanEntry("reward", None, None),
    ]
    assert result.suggested_chart_groups is not None
    assert [g.chart for g in result.suggested_chart_groups][-1] == "reward"
    assert result.suggested_plan is not None
    assert all(entry.chart is not None for entry in result.suggested_plan)


def test_suggestion_keeps_every_key_within_six_charts(tmp_path: Path) -> None:
    families = ["reward", "kl", "entropy", "value", "advantage", "clip", "ratio", "tokens"]
    items = ", ".join(f"'{family}/mean': 0" for family in families)
    write(tmp_path, "train.py", f"metrics = {{'loss': 1, {items}}}\n")
    result = scan_project(tmp_path)
    groups = result.suggested_chart_groups
    assert groups is not None and len(groups) <= 6
    assert result.suggested_plan is not None
    charts = {entry.chart for entry in result.suggested_plan}
    assert None not in charts and len(charts) <= 6
    # The suggestion, as the code it prints, builds the same charts in a real recorder.
    namespace: dict[str, object] = {}
    exec(
        "from ocms_recorder import DEFAULT_CHART_GROUPS\n"
        "_ocms_default = dict(DEFAULT_CHART_GROUPS)\n" + scan.chart_groups_source(groups),
        namespace,
    )
    from ocms_recorder import OcmsRecorder

    recorder = OcmsRecorder(log_dir=tmp_path / "m", chart_groups=namespace["chart_groups"])
    recorder.log(step=1, metrics={entry.key: 1.0 for entry in result.suggested_plan})
    recorder.finish()
    written = json.loads((tmp_path / "m" / "metrics.json").read_text())["charts"]
    assert {(c["name"], y) for c in written for y in c["y_axis"]} == {
        (entry.chart, entry.y_axis) for entry in result.suggested_plan
    }


def test_with_every_default_chart_in_use_unplaceable_keys_stay_unplaced(tmp_path: Path) -> None:
    defaults = "'loss': 1, 'learning_rate': 1, 'epoch': 1, 'timing/data': 1, 'mIoU': 1"
    write(
        tmp_path, "train.py", f"metrics = {{{defaults}, 'grad_norm': 1, 'reward': 1, 'kl/x': 1}}\n"
    )
    result = scan_project(tmp_path)
    assert result.suggested_chart_groups is not None
    assert len(result.suggested_chart_groups) == 6
    assert result.suggested_plan is not None
    unplaced = [entry.key for entry in result.suggested_plan if entry.chart is None]
    assert unplaced == ["reward", "kl/x"]


def test_one_chart_left_takes_every_new_family(tmp_path: Path) -> None:
    defaults = "'loss': 1, 'learning_rate': 1, 'epoch': 1, 'timing/data': 1, 'mIoU': 1"
    write(tmp_path, "train.py", f"metrics = {{{defaults}, 'other': 1, 'reward': 1, 'kl/x': 1}}\n")
    groups = scan_project(tmp_path).suggested_chart_groups
    assert groups is not None
    assert [g.chart for g in groups][-1] == "other"
    assert groups[-1].keys == ("other", "reward", "kl/x")


def test_format_strings_give_keys_and_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "loop.py",
        "import logging\n"
        "logger = logging.getLogger()\n"
        "def run(loss, lr, it):\n"
        "    print(f'it {it} | loss: {loss:.3f} | lr={lr}')\n"
        "    print('epoch done')\n"
        "    logger.info('loss=%.3f acc=%.2f', loss, 0.5)\n"
        "    print('Loss: {:.4f}'.format(loss))\n",
    )
    sites = scan_project(tmp_path).sites
    assert [(s.line, s.kind, s.keys) for s in sites] == [
        (4, "print", ("loss", "lr")),
        (6, "logger.info", ("loss", "acc")),
        (7, "print", ("loss",)),
    ]
    assert sites[0].values == (("loss", "loss"), ("lr", "lr"))
    assert sites[1].values == (("loss", "loss"), ("acc", "0.5"))
    assert sites[0].step == "it"


def test_a_printed_step_is_the_step_init_records(tmp_path: Path) -> None:
    write(
        tmp_path,
        "loop.py",
        "import logging\n"
        "log = logging.getLogger()\n"
        "def run(n, loss, state):\n"
        "    print(f'acc={n} | Step {state.done} Loss: {loss:.3f}')\n"
        "    log.info('iter %d/%d loss=%.3f', state.iteration, n, loss)\n"
        "    print('loss %.2f' % loss)\n",
    )
    sites = scan_project(tmp_path).sites
    assert [(s.step, s.values) for s in sites] == [
        ("state.done", (("acc", "n"), ("loss", "loss"))),
        ("state.iteration", (("loss", "loss"),)),
        (None, (("loss", "loss"),)),  # `loss %.2f`: the word before the value labels it
    ]


# -- hostile projects -------------------------------------------------------------------


def test_unparsable_binary_huge_and_undecodable_files_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "good.py", "import wandb\nwandb.log({'loss': 1.0})\n")
    write(tmp_path, "broken.py", "def f(:\n")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    (tmp_path / "huge.py").write_bytes(b"x = 1\n" * (scan.MAX_FILE_BYTES // 6 + 10))
    (tmp_path / "latin.py").write_bytes(b"print('caf\xe9 loss=%f' % 1.0)\n")
    (tmp_path / "cookie.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nprint('caf\xe9 loss=%f' % 1.0)\n"
    )
    (tmp_path / "deep.py").write_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    result = scan_project(tmp_path)
    reasons = dict(result.skipped)
    assert reasons["broken.py"].startswith("does not parse (line 1")
    assert reasons["binary.py"] == "binary file (NUL bytes)"
    assert reasons["huge.py"].startswith("larger than")
    assert reasons["latin.py"].startswith("cannot decode")
    assert reasons["deep.py"].startswith("does not parse")
    assert [(s.file, s.keys) for s in result.sites] == [
        ("cookie.py", ("café_loss",)),
        ("good.py", ("loss",)),
    ]
    text = scan.format_text(result)
    assert "skipped broken.py: does not parse" in text


def test_symlink_loops_fifos_and_links_out_are_not_followed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project, "train.py", "print(f'loss={1}')\n")
    outside = write(tmp_path, "outside.py", "import wandb\nwandb.log({'secret_loss': 1})\n")
    (project / "loop").symlink_to(project)  # a directory symlink back to the root
    (project / "link.py").symlink_to(outside)
    (project / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    os.mkfifo(project / "fifo.py")
    completed = run_scan(str(project), "--format", "json")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert [(s["file"], s["keys"]) for s in report["sites"]] == [("train.py", ["loss"])]
    skipped = {entry["file"]: entry["reason"] for entry in report["skipped"]}
    assert skipped == {
        "dangling.py": "symbolic link (not followed)",
        "fifo.py": "not a regular file",
        "link.py": "symbolic link (not followed)",
    }


def test_environments_and_builds_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "train.py", "print(f'loss={1}')\n")
    for directory in (".venv/lib", "env/lib", "build/lib", ".git/hooks", "migrate_to_cloudrobo"):
        write(tmp_path, f"{directory}/other.py", "import wandb\nwandb.log({'x_loss': 1})\n")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    result = scan_project(tmp_path)
    assert [site.file for site in result.sites] == ["train.py"]


def test_scan_never_runs_the_project(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write(
        tmp_path,
        "train.py",
        f"open({str(marker)!r}, 'w').close()\nimport wandb\nwandb.log({{'loss': 1}})\n",
    )
    write(tmp_path, "conftest.py", f"open({str(marker)!r}, 'w').close()\n")
    assert run_scan(str(tmp_path)).returncode == 0
    assert not marker.exists()


def test_names_from_files_cannot_drive_the_terminal(tmp_path: Path) -> None:
    write(tmp_path, "t\x1b[2Jx.py", "import wandb\nwandb.log({'\\x1b[31mred_loss': 1})\n")
    completed = run_scan(str(tmp_path))
    assert completed.returncode == 0
    assert "\x1b" not in completed.stdout
    assert "\\x1b[31mred_loss" in completed.stdout


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_read_only_project_and_unreadable_parts_as_non_root() -> None:
    # Under /tmp itself: pytest's own temp root is private to its user.
    project = Path(tempfile.mkdtemp(prefix="ocms-scan-ro-"))
    write(project, "train.py", "print(f'loss={1}')\n")
    write(project, "secret.py", "import wandb\nwandb.log({'x': 1})\n").chmod(0o000)
    write(project, "private/more.py", "import wandb\nwandb.log({'y': 1})\n")
    (project / "private").chmod(0o700)
    project.chmod(0o555)
    try:
        command = [sys.executable, "-m", "ocms_tui", "scan", str(project), "--format", "json"]
        if os.geteuid() == 0:
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    finally:
        project.chmod(0o755)
        shutil.rmtree(project)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert [site["file"] for site in report["sites"]] == ["train.py"]
    if os.geteuid() == 0:  # root reads everything; as anyone else these are reported
        assert report["skipped"] == [
            {"file": "private", "reason": "Permission denied"},
            {"file": "secret.py", "reason": "Permission denied"},
        ]


def test_an_inaccessible_project_is_a_usage_error(tmp_path: Path) -> None:
    completed = run_scan(str(tmp_path / "no\x1b[2Jdir"))
    assert completed.returncode == 2
    assert "\x1b" not in completed.stderr


def test_scan_modules_import_no_textual() -> None:
    code = (
        "import sys, ocms_tui.onboard.scan, ocms_tui.onboard.scan_sites, ocms_tui.onboard.scaffold, ocms_tui.cli; "
        "assert 'textual' not in sys.modules and 'rich' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_scan_reads_at_most_max_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(5):
        write(tmp_path, f"m{index}.py", "print(f'loss={1}')\n")
    monkeypatch.setattr(scan, "MAX_FILES", 3)
    result = scan_project(tmp_path)
    assert result.files_read == 3
    assert result.skipped == [("m3.py", "too many files")]


def test_wandb_runs_are_found_under_any_name(tmp_path: Path) -> None:
    write(
        tmp_path,
        "train.py",
        "import wandb\n"
        "def fit(step):\n"
        "    run = wandb.init(project='x')\n"
        "    run.log({'loss': 1.0}, step=step)\n"
        "    wandb.run.log({'grad_norm': 2.0})\n"
        "    other.log({'ignored': 3.0})\n",
    )
    sites = scan_project(tmp_path).sites
    assert [(site.line, site.kind, site.keys) for site in sites] == [
        (4, "wandb.log", ("loss",)),
        (5, "wandb.log", ("grad_norm",)),
    ]


def test_the_text_lists_stay_short_and_json_keeps_everything(tmp_path: Path) -> None:
    body = "".join(f"    wandb.log({{'k{index}_loss': 1}})\n" for index in range(30))
    write(tmp_path, "train.py", "import wandb\ndef fit():\n" + body)
    result = scan_project(tmp_path)
    text = scan.format_text(result)
    assert text.count("... and 10 more (--format json lists them all)") == 2  # sites, plan
    assert len(text.splitlines()) < 60
    assert len(result.as_json()["sites"]) == 30


def test_text_says_first_which_keys_the_recorders_default_groups_would_drop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        "train.py",
        "import wandb\n"
        "for step in range(9):\n"
        "    wandb.log({'loss': 1.0, 'lr': 1e-4, 'f1': 0.5, 'val/acc': 0.3,"
        " 'tokens_per_sec': 9.0}, step=step)\n",
    )
    text = scan.format_text(scan_project(tmp_path)).splitlines()
    assert text[1:3] == [
        "the default chart groups would drop 4 key(s): 'lr', 'f1', 'val/acc', 'tokens_per_sec'",
        "  the suggested chart_groups below keep every one of them",
    ]
    # The recorder's own groups decide, not a copy: change them and the list follows.
    import ocms_recorder

    widened = [*ocms_recorder.DEFAULT_CHART_GROUPS]
    widened[1] = ("learning_rate", lambda k: k in ("learning_rate", "lr"))
    monkeypatch.setattr(ocms_recorder, "DEFAULT_CHART_GROUPS", widened)
    text = scan.format_text(scan_project(tmp_path)).splitlines()
    assert (
        text[1] == "the default chart groups would drop 3 key(s): 'f1', 'val/acc', 'tokens_per_sec'"
    )


def test_init_says_which_keys_the_default_groups_would_drop_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ocms_tui.onboard.scaffold import run_init

    write(
        tmp_path,
        "train.py",
        "import wandb\nfor step in range(9):\n    wandb.log({'loss': 1.0, 'lr': 1e-4}, step=step)\n",
    )
    before = sorted(path.name for path in tmp_path.iterdir())
    assert run_init(tmp_path) == 0  # a dry run
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == [
        "the default chart groups would drop 1 key(s): 'lr'",
        "  the suggested chart_groups init writes keep every one of them",
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == before


def test_progress_bars_and_a_projects_own_print_are_sites(tmp_path: Path) -> None:
    write(
        tmp_path,
        "loop.py",
        "def run(bar, loss, step, accelerator):\n"
        "    bar.set_postfix(loss=loss, lr=0.1)\n"
        "    bar.set_description(f'step {step} loss {loss:.3f}')\n"
        "    accelerator.print(f'train loss {loss}')\n"
        "    print0(f'step {step} | loss: {loss:.6f}')\n"
        "    tqdm.write('loss %.3f' % loss)\n",
    )
    sites = scan_project(tmp_path).sites
    assert [(s.line, s.kind, s.keys, s.step) for s in sites] == [
        (2, "tqdm.set_postfix", ("loss", "lr"), None),
        (3, "logger.info", ("loss",), "step"),
        (4, "logger.info", ("train_loss",), None),
        (5, "print", ("loss",), "step"),
        (6, "logger.info", ("loss",), None),
    ]
