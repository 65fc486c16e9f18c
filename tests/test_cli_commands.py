"""The command line's sub-commands: `ocms-tui --help` lists them, each has its own `--help`,
the dashboard keeps its command-less form, and a mistyped command or a bad option is one
clear line and exit 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ocms_recorder import OcmsRecorder

from ocms_tui.cli import COMMANDS, main
from ocms_tui.follow.report import ExitCode

ROOT = Path(__file__).resolve().parent.parent
# One option of each command, that its --help must show (and no other command's does).
OWN_OPTION = {
    "verify": "--require-ocms",
    "scan": "{text,json}]",
    "init": "--output-dir-expr",
    "import": "--framework",
    "runs": "--top N",
    "diff": "--tolerance",
}


def run_cli(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    finished = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ocms_tui", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={
            **{k: v for k, v in os.environ.items() if k != "METRICS"},
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "recorder")]),
        },
    )
    assert "Traceback" not in finished.stdout + finished.stderr, finished.stderr
    return finished


def errors(finished: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the `-X importtime` lines."""
    return [line for line in finished.stderr.splitlines() if not line.startswith("import time:")]


def exit_code(arguments: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(arguments)
    return int(exited.value.code or 0)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "run"
    with OcmsRecorder(log_dir=str(directory)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    return directory


def test_the_help_lists_every_command_on_one_line_and_the_dashboard_options() -> None:
    finished = run_cli("--help")
    assert finished.returncode == ExitCode.OK
    lines = finished.stdout.splitlines()
    assert set(COMMANDS) == {"verify", "scan", "init", "import", "runs", "diff"}
    for name, (summary, _) in COMMANDS.items():
        # The summary's first words share the command's line (the rest may wrap).
        assert any(line.split()[:2] == [name, summary.split()[0]] for line in lines if line), name
        assert "\n" not in summary
    for option in ("--check", "--snapshot OUT.svg", "--serve", "--no-health", "--sort SERIES"):
        assert option in finished.stdout
    assert "(dashboard)" not in finished.stdout  # the default sub-parser is no command
    # The help answers without any command's code (the readers of other logs load numpy).
    loaded = {
        line.rsplit("|", 1)[1].strip() for line in finished.stderr.splitlines() if "|" in line
    }
    assert "ocms_tui.cli" in loaded
    assert not {"ocms_tui.sources.import_command", "numpy"} & loaded


def test_help_after_a_directory_is_the_same_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["--help"]) == ExitCode.OK
    alone = capsys.readouterr().out
    assert exit_code(["some/dir", "--check", "-h"]) == ExitCode.OK
    assert capsys.readouterr().out == alone


@pytest.mark.parametrize("command", sorted(OWN_OPTION))
def test_each_command_has_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code([command, "--help"]) == ExitCode.OK
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: ocms-tui {command} ")
    assert OWN_OPTION[command] in shown
    others = {option for name, option in OWN_OPTION.items() if name != command}
    assert not {option for option in others if option in shown}
    assert "Exit codes" in shown
    assert "--snapshot OUT.svg" not in shown or command == "diff"


def test_a_mistyped_command_is_one_line_and_exit_2(tmp_path: Path) -> None:
    finished = run_cli("rnus", cwd=tmp_path)
    assert finished.returncode == ExitCode.USAGE
    assert errors(finished) == [
        "ocms-tui: error: 'rnus' is no command and no directory: did you mean "
        "'ocms-tui runs'? (a directory still to be created is given as ./rnus)"
    ]
    assert finished.stdout == ""


def test_a_directory_named_like_a_typo_or_a_command_is_still_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("rnus", "runs"):
        with OcmsRecorder(log_dir=str(tmp_path / name)) as recorder:
            recorder.log(step=0, metrics={"loss": 1.0})
    monkeypatch.chdir(tmp_path)
    assert main(["rnus", "--check"]) == ExitCode.OK  # it exists: it is the directory
    assert "rnus: ok" in capsys.readouterr().out
    assert main([f".{os.sep}runs", "--check"]) == ExitCode.OK
    assert "runs: ok" in capsys.readouterr().out
    assert main(["--check", "runs"]) == ExitCode.OK  # not first: never a command
    assert exit_code(["runs"]) == ExitCode.USAGE  # first: the command, which needs DIR
    assert "ocms-tui runs: error: the following arguments are required: DIR" in (
        capsys.readouterr().err
    )


def test_a_name_far_from_every_command_is_a_directory_to_wait_for(tmp_path: Path) -> None:
    finished = run_cli("checkpoints", "--check", cwd=tmp_path)
    assert finished.returncode == ExitCode.USAGE
    assert "the directory checkpoints does not exist" in finished.stdout


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["runs", "{run}", "--bogus"], "ocms-tui runs: error: unrecognized arguments: --bogus"),
        (
            ["runs", "{run}", "--top", "0"],
            "ocms-tui runs: error: argument --top: must be at least 1, got 0",
        ),
        (["diff", "{run}"], "ocms-tui diff: error: the following arguments are required: BASELINE"),
        (
            ["scan", "--format", "xml", "."],
            "ocms-tui scan: error: argument --format: invalid choice: 'xml' (choose from 'text', 'json')",
        ),
        (
            ["import", "{run}"],
            "ocms-tui import: error: the following arguments are required: --out",
        ),
        (
            ["verify", "--output-dir"],
            "ocms-tui verify: error: argument --output-dir: expected one argument",
        ),
        (
            ["init", "{run}", "--write=yes"],
            "ocms-tui init: error: argument --write: ignored explicit argument 'yes'",
        ),
        (["{run}", "--bogus"], "ocms-tui: error: unrecognized arguments: --bogus"),
        (
            ["--check", "--serve", "{run}"],
            "ocms-tui: error: argument --serve: not allowed with argument --check",
        ),
        (
            ["--check", "{run}", "--fail-on", "nope"],
            "ocms-tui: error: argument --fail-on: unknown rule 'nope'; rules:",
        ),
    ],
)
def test_a_bad_option_is_a_usage_error_with_the_commands_usage(
    arguments: list[str], said: str, run_dir: Path
) -> None:
    finished = run_cli(*(argument.format(run=run_dir) for argument in arguments))
    assert finished.returncode == ExitCode.USAGE
    lines = errors(finished)
    assert lines[0].startswith("usage: ocms-tui")
    command = arguments[0] if arguments[0] in COMMANDS else None
    if command:
        assert lines[0].startswith(f"usage: ocms-tui {command} ")
    assert lines[-1].startswith(said), lines[-1]
    assert [line for line in lines if "error" in line] == [lines[-1]]
    assert finished.stdout == ""


def test_the_command_less_forms_keep_working(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for arguments in (
        ["--check", str(run_dir)],
        [str(run_dir), "--check"],
        ["--check", "--", str(run_dir)],
        ["--format", "json", "--check", str(run_dir)],
    ):
        assert main(arguments) == ExitCode.OK, arguments
        assert str(run_dir) in capsys.readouterr().out
    assert exit_code([str(run_dir), "--version"]) == ExitCode.OK
    assert capsys.readouterr().out.startswith("ocms-tui ")


def test_the_commands_keep_their_exit_codes(run_dir: Path, tmp_path: Path) -> None:
    assert main(["runs", str(run_dir)]) == ExitCode.OK
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["runs", str(empty)]) == ExitCode.PROBLEMS
    assert main(["scan", str(empty)]) == ExitCode.PROBLEMS
    assert main(["scan", str(tmp_path / "missing")]) == ExitCode.USAGE
    assert main(["diff", str(run_dir), str(run_dir)]) == ExitCode.OK
