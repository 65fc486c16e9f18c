"""The layers hold: import-linter's contracts (pyproject.toml), what each module really imports
in a fresh interpreter, and what the quick commands import before they answer."""

from __future__ import annotations

import ast
import os
import pkgutil
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ocms_recorder import OcmsRecorder

import ocms_tui

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest depends on tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
RECORDER = ROOT / "recorder" / "ocms_recorder.py"
# The UI, and the entry points that start it (the contracts name these): everything else in
# ocms_tui is the core.
USER_INTERFACE = frozenset(
    {"ocms_tui.ui.app", "ocms_tui.ui.run_ranking", "ocms_tui.ui.launch", "ocms_tui.widgets"}
)
ENTRY_POINTS = frozenset(
    {"ocms_tui.__main__", "ocms_tui.cli", "ocms_tui.ui.demo", "ocms_tui.ui.serve"}
)
# What only the reading thread touches: live stores the UI never imports (it draws frames).
READING_SIDE = frozenset(
    {
        "ocms_tui.follow.model",
        "ocms_tui.follow.chart_data",
        "ocms_tui.follow.series",
        "ocms_tui.follow.runset",
        "ocms_tui.follow.reader",
        "ocms_tui.follow.watch",
        "ocms_tui.follow.watcher_base",
        "ocms_tui.follow.watchdog_watcher",
        "ocms_tui.follow.inotify_watcher",
    }
)
UI_PACKAGES = ("textual", "textual_plotext", "textual_serve", "rich")
PYTHON_IMPORTTIME = (sys.executable, "-X", "importtime", "-m", "ocms_tui")


def source_env(tree: Path = ROOT) -> dict[str, str]:
    """`tree` first on the path, whichever copy of the project the venv has installed."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "recorder")])}


def importlinter_config() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as pyproject:
        return tomllib.load(pyproject)["tool"]["importlinter"]


def ocms_tui_modules() -> set[str]:
    """Every module of the package, found on disk (a new module cannot be forgotten)."""
    return {module.name for module in pkgutil.walk_packages(ocms_tui.__path__, prefix="ocms_tui.")}


def is_user_interface(name: str) -> bool:
    return any(name == ui or name.startswith(f"{ui}.") for ui in USER_INTERFACE)


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the project in `tree`, with that tree's packages on the path."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    command = command or shutil.which("lint-imports")
    assert command, "import-linter is in the test extra: pip install -e '.[test]'"
    return subprocess.run(
        [command, "--no-cache"],
        cwd=tree,
        env=source_env(tree),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_lint_imports_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    contracts = importlinter_config()["contracts"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout, result.stdout


def test_the_contracts_name_modules_that_exist() -> None:
    """The contracts list only the UI and the entry points (the core is everything else):
    a renamed module must not leave a contract guarding nothing."""
    packages = ocms_tui_modules() | {"ocms_tui"}
    named: set[str] = set()
    for contract in importlinter_config()["contracts"]:
        for key in ("protected_modules", "allowed_importers", "forbidden_modules"):
            named |= {name for name in contract.get(key, ()) if name.startswith("ocms_tui")}
    assert named == USER_INTERFACE | ENTRY_POINTS | READING_SIDE | {"ocms_tui"}
    assert named <= packages


def test_a_new_core_module_that_reaches_the_ui_breaks_a_contract(tmp_path: Path) -> None:
    """Hostile: a module nobody listed, importing the UI lazily and Rich in a subpackage."""
    for name in ("ocms_tui", "ocms_integrations", "recorder"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "ocms_tui" / "brand_new.py").write_text(
        "def draw():\n    from ocms_tui.widgets.chart_grid import ChartGrid\n    return ChartGrid\n"
    )
    (tmp_path / "ocms_integrations" / "brand_new.py").write_text("import ocms_tui.follow.runs\n")
    (tmp_path / "ocms_tui" / "reader_extra.py").write_text("import rich\n")
    (tmp_path / "ocms_tui" / "format" / "upward.py").write_text("import ocms_tui.follow.model\n")
    # A widget reaching past the frames into the live store the reading thread appends to.
    (tmp_path / "ocms_tui" / "widgets" / "sneaky.py").write_text(
        "def rows(chart):\n    from ocms_tui.follow.series import SeriesStore\n    return SeriesStore\n"
    )
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout
    for illegal in (
        "ocms_tui.brand_new -> ocms_tui.widgets.chart_grid",
        "ocms_tui.reader_extra -> rich",
        "ocms_integrations.brand_new -> ocms_tui.follow.runs",
        "ocms_tui.format.upward -> ocms_tui.follow.model",
        "ocms_tui.widgets.sneaky -> ocms_tui.follow.series",
    ):
        assert illegal in result.stdout, result.stdout
    assert "Contracts: 2 kept, 5 broken." in result.stdout, result.stdout


def test_every_module_lives_in_a_folder_named_for_its_role() -> None:
    """The package's top holds only the entry point; the rest is in the layered folders,
    so a newcomer finds a module's room from the tree alone."""
    top = {path.name for path in (ROOT / "ocms_tui").glob("*.py")}
    assert top == {"__init__.py", "__main__.py", "cli.py"}


def test_importing_everything_but_the_ui_loads_no_textual_or_rich() -> None:
    """The entry points import the UI lazily; importing them (and the core) loads none of it."""
    modules = sorted(
        name
        for name in ocms_tui_modules()
        if not is_user_interface(name) and name != "ocms_tui.__main__"  # it runs main()
    )
    assert "ocms_tui.follow.session" in modules and "ocms_tui.cli" in modules
    code = (
        f"import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(p for p in {UI_PACKAGES!r} if p in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=source_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.strip() == "[]"


def test_the_recorder_imports_only_the_standard_library() -> None:
    """Every import statement in the file, including those inside functions (the runtime test
    in test_recorder_faults.py sees only the code paths it runs)."""
    tree = ast.parse(RECORDER.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import in a copyable file"
            imported.add((node.module or "").partition(".")[0])
    assert {"json", "os"} <= imported
    # `ocms` is the proprietary platform package: imported if present, never required.
    assert imported - set(sys.stdlib_module_names) - {"__future__"} <= {"ocms"}


def imported_modules(arguments: list[str]) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules `python -m ocms_tui ARGUMENTS` imports, from `-X importtime`."""
    result = subprocess.run(
        [*PYTHON_IMPORTTIME, *arguments],
        env=source_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return importtime_modules(result.stderr), result


def importtime_modules(stderr: str) -> set[str]:
    # Lines look like "import time:       220 |        220 |     numpy.version".
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


@pytest.mark.parametrize("arguments", [["--version"], ["--help"]])
def test_quick_commands_answer_without_polars_or_textual(arguments: list[str]) -> None:
    modules, result = imported_modules(arguments)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ocms-tui" in result.stdout
    assert "ocms_tui.cli" in modules  # the measurement saw our imports
    heavy = {name for name in modules if name.partition(".")[0] in {"polars", *UI_PACKAGES}}
    assert heavy == set()


def test_check_does_import_polars(tmp_path: Path) -> None:
    """The measurement can see polars: `--check` reads with it."""
    with OcmsRecorder(log_dir=str(tmp_path)) as recorder:
        recorder.log(step=0, metrics={"loss": 1.0})
    modules, result = imported_modules(["--check", str(tmp_path)])
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "polars" in modules


def test_serve_listens_without_polars_or_textual(tmp_path: Path) -> None:
    """The serving process only starts one dashboard process per browser tab."""
    pytest.importorskip("textual_serve", reason="needs the serve extra")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stderr_path = tmp_path / "importtime.txt"
    with stderr_path.open("w") as stderr:
        server = subprocess.Popen(
            [*PYTHON_IMPORTTIME, "--serve", "--port", str(port), str(tmp_path)],
            env=source_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert server.poll() is None, stderr_path.read_text()[-2000:]
            assert time.monotonic() < deadline, "the server did not listen within 60 s"
            time.sleep(0.1)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    modules = importtime_modules(stderr_path.read_text())
    assert "textual_serve.server" in modules and "ocms_tui.ui.serve" in modules
    heavy = {name for name in modules if name.partition(".")[0] in {"polars", "textual"}}
    assert heavy == set()


def listening(port: int) -> bool:
    with socket.socket() as client:
        return client.connect_ex(("127.0.0.1", port)) == 0
